"""Crash-phase rules about what the node gives a GPU container (another vendor's GPUs, a GPU held in exclusive
mode, a too-small /dev/shm); rule bodies only, their helpers are _gpu_log, _gpu_visibility, _gpu_advice."""
from __future__ import annotations

from ...kube.objects import container_gpus, name, namespace, node_resources, spec
from ...kube.placement import holders, knows_free
from .._common import has_terminations
from ._gpu_advice import node_labels, shm_size, shm_volume
from ._gpu_log import (AMBIGUOUS, DRIVER_PRESENT, NO_GPU_RULES, crash_hit, crash_match, crashed, matches, quote,
                       shm_inferred)
from ._gpu_visibility import nvidia_gpus
from ..registry import SPECIFIC, Line, Unknown, rule

SHARING_LABELS = ("nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy", "nvidia.com/mps.capable")


@rule("gpu-vendor-mismatch", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="CUDA/NVIDIA image on a node with another vendor's GPUs",
      remediation="Use an image built for the node's GPUs (ROCm for AMD, XPU/oneAPI for Intel), or schedule the "
                  "CUDA image onto NVIDIA nodes and request nvidia.com/gpu.",
      snippet="# pod $pod (spec)\nnodeSelector:\n  nvidia.com/gpu.present: \"true\"\n# container $container\n"
              "resources:\n  limits:\n    nvidia.com/gpu: 1")
def gpu_vendor_mismatch(ev):
    """A crashed container finds no NVIDIA GPU/driver on a node that advertises only AMD or Intel GPUs."""
    for c, cs, term, prev in crashed(ev):
        m = crash_match(ev, c["name"], prev, NO_GPU_RULES + ("cuda-driver-too-old",),
                        accept=lambda x: (x.signature.rule in NO_GPU_RULES or x.signature.id == AMBIGUOUS)
                        and x.signature.id not in DRIVER_PRESENT)
        if not m:
            continue
        node = ev.node
        if node is None:
            return Unknown.from_gap(ev.gap("nodes")) if ev.gap("nodes") else None
        res = node_resources(node)
        other = [r for r in res if r.startswith(("amd.com/", "gpu.intel.com/"))]
        if not other or any(r.startswith("nvidia.com/") for r in res):
            return None
        return crash_hit(ev, c, cs, term, m, f"Container {c['name']} expects an NVIDIA GPU ({quote(m, c, term)}) but node "
                         f"{name(node)} has {', '.join(other)} and no nvidia.com/gpu.",
                         extra=[Line("node", f"nodes/{name(node)} allocatable", ", ".join(other))])
    return None


@rule("gpu-busy-exclusive-mode", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("pods/log",), title="GPU busy: held by another process (exclusive compute mode)",
      remediation="The GPU is shared with another pod or process while in exclusive-process mode: set the compute "
                  "mode to Default for time-slicing/MPS sharing, stop the other process (leftover pods, host "
                  "processes), or give each pod its own GPU.",
      snippet="# compute mode per GPU on node $node (driver from the GPU operator: chroot /host/run/nvidia/driver)\n"
              "kubectl debug node/$node -it --image=busybox -- chroot /host nvidia-smi --query-gpu=index,compute_mode --format=csv\n"
              "kubectl debug node/$node -it --image=busybox -- chroot /host nvidia-smi -i 0 -c DEFAULT")
def gpu_busy_exclusive_mode(ev):
    """A crashed container's log says all CUDA-capable devices are busy or unavailable."""
    pod, lbls = ev.pod, node_labels(ev)
    for c, cs, term, prev in crashed(ev):
        m = crash_match(ev, c["name"], prev, ("gpu-busy-exclusive-mode",))
        if not m:
            continue
        sharing = ", ".join(f"{k}={lbls[k]}" for k in SHARING_LABELS if k in lbls)
        facts = f" GPU sharing on the node: {sharing}." if sharing else ""
        if ev.node and knows_free(ev, ev.node):
            res = sorted(nvidia_gpus(c)) or ["nvidia.com/gpu"]   # time-slicing may rename it nvidia.com/gpu.shared
            others = [h for r in res for h in holders(ev, ev.node, r) if not h.startswith(f"{namespace(pod)}/{name(pod)} ")]
            facts += f" Other pods holding {'/'.join(res)} on node {name(ev.node)}: {', '.join(others) or 'none'}."
        else:
            facts += " The other pods on the node were not readable."
        return crash_hit(ev, c, cs, term, m, f"Container {c['name']} could not open the GPU: {quote(m, c, term)}.{facts}")
    return None


def _why_shm(ev, c, prev):
    gpus = sum(container_gpus(c).values())
    warned = matches(ev, c["name"], prev, "shm-context")
    return (f"it holds {gpus} GPUs" if gpus >= 2 else "") + (" and " if gpus >= 2 and warned else "") + \
        (f"its log warns: {warned[0].line.strip()[:160]}" if warned else "")


@rule("shm-too-small", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="Shared memory (/dev/shm) too small",
      remediation="Mount a memory-backed emptyDir at /dev/shm in container $container (the runtime default is 64Mi); "
                  "its pages count against the container's memory limit, so size both together.",
      snippet="# pod $pod (spec)\nvolumes:\n- name: dshm\n  emptyDir:\n    medium: Memory\n    sizeLimit: $size\n"
              "# container $container\nvolumeMounts:\n- name: dshm\n  mountPath: /dev/shm")
def shm_too_small(ev):
    """A crashed container's log shows a bus error / full /dev/shm and no large memory-backed /dev/shm is mounted."""
    pod = ev.pod
    if spec(pod).get("hostIPC"):
        return None   # the host's /dev/shm
    for c, cs, term, prev in crashed(ev):
        m = crash_match(ev, c["name"], prev, ("shm-too-small",))
        vol = shm_volume(pod, c)
        limit = ((vol or {}).get("emptyDir") or {}).get("sizeLimit")
        if not m and not vol:
            m = shm_inferred(ev, c, prev)
            if m:
                return crash_hit(ev, c, cs, term, m, f"Container {c['name']} failed in NCCL with a generic system error "
                                 f"({quote(m, c, term)}) while {_why_shm(ev, c, prev)}, and no volume is mounted at "
                                 f"/dev/shm: NCCL's intra-node transport between the GPUs needs far more than the "
                                 f"runtime's 64Mi default.", values={"size": shm_size(c)},
                                 summary=f"Container {c['name']}: NCCL between its GPUs needs a larger /dev/shm")
        if not m or (vol and not (limit and m.signature.id != "bus-error")):
            continue
        where = (f"/dev/shm is an emptyDir limited to {limit}" if vol else
                 "No volume is mounted at /dev/shm, so it is the runtime's 64Mi default")
        if m.signature.id == "bus-error":   # SIGBUS without shm wording: the usual cause, not the only one
            where += ("; that is the usual cause of a bus error in GPU jobs (the other: a memory-mapped file "
                      "truncated while in use, e.g. weights on network storage)")
        return crash_hit(ev, c, cs, term, m, f"Container {c['name']} ran out of shared memory: {quote(m, c, term)}. "
                         f"{where}.", values={"size": shm_size(c, limit)},
                         summary=f"Container {c['name']} ran out of shared memory (/dev/shm)")
    return None
