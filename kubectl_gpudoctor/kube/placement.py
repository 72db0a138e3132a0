"""Where a pod could run: nodes that advertise its device resources, free capacity, and which scheduler
predicate (selector, taint, availability, volume, pod affinity, capacity) actually blocks it; pure functions."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set

from ..data import gpu_resources
from . import affinity, storage
from ..evidence import Evidence
from ..record import field, record
from .objects import (allocatable, free, gpu_request, is_terminated, labels, meta, name, namespace, netdev_request,
                      node_ready, pod_requests, spec, status, tolerates, untolerated_taints, used)
from .quantity import parse_quantity

# Taints the node lifecycle controller sets for conditions; tolerating them is not the fix.
CONDITION_TAINT_PREFIX = "node.kubernetes.io/"
STRUCTURAL = ("selector", "taint", "unavailable", "volume", "affinity")
CORE = ("cpu", "memory", "ephemeral-storage")


def requested(pod: dict) -> Dict[str, int]:
    """Device resources the scheduler must find on a node: GPU-class and network-device resources (not the shares a
    scheduler extender tracks off the node, such as HAMi's nvidia.com/gpumem)."""
    out = {r: n for r, n in gpu_request(pod).items() if gpu_resources.lookup(r).advertised}
    out.update(netdev_request(pod))
    return out


def advertising(nodes: Iterable[dict], res: str) -> List[dict]:
    return [n for n in nodes if allocatable(n, res) > 0]


def advertised_anywhere(nodes: Iterable[dict], res: str) -> bool:
    return any(allocatable(n, res) > 0 for n in nodes)


def candidates(ev: Evidence, pod: dict) -> List[dict]:
    """Nodes that advertise every device resource the pod requests (every node for a pod that requests none)."""
    wanted = requested(pod)
    return [n for n in ev.all("Node") if all(allocatable(n, r) > 0 for r in wanted)]


def knows_free(ev: Evidence, node: dict) -> bool:
    """Free capacity is known when the pods on that node were listed."""
    return ev.readable("pods") and (ev.pod_nodes is None or name(node) in ev.pod_nodes)


def shortfall(ev: Evidence, pod: dict, node: dict) -> Dict[str, tuple]:
    """Resources the node lacks for the pod: {res: (need, free)}; free counted only when known."""
    out = {}
    pods = ev.all("Pod")
    key = ("requested", meta(pod).get("uid"), name(pod))   # asked once per node of the cluster: read the pod once
    if key not in ev.memo:
        ev.memo[key] = requested(pod)
    for res, need in ev.memo[key].items():
        have = free(node, pods, res) if knows_free(ev, node) else allocatable(node, res)
        if have < need:
            out[res] = (need, have)
    return out


def core_shortfall(ev: Evidence, pod: dict, node: dict) -> Optional[Dict[str, tuple]]:
    """cpu / memory / ephemeral-storage / pod slots the node lacks: {res: (need, free, allocatable)};
    None when the node's pods were not listed (free unknown)."""
    if not knows_free(ev, node):
        return None
    want = pod_requests(pod)
    others = [p for p in ev.pods_on(name(node)) if not is_terminated(p) and meta(p).get("uid") != meta(pod).get("uid")]
    alloc = status(node).get("allocatable") or {}
    out = {}
    for res in CORE:
        need = want.get(res, 0)
        if need and res in alloc:
            have = float(parse_quantity(alloc[res]) or 0)
            left = have - sum(pod_requests(p).get(res, 0) for p in others)
            if left < need:
                out[res] = (need, left, have)
    slots = float(parse_quantity(alloc.get("pods")) or 0)
    if slots and len(others) + 1 > slots:
        out["pods"] = (1, slots - len(others), slots)
    return out


def fitting_nodes(ev: Evidence, pod: dict) -> List[dict]:
    """Nodes with enough of every requested device resource (ignoring taints, selectors, affinity)."""
    return [n for n in ev.all("Node") if not shortfall(ev, pod, n)]


def gpu_table(ev: Evidence, res: str, nodes: Optional[List[dict]] = None) -> List[dict]:
    """allocatable / used / free of one resource on every node that advertises it."""
    pods = ev.all("Pod")
    rows = []
    for n in advertising(ev.all("Node") if nodes is None else nodes, res):
        known = knows_free(ev, n)
        rows.append({"node": name(n), "resource": res, "allocatable": allocatable(n, res),
                     "used": used(n, pods, res) if known else None,
                     "free": free(n, pods, res) if known else None})
    return rows


def blocking_taints(pod: dict, node: dict, include_conditions: bool = False) -> List[dict]:
    return [t for t in untolerated_taints(pod, node)
            if include_conditions or not (t.get("key") or "").startswith(CONDITION_TAINT_PREFIX)]


def unavailable(pod: dict, node: dict) -> str:
    """Why the node takes no new pods at all: cordoned, NotReady/unreachable (condition taints); "" if it does."""
    if spec(node).get("unschedulable") and not tolerates(pod, {"key": "node.kubernetes.io/unschedulable",
                                                               "effect": "NoSchedule"}):
        return "cordoned (spec.unschedulable)"
    cond = [t for t in untolerated_taints(pod, node, ("NoSchedule",)) if t.get("key", "").startswith(CONDITION_TAINT_PREFIX)]
    if cond:
        return "taint " + ", ".join(f"{t['key']}:{t['effect']}" for t in cond)
    ready = node_ready(node)
    if ready != "True" and not tolerates(pod, {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}):
        return "Ready=" + ready
    return ""


def toleration_snippet(taints: Iterable[dict]) -> str:
    lines = ["tolerations:"]
    seen = set()
    for t in taints:
        key = (t.get("key"), t.get("value"), t.get("effect"))
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"- key: {t.get('key')}")
        if t.get("value"):
            lines += ["  operator: Equal", f"  value: \"{t['value']}\""]
        else:
            lines.append("  operator: Exists")
        if t.get("effect"):  # without an effect the toleration matches every effect
            lines.append(f"  effect: {t['effect']}")
    return "\n".join(lines)


def holders(ev: Evidence, node: dict, res: str) -> List[str]:
    """`namespace/pod (n)` for the non-terminated pods holding a resource on a node."""
    out: List[str] = []
    for p in ev.all("Pod"):
        if spec(p).get("nodeName") == name(node) and not is_terminated(p):
            n = int(pod_requests(p).get(res, 0))
            if n:
                out.append(f"{namespace(p)}/{name(p)} ({n})")
    return out


# --- inter-pod affinity on one node ---------------------------------------------------------

def _domain(ev: Evidence, p: dict, key: str) -> Optional[str]:
    node = ev.get("Node", spec(p).get("nodeName") or "")
    return labels(node).get(key) if node else None


def affinity_failure(ev: Evidence, pod: dict, node: dict) -> Optional[str]:
    """Why required pod (anti-)affinity excludes the node; "" when satisfied; None when the peers are unknown."""
    terms = affinity.required_pod_terms(pod)
    anti = affinity.required_pod_terms(pod, "podAntiAffinity")
    if not terms and not anti:
        return ""
    if not all(affinity.peers_listed(ev, t, pod) for t in terms + anti):
        return None
    pods = [p for p in ev.all("Pod") if meta(p).get("uid") != meta(pod).get("uid")]
    node_labels = labels(node)
    matched = {i: affinity.peers(pods, t, pod) for i, t in enumerate(terms)}
    first_pod = not any(matched.values()) and all(affinity.pod_matches_term(pod, t, pod) for t in terms)
    for i, term in enumerate(terms):
        key = term.get("topologyKey", "")
        if key not in node_labels:
            return f"podAffinity needs node label {key}"
        domains = {_domain(ev, p, key) for p in matched[i]} - {None}
        if node_labels[key] not in domains and not first_pod:
            where = ", ".join(sorted(domains)) or "nowhere (no such pod is running)"
            return f"podAffinity: {affinity.term_text(term, pod)} are in {key}={where}"
    for term in anti:
        key = term.get("topologyKey", "")
        if key in node_labels and node_labels[key] in {_domain(ev, p, key) for p in affinity.peers(pods, term, pod)}:
            return f"podAntiAffinity: {affinity.term_text(term, pod)} already run in {key}={node_labels[key]}"
    return ""


# --- which predicate blocks -------------------------------------------------------------------

@record
class NodeView:
    node: dict
    fails: Dict[str, object] = field(default_factory=dict)
    unknown: Set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return name(self.node)


def analyse(ev: Evidence, pod: dict) -> List[NodeView]:
    """Every structural predicate evaluated on every candidate node (nodes that advertise the resources).
    Several rules ask; on a big cluster each answer costs every node, so it is remembered for the same evidence
    and every rule reads the same views (rules are pure: they never change what they read)."""
    key = ("analyse",) + _held(ev, pod)
    if key not in ev.memo:
        ev.memo[key] = _analyse(ev, pod)
    return list(ev.memo[key])


def _held(ev: Evidence, pod: dict) -> tuple:
    """What a remembered per-pod reading depends on: the pod, and how many objects of each kind are held."""
    return meta(pod).get("uid"), name(pod), tuple(sorted((k, len(v)) for k, v in ev.objects.items()))


def node_fit(ev: Evidence, pod: dict) -> List[tuple]:
    """(node, selector failures, blocking taints, unavailability) of every candidate node: what the pod and the
    node alone decide, remembered while the nodes held are the same (the collector works it out while the last
    requests are in flight; analyse reads it after)."""
    key = ("node_fit", meta(pod).get("uid"), name(pod), len(ev.all("Node")))
    if key not in ev.memo:
        ev.memo[key] = [(n, affinity.selector_failures(pod, n), blocking_taints(pod, n), unavailable(pod, n))
                        for n in candidates(ev, pod)]
    return ev.memo[key]


def _analyse(ev: Evidence, pod: dict) -> List[NodeView]:
    views = []
    # Volumes and pod (anti-)affinity are weighed per node only when the pod has any (once per node of the cluster).
    claims = bool(storage.pod_claims(pod))
    peers = bool(affinity.required_pod_terms(pod) or affinity.required_pod_terms(pod, "podAntiAffinity"))
    for n, selector, taint, unusable in node_fit(ev, pod):
        v = NodeView(n)
        checks = {"selector": selector, "taint": taint, "unavailable": unusable,
                  "volume": storage.volume_failures(ev, pod, n) if claims else [],
                  "affinity": affinity_failure(ev, pod, n) if peers else ""}
        for pred, result in checks.items():
            if result is None:
                v.unknown.add(pred)
            elif result:
                v.fails[pred] = result
        views.append(v)
    return views


def selected(views: List[NodeView]) -> List[NodeView]:
    """Nodes the pod's own selector picks; all candidates when it picks none (that is its own finding)."""
    picked = [v for v in views if "selector" not in v.fails]
    return picked or views


def deciding(views: List[NodeView], pred: str) -> List[NodeView]:
    """The nodes on which `pred` decides: selected nodes that pass every other structural predicate
    (all selected nodes when none does: several predicates block together)."""
    if pred == "selector":
        return views    # the pod's own choice: it blocks only when it excludes every candidate
    pool = selected(views)
    others = [p for p in STRUCTURAL if p not in (pred, "selector")]
    clean = [v for v in pool if not any(p in v.fails for p in others)]
    return clean or pool


def blocks(views: List[NodeView], pred: str) -> Optional[str]:
    """"blocks" when `pred` excludes every deciding node, "unknown" when it might, None when some node passes."""
    if not views:
        return None
    pool = deciding(views, pred)
    if any(pred not in v.fails and pred not in v.unknown for v in pool):
        return None
    return "blocks" if all(pred in v.fails for v in pool) else "unknown"


def room(ev: Evidence, pod: dict) -> List[NodeView]:
    """The capacity pool's nodes that lack nothing the pod requests (free where known, else allocatable): asked by
    insufficient-gpu and insufficient-node-resources alike, so remembered with the analysis it reads."""
    key = ("room", len(ev.pod_nodes or ())) + _held(ev, pod)
    if key not in ev.memo:
        ev.memo[key] = [v for v in capacity_pool(analyse(ev, pod)) if not shortfall(ev, pod, v.node)]
    return list(ev.memo[key])


def capacity_pool(views: List[NodeView]) -> List[NodeView]:
    """Selected nodes that pass every structural predicate (all selected nodes when none does)."""
    pool = selected(views)
    clean = [v for v in pool if not v.fails]
    return clean or pool
