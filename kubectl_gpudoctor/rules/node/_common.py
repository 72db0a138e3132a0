"""Helpers of the node rules: which nodes they judge (the target node, the node under a pod, or the GPU nodes an
unscheduled GPU pod waits for), the vendors that matter there, node events and age; no rules, no I/O."""
from __future__ import annotations

from typing import Callable, Optional, Set

from ...gpu import stack as gpustack, nodeview
from ...kube import podstate
from ...evidence import Evidence
from ...kube.objects import gpu_request, meta, name, spec
from ...kube.timeutil import seconds_between
from ..registry import Hit, Line, Unknown

# A node younger than this that advertises no GPU yet is probably still installing its GPU stack.
NEW_NODE_S = 15 * 60


# --- applicability: the node view of a GPU node, a GPU pod in trouble on its node, a GPU pod waiting for one -----

def node_target(ev: Evidence) -> bool:
    return ev.target.kind == "Node" and ev.node is not None


def troubled_gpu_pod(ev: Evidence) -> bool:
    """A pod on a node that requests GPUs and is not healthy: its node's GPU stack may be the reason."""
    pod = ev.pod
    return (pod is not None and bool(spec(pod).get("nodeName")) and bool(gpu_request(pod))
            and podstate.health(pod) != "healthy")


def waiting_gpu_pod(ev: Evidence) -> bool:
    """An unscheduled pod that requests GPUs: the GPU nodes' own stack may be why none can take it."""
    return ev.pod is not None and podstate.is_unscheduled_pending(ev.pod) and bool(gpu_request(ev.pod))


def on_gpu_node(ev: Evidence) -> bool:
    if ev.target.kind == "Node":
        return nodeview.is_gpu_node(ev.node)
    return troubled_gpu_pod(ev) or waiting_gpu_pod(ev)


def vendors(ev: Evidence, node: dict) -> Set[str]:
    """The GPU vendors that matter here: the node's, plus the ones a pod's request names."""
    out = set(nodeview.gpu_vendors(node))
    if ev.pod is not None:
        out |= nodeview.request_vendors(ev.pod)
    return out


def node_or_unknown(ev: Evidence):
    """The node under the target, or an Unknown when it could not be read (None when there is no node)."""
    if ev.node is not None:
        return ev.node
    gap = ev.gap("nodes")
    return Unknown.from_gap(gap) if gap else None


def each_node(ev: Evidence, check: Callable):
    """`check(ev, node)` on the node under the target, or on each GPU node an unscheduled GPU pod waits for: the
    first hit (naming the other nodes where it holds too), else the first Unknown, else None."""
    if not waiting_gpu_pod(ev):
        node = node_or_unknown(ev)
        return check(ev, node) if isinstance(node, dict) else node
    hits, unknown = [], None
    for node in nodeview.stack_nodes(ev, ev.pod):
        res = check(ev, node)
        if isinstance(res, Hit):
            res.values.setdefault("node", name(node))   # the pod has no node: $node is the one judged
            hits.append((node, res))
        elif isinstance(res, Unknown):
            unknown = unknown or res
    if not hits:
        return unknown
    hit = hits[0][1]
    if len(hits) > 1:
        hit.message += " The same holds on node(s) " + ", ".join(name(n) for n, _ in hits[1:5]) + "."
    return hit


def dra_unknown(ev: Evidence, node: dict) -> Optional[Unknown]:
    """A GPU DRA driver's kubelet plugin runs on the node but the ResourceSlices that would list its GPUs are unreadable."""
    if ev.readable("resourceslices") or not gpustack.dra_plugin_pods(ev, node):
        return None
    gap = ev.gap("resourceslices")
    return Unknown(f"{gap.needs() if gap else 'not checked'}: a DRA driver runs on the node, so its GPUs may be "
                   f"published as ResourceSlices instead of an allocatable resource")


def node_line(node: dict, what: str, text: str) -> Line:
    return Line("node", f"nodes/{name(node)}.{what}", text)


def node_events(ev: Evidence, node: dict) -> list:
    """Events about the node, oldest first (Evidence matches the kubelet's name-as-uid node events)."""
    return ev.events_for(dict(node, kind="Node"))


def age_s(ev: Evidence, node: dict) -> Optional[float]:
    return seconds_between(meta(node).get("creationTimestamp"), ev.now())
