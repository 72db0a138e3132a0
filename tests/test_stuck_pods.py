"""A pod stuck creating its containers is never 'healthy' or 'still starting': after minutes of Warnings no rule
explains, it is failing (exit 1), quotes the newest word about it and names the unexplained phase (issue 9)."""
import copy

from kubectl_gpudoctor import verdict
from kubectl_gpudoctor.evidence import Evidence, Target

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "trainer-0", "namespace": "ml", "uid": "7d0c5c5e-1f0e-4b7a-9d7e-2b1b8f0e6a11",
                 "creationTimestamp": "2026-12-02T08:00:00Z"},
    "spec": {"nodeName": "gpu-node-07", "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                                          "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T08:00:01Z"},
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": "2026-12-02T08:00:01Z"}],
        "containerStatuses": [{"name": "trainer", "ready": False, "restartCount": 0, "started": False,
                               "image": "nvcr.io/nvidia/pytorch:24.05-py3", "imageID": "",
                               "state": {"waiting": {"reason": "ContainerCreating"}}}]},
}
NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu-node-07", "uid": "0f6b3c1e-58a4-4a61-8d7b-3c0e4f5a6b71", "creationTimestamp": "2026-11-01T00:00:00Z",
                 "labels": {"kubernetes.io/hostname": "gpu-node-07", "nvidia.com/gpu.present": "true"}},
    "spec": {},
    "status": {"capacity": {"cpu": "64", "memory": "515897Mi", "nvidia.com/gpu": "8", "pods": "110"},
               "allocatable": {"cpu": "63500m", "memory": "503897Mi", "nvidia.com/gpu": "8", "pods": "110"},
               "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "message": "kubelet is posting ready status", "lastTransitionTime": "2026-11-01T00:05:00Z"}],
               "nodeInfo": {"containerRuntimeVersion": "containerd://1.7.20", "kubeletVersion": "v1.30.4"}},
}
# A sandbox error no rule owns (a seccomp profile the node lacks; kubelet wording from kuberuntime_sandbox.go).
EVENT = {
    "apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "FailedCreatePodSandBox", "count": 14,
    "metadata": {"name": "trainer-0.17d3a1", "namespace": "ml"},
    "involvedObject": {"kind": "Pod", "name": "trainer-0", "namespace": "ml", "uid": "7d0c5c5e-1f0e-4b7a-9d7e-2b1b8f0e6a11"},
    "message": 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create containerd task: '
               'failed to create shim task: OCI runtime create failed: unable to apply seccomp profile "profiles/audit.json"',
    "firstTimestamp": "2026-12-02T08:00:05Z", "lastTimestamp": "2026-12-02T08:{minute}:00Z",
    "source": {"component": "kubelet", "host": "gpu-node-07"},
}


def _diagnose(collected_minute, event_minute, events=True):
    ev = Evidence(target=Target("Pod", "trainer-0", "ml"))
    ev.add(copy.deepcopy(POD))
    ev.add(copy.deepcopy(NODE))
    ev.add(dict(EVENT, lastTimestamp=f"2026-12-02T08:{event_minute:02d}:00Z"))
    ev.sources = {"pods", "nodes", "runtimeclasses", "configmaps", "secrets", "persistentvolumeclaims"} | (
        {"events"} if events else set())
    from kubectl_gpudoctor.kube.timeutil import parse_time
    ev.collected_at = parse_time(f"2026-12-02T08:{collected_minute:02d}:00Z")
    return verdict.diagnose_pod(ev)


def test_stuck_creating_with_warnings_is_failing_and_quotes_the_event():
    diag = _diagnose(30, 29)
    assert diag.status == "failing" and int(diag.exit_code) == 1, (diag.status, diag.summary)
    assert diag.summary.startswith("ContainerCreating: no rule explains") and "unable to apply seccomp profile" in diag.summary


def test_a_young_pod_with_a_first_warning_is_still_starting():
    diag = _diagnose(3, 2)
    assert diag.status != "failing" and int(diag.exit_code) == 0, (diag.status, diag.summary)


def test_no_log_gap_is_invented_for_a_pod_whose_containers_never_ran(tmp_path):
    """`kubectl get pod -o yaml` of a ContainerCreating pod: no container ran, so no log can be missing."""
    import yaml
    from kubectl_gpudoctor.offline import load
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [POD, NODE]}))
    ev = load.load(str(path), "Pod")
    assert ev.gap("pods/log") is None and ev.gap("events") is not None
