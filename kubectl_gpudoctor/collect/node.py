"""The reads a node's GPU stack needs once the node and its pods are known (the DaemonSets, log tails and DRA
objects they name), for the node view (collect/nodeview.py) and for a pod diagnosis; GET/LIST only."""
from __future__ import annotations

from typing import List, Optional

from ..gpu import stack as gpustack, nodeview
from ..kube import podstate, storage
from ..data import gpu_resources as gr
from ..evidence import Evidence
from ..kube.objects import controller_of, name, namespace, spec
from ..record import replace
from .api import Request, quote

LOG_LIMIT_BYTES = 256 * 1024
DRA_GROUP = "resource.k8s.io"
MAX_LOGS = 16               # log tails of GPU-stack containers read for one node
MAX_DAEMONSETS = 12         # DaemonSets read by owner reference
POD_VIEW_MAX_LOGS = 4       # device-plugin/operator logs read for a pod diagnosis
MAX_CLAIMS = 16             # ResourceClaims of the node's pods read for the DRA inventory
# The key of the gap left when the other GPU pods' logs on a pod's node are refused (its source stays pods/log).
SIBLING_LOGS_GAP = "pods/log#siblings"
# Where the device plugin's DaemonSet is looked for when the cluster-wide DaemonSet list is refused.
FALLBACK_DS_NAMESPACES = ("kube-system",)


def dra_discovery(node: dict) -> List[Request]:
    """A GPU node that advertises no GPU resource may publish its GPUs through DRA: which resource.k8s.io
    version is served (a 404 means no DRA at all)."""
    if not nodeview.is_gpu_node(node) or any(nodeview.advertised(node, v) for v in nodeview.gpu_vendors(node)):
        return []
    return [Request("discovery", "get", f"/apis/{DRA_GROUP}", kind="APIGroup")]


def dra_requests(ev: Evidence) -> List[Request]:
    """The node's ResourceSlices (a GPU DRA driver publishes its GPUs there, not as an allocatable resource) and
    the ResourceClaims of the node's pods (which devices they hold), bounded. Without the DRA API there is none."""
    node = ev.node
    if node is None or not dra_discovery(node):
        return []
    if not any(g.get("name") == DRA_GROUP for g in ev.all("APIGroup")):
        if ev.is_absent("APIGroup", DRA_GROUP):
            ev.mark_read("resourceslices")
            ev.mark_read("resourceclaims")
        return []
    from .scheduling import dra_version  # scheduling reads node's log requests: import at call time
    base = f"/apis/{DRA_GROUP}/{dra_version(ev)}"
    reqs = [Request("resourceslices", "list", f"{base}/resourceslices",
                    {"fieldSelector": f"spec.nodeName={name(node)}"}, kind="ResourceSlice")]
    seen = set()
    for pod in ev.pods_on(name(node)):
        for entry in storage.pod_resource_claims(pod):
            key = (namespace(pod), entry["claim"])
            if entry["claim"] and key not in seen and len(seen) < MAX_CLAIMS:
                seen.add(key)
                reqs.append(Request("resourceclaims", "get", f"{base}/namespaces/{quote(key[0])}/resourceclaims/"
                                    f"{quote(key[1])}", kind="ResourceClaim"))
    if not seen:
        ev.mark_read("resourceclaims")   # no pod on the node holds a claim
    return reqs


def namespaced_daemonset_requests(ev: Evidence) -> List[Request]:
    """When the cluster-wide DaemonSet list is refused: the lists of the namespaces where the node's GPU-stack pods
    run, and of kube-system, if the device plugin's DaemonSet is wanted at all."""
    node = ev.node
    if node is None or not _needs_daemonset_list(ev):
        return []
    namespaces = sorted({namespace(p) for _, p in gpustack.component_pods(ev, node)} | set(FALLBACK_DS_NAMESPACES))
    return [Request("daemonsets", "list", f"/apis/apps/v1/namespaces/{quote(ns)}/daemonsets", kind="DaemonSet",
                    scope=ns) for ns in namespaces]


def _needs_daemonset_list(ev: Evidence) -> bool:
    """No device plugin pod on a GPU node: its DaemonSet tells why it skips the node."""
    node = ev.node
    if node is None or not gpustack.pods_known(ev, name(node)) or not nodeview.is_gpu_node(node):
        return False
    return not gpustack.device_plugin_pods(ev, node, nodeview.gpu_vendors(node))


def daemonset_requests(ev: Evidence) -> List[Request]:
    """The DaemonSets that own the node's GPU-stack pods (by owner reference), or all DaemonSets when the
    device plugin has no pod on the node (a cluster has few DaemonSets; it is never a pod list)."""
    if _needs_daemonset_list(ev):
        return [Request("daemonsets", "list", "/apis/apps/v1/daemonsets", kind="DaemonSet")]
    node = ev.node
    if node is None or not gpustack.pods_known(ev, name(node)):
        return []
    seen, reqs = set(), []
    for _, pod in gpustack.component_pods(ev, node):
        owner = controller_of(pod) or {}
        key = (namespace(pod), owner.get("name"))
        if owner.get("kind") != "DaemonSet" or key in seen or len(reqs) >= MAX_DAEMONSETS:
            continue
        seen.add(key)
        reqs.append(Request("daemonsets", "get", f"/apis/apps/v1/namespaces/{quote(key[0])}/daemonsets/{quote(key[1])}",
                            kind="DaemonSet"))
    return reqs


def log_requests(ev: Evidence, limit: int, only_broken: bool = False, node: Optional[dict] = None,
                 known: bool = True) -> List[Request]:
    """Log tails (bounded lines and bytes) of GPU-stack containers on the node (the target's, or `node`): previous
    logs of containers that restarted, current logs of stuck init containers and unready containers, and the
    device plugin's current log when GPUs are unhealthy (it names them) or none is advertised (it says why).
    `known=False`: the node's pods are being listed in the same round; read what is known of them."""
    node = ev.node if node is None else node
    if node is None or (known and not gpustack.pods_known(ev, name(node))):
        return []
    unhealthy = any(k8s_cap > k8s_alloc for k8s_cap, k8s_alloc in _gpu_counts(node))
    silent = not any(nodeview.advertised(node, v) for v in nodeview.gpu_vendors(node) or gr.VENDOR_RESOURCES)
    mig = nodeview.mig_state(node)
    mig_busy = bool(mig) and mig[0] != "success"   # the MIG manager's log says why
    reqs: List[Request] = []
    for comp, pod in gpustack.component_pods(ev, node):
        healthy = gpustack.is_ready(pod) or (comp.one_shot and (pod.get("status") or {}).get("phase") == "Succeeded")
        telling = comp.device_plugin and (unhealthy or silent)
        if only_broken and healthy and not telling:
            continue
        stuck = gpustack.stuck_init(pod)
        for c, cs, _ in podstate.all_container_states(pod):
            cname = c.get("name")
            if int(cs.get("restartCount") or 0) > 0 or podstate.last_terminated(cs):
                reqs.append(_log(pod, cname, True, ev.tail_lines))
            running = (cs.get("state") or {}).get("running") is not None
            if (stuck and stuck["name"] == cname and running) or (running and not cs.get("ready") and not stuck) \
                    or (telling and running) or (comp.key == "mig-manager" and mig_busy and running):
                reqs.append(_log(pod, cname, False, ev.tail_lines))
    return reqs[:limit]


def _gpu_counts(node: dict):
    from ..kube.objects import allocatable, capacity
    return [(capacity(node, r), allocatable(node, r)) for r in nodeview.node_gpu_resources(node)]


def _log(pod: dict, container: str, previous: bool, tail: int, limit: int = LOG_LIMIT_BYTES) -> Request:
    ns, pod_name = namespace(pod), name(pod)
    query = {"container": container, "tailLines": str(tail), "limitBytes": str(limit)}
    if previous:
        query["previous"] = "true"
    return Request("pods/log", "get", f"/api/v1/namespaces/{quote(ns)}/pods/{quote(pod_name)}/log", query,
                   log_key=(ns, pod_name, container, previous))


# --- the node under a pod (PHASE_READERS of collect/pod.py) -------------------------------------------------

def first_round(pod: dict) -> List[Request]:
    """The pod's node and the pods on it are read by collect/pod.py already."""
    return []


def second_round(ev: Evidence) -> List[Request]:
    """For a GPU pod in trouble: the logs of the broken GPU-stack pods on its node (bounded). A refused log
    there is not a gap in the pod's own logs."""
    pod = ev.pod
    if pod is None or not spec(pod).get("nodeName") or podstate.health(pod) == "healthy":
        return []
    from ..kube.objects import gpu_request
    if not gpu_request(pod):
        return []
    reqs = log_requests(ev, POD_VIEW_MAX_LOGS, only_broken=True)
    keys = {r.log_key for r in reqs}
    sibs = [r for r in sibling_log_requests(ev) if r.log_key not in keys]   # a validator's may be read as the stack's
    had_gap = "pods/log" in ev.gaps

    def forgive(resp):
        gap = ev.gaps.get("pods/log")
        if resp.reason != "ok" and not had_gap and gap is not None and gap.detail == resp.message:
            ev.gaps.pop("pods/log")

    for r in reqs:
        r.then = forgive
    # the corroboration was not checked: a gap of its own, never one of the pod's own logs
    about = f"the logs of other GPU pods on node {spec(pod).get('nodeName')}"
    return reqs + [replace(r, gap_key=SIBLING_LOGS_GAP, about=about) for r in sibs]


def sibling_log_requests(ev: Evidence) -> List[Request]:
    """Only when the pod's own failed GPU run logged a driver/library/visibility error (its log came in the first
    round, with the node's pod list): the log tails of a few other GPU pods on the node that failed too, so the
    rules can tell the node's stack from the pod's image. They ride the follow-up round (the GPU stack's logs, the
    owner chain): a round trip of their own only when that round has nothing else to read, within the 3 of every
    pod diagnosis (tests/test_siblings.py, tests/test_request_budget.py)."""
    from ..gpu import siblings   # a GPU crash only: most diagnoses never load the log signatures here
    found = siblings.candidates(ev, ev.pod)
    if not found or siblings.own_failure(ev) is None:
        return []
    return [_log(p, c["name"], prev, min(ev.tail_lines, siblings.SIBLING_TAIL), siblings.SIBLING_LOG_BYTES)
            for p, c, _, prev in found if ev.log(p, c["name"], prev) is None]
