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
    for g in _own_gpus(ev) if cuda is not None else []:
        bad = dcgm.critical_xids(g)
        if bad:
            entry = xids.lookup(bad[0])
            msg = (f"The container's error \"{cuda.text[:160]}\" came from GPU {g['index']} {g['uuid']} on node "
                   f"{name(node)}, which reported Xid {bad[0]} ({xids.meaning(bad[0])}), {dcgm.xid_age(g, bad[0])}.")
            return Hit(msg, [cuda], values={"gpu": g["index"], "action": entry.action if entry else xids.RESET_GPU},
                       summary=f"GPU {g['index']} on {name(node)} failed (Xid {bad[0]}) under the pod")
    return None


def _own_gpus(ev):
    """The GPUs of the pod's node that dcgm-exporter says the pod holds (none when the node is unknown)."""
    if ev.node is None:
        return []
    _, gpus, _ = dcgm.node_gpus(ev, ev.node)
    return dcgm.pod_gpus(gpus or [], ev.pod)


SHARED_FULL = 0.9   # framebuffer in use on a shared GPU above which a tenant's CUDA OOM is the neighbours' doing


@rule("gpu-shared-memory-full", phase="crash", severity="critical", rank=SPECIFIC, applies=troubled_gpu_pod,
      targets=("Pod",), needs=("pods/log",),
      title="Another pod holds the memory of the shared GPU",
      remediation="The GPU is shared (time-slicing or MPS) and its memory is not divided: give $pod a GPU of its own "
                  "(a whole nvidia.com/gpu or a MIG profile), or cap each tenant's memory (MPS "
                  "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT); other tenants on GPU $gpu: $others.",
      snippet="kubectl get pods -A --field-selector spec.nodeName=$node -o wide")
def gpu_shared_memory_full(ev):
    """The pod ran out of GPU memory on a GPU that dcgm-exporter shows shared with other pods and nearly full."""
    oom = health.cuda_oom_line(ev)
    node = ev.node
    for g in _own_gpus(ev) if oom is not None else []:
        used, total = dcgm.memory(g)
        others = [h for h in dcgm.holders(g) if h != f"{ev.target.namespace}/{ev.target.name}"]
        if others and used is not None and total and used >= SHARED_FULL * total:
            msg = (f"The container ran out of GPU memory (\"{oom.text[:120]}\") on GPU {g['index']} {g['uuid']} of "
                   f"node {name(node)}, which it shares with {', '.join(others[:4])}: {int(used)} of {int(total)} MiB "
                   f"were in use on that GPU when the exporter was read.")
            return Hit(msg, [oom], values={"gpu": g["index"], "others": ", ".join(others[:4])},
                       summary=f"GPU {g['index']} on {name(node)} is shared and {int(100 * used / total)}% full")
    return None
