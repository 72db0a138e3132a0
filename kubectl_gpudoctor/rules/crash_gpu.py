"""Crash-phase rules for GPU failures read from container logs: GPU memory, no GPU, driver, kernels, NCCL, /dev/shm."""
from __future__ import annotations

import re

from ..data import cuda_driver as cd
from ..data.signatures_distributed import NCCL_HINTS
from ..k8s import container_gpus, containers, name, namespace, node_resources, spec
from ..placement import holders, knows_free
from . import gpu_common as g
from .common import has_terminations
from .registry import DEFAULT, SPECIFIC, Line, Unknown, rule

# A GPU-specific reading of a generic symptom (exit 127 of nvidia-smi) beats the generic rule of equal rank.
MORE_SPECIFIC = SPECIFIC + 5
NO_GPU_RULES = ("gpu-not-visible", "driver-libraries-missing")
# A driver/library version mismatch proves a driver is there: not a missing request or another vendor's node.
DRIVER_PRESENT = ("nvml-version-mismatch",)
# cudart reports cudaErrorInsufficientDriver both for an old driver and for no libcuda at all.
AMBIGUOUS = "cuda-insufficient-driver"
SHARING_LABELS = ("nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy", "nvidia.com/mps.capable")


@rule("gpu-out-of-memory", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="GPU memory exhausted (CUDA out of memory)",
      remediation="This is GPU memory, not the container memory limit: lower the batch size or context length "
                  "(vLLM --max-model-len / --max-num-seqs), keep --gpu-memory-utilization within what is free, "
                  "quantize the model, or shard it over more GPUs / use a GPU with more memory.")
def gpu_out_of_memory(ev):
    """A crashed container's log ends in a CUDA out-of-memory error, or vLLM/TGI says the KV cache does not fit."""
    pod, lbls = ev.pod, g.node_labels(ev)
    for c, cs, term, prev in g.crashed(ev):
        if term.get("reason") == "OOMKilled":
            continue   # a cgroup kill of host memory: oom-killed explains it
        m = g.crash_match(ev, c["name"], prev, ("gpu-out-of-memory",))
        if not m:
            continue
        product, mem = lbls.get("nvidia.com/gpu.product"), str(lbls.get("nvidia.com/gpu.memory") or "")
        on = (f" on {product}" + (f" ({int(mem) // 1024} GiB)" if mem.isdigit() else "")) if product else ""
        fix, snippet = g.oom_advice(ev, m, c)
        return g.crash_hit(ev, c, cs, term, m,
                           f"Container {c['name']} ran out of GPU memory{on} and exited with code {term.get('exitCode')}: "
                           f"{g.quote(m, c, term)}. Meaning: {m.signature.meaning}. This is GPU memory, not a cgroup "
                           "kill (the container was not OOMKilled).", fix=fix, snippet=snippet,
                           summary=f"Container {c['name']} ran out of GPU memory{on}")
    return None


@rule("gpu-not-requested", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Container uses CUDA but requests no GPU",
      remediation="Request the GPU in resources.limits of container $container (extended resources go in limits; "
                  "requests default to the same value); GPUs are allocated per container.",
      snippet="# container $container\nresources:\n  limits:\n    nvidia.com/gpu: 1")
def gpu_not_requested(ev):
    """A crashed container that requests no GPU logs that it found no GPU or no NVIDIA driver (or nvidia-smi exits 127)."""
    pod = ev.pod
    for c, cs, term, prev in g.crashed(ev):
        if container_gpus(c):
            continue
        m = g.crash_match(ev, c["name"], prev, NO_GPU_RULES + ("cuda-driver-too-old",),
                          accept=lambda x: (x.signature.rule in NO_GPU_RULES or x.signature.id == AMBIGUOUS)
                          and x.signature.id not in DRIVER_PRESENT)
        if not m and not (prev is None and g.smi_127(c, term)):
            continue
        others = [x["name"] for x in containers(pod) if container_gpus(x)]
        note = f" (container {', '.join(others)} of this pod has the GPU; GPUs are per container)" if others else ""
        smi = not m or m.signature.id == "nvidia-smi-not-found"
        return g.crash_hit(ev, c, cs, term, m,
                           f"Container {c['name']} looks for a GPU but requests none in resources.limits{note}: "
                           f"{g.quote(m, c, term)}. Without a GPU request the device plugin allocates no GPU and the "
                           "NVIDIA runtime injects no device or driver library.", rank=MORE_SPECIFIC if smi else None)
    return Unknown.from_gap(ev.gap("pods/log")) if ev.gap("pods/log") else None


@rule("gpu-not-visible", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="GPU requested but not visible inside the container",
      remediation="Make the allocated GPU visible to the container: fix the ranked cause (env that hides GPUs, "
                  "missing runtimeClassName, device plugin on node $node).",
      snippet="kubectl get runtimeclass\nkubectl get pods -A -o wide --field-selector spec.nodeName=$node | grep -Ei 'device-plugin|toolkit'\n"
              "kubectl get pod $pod -n $namespace -o jsonpath='{.spec.runtimeClassName}{\"\\n\"}'")
def gpu_not_visible(ev):
    """A crashed container requests an NVIDIA GPU, yet its log says there is no CUDA device; ranks the likely cause."""
    pod = ev.pod
    for c, cs, term, prev in g.crashed(ev):
        gpus = g.nvidia_gpus(c)
        m = g.crash_match(ev, c["name"], prev, ("gpu-not-visible",)) if gpus else None
        if not m:
            continue
        cause, fix, snippet, lines = g.visibility_cause(ev, pod, c, m=m)
        return g.crash_hit(ev, c, cs, term, m,
                           f"Container {c['name']} requests {g.gpu_text(gpus)} but its log shows no GPU: "
                           f"{g.quote(m, c, term)}. Cause: {cause}.", fix=fix, snippet=snippet, extra=lines,
                           summary=f"Container {c['name']} requests a GPU but sees none ({_short(cause)})")
    return None


def _short(cause: str) -> str:
    return "cause unknown" if cause.startswith("unknown") else cause.split(";")[0].split(", which")[0]


@rule("driver-libraries-missing", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="NVIDIA driver libraries missing or mismatched in the container",
      remediation="The NVIDIA container runtime did not inject libcuda/NVML/nvidia-smi: run the pod with the NVIDIA "
                  "runtime (runtimeClassName, or nvidia as containerd's default runtime) and check the container "
                  "toolkit and device plugin on node $node.",
      snippet="kubectl get runtimeclass\nkubectl get pods -A -o wide --field-selector spec.nodeName=$node | grep -Ei 'device-plugin|toolkit'")
def driver_libraries_missing(ev):
    """A crashed GPU container cannot load libcuda.so.1 / libnvidia-ml.so.1, or nvidia-smi is not found (exit 127)."""
    pod = ev.pod
    for c, cs, term, prev in g.crashed(ev):
        gpus = g.nvidia_gpus(c)
        if not gpus:
            continue   # no NVIDIA GPU requested: gpu-not-requested / gpu-vendor-mismatch explain it
        m = g.crash_match(ev, c["name"], prev, ("driver-libraries-missing", "cuda-driver-too-old"),
                          accept=lambda x: x.signature.rule != "cuda-driver-too-old" or (x.signature.id == AMBIGUOUS
                                                                                         and g.driver_ok(ev, c)))
        if not m and not (prev is None and g.smi_127(c, term)):
            continue
        cause, fix, snippet, lines = g.visibility_cause(ev, pod, c, libs=True, m=m)
        smi = not m or m.signature.id == "nvidia-smi-not-found"
        return g.crash_hit(ev, c, cs, term, m,
                           f"Container {c['name']} requests {g.gpu_text(gpus)} but "
                           + ("its NVIDIA driver libraries do not match the node's driver" if m and m.signature.id in DRIVER_PRESENT
                              else "the NVIDIA driver files were not injected") + f": {g.quote(m, c, term)}. Cause: {cause}.",
                           fix=fix, snippet=snippet, extra=lines, rank=MORE_SPECIFIC if smi else None)
    return Unknown.from_gap(ev.gap("pods/log")) if ev.gap("pods/log") else None


@rule("cuda-driver-too-old", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Node's NVIDIA driver is older than the CUDA in the image",
      remediation="Run the pod on nodes whose driver supports the image's CUDA (node affinity on the GPU feature "
                  "discovery driver label), upgrade the node's driver, or use an image built for an older CUDA.",
      snippet="kubectl get nodes -L nvidia.com/cuda.driver-version.full,nvidia.com/cuda.runtime-version.full,nvidia.com/gpu.product")
def cuda_driver_too_old(ev):
    """A crashed container logs that the driver is too old for its CUDA, or its image's CUDA major needs a newer
    driver than the node's (GFD labels; below the minor-version-compatibility floor)."""
    pod, lbls = ev.pod, g.node_labels(ev)
    driver = cd.node_driver(lbls)
    for c, cs, term, prev in g.crashed(ev):
        m = g.crash_match(ev, c["name"], prev, ("cuda-driver-too-old",), accept=lambda x: g.ngc_fatal(ev, x) and (
            x.signature.id != AMBIGUOUS or bool(container_gpus(c)) and not g.driver_ok(ev, c)))
        img = cd.image_cuda(c.get("image", ""))
        if not m and not (img and driver and cd.compare(img[0], driver) == "too-old"):
            continue
        severity = None
        if not m and (cd.is_ngc(c.get("image", "")) or g.crash_match(ev, c["name"], prev, ("app-error",))):
            severity = "warning"   # the tag says so, but the log shows another error (or NGC forward compat applies)
        what = g.quote(m, c, term) if m else (f"image {c.get('image')} needs a newer driver than node {spec(pod).get('nodeName')} "
                                             f"has (inferred from the image tag; {'the log was not readable' if prev is None else 'the log does not say'})")
        return g.crash_hit(ev, c, cs, term, m, f"Container {c['name']} cannot use CUDA: {what}. {g.driver_facts(ev, img, m)}",
                           snippet=g.affinity_snippet(ev, lbls, img), severity=severity, extra=g.driver_label_line(ev, lbls))
    return Unknown.from_gap(ev.gap("pods/log")) if ev.gap("pods/log") else None


@rule("no-kernel-image-for-gpu", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("pods/log",), title="Binary has no kernels for this GPU's architecture",
      remediation="Use an image or wheel built for this GPU's compute capability (a newer CUDA/PyTorch build, or "
                  "TORCH_CUDA_ARCH_LIST including it), or schedule onto the GPU model the image was built for.",
      snippet="kubectl get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.compute.major,nvidia.com/gpu.compute.minor")
def no_kernel_image_for_gpu(ev):
    """A crashed container's log says `no kernel image is available for execution on the device` (or equivalent)."""
    pod, lbls = ev.pod, g.node_labels(ev)
    for c, cs, term, prev in g.crashed(ev):
        m = g.crash_match(ev, c["name"], prev, ("no-kernel-image-for-gpu",))
        if not m:
            continue
        product, major, minor = (lbls.get(k) for k in ("nvidia.com/gpu.product", "nvidia.com/gpu.compute.major",
                                                       "nvidia.com/gpu.compute.minor"))
        minor = minor or "0"
        gpu = f"{product or 'the GPU'}" + (f" (compute capability {major}.{minor}, sm_{major}{minor})" if major else "")
        need = cd.COMPUTE_MIN_CUDA.get((int(major), int(minor))) if str(major or "").isdigit() and minor.isdigit() else None
        img = cd.image_cuda(c.get("image", ""))
        facts = f" Native code for it needs CUDA >= {cd.cuda_str(need)}" if need else ""
        facts += f"; the image is built for CUDA {cd.cuda_str(img[0])}" if need and img else ""
        warn = [x.as_line(name(pod)) for x in g.matches(ev, c["name"], prev, "no-kernel-image-for-gpu")
                if x.signature.id == "torch-arch-unsupported" and x.line != m.line][:1]
        avoid = (g.node_affinity(ev, "nvidia.com/gpu.product", "NotIn", [product]) + "\n# a stopgap until the image is "
                 "built for this GPU") if product else None
        return g.crash_hit(ev, c, cs, term, m, f"Container {c['name']} has no GPU code for {gpu}: {g.quote(m, c, term)}."
                           + (facts + "." if facts else ""), extra=warn, snippet=avoid)
    return None


@rule("nccl-failure", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="NCCL / distributed communication failed",
      remediation="Check that the ranks can reach each other (NetworkPolicy, headless Service, MASTER_ADDR/PORT), "
                  "that IB/RDMA devices are allocated when NCCL uses them (rdma/* resources), that /dev/shm is large "
                  "enough, and rerun with NCCL_DEBUG=INFO to see which transport failed.",
      snippet="# container $container\nenv:\n- name: NCCL_DEBUG\n  value: INFO\n- name: NCCL_DEBUG_SUBSYS\n  value: INIT,NET")
def nccl_failure(ev):
    """A crashed container's log ends in an NCCL error, a collective watchdog timeout or a c10d rendezvous failure."""
    pod = ev.pod
    for c, cs, term, prev in g.crashed(ev):
        m = g.crash_match(ev, c["name"], prev, ("nccl-failure",))
        if not m:
            continue
        lines = g.matches(ev, c["name"], prev, "nccl-failure")[:20]
        text = "\n".join(x.line for x in lines + g.matches(ev, c["name"], prev, "shm-too-small")[:5])
        hint = next((h for rx, h in NCCL_HINTS if re.search(rx, m.line) or re.search(rx, text)), "the NCCL lines do not say which transport failed")
        warn = [x.as_line(name(pod)) for x in lines if x.signature.id == "nccl-warn" and x.line != m.line][:1]
        policies = [name(p) for p in ev.all("NetworkPolicy") if namespace(p) == namespace(pod)]
        extra = f" NetworkPolicies in namespace {namespace(pod)}: {', '.join(policies)}." if policies and hint.startswith("network reachability") else ""
        shm = g.crash_match(ev, c["name"], prev, ("shm-too-small",))
        return g.crash_hit(ev, c, cs, term, m, f"Container {c['name']} failed in NCCL/torch.distributed: {g.quote(m, c, term)}. "
                           f"Most likely: {hint}.{extra}", rank=DEFAULT if shm else None, extra=warn,
                           snippet="" if (g.env_value(c, "NCCL_DEBUG") or "").upper() in ("INFO", "TRACE") else None,
                           next=[f"kubectl logs {name(pod)} -n {namespace(pod)} -c {c['name']} --previous | grep -E 'NCCL (WARN|INFO)'"])
    return None


@rule("gpu-vendor-mismatch", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="CUDA/NVIDIA image on a node with another vendor's GPUs",
      remediation="Use an image built for the node's GPUs (ROCm for AMD, XPU/oneAPI for Intel), or schedule the "
                  "CUDA image onto NVIDIA nodes and request nvidia.com/gpu.",
      snippet="# pod $pod (spec)\nnodeSelector:\n  nvidia.com/gpu.present: \"true\"\n# container $container\n"
              "resources:\n  limits:\n    nvidia.com/gpu: 1")
def gpu_vendor_mismatch(ev):
    """A crashed container finds no NVIDIA GPU/driver on a node that advertises only AMD or Intel GPUs."""
    pod = ev.pod
    for c, cs, term, prev in g.crashed(ev):
        m = g.crash_match(ev, c["name"], prev, NO_GPU_RULES + ("cuda-driver-too-old",),
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
        return g.crash_hit(ev, c, cs, term, m, f"Container {c['name']} expects an NVIDIA GPU ({g.quote(m, c, term)}) but node "
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
    pod, lbls = ev.pod, g.node_labels(ev)
    for c, cs, term, prev in g.crashed(ev):
        m = g.crash_match(ev, c["name"], prev, ("gpu-busy-exclusive-mode",))
        if not m:
            continue
        sharing = ", ".join(f"{k}={lbls[k]}" for k in SHARING_LABELS if k in lbls)
        facts = f" GPU sharing on the node: {sharing}." if sharing else ""
        if ev.node and knows_free(ev, ev.node):
            res = sorted(g.nvidia_gpus(c)) or ["nvidia.com/gpu"]   # time-slicing may rename it nvidia.com/gpu.shared
            others = [h for r in res for h in holders(ev, ev.node, r) if not h.startswith(f"{namespace(pod)}/{name(pod)} ")]
            facts += f" Other pods holding {'/'.join(res)} on node {name(ev.node)}: {', '.join(others) or 'none'}."
        else:
            facts += " The other pods on the node were not readable."
        return g.crash_hit(ev, c, cs, term, m, f"Container {c['name']} could not open the GPU: {g.quote(m, c, term)}.{facts}")
    return None


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
    for c, cs, term, prev in g.crashed(ev):
        m = g.crash_match(ev, c["name"], prev, ("shm-too-small",))
        vol = g.shm_volume(pod, c)
        limit = ((vol or {}).get("emptyDir") or {}).get("sizeLimit")
        if not m or (vol and not (limit and m.signature.id != "bus-error")):
            continue
        where = (f"/dev/shm is an emptyDir limited to {limit}" if vol else
                 "No volume is mounted at /dev/shm, so it is the runtime's 64Mi default")
        if m.signature.id == "bus-error":   # SIGBUS without shm wording: the usual cause, not the only one
            where += ("; that is the usual cause of a bus error in GPU jobs (the other: a memory-mapped file "
                      "truncated while in use, e.g. weights on network storage)")
        return g.crash_hit(ev, c, cs, term, m, f"Container {c['name']} ran out of shared memory: {g.quote(m, c, term)}. "
                           f"{where}.", values={"size": g.shm_size(c, limit)},
                           summary=f"Container {c['name']} ran out of shared memory (/dev/shm)")
    return None
