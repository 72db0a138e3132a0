"""Reads the directory NVIDIA's GPU Operator must-gather script (hack/must-gather.sh) writes: its YAML dumps (the
operator namespace's pods and DaemonSets, the ClusterPolicy, NVIDIADrivers), the GPU nodes rebuilt from its label
list and `kubectl describe nodes` text, and its per-pod `kubectl logs --prefix --timestamps` files; never the network."""
from __future__ import annotations

import os
import re
from email.utils import parsedate_to_datetime
from typing import Dict, List, Optional, Tuple

from ..kube.timeutil import format_time
from .files import OfflineError, read_tail, read_text

# Files only that script writes: a directory holding one of these and its log is a must-gather.
MARKERS = ("gpu_operand_pods.yaml", "gpu_operator_pod.yaml")
YAML_DUMPS = ("gpu_operator_pod.yaml", "gpu_operand_pods.yaml", "gpu_operand_ds.yaml", "cluster_policy.yaml",
              "nvidiadrivers.yaml")
# What the script saves: the GPU nodes (as text), every pod and DaemonSet of the operator namespace, logs of its
# NVIDIA/GPU pods. Not events, and not the pods of other namespaces (Evidence.stack_only).
SOURCES = ["nodes", "pods", "daemonsets", "clusterpolicies", "nvidiadrivers", "pods/log"]
_PREFIX = re.compile(r"^\[pod/([^/\]]+)/([^\]]+)\] (?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z )?")
_LOG_NAME = re.compile(r"^gpu_operand_pod_(.+?)(\.previous)?\.log$")


def is_mustgather(root: str) -> bool:
    return any(os.path.isfile(os.path.join(root, m)) for m in MARKERS) and not os.path.exists(
        os.path.join(root, "bundle.yaml"))


def read(root: str, read_objects, tail: int = 80):
    """(objects, logs, meta) as offline/load.py's readers return them; `read_objects` parses one YAML file."""
    objects: List[dict] = []
    for fname in YAML_DUMPS:
        full = os.path.join(root, fname)
        if os.path.isfile(full) and os.path.getsize(full):
            objects += read_objects(full)
    nodes = _nodes(root)
    objects += nodes
    if not objects:
        raise OfflineError(f"--from {root}: a must-gather directory without objects")
    namespace = next((o["metadata"].get("namespace") for o in objects if o.get("kind") == "Pod"), None)
    logs = _logs(root, namespace, tail) if namespace else {}
    newest = max((c.get("lastHeartbeatTime") or "" for n in nodes for c in n["status"].get("conditions") or []),
                 default="") or None
    meta = {"sources": SOURCES, "collectedAt": newest, "podNodes": [n["metadata"]["name"] for n in nodes],
            "stackOnly": True}
    return objects, logs, meta


def _logs(root: str, namespace: str, tail: int) -> Dict[Tuple[str, str, str, bool], str]:
    """Each container's lines of `kubectl logs --all-containers --prefix --timestamps`, prefix and time removed."""
    out: Dict[Tuple[str, str, str, bool], List[str]] = {}
    for fname in sorted(os.listdir(root)):
        m = _LOG_NAME.match(fname)
        if not m:
            continue
        text = read_tail(os.path.join(root, fname), 100_000) or ""
        for line in text.splitlines(keepends=True):
            p = _PREFIX.match(line)
            if p and p.group(1) == m.group(1):
                out.setdefault((namespace, p.group(1), p.group(2), bool(m.group(2))), []).append(line[p.end():])
    return {k: "".join(v[-tail:]) for k, v in out.items()}


# --- the GPU nodes, from gpu_nodes.labels and gpu_nodes.descr ----------------------------------------------------

def _nodes(root: str) -> List[dict]:
    labels = _labels(os.path.join(root, "gpu_nodes.labels"))
    described = _describe(os.path.join(root, "gpu_nodes.descr"))
    out = []
    for name in list(dict.fromkeys(list(labels) + list(described))):
        d = described.get(name, {})
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": labels.get(name) or d.get("labels") or {},
                                 "creationTimestamp": d.get("created")},
                    "spec": {k: v for k, v in (("taints", d.get("taints")), ("unschedulable", d.get("unschedulable")))
                             if v},
                    "status": {"capacity": d.get("Capacity", {}), "allocatable": d.get("Allocatable", {}),
                               "conditions": d.get("conditions", [])}})
    return out


def _labels(path: str) -> Dict[str, Dict[str, str]]:
    """The script's label list: a node name, then `- key=value` lines (its sed turns ':' into '=' too)."""
    if not os.path.isfile(path):
        return {}
    out: Dict[str, Dict[str, str]] = {}
    current: Optional[str] = None
    for line in read_text(path).splitlines():
        if line.startswith("- ") and current and "=" in line:
            key, _, value = line[2:].partition("=")
            out[current][key.strip()] = value.strip()
        elif line.strip():
            current = line.strip()
            out.setdefault(current, {})
    return out


def _when(text: str) -> Optional[str]:
    try:
        return format_time(parsedate_to_datetime(text.strip()))
    except (TypeError, ValueError, IndexError):
        return None


def _describe(path: str) -> Dict[str, dict]:
    """kubectl describe nodes: per node its Capacity/Allocatable blocks, taints, cordon, conditions, age."""
    if not os.path.isfile(path):
        return {}
    out: Dict[str, dict] = {}
    node: Optional[dict] = None
    block = None
    for line in read_text(path).splitlines():
        head = re.match(r"^([A-Z][A-Za-z ]+):\s*(.*)$", line)
        if head:
            key, value = head.group(1), head.group(2)
            block = key
            if key == "Name":
                node = out.setdefault(value.strip(), {"conditions": []})
            elif node is None:
                continue
            elif key == "CreationTimestamp":
                node["created"] = _when(value)
            elif key == "Unschedulable":
                node["unschedulable"] = value.strip() == "true"
            elif key == "Taints":
                node["taints"] = [] if value.strip() == "<none>" else [_taint(value)]
            elif key in ("Capacity", "Allocatable"):
                node[key] = {}
            continue
        if node is None or not line.startswith(" "):
            continue
        if block == "Taints" and line.strip():
            node["taints"].append(_taint(line))
        elif block in ("Capacity", "Allocatable") and ":" in line:
            key, _, value = line.strip().partition(":")
            node[block][key.strip()] = value.strip()
        elif block == "Conditions":
            cols = re.split(r"\s{2,}", line.strip())
            if len(cols) >= 5 and cols[0] not in ("Type", "----"):
                node["conditions"].append({"type": cols[0], "status": cols[1], "lastHeartbeatTime": _when(cols[2]),
                                           "lastTransitionTime": _when(cols[3]), "reason": cols[4],
                                           "message": cols[5] if len(cols) > 5 else ""})
    return out


def _taint(text: str) -> dict:
    """`key=value:Effect` or `key:Effect`, as kubectl describe prints a taint."""
    spec, _, effect = text.strip().rpartition(":")
    key, _, value = spec.partition("=")
    return {"key": key, "effect": effect, **({"value": value} if value else {})}
