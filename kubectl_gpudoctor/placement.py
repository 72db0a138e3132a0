"""Where a pod could run: nodes that advertise its GPU resources, free capacity, taints; pure functions."""
from __future__ import annotations

from typing import Dict, Iterable, List

from .evidence import Evidence
from .k8s import (allocatable, free, gpu_request, is_terminated, name, namespace, netdev_request, pod_requests,
                  spec, untolerated_taints, used)

# Taints the node lifecycle controller sets for conditions; tolerating them is not the fix.
CONDITION_TAINT_PREFIX = "node.kubernetes.io/"


def requested(pod: dict) -> Dict[str, int]:
    """Device resources the scheduler must find: GPU-class and network-device resources."""
    out = dict(gpu_request(pod))
    out.update(netdev_request(pod))
    return out


def advertising(nodes: Iterable[dict], res: str) -> List[dict]:
    return [n for n in nodes if allocatable(n, res) > 0]


def knows_free(ev: Evidence, node: dict) -> bool:
    """Free capacity is known when the pods on that node were listed."""
    return ev.readable("pods") and (ev.pod_nodes is None or name(node) in ev.pod_nodes)


def shortfall(ev: Evidence, pod: dict, node: dict) -> Dict[str, tuple]:
    """Resources the node lacks for the pod: {res: (need, free)}; free counted only when known."""
    out = {}
    pods = ev.all("Pod")
    for res, need in requested(pod).items():
        have = free(node, pods, res) if knows_free(ev, node) else allocatable(node, res)
        if have < need:
            out[res] = (need, have)
    return out


def fitting_nodes(ev: Evidence, pod: dict) -> List[dict]:
    """Nodes with enough of every requested device resource (ignoring taints, selectors, affinity)."""
    return [n for n in ev.all("Node") if not shortfall(ev, pod, n)]


def gpu_table(ev: Evidence, res: str) -> List[dict]:
    """allocatable / used / free of one resource on every node that advertises it."""
    pods = ev.all("Pod")
    rows = []
    for n in advertising(ev.all("Node"), res):
        known = knows_free(ev, n)
        rows.append({"node": name(n), "resource": res, "allocatable": allocatable(n, res),
                     "used": used(n, pods, res) if known else None,
                     "free": free(n, pods, res) if known else None})
    return rows


def blocking_taints(pod: dict, node: dict, include_conditions: bool = False) -> List[dict]:
    return [t for t in untolerated_taints(pod, node)
            if include_conditions or not (t.get("key") or "").startswith(CONDITION_TAINT_PREFIX)]


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

