"""Extra reads for the scheduling rules of an unscheduled pod (GET/LIST only, bounded, field/label selectors):
StorageClasses, PVs and claim events, DRA objects, Koordinator reservations, and the peers of pod-affinity terms."""
from __future__ import annotations

from typing import List
from urllib.parse import quote

from .. import affinity, podstate, storage
from ..evidence import Evidence
from ..k8s import gpu_request, namespace, spec
from .api import Request

MAX_PEER_LISTS = 6          # (term, namespace) pod lists for required pod (anti-)affinity
PEER_LIST_LIMIT = "500"
LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
MAX_CLAIM_EVENT_LISTS = 4
DRA_GROUP = "resource.k8s.io"
# Koordinator's Reservation CRD (scheduling.koordinator.sh/v1alpha1, cluster-scoped); a 404 means not installed.
RESERVATIONS = "/apis/scheduling.koordinator.sh/v1alpha1/reservations"


def _pending(pod: dict) -> bool:
    return podstate.is_unscheduled_pending(pod)


def first_round(pod: dict) -> List[Request]:
    """Requests that need only the pod."""
    if not _pending(pod):
        return []
    ns = namespace(pod)
    reqs: List[Request] = []
    claims = storage.pod_claims(pod)
    if claims:
        reqs.append(Request("storageclasses", "list", "/apis/storage.k8s.io/v1/storageclasses", kind="StorageClass"))
    for _, claim, ephemeral in claims:
        if ephemeral:   # collect/pod.py reads the claims named in persistentVolumeClaim volumes
            reqs.append(Request("persistentvolumeclaims", "get",
                                f"/api/v1/namespaces/{quote(ns)}/persistentvolumeclaims/{quote(claim)}",
                                kind="PersistentVolumeClaim"))
    if spec(pod).get("resourceClaims"):
        reqs.append(Request("discovery", "get", f"/apis/{DRA_GROUP}", kind="APIGroup"))
    if gpu_request(pod):
        reqs.append(Request("reservations", "list", RESERVATIONS, kind="Reservation", optional_api=True))
    return reqs + _peer_requests(pod)


def _peer_requests(pod: dict) -> List[Request]:
    """Pods matching each required pod (anti-)affinity term, by label selector, in the term's namespaces."""
    reqs: List[Request] = []
    seen = set()
    for kind in ("podAffinity", "podAntiAffinity"):
        for term in affinity.required_pod_terms(pod, kind):
            nss = affinity.term_namespaces(term, pod)
            query = affinity.selector_query(affinity.effective_selector(term, pod))
            if nss is None or query is None:
                continue    # namespaceSelector / unsupported operator: the rule reports it as unknown
            for ns in nss:
                if (ns, query) in seen or len(seen) >= MAX_PEER_LISTS:
                    continue
                seen.add((ns, query))
                path = "/api/v1/pods" if ns == "*" else f"/api/v1/namespaces/{quote(ns)}/pods"
                # only pods that still count for the scheduler: assigned or running, not terminal
                reqs.append(Request(affinity.peer_source(ns, query), "list", path,
                                    {"labelSelector": query, "fieldSelector": LIVE_PODS, "limit": PEER_LIST_LIMIT},
                                    kind="Pod"))
    return reqs


def second_round(ev: Evidence) -> List[Request]:
    """Requests that need the first round's answers: bound PVs, claim events, DRA objects."""
    pod = ev.pod
    if pod is None or not _pending(pod):
        return []
    return _volume_requests(ev, pod) + _dra_requests(ev, pod)


def _volume_requests(ev: Evidence, pod: dict) -> List[Request]:
    reqs: List[Request] = []
    ns = namespace(pod)
    for _, claim, _ in storage.pod_claims(pod):
        pvc = ev.get("PersistentVolumeClaim", claim, ns)
        if pvc is None:
            continue
        if storage.claim_phase(pvc) == "Bound" and spec(pvc).get("volumeName"):
            reqs.append(Request("persistentvolumes", "get", f"/api/v1/persistentvolumes/{quote(spec(pvc)['volumeName'])}",
                                kind="PersistentVolume"))
        elif len([r for r in reqs if r.kind == "Event"]) < MAX_CLAIM_EVENT_LISTS and pvc["metadata"].get("uid"):
            reqs.append(Request("events", "list", f"/api/v1/namespaces/{quote(ns)}/events",
                                {"fieldSelector": f"involvedObject.uid={pvc['metadata']['uid']}"}, kind="Event"))
    return reqs


def dra_version(ev: Evidence) -> str:
    for group in ev.all("APIGroup"):
        if group.get("name") == DRA_GROUP:
            return ((group.get("preferredVersion") or {}).get("version")) or "v1"
    return "v1"


def _dra_requests(ev: Evidence, pod: dict) -> List[Request]:
    entries = storage.pod_resource_claims(pod)
    if not entries:
        return []
    base = f"/apis/{DRA_GROUP}/{dra_version(ev)}"
    ns = namespace(pod)
    reqs: List[Request] = []
    for entry in entries:
        if entry["claim"]:
            reqs.append(Request("resourceclaims", "get", f"{base}/namespaces/{quote(ns)}/resourceclaims/{quote(entry['claim'])}",
                                kind="ResourceClaim"))
        elif entry["template"]:
            reqs.append(Request("resourceclaimtemplates", "get",
                                f"{base}/namespaces/{quote(ns)}/resourceclaimtemplates/{quote(entry['template'])}",
                                kind="ResourceClaimTemplate"))
    if any(g.get("name") == DRA_GROUP for g in ev.all("APIGroup")):
        reqs += [Request("deviceclasses", "list", f"{base}/deviceclasses", kind="DeviceClass"),
                 Request("resourceslices", "list", f"{base}/resourceslices", kind="ResourceSlice")]
    return reqs

