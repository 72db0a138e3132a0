"""Extra reads for the scheduling rules of an unscheduled pod (GET/LIST only, bounded, field/label selectors):
StorageClasses, PVs and claim events, DRA objects, Koordinator reservations, and the peers of pod-affinity terms."""
from __future__ import annotations

from typing import List

from ..kube import affinity, podstate, storage
from ..gpu import stack as gpustack, nodeview
from ..data import scheduler_queues as sq
from ..evidence import Evidence, source_of
from ..kube.objects import allocatable, gpu_request, name, namespace, spec
from . import node
from .api import Request, quote
from .node import DRA_GROUP

MAX_PEER_LISTS = 6          # (term, namespace) pod lists for required pod (anti-)affinity
PEER_LIST_LIMIT = "500"
LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
MAX_CLAIM_EVENT_LISTS = 4
# Koordinator's Reservation CRD (scheduling.koordinator.sh/v1alpha1, cluster-scoped); a 404 means not installed.
RESERVATIONS = "/apis/scheduling.koordinator.sh/v1alpha1/reservations"
MAX_STACK_LOGS = 3          # GPU-stack log tails read on the GPU nodes a pending GPU pod waits for
MAX_PLUGIN_DS = 4           # device-plugin DaemonSets whose pods are listed by their selector
PLUGIN_POD_LIMIT = "100"


def _pending(pod: dict) -> bool:
    return podstate.is_unscheduled_pending(pod)


def _creating_with_claims(pod: dict) -> bool:
    """On a node, not running yet, with DRA claims: the kubelet prepares the claims' devices through the driver's
    kubelet plugin, so the claims, DeviceClasses and ResourceSlices still say why it is stuck."""
    return bool(spec(pod).get("resourceClaims")) and podstate.stuck_in_creation(pod)


def first_round(pod: dict) -> List[Request]:
    """Requests that need only the pod."""
    if not _pending(pod):
        return [Request("discovery", "get", f"/apis/{DRA_GROUP}", kind="APIGroup")] if _creating_with_claims(pod) else []
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
    return reqs + _peer_requests(pod) + queue_requests(pod)


def queue_requests(obj: dict) -> List[Request]:
    """The batch-scheduler queues (and Kueue Workloads / Volcano PodGroups) the pod or workload names: LISTs of
    optional APIs (a 404 means the scheduler is not installed, a 403 is a gap)."""
    ns = namespace(obj)
    tmpl = ((spec(obj).get("template") or {}).get("metadata")) or {}
    marks = {**(obj.get("metadata") or {}).get("labels", {}), **(obj.get("metadata") or {}).get("annotations", {}),
             **(tmpl.get("labels") or {}), **(tmpl.get("annotations") or {})}
    systems = {system for system, (_, key), _, _ in sq.SOURCES if marks.get(key)}
    if marks.get(sq.PODGROUP_ANNOTATION) or str(obj.get("apiVersion", "")).startswith("batch.volcano.sh"):
        systems.add("volcano")
    wanted = {"kueue": ("LocalQueue", "ClusterQueue", "Workload"), "volcano": ("Queue", "PodGroup"), "kai": ("Queue",)}
    return [Request(source_of(kind), "list", sq.PATHS[(system, kind)].format(ns=quote(ns or "default")), kind=kind,
                    optional_api=True) for system in sorted(systems) for kind in wanted[system]]


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
    """Requests that need the first round's answers: bound PVs, claim events, DRA objects, and for a GPU pod the
    pods on the GPU nodes it waits for (their own stack) and, when GPUs are missing, the DaemonSets."""
    pod = ev.pod
    if pod is None:
        return []
    if not _pending(pod):
        return _dra_requests(ev, pod) if _creating_with_claims(pod) else []
    return _volume_requests(ev, pod) + _dra_requests(ev, pod) + _stack_requests(ev, pod)


def third_round(ev: Evidence) -> List[Request]:
    """The GPU nodes' stack, once their pods are known: logs of broken (or telling) GPU-stack pods there, and
    where no node is labelled as a GPU node, the pods of the device-plugin DaemonSets (where does it run?)."""
    pod = ev.pod
    if not _waits_for_gpus(ev):
        return []
    reqs: List[Request] = []
    for n in nodeview.stack_nodes(ev, pod):
        reqs += node.log_requests(ev, max(0, MAX_STACK_LOGS - len(reqs)), only_broken=True, node=n)
    if not _labelled(ev, pod):
        reqs += _plugin_pod_lists(ev, pod)
    return _forgiving(ev, reqs)


def fourth_round(ev: Evidence) -> List[Request]:
    """Nodes found to run the device plugin (no GPU labels anywhere): their pods and the plugin's logs."""
    pod = ev.pod
    if not _waits_for_gpus(ev) or _labelled(ev, pod):
        return []
    reqs = _node_pod_lists(ev, pod)
    for n in nodeview.stack_nodes(ev, pod):
        reqs += node.log_requests(ev, max(0, MAX_STACK_LOGS - len(reqs)), node=n, known=False)
    return _forgiving(ev, reqs)


def _waits_for_gpus(ev: Evidence) -> bool:
    return ev.pod is not None and _pending(ev.pod) and bool(gpu_request(ev.pod)) and ev.readable("nodes")


def _labelled(ev: Evidence, pod: dict) -> bool:
    return bool(nodeview.vendor_nodes(ev, pod))


def _stack_requests(ev: Evidence, pod: dict) -> List[Request]:
    if not _waits_for_gpus(ev):
        return []
    reqs = _node_pod_lists(ev, pod)
    wanted = nodeview.request_vendors(pod)
    nodes = ev.all("Node")
    missing = any(not any(allocatable(n, r) > 0 for n in nodes) for r in gpu_request(pod))
    silent = any(not any(nodeview.advertised(n, v) for v in wanted) for n in nodeview.stack_nodes(ev, pod))
    if missing or silent:   # why the device plugin runs nowhere, or not there: its DaemonSet (few; never pods)
        reqs.append(Request("daemonsets", "list", "/apis/apps/v1/daemonsets", kind="DaemonSet"))
    return reqs


def _node_pod_lists(ev: Evidence, pod: dict) -> List[Request]:
    """Pods on the GPU nodes the pod waits for that are not listed yet (by field selector; all node pod lists of
    one diagnosis stay within collect/pod.py's bound)."""
    from .pod import MAX_NODE_POD_LISTS
    if ev.pod_nodes is None:
        return []
    todo = [name(n) for n in nodeview.stack_nodes(ev, pod) if name(n) not in ev.pod_nodes]
    todo = todo[:max(0, MAX_NODE_POD_LISTS - len(ev.pod_nodes))]
    ev.pod_nodes |= set(todo)
    return [Request("pods", "list", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={n}"}, "Pod") for n in todo]


def _plugin_pod_lists(ev: Evidence, pod: dict) -> List[Request]:
    """Pods of the device-plugin DaemonSets for the requested vendor, by their own label selector in their own
    namespace (bounded): where the plugin runs when no node carries GPU labels."""
    wanted = nodeview.request_vendors(pod)
    reqs: List[Request] = []
    for ds in ev.all("DaemonSet"):
        comp = gpustack.daemonset_component(ds)
        sel = (spec(ds).get("selector") or {}).get("matchLabels") or {}
        if not comp or not comp.device_plugin or gpustack.vendor_of(gpustack.as_pod(ds)) not in wanted or not sel \
                or int((ds.get("status") or {}).get("desiredNumberScheduled") or 0) == 0 or len(reqs) >= MAX_PLUGIN_DS:
            continue
        query = ",".join(f"{k}={v}" for k, v in sorted(sel.items()))
        reqs.append(Request("pods", "list", f"/api/v1/namespaces/{quote(namespace(ds))}/pods",
                            {"labelSelector": query, "limit": PLUGIN_POD_LIMIT}, "Pod"))
    return reqs


def _forgiving(ev: Evidence, reqs: List[Request]) -> List[Request]:
    """Reads about other pods' logs: a refusal there is not a gap in the target pod's own logs."""
    had_gap = "pods/log" in ev.gaps

    def forgive(resp):
        gap = ev.gaps.get("pods/log")
        if resp.reason != "ok" and not had_gap and gap is not None and gap.detail == resp.message:
            ev.gaps.pop("pods/log")
    for r in reqs:
        if r.log_key is not None:
            r.then = forgive
    return reqs


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

