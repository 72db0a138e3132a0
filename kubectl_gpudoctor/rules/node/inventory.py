"""The node view's GPU inventory: what the node has (GFD facts, GPU-counting resources, DRA devices) and who uses it."""
from __future__ import annotations

import re

from ...gpu import stack as gpustack, nodeview
from ...data import gpu_operator as go
from ...kube.objects import is_gpu_resource, name
from ._common import node_target
from ..registry import DEFAULT, Hit, rule


def _facts(node) -> list:
    facts = nodeview.gpu_facts(node)
    parts = []
    if facts.get("product"):
        head = f"{facts['count']} x {facts['product']}" if facts.get("count") else facts["product"]
        parts.append(head + (f" ({facts['memory']})" if facts.get("memory") else ""))
    parts += [f"{k} {facts[k]}" for k in ("driver", "cuda") if facts.get(k)]
    if facts.get("migStrategy") and facts["migStrategy"] != "none":
        parts.append(f"MIG strategy {facts['migStrategy']}")
    return parts


def _counts(ev, node, known: bool) -> list:
    parts = []
    for row in nodeview.resource_rows(ev, node):
        res = row["resource"]
        if not (res.startswith("rdma/") or re.match(r"^(nvidia\.com|amd\.com|gpu\.intel\.com)/", res)) \
                or (is_gpu_resource(res) and not nodeview.counts_gpus(res)):
            continue   # Intel's millicores / memory.max / monitoring are shares of the GPUs, not GPUs
        used = f", {row['requested']} requested, {row['free']} free" if known else ""
        parts.append(f"{res}: {row['allocatable']} allocatable{used}")
    for vendor in sorted(nodeview.gpu_vendors(node)):   # GPUs a DRA driver publishes, and the claims holding them
        count = nodeview.dra_devices(ev, node, vendor)
        if count:
            held = nodeview.dra_allocated(ev, node, vendor) if ev.readable("resourceclaims") else None
            used = f", {held} allocated to claims, {count - held} free" if held is not None else ""
            parts.append(f"{go.DRA_GPU_DRIVERS[vendor]} (DRA): {count} device(s) in ResourceSlices{used}")
    return parts


@rule("gpu-inventory", phase="node", severity="info", rank=DEFAULT,
      applies=lambda ev: node_target(ev) and nodeview.is_gpu_node(ev.node), targets=("Node",),
      title="GPU inventory of the node",
      remediation="Nothing to fix: this is what the node has and who uses it.")
def gpu_inventory(ev):
    """Always on a GPU node: product, count, memory, driver/CUDA versions, MIG, allocatable/used/free, GPU pods."""
    node = ev.node
    known = gpustack.all_pods_known(ev, name(node))
    parts = _facts(node) + _counts(ev, node, known)
    holders = {(r["namespace"], r["pod"]) for r in nodeview.gpu_pod_rows(ev, node)} if known else set()
    holders |= {h for v in nodeview.gpu_vendors(node) for h in nodeview.dra_holders(ev, node, v)}
    tail = f"; {len(holders)} pod(s) hold GPUs" if known else \
        "; GPU pods unknown (the node's pods could not be listed)"
    msg = (("; ".join(parts) or "no GPU feature discovery labels") + tail + ".")
    return Hit(msg if "/" in msg.split(":")[0] else msg[0].upper() + msg[1:], [], summary=f"GPU inventory of {name(node)}")
