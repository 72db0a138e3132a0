"""Crash rule from the GPU's own health: the pod's CUDA error happened on a GPU that dcgm-exporter reports failed."""
from __future__ import annotations

from ...data import xid as xids
from ...gpu import dcgm
from ...kube.objects import name
from ..node import health
from ..node._common import troubled_gpu_pod
from ..registry import SPECIFIC, Hit, rule


@rule("gpu-failed-under-pod", phase="crash", severity="critical", rank=SPECIFIC, applies=troubled_gpu_pod,
      targets=("Pod",), needs=("pods/log",),
      title="The pod's CUDA error comes from a failed GPU",
      remediation="The code is not at fault: drain $node so the pod is recreated on healthy GPUs, and have GPU "
                  "$gpu reset or replaced ($action).",
      snippet="kubectl cordon $node\nkubectl drain $node --ignore-daemonsets --delete-emptydir-data")
def gpu_failed_under_pod(ev):
    """The pod's log holds a CUDA/NCCL error and dcgm-exporter names one of the pod's own GPUs with a critical Xid."""
    cuda = health.cuda_fault_line(ev)
    node = ev.node
    if cuda is None or node is None:
        return None
    _, gpus, _ = dcgm.node_gpus(ev, node)
    for g in dcgm.pod_gpus(gpus or [], ev.pod):
        bad = dcgm.critical_xids(g)
        if bad:
            entry = xids.lookup(bad[0])
            msg = (f"The container's error \"{cuda.text[:160]}\" came from GPU {g['index']} {g['uuid']} on node "
                   f"{name(node)}, which reported Xid {bad[0]} ({xids.meaning(bad[0])}), {dcgm.xid_age(g, bad[0])}.")
            return Hit(msg, [cuda], values={"gpu": g["index"], "action": entry.action if entry else xids.RESET_GPU},
                       summary=f"GPU {g['index']} on {name(node)} failed (Xid {bad[0]}) under the pod")
    return None
