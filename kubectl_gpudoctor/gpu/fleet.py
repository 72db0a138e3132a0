"""The whole fleet's GPU picture for `nodes`: one evidence per GPU node (its pods slimmed to what the counts need),
a row per node and GPU resource, free GPUs by model and profile, and the nodes that cannot run GPU pods grouped by
the node rules' root cause; pure, no I/O."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from ..evidence import Evidence, Target
from ..kube import podstate
from ..kube.objects import name, node_ready, spec, taints
from . import nodeview
from .stack import component_of, component_pods, is_ready

# The GPU Operator's own NoSchedule taint on GPU nodes is tolerated by GPU pods: it does not keep them off.
GPU_TAINT_KEYS = ("nvidia.com/gpu", "amd.com/gpu")
SOURCES = ("nodes", "pods")   # what `nodes` reads for every node (the rest is not collected for a fleet)


def slim_pod(pod: dict) -> dict:
    """What the counts read of a pod that is not part of the GPU stack: names, node, requests, phase (a fleet's
    tens of thousands of pods are not held whole). GPU-stack pods are kept whole: the node rules read them."""
    if component_of(pod) is not None:
        return dict(pod, kind="Pod", apiVersion="v1")
    meta, sp = pod.get("metadata") or {}, pod.get("spec") or {}
    keep = lambda cs: [{"name": c.get("name"), "resources": c.get("resources") or {}} for c in cs or []]
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid")},
            "spec": {"nodeName": sp.get("nodeName"), "containers": keep(sp.get("containers")),
                     "initContainers": keep(sp.get("initContainers")), "overhead": sp.get("overhead")},
            "status": {"phase": (pod.get("status") or {}).get("phase")}}


def node_evidence(nodes: Iterable[dict], pods: Iterable[dict], extra: Iterable[dict] = (), collected_at=None,
                  gaps=()) -> List[Evidence]:
    """One evidence per GPU node: the node, the pods on it, the cluster-wide objects (ClusterPolicy) in `extra`."""
    by_node: Dict[str, List[dict]] = {}
    for p in pods:
        node_name = (p.get("spec") or {}).get("nodeName")
        if node_name:
            by_node.setdefault(node_name, []).append(p)
    extra = list(extra)
    out = []
    for node in nodes:
        if not nodeview.is_gpu_node(node):
            continue
        ev = Evidence(target=Target("Node", name(node)), collected_at=collected_at)
        ev.objects["Node"] = [dict(node, kind="Node", apiVersion="v1")]
        ev.objects["Pod"] = by_node.get(name(node), [])
        for obj in extra:
            ev.add(obj)
        ev.sources = set(SOURCES) | {"clusterpolicies"}
        ev.pod_nodes = {name(node)}
        for g in gaps:
            ev.add_gap(g)
        out.append(ev)
    return out


def _model(node: dict) -> Optional[str]:
    product = nodeview.gpu_facts(node).get("product")
    return str(product).replace("NVIDIA-", "") if product else None


def _blocking_taints(node: dict) -> List[str]:
    return [f"{t.get('key')}:{t.get('effect')}" for t in taints(node)
            if t.get("key") not in GPU_TAINT_KEYS and t.get("effect") in ("NoSchedule", "NoExecute")]


def _operator_failing(ev: Evidence, node: dict) -> List[str]:
    out = []
    for comp, pod in component_pods(ev, node):
        done = comp.one_shot and (pod.get("status") or {}).get("phase") == "Succeeded"
        if not (is_ready(pod) or done):
            out.append(f"{comp.key}:{podstate.display_status(pod)}")
    return out


def node_rows(ev: Evidence) -> List[dict]:
    """One row per GPU-counting resource of the node (MIG profiles and shared replicas are resources too)."""
    node = ev.node
    facts = nodeview.gpu_facts(node)
    ready = node_ready(node)
    common = {"node": name(node), "model": _model(node), "driver": facts.get("driver"), "cuda": facts.get("cuda"),
              "ready": ready == "True", "cordoned": bool(spec(node).get("unschedulable")),
              "taints": _blocking_taints(node), "operatorFailing": _operator_failing(ev, node)}
    rows = []
    for r in nodeview.resource_rows(ev, node):
        res = r["resource"]
        if not (nodeview.counts_gpus(res) or res.endswith("(DRA)")):
            continue
        rows.append(dict(common, resource=res, capacity=r["capacity"], allocatable=r["allocatable"],
                         requested=r["requested"], free=r["free"],
                         unhealthy=max(0, int(r["capacity"]) - int(r["allocatable"]))))
    return rows


def schedulable(row: dict) -> bool:
    return row["ready"] and not row["cordoned"] and not row["taints"]


def free_summary(rows: List[dict]) -> List[dict]:
    """Free GPUs by resource and model: how many, on how many nodes, and the most one pod can get on one node."""
    groups: Dict[Tuple[str, str], dict] = {}
    for r in rows:
        g = groups.setdefault((r["resource"], r["model"] or "-"), {
            "resource": r["resource"], "model": r["model"], "nodes": 0, "allocatable": 0, "free": 0,
            "schedulableFree": 0, "largestFree": 0, "unknownNodes": 0})
        g["nodes"] += 1
        g["allocatable"] += int(r["allocatable"])
        if r["free"] is None:   # its pods were not all listed: what is free there is unknown, not all of it
            g["unknownNodes"] += 1
            continue
        free = max(0, int(r["free"] or 0))   # a node whose plugin stopped advertising holds more than it has
        g["free"] += free
        if schedulable(r):
            g["schedulableFree"] += free
            g["largestFree"] = max(g["largestFree"], free)
    return sorted(groups.values(), key=lambda g: (g["resource"], g["model"] or ""))


def unavailable(causes: Dict[str, Tuple[str, str]]) -> List[dict]:
    """node -> (rule id, title) of the nodes that cannot run GPU pods, grouped by rule id, biggest group first."""
    groups: Dict[str, dict] = {}
    for node_name, (rule_id, title) in sorted(causes.items()):
        g = groups.setdefault(rule_id, {"cause": rule_id, "title": title, "nodes": []})
        g["nodes"].append(node_name)
    return sorted(groups.values(), key=lambda g: (-len(g["nodes"]), g["cause"]))

