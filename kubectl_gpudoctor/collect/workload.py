"""Extra reads for a pod diagnosis: the pod's controller chain walked up to the object the user edits
(ReplicaSet -> Deployment -> InferenceService, Job -> CronJob / JobSet -> TrainJob, RayCluster -> RayService,
DaemonSet -> ClusterPolicy, the operators' CRs of kube/owners.py) for fix targets, Helm and GitOps metadata, and for a
scheduled pod still Pending the PersistentVolumes behind its bound claims (CSI driver of a volume that fails to mount).
GET only, by name, one owner per round: a refused or missing owner is a gap or a 404, and is still named from its
reference."""
from __future__ import annotations

from typing import List, Optional

from ..kube import owners, podstate
from ..evidence import Evidence, plural
from ..kube.objects import claim_names, controller_of, labels, meta, spec, status
from .api import Request, quote

# Built-in kinds keep the RBAC names the rules' `needs` use; custom resources are named resource.group, as RBAC does.
_BUILTIN_GROUPS = ("", "apps", "batch", "nvidia.com")


def owner_request(obj: dict) -> Optional[Request]:
    """A GET for the object's controller (ownerReference with controller: true), when its kind is known."""
    ref = controller_of(obj)
    if not ref or not ref.get("name"):
        return None
    return link_request(owners.Link(ref.get("kind") or "", ref["name"], ref.get("apiVersion") or "v1"),
                        meta(obj).get("namespace"))


def link_request(link: owners.Link, ns: Optional[str]) -> Optional[Request]:
    known = owners.KINDS.get(link.group, {}).get(link.kind)
    if known is None or link.kind == "Pod":   # custom operators' CRDs not listed: scope and RBAC name not known
        return None
    namespaced = known[1]
    if namespaced and not ns:
        return None
    resource = plural(link.kind)
    source = resource if link.group in _BUILTIN_GROUPS else f"{resource}.{link.group}"
    base = f"/api/{link.api_version}" if not link.group else f"/apis/{link.api_version}"
    where = f"/namespaces/{quote(ns)}" if namespaced else ""
    return Request(source, "get", f"{base}{where}/{resource}/{quote(link.name)}", kind=link.kind)


def first_round(pod: dict) -> List[Request]:
    """The pod's controller, the Deployment behind a ReplicaSet read at the same time (its name is the ReplicaSet's
    without the pod-template-hash suffix the Deployment controller appends; checked in second_round), and the object
    an operator's label names above them (an InferenceService above a Knative Revision's Deployment)."""
    req, guess = owner_request(pod), deployment_guess(pod)
    out = [r for r in (req, guess) if r]
    top = labelled_owner(pod)
    if top and top.path not in {r.path for r in out}:
        out.append(top)
    return out


def labelled_owner(pod: dict) -> Optional[Request]:
    """The topmost object an operator's label on the pod names (kube/owners.py LABEL_OWNERS), when it is known."""
    lab, ns = labels(pod), meta(pod).get("namespace")
    for key, api, kind in reversed(owners.LABEL_OWNERS):
        if lab.get(key):
            return link_request(owners.Link(kind, lab[key], api), ns)
    return None


def deployment_guess(pod: dict) -> Optional[Request]:
    ref, hash_ = controller_of(pod) or {}, labels(pod).get("pod-template-hash")
    rs, ns = ref.get("name") or "", meta(pod).get("namespace")
    if ref.get("kind") != "ReplicaSet" or not hash_ or not rs.endswith("-" + hash_) or not ns:
        return None
    deploy = rs[: -len(hash_) - 1]
    return Request("deployments", "get", f"/apis/apps/v1/namespaces/{quote(ns)}/deployments/{quote(deploy)}",
                   kind="Deployment")


def second_round(ev: Evidence) -> List[Request]:
    """The next owner above what the first round read (a Deployment behind a ReplicaSet, an InferenceService behind a
    Deployment, a ClusterPolicy behind a DaemonSet) unless it was read, and the bound PersistentVolumes of a scheduled
    pod that is still Pending."""
    pod = ev.pod
    if pod is None:
        return []
    ns = meta(pod).get("namespace")
    guess = deployment_guess(pod)
    req = next_owner(ev)
    if guess:
        if req is not None and req.path == guess.path:
            req = None   # the guess was right: its answer (object, 404 or refusal) stands
        elif not _guess_is_owner(ev, pod, guess):
            _forget_guess(ev, guess.path.rsplit("/", 1)[-1], ns)
            req = next_owner(ev)
    return ([req] if req else []) + volume_requests(ev, pod)


def third_round(ev: Evidence) -> List[Request]:
    """One more owner for chains three deep (Job -> JobSet -> TrainJob, RayCluster -> RayService behind a guess), and
    the MutatingWebhookConfigurations when the pod has a container its owner's template lacks (a webhook added it)."""
    if ev.pod is None:
        return []
    req = next_owner(ev)
    ft = owners.fix_target(ev, ev.pod)
    added = any(owners.injected(ft, c.get("name")) for part in ("containers", "initContainers")
                for c in spec(ev.pod).get(part) or [])
    hooks = Request(owners.WEBHOOKS, "list", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                    kind="MutatingWebhookConfiguration") if added and owners.WEBHOOKS not in ev.sources else None
    return [r for r in (req, hooks) if r]


def next_owner(ev: Evidence) -> Optional[Request]:
    """A GET for the controller of the highest object of the chain read so far, when that controller is of a known
    kind and nothing answered for it yet (read, 404, or its resource refused)."""
    pod, ns = ev.pod, meta(ev.pod).get("namespace")
    chain = owners.owner_chain(ev, pod)
    read = [ln for ln in chain if ln.obj is not None]
    if not read:
        return None
    ref = controller_of(read[-1].obj)
    if not ref or not ref.get("name"):
        return None
    link = owners.Link(ref.get("kind") or "", ref["name"], ref.get("apiVersion") or "v1")
    if owners.find(ev, link, ns) is not None:
        return None
    req = link_request(link, ns)
    if req is None or req.source in ev.gaps or any(k.endswith(f"/{link.name}") and k.startswith(link.kind + "/")
                                                   for k in ev.absent):
        return None
    return req


def _guess_is_owner(ev: Evidence, pod: dict, guess: Request) -> bool:
    """The guessed Deployment owns the pod's ReplicaSet: the ReplicaSet was read and names it, or the ReplicaSet
    could not be read (then the guess stands on the name alone, as kube/owners.py names it)."""
    ref = controller_of(pod) or {}
    rs = ev.get("ReplicaSet", ref.get("name") or "", meta(pod).get("namespace"))
    if rs is None:
        return False
    owner = controller_of(rs) or {}
    return owner.get("kind") == "Deployment" and owner.get("name") == guess.path.rsplit("/", 1)[-1]


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
