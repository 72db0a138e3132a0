"""Crash-phase rules for a GPU the container cannot use or fill (GPU memory, no GPU requested, GPU not visible,
driver libraries not injected); rule bodies only, their helpers are _gpu_log, _gpu_visibility, _gpu_advice."""
from __future__ import annotations

from ...kube.objects import asks_accelerator, container_gpus, containers
from .._common import has_terminations
from ._gpu_advice import driver_ok, node_labels, oom_advice
from ._gpu_log import AMBIGUOUS, DRIVER_PRESENT, NO_GPU_RULES, crash_hit, crash_match, crashed, quote
from ._gpu_visibility import gpu_text, nvidia_gpus, smi_missing, visibility_cause
from ..registry import SPECIFIC, Unknown, rule

# A GPU-specific reading of a generic symptom (exit 127 of nvidia-smi) beats the generic rule of equal rank.
MORE_SPECIFIC = SPECIFIC + 5


@rule("gpu-out-of-memory", edits="container", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="GPU memory exhausted (CUDA out of memory)",
      remediation="This is GPU memory, not the container memory limit: lower the batch size or context length "
                  "(vLLM --max-model-len / --max-num-seqs), keep --gpu-memory-utilization within what is free, "
                  "quantize the model, or shard it over more GPUs / use a GPU with more memory.")
def gpu_out_of_memory(ev):
    """A crashed container's log ends in a CUDA out-of-memory error, or vLLM/TGI says the KV cache does not fit."""
    lbls = node_labels(ev)
    for c, cs, term, prev in crashed(ev):
        if term.get("reason") == "OOMKilled":
            continue   # a cgroup kill of host memory: oom-killed explains it
        m = crash_match(ev, c["name"], prev, ("gpu-out-of-memory",))
        if not m:
            continue
        product, mem = lbls.get("nvidia.com/gpu.product"), str(lbls.get("nvidia.com/gpu.memory") or "")
        on = (f" on {product}" + (f" ({int(mem) // 1024} GiB)" if mem.isdigit() else "")) if product else ""
        fix, snippet = oom_advice(ev, m, c)
        return crash_hit(ev, c, cs, term, m,
                         f"Container {c['name']} ran out of GPU memory{on} and exited with code {term.get('exitCode')}: "
                         f"{quote(m, c, term)}. Meaning: {m.signature.meaning}. This is GPU memory, not a cgroup "
                         "kill (the container was not OOMKilled).", fix=fix, snippet=snippet,
                         summary=f"Container {c['name']} ran out of GPU memory{on}")
    return None


@rule("gpu-not-requested", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Container uses CUDA but requests no GPU",
      remediation="Request the GPU in resources.limits of container $container (extended resources go in limits; "
                  "requests default to the same value); GPUs are allocated per container.",
      snippet="# container $container\nresources:\n  limits:\n    nvidia.com/gpu: 1")
def gpu_not_requested(ev):
    """A crashed container that requests no GPU logs that it found no GPU or no NVIDIA driver, or has no nvidia-smi.

    No nvidia-smi: exit 127, or the runtime's StartError `exec: "nvidia-smi": executable file not found in $PATH`."""
    pod = ev.pod
    for c, cs, term, prev in crashed(ev):
        if asks_accelerator(c):
            continue
        m = crash_match(ev, c["name"], prev, NO_GPU_RULES + ("cuda-driver-too-old",),
                        accept=lambda x: (x.signature.rule in NO_GPU_RULES or x.signature.id == AMBIGUOUS)
                        and x.signature.id not in DRIVER_PRESENT)
        smi = None if m else smi_missing(c, term, prev)
        if not m and not smi:
            continue
        others = [x["name"] for x in containers(pod) if container_gpus(x)]
        note = f" (container {', '.join(others)} of this pod has the GPU; GPUs are per container)" if others else ""
        return crash_hit(ev, c, cs, term, m,
                         f"Container {c['name']} looks for a GPU but requests none in resources.limits{note}: "
                         f"{quote(m, c, term) if m else smi}. Without a GPU request the device plugin allocates no GPU and the "
                         "NVIDIA runtime injects no device or driver library.",
                         rank=MORE_SPECIFIC if smi or m.signature.id == "nvidia-smi-not-found" else None)
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
    for c, cs, term, prev in crashed(ev):
        gpus = nvidia_gpus(c)
        m = crash_match(ev, c["name"], prev, ("gpu-not-visible",)) if gpus else None
        if not m:
            continue
        cause, fix, snippet, lines = visibility_cause(ev, pod, c, m=m)
        return crash_hit(ev, c, cs, term, m,
                         f"Container {c['name']} requests {gpu_text(gpus)} but its log shows no GPU: "
                         f"{quote(m, c, term)}. Cause: {cause}.", fix=fix, snippet=snippet, extra=lines,
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
    """A crashed GPU container cannot load libcuda.so.1 / libnvidia-ml.so.1, or has no nvidia-smi (exit 127, StartError).

    StartError: the runtime's `exec: "nvidia-smi": executable file not found in $PATH` (images never ship nvidia-smi)."""
    pod = ev.pod
    for c, cs, term, prev in crashed(ev):
        gpus = nvidia_gpus(c)
        if not gpus:
            continue   # no NVIDIA GPU requested: gpu-not-requested / gpu-vendor-mismatch explain it
        m = crash_match(ev, c["name"], prev, ("driver-libraries-missing", "cuda-driver-too-old"),
                        accept=lambda x: x.signature.rule != "cuda-driver-too-old" or (x.signature.id == AMBIGUOUS
                                                                                       and driver_ok(ev, c)))
        smi = None if m else smi_missing(c, term, prev)
        if not m and not smi:
            continue
        cause, fix, snippet, lines = visibility_cause(ev, pod, c, libs=True, m=m)
        return crash_hit(ev, c, cs, term, m,
                         f"Container {c['name']} requests {gpu_text(gpus)} but "
                         + ("its NVIDIA driver libraries do not match the node's driver" if m and m.signature.id in DRIVER_PRESENT
                            else "the NVIDIA driver files were not injected") + f": {quote(m, c, term) if m else smi}. "
                         f"Cause: {cause}.", fix=fix, snippet=snippet, extra=lines,
                         rank=MORE_SPECIFIC if smi or m.signature.id == "nvidia-smi-not-found" else None)
    return Unknown.from_gap(ev.gap("pods/log")) if ev.gap("pods/log") else None
