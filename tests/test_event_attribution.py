"""Which events are about the target: by uid when the event has one (a StatefulSet pod re-created under the same
name is another object), else by kind, name and namespace — a same-named pod in another namespace is not the
target, in a live read (the events list is namespaced) as in a bundle or cluster-info dump that holds every
namespace's events."""
import os
import shutil

import yaml

from kubectl_gpudoctor.evidence import Evidence, Target
from tests.casebook import CASES, diagnose

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "trainer-0", "namespace": "ml", "uid": "5b1f0a52-8f0e-4b7e-9a43-0d5c1a9e6f11"}}


def event(name, ns, uid=None, reason="FailedMount", at="2026-11-30T09:10:00Z"):
    io = {"kind": "Pod", "name": name, "namespace": ns, "apiVersion": "v1"}
    if uid:
        io["uid"] = uid
    return {"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": reason, "involvedObject": io,
            "metadata": {"name": f"{name}.{reason}.{ns}", "namespace": ns}, "lastTimestamp": at,
            "message": 'MountVolume.SetUp failed for volume "weights" : secret "hf-token" not found'}


def test_events_are_attributed_by_uid_then_by_namespaced_name():
    ev = Evidence(Target("Pod", "trainer-0", "ml"))
    ev.add(POD)
    mine_by_uid = event("trainer-0", "ml", POD["metadata"]["uid"], reason="Scheduled")
    mine_by_name = event("trainer-0", "ml", reason="FailedMount")                 # an emitter that sets no uid
    earlier_pod = event("trainer-0", "ml", "0c2d3e4f-1111-4222-8333-944455556666", reason="OOMKilling")
    other_namespace = event("trainer-0", "team-b", reason="FailedScheduling")     # same name, other namespace
    other_kind = dict(event("trainer-0", "ml", reason="SuccessfulCreate"))
    other_kind["involvedObject"] = dict(other_kind["involvedObject"], kind="StatefulSet")
    for e in (mine_by_uid, mine_by_name, earlier_pod, other_namespace, other_kind):
        ev.add(e)
    assert [e["reason"] for e in ev.events_for(POD)] == ["Scheduled", "FailedMount"]


def test_a_same_named_pods_events_in_another_namespace_change_nothing(tmp_path):
    """A whole-cluster dump: team-b's own pod of the same name failed GPU admission on its node; the target, still
    creating its container and fine so far, must not borrow that failure."""
    src = os.path.join(CASES, "missing-config-reference", "pass-published-ca-not-in-snapshot")   # ContainerCreating
    dest = tmp_path / "case"
    shutil.copytree(src, dest)
    meta = yaml.safe_load((dest / "bundle.yaml").read_text())
    name, ns = meta["target"]["name"], meta["target"]["namespace"]
    before = diagnose(str(dest))
    foreign = event(name, "team-b", reason="UnexpectedAdmissionError", at=meta["collectedAt"])
    # kubelet wording (pkg/kubelet/cm/devicemanager): the device plugin had fewer healthy devices than it advertised
    foreign["message"] = ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
                          "Requested: 1, Available: 0, which is unexpected")
    with open(dest / "objects.yaml", "a") as f:
        f.write("---\n" + yaml.safe_dump(foreign, sort_keys=False))
    after = diagnose(str(dest))
    assert ns != "team-b"
    assert before.status in ("healthy", "warning") and before.root_cause is None, before.summary
    assert (after.status, after.root_cause) == (before.status, before.root_cause), after.summary
    assert not [f.id for f in after.findings if f.severity == "critical"]
