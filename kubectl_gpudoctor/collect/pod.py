"""Collects a pod's evidence: the pod first, then its events, node, references and log tails in parallel."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import List, Optional

from ..gpu import nodeview
from ..kube import affinity, placement, podstate
from ..evidence import Evidence, Target
from ..kube.objects import (allocatable, claim_names, config_references, gpu_request, is_gpu_resource, name, spec,
                            status)
from ..kube.quantity import count
from . import dcgm, network, node, scheduling, workload
from .api import (METADATA_ONLY, NODE_PAGE, Api, ClusterError, Request, TargetNotFound, quote, read_target, refused,
                  target_shaped)
from .kubeconfig import ConnOptions, connect

# Phase-specific readers add what their rules need, in two parallel rounds.
PHASE_READERS = (scheduling, workload, network, node)
# Optional later rounds a reader may define (empty for most pods): `third_round(ev)`, `fourth_round(ev)`.
LATER_ROUNDS = ("third_round", "fourth_round")

LOG_LIMIT_BYTES = 256 * 1024
NODE_OOM_EVENTS_GAP = "events#node-oom"
MAX_NODE_POD_LISTS = 3       # GPU nodes whose pods are listed for an unscheduled pod, whatever the cluster's size
# Connections opened while the pod itself is read: a second round holds 4-11 reads (one more rides the connection
# the pod was read on).
SPARE_CONNECTIONS = 10


def collect_pod(opts: ConnOptions, pod_name: str, tail: int = 80, waiting=None) -> Evidence:
    """`waiting()`, when given, is called once the pod's own request is sent: the first wait of the diagnosis."""
    conn = connect(opts)
    api = Api(conn.client, opts.request_timeout)

    def first_wait():
        # The pod's GET goes out first; then, while it is answered, the second round's connections are opened
        # and the caller's work starts (the rules load), so neither delays the first request.
        conn.client.open_spares(SPARE_CONNECTIONS)
        if waiting:
            waiting()
    if opts.all_namespaces and not opts.namespace:
        return evidence_for(api, find_pod(api, pod_name, first_wait), tail)
    ns = conn.namespace
    try:
        pod = read_target(api, f"/api/v1/namespaces/{quote(ns)}/pods/{quote(pod_name)}", f'pods "{pod_name}"', ns,
                          first_wait)
    except TargetNotFound as exc:   # the failure path only: what the name may have meant
        from .suggest import pod_hints
        raise TargetNotFound(f"{exc}{pod_hints(api, ns, pod_name)}") from None
    return evidence_for(api, pod, tail)


def find_pod(api: Api, pod_name: str, meanwhile=None) -> dict:
    """-A: the one pod of that name in any namespace (a filtered list, never every pod)."""
    resp = api.get("/api/v1/pods", {"fieldSelector": f"metadata.name={pod_name}"}, meanwhile=meanwhile)
    if resp.reason in ("unauthorized", "forbidden"):
        raise ClusterError(refused(api, resp, "list", "/api/v1/pods", None, "cannot search pods in all namespaces"))
    if resp.reason != "ok":
        raise ClusterError(f"cannot search pods in all namespaces: {resp.message}")
    items = [p for p in (resp.body.get("items") or []) if isinstance(p, dict)]
    if not items:
        from .suggest import pod_hints
        raise TargetNotFound(f'pods "{pod_name}" not found in any namespace{pod_hints(api, None, pod_name)}')
    if len(items) > 1:
        spaces = ", ".join(sorted(str(_namespace(p)) for p in items))
        raise TargetNotFound(f'pod "{pod_name}" exists in namespaces {spaces}; pass -n')
    ns = _namespace(items[0])
    if not ns:
        raise ClusterError(f'cannot search pods in all namespaces: the API server answered pod "{pod_name}" '
                           f"without a namespace")
    # found in a list, the pod passes the same shape checks as one read by name: its malformed fields become a gap
    return target_shaped(api, items[0], f'pods "{pod_name}"', f" in namespace {ns}", ns)


def _namespace(item: dict) -> Optional[str]:
    meta = item.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) and ns else None


def evidence_for(api: Api, pod: dict, tail: int = 80) -> Evidence:
    """Everything one pod's diagnosis reads, given the pod object already read (also used by scan and workloads)."""
    pod = dict(pod, kind="Pod", apiVersion="v1")
    ev = Evidence(target=Target("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"]), tail_lines=tail)
    ev.add(pod)
    ev.mark_read("pods")
    ev.collected_at = datetime.now(timezone.utc).replace(microsecond=0)
    node = spec(pod).get("nodeName")
    ev.pod_nodes = {node} if node else set()   # free GPUs are known only where pods were listed
    if not log_requests(pod, tail):
        ev.mark_read("pods/log")   # no container has run or restarted: there is no log to lack, so no gap
    api.run(pod_requests(pod, tail), ev)
    metrics = dcgm.start(api, ev, dcgm.pod_node(ev))   # the GPUs' health, read alongside the follow-up round
    api.run(follow_up_requests(ev), ev, meanwhile=_weigh_nodes(ev, pod))
    dcgm.finish(metrics, ev)
    for stage in LATER_ROUNDS:   # readers whose requests need the follow-up's answers (pods there -> their logs)
        api.run([r for reader in PHASE_READERS for r in getattr(reader, stage, lambda _ev: [])(ev)], ev)
    return ev


def _weigh_nodes(ev: Evidence, pod: dict):
    """For an unscheduled pod, what its scheduling rules weigh on every node that depends on the nodes alone:
    worked out while the follow-up requests are in flight (one node list, no further node reads)."""
    if not podstate.is_unscheduled_pending(pod) or not ev.readable("nodes"):
        return None
    return lambda: placement.node_fit(ev, pod)


def pod_requests(pod: dict, tail: int) -> List[Request]:
    """Everything readable from the pod alone, fetched in one parallel round."""
    ns, uid = pod["metadata"]["namespace"], pod["metadata"].get("uid", "")
    base = f"/api/v1/namespaces/{quote(ns)}"
    reqs = [Request("events", "list", f"{base}/events", {"fieldSelector": f"involvedObject.uid={uid}"}, "Event")]
    if podstate.is_scheduled(pod):   # RuntimeClasses matter from sandbox creation on, never to the scheduler
        reqs.append(Request("runtimeclasses", "list", "/apis/node.k8s.io/v1/runtimeclasses", kind="RuntimeClass"))
    node = spec(pod).get("nodeName")
    if node:
        reqs += [Request("nodes", "get", f"/api/v1/nodes/{quote(node)}", kind="Node"),
                 Request("pods", "list", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={node}"}, "Pod")]
        reqs += node_oom_event_requests(pod)
    elif podstate.is_unscheduled_pending(pod):
        reqs.append(Request("nodes", "list", "/api/v1/nodes", kind="Node", page=NODE_PAGE))
    for claim in claim_names(pod):
        reqs.append(Request("persistentvolumeclaims", "get", f"{base}/persistentvolumeclaims/{quote(claim)}",
                            kind="PersistentVolumeClaim"))
    seen = set()
    for ref in needed_references(pod):
        key = (ref["kind"], ref["name"])
        if key in seen:
            continue
        seen.add(key)
        plural = "secrets" if ref["kind"] == "Secret" else "configmaps"
        # Secrets and ConfigMaps: metadata only — values are never fetched.
        reqs.append(Request(plural, "get", f"{base}/{plural}/{quote(ref['name'])}", kind=ref["kind"], accept=METADATA_ONLY))
    reqs += log_requests(pod, tail)
    for reader in PHASE_READERS:
        reqs += reader.first_round(pod)
    return reqs


def node_oom_event_requests(pod: dict, force: bool = False) -> List[Request]:
    """A container OOM-killed: the kernel's own OOM line for it, which node-problem-detector reports as an
    `OOMKilling` event on the Node (in namespace default, as every Node event), names what the killed process held,
    the figure a memory suggestion is sized from (rules/crash/_memory.py). One field-selected list; refused (a
    namespaced user often may not list events in default), the pod's own events stay readable."""
    node = spec(pod).get("nodeName")
    if not node or not force and not any(podstate.latest_termination(cs).get("reason") == "OOMKilled"
                                         for _, cs, _ in podstate.all_container_states(pod)):
        return []
    selector = f"involvedObject.kind=Node,involvedObject.name={node},reason=OOMKilling"
    return [Request("events", "list", "/api/v1/namespaces/default/events", {"fieldSelector": selector}, "Event",
                    gap_key=NODE_OOM_EVENTS_GAP, about=f"the OOMKilling events of node {node} (namespace default)")]


def child_oom_event_requests(ev: Evidence) -> List[Request]:
    """A container that exited non-zero, not OOMKilled, whose log says a child was SIGKILLed (a DataLoader worker):
    the node's OOMKilling events say whether the kernel's OOM killer did it (the same list as for an OOM kill)."""
    import re
    from ..data.signals import CHILD_SIGKILL
    pod = ev.pod
    if pod is None or node_oom_event_requests(pod) or not spec(pod).get("nodeName"):
        return []
    for c, cs, _ in podstate.all_container_states(pod):
        if podstate.latest_termination(cs).get("exitCode") in (None, 0):
            continue
        for previous in (True, False):
            text = ev.log(pod, c.get("name"), previous) or ""
            if any(re.search(p, text) for p, _, _ in CHILD_SIGKILL):
                return node_oom_event_requests(pod, force=True)
    return []


def needed_references(pod: dict) -> List[dict]:
    """The Secrets and ConfigMaps worth a GET: none for a pod not yet scheduled (nothing reads them before the kubelet
    does); those its volumes name only while it is stuck in creation (once it ran, they were there to mount)."""
    if not podstate.is_scheduled(pod):
        return []
    refs = config_references(pod)
    if podstate.stuck_in_creation(pod):
        return refs
    return [r for r in refs if not r["where"].startswith("volume ")]


def log_requests(pod: dict, tail: int) -> List[Request]:
    """Previous and current log tails of containers that restarted or exited, bounded in lines and bytes."""
    ns, pod_name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    path = f"/api/v1/namespaces/{quote(ns)}/pods/{quote(pod_name)}/log"
    reqs = []
    for c, cs, _ in podstate.all_container_states(pod):
        cname = c["name"]
        bounds = {"container": cname, "tailLines": str(tail), "limitBytes": str(LOG_LIMIT_BYTES)}
        if int(cs.get("restartCount") or 0) > 0 or podstate.last_terminated(cs):
            reqs.append(Request("pods/log", "get", path, dict(bounds, previous="true"), log_key=(ns, pod_name, cname, True)))
        state = cs.get("state") or {}
        if state.get("running") or state.get("terminated"):
            reqs.append(Request("pods/log", "get", path, bounds, log_key=(ns, pod_name, cname, False)))
    return reqs


def follow_up_requests(ev: Evidence) -> List[Request]:
    """Second round: what needs the first round's answers."""
    reqs = gpu_node_pod_requests(ev) + child_oom_event_requests(ev)
    for reader in PHASE_READERS:
        reqs += reader.second_round(ev)
    return reqs


def gpu_node_pod_requests(ev: Evidence) -> List[Request]:
    """Pods on the few GPU nodes that matter to an unscheduled pod (free = allocatable - requests), by field selector,
    never every pod: a GPU node of the requested vendor that advertises none (its own stack may be why), then the
    nodes that advertise what the pod requests — those its selector and taints admit first, most GPUs first."""
    pod = ev.pod
    if not podstate.is_unscheduled_pending(pod) or not ev.readable("nodes"):
        return []
    wanted = gpu_request(pod)
    if not wanted:
        return []
    silent = [n for n in nodeview.stack_nodes(ev, pod) if not any(allocatable(n, r) > 0 for r in wanted)]
    candidates = [n for n in ev.all("Node") if any(allocatable(n, r) > 0 for r in wanted)]
    candidates.sort(key=lambda n: (-_gpus(n), name(n)))
    chosen = list(dict.fromkeys(name(n) for n in silent[:1] + _admitted_first(pod, candidates, MAX_NODE_POD_LISTS)))
    chosen = chosen[:MAX_NODE_POD_LISTS]
    ev.pod_nodes = set(chosen)
    return [Request("pods", "list", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={n}"}, "Pod") for n in chosen]


def _gpus(node: dict) -> int:
    """GPUs of every kind the node advertises (what only its capacity names advertises none)."""
    return sum(count(q) for r, q in (status(node).get("allocatable") or {}).items() if is_gpu_resource(r))


def _admitted_first(pod: dict, nodes: List[dict], k: int) -> List[dict]:
    """The first k of `nodes` with those the pod's selector and taints admit moved ahead (a stable partition), judging
    nodes only until k are admitted: on a big cluster the first few usually are."""
    admitted, blocked = [], []
    for n in nodes:
        (blocked if affinity.selector_failures(pod, n) or placement.blocking_taints(pod, n) else admitted).append(n)
        if len(admitted) == k:
            break
    return (admitted + blocked)[:k]
