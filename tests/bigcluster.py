"""A stand-in cluster of 2,000 nodes and 40,000 pods (tests/test_node_scale.py) plus a Pending 8-GPU pod that
waits for GPUs on it, shaped like the shipped example (examples/pending-fragmented-gpus)."""
import copy
import os

import yaml

from tests.conftest import ROOT
from tests.test_node_scale import NODES, stand_in_cluster

EXAMPLE = os.path.join(ROOT, "examples", "pending-fragmented-gpus", "objects.yaml")
PENDING = ("ml", "llm-finetune-0")
GPU_NODES = NODES * 3 // 4   # every fourth node of the stand-in is a CPU node
# kube-scheduler's wording (as in the example), with this cluster's counts.
UNSCHEDULABLE = (f"0/{NODES} nodes are available: {NODES - GPU_NODES} node(s) didn't match Pod's node affinity/selector, "
                 f"{GPU_NODES} Insufficient nvidia.com/gpu. preemption: 0/{NODES} nodes are available: "
                 f"{NODES - GPU_NODES} Preemption is not helpful for scheduling, {GPU_NODES} No preemption victims "
                 "found for incoming pod.")


def pending_pod_objects():
    """The example's Pending pod, its FailedScheduling event and its Job, with this cluster's scheduler message."""
    with open(EXAMPLE, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    out = []
    for doc in copy.deepcopy(docs):
        if doc["kind"] == "Pod" and doc["metadata"]["name"] == PENDING[1]:
            for cond in doc["status"]["conditions"]:
                cond["message"] = UNSCHEDULABLE
        elif doc["kind"] == "Event" and doc["reason"] == "FailedScheduling":
            doc["message"] = UNSCHEDULABLE
        elif doc["kind"] in ("Node", "Pod"):
            continue   # the example's own small cluster is replaced by the stand-in
        out.append(doc)
    return out


def big_cluster(pods=None):
    """Nodes, pods and DaemonSets of the stand-in (`pods`: fewer pods, same shape) plus the Pending GPU pod."""
    if pods is None:
        objects = stand_in_cluster()
    else:
        from tests import test_node_scale as scale
        saved, scale.PODS = scale.PODS, pods
        try:
            objects = stand_in_cluster()
        finally:
            scale.PODS = saved
    return objects + pending_pod_objects()
