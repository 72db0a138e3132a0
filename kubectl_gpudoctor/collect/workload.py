"""Extra reads for a pod diagnosis: the pod's controller chain (ReplicaSet -> Deployment, Job -> CronJob,
DaemonSet -> ClusterPolicy/NVIDIADriver) for owner names and GitOps tracking metadata, and for a scheduled pod still
Pending the PersistentVolumes behind its bound claims (CSI driver of a volume that fails to mount). GET only, by name."""
from __future__ import annotations

from typing import List, Optional

from ..kube import podstate
from ..evidence import Evidence
from ..kube.objects import claim_names, controller_of, labels, meta, spec, status
from .api import Request, quote

# Controller kinds worth following: kind -> (RBAC resource, namespaced). Others (custom operators' CRDs) are
# skipped: their scope and RBAC name are not known here.
FOLLOWED = {
    "ReplicaSet": ("replicasets", True), "Deployment": ("deployments", True), "StatefulSet": ("statefulsets", True),
    "DaemonSet": ("daemonsets", True), "Job": ("jobs", True), "CronJob": ("cronjobs", True),
    "ClusterPolicy": ("clusterpolicies", False), "NVIDIADriver": ("nvidiadrivers", False),
}


def owner_request(obj: dict) -> Optional[Request]:
    """A GET for the object's controller (ownerReference with controller: true), when it is a followed kind."""
    ref = controller_of(obj)
    if not ref or ref.get("kind") not in FOLLOWED or not ref.get("name"):
        return None
    resource, namespaced = FOLLOWED[ref["kind"]]
    api = ref.get("apiVersion") or "v1"
    base = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    ns = meta(obj).get("namespace")
    if namespaced and not ns:
        return None
    where = f"/namespaces/{quote(ns)}" if namespaced else ""
    return Request(resource, "get", f"{base}{where}/{resource}/{quote(ref['name'])}", kind=ref["kind"])


def first_round(pod: dict) -> List[Request]:
    """The pod's controller, and the Deployment behind a ReplicaSet read at the same time: its name is the
    ReplicaSet's without the pod-template-hash suffix the Deployment controller appends (checked in second_round)."""
    req, guess = owner_request(pod), deployment_guess(pod)
    return [r for r in (req, guess) if r]


def deployment_guess(pod: dict) -> Optional[Request]:
    ref, hash_ = controller_of(pod) or {}, labels(pod).get("pod-template-hash")
    rs, ns = ref.get("name") or "", meta(pod).get("namespace")
    if ref.get("kind") != "ReplicaSet" or not hash_ or not rs.endswith("-" + hash_) or not ns:
        return None
    deploy = rs[: -len(hash_) - 1]
    return Request("deployments", "get", f"/apis/apps/v1/namespaces/{quote(ns)}/deployments/{quote(deploy)}",
                   kind="Deployment")


def second_round(ev: Evidence) -> List[Request]:
    """The controller's controller (a Deployment behind a ReplicaSet, a ClusterPolicy behind a DaemonSet) unless the
    first round's guess read it, and the bound PersistentVolumes of a scheduled pod that is still Pending."""
    pod = ev.pod
    if pod is None:
        return []
    ref = controller_of(pod)
    ns = meta(pod).get("namespace")
    owner = ev.get(ref["kind"], ref["name"], ns) if ref else None
    req = owner_request(owner) if owner else None
    guess = deployment_guess(pod)
    if guess:
        if req is not None and req.path == guess.path:
            req = None   # the guess was right: its answer (object, 404 or refusal) stands
        else:
            _forget_guess(ev, guess.path.rsplit("/", 1)[-1], ns)
    return ([req] if req else []) + volume_requests(ev, pod)


def _forget_guess(ev: Evidence, deploy: str, ns: str) -> None:
    """The ReplicaSet is not that Deployment's (or could not be read): its answer says nothing about the pod."""
    if "Deployment" in ev.objects:
        ev.objects["Deployment"] = [d for d in ev.all("Deployment") if meta(d).get("name") != deploy]
    ev.absent.pop(f"Deployment/{ns}/{deploy}", None)
    ev.gaps.pop("deployments", None)
    ev.sources.discard("deployments")   # the chain is the only reader of Deployments in a pod diagnosis


def volume_requests(ev: Evidence, pod: dict) -> List[Request]:
    """GETs for the PVs behind the pod's bound claims, while it is scheduled and Pending (mounts may be failing)."""
    if not podstate.is_scheduled(pod) or status(pod).get("phase", "Pending") != "Pending":
        return []
    ns = meta(pod).get("namespace")
    names = {spec(pvc).get("volumeName") for pvc in (ev.get("PersistentVolumeClaim", c, ns) for c in claim_names(pod))
             if pvc and spec(pvc).get("volumeName")}
    return [Request("persistentvolumes", "get", f"/api/v1/persistentvolumes/{quote(n)}", kind="PersistentVolume")
            for n in sorted(names)[:8]]
