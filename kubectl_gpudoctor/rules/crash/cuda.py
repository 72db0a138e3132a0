"""Crash-phase rules for the CUDA software stack (node driver older than the image's CUDA, no kernels for the
GPU's architecture, NCCL/torch.distributed failures); rule bodies only, their helpers are _gpu_log, _gpu_advice."""
from __future__ import annotations

import re

from ...data import cuda_driver as cd
from ...gpu import siblings
from ...kube import podstate
from ...kube.timeutil import seconds_between
from ...data.signatures_distributed import NCCL_HINTS
from ...kube.objects import container_gpus, name, namespace, spec
from .._common import has_terminations
from ._gpu_advice import (affinity_snippet, cuda_initialised, driver_facts, driver_fix, driver_label_line, driver_ok,
                          ngc_fatal, driver_pod_version, image_cuda, node_stack_fails, node_versions,
                          nccl_fix, node_affinity, node_labels, rendezvous_peer)
from ._gpu_log import AMBIGUOUS, crash_hit, crash_match, crashed, matches, quote, shm_inferred
from ._gpu_visibility import env_value
from ._gpu_advice import shm_volume
from ..registry import DEFAULT, SPECIFIC, Hit, Line, Unknown, rule


@rule("cuda-driver-too-old", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Node's NVIDIA driver is older than the CUDA in the image",
      remediation="Run the pod on nodes whose driver supports the image's CUDA (node affinity on the GPU feature "
                  "discovery driver label), upgrade the node's driver, or use an image built for an older CUDA.",
      snippet="kubectl get nodes -L nvidia.com/cuda.driver-version.full,nvidia.com/cuda.runtime-version.full,nvidia.com/gpu.product")
def cuda_driver_too_old(ev):
    """A crashed container logs that its driver is too old for its CUDA, or its image tag needs a newer driver than the node's.

    From the tag: the node's GFD driver label is below the CUDA major's minor-version-compatibility floor (below the
    major's oldest driver when the tag names no minor), and the log does not show CUDA working on the GPU.
    With the node's driver unknown, the other GPU pods there decide cudart's ambiguous "insufficient driver": pods of
    other workloads failing alike make it the node's stack (driver-libraries-missing); for the other lines they
    point the fix at the node's driver, and GPU pods Ready there point it at the image."""
    pod, lbls = ev.pod, node_labels(ev)
    driver = cd.node_driver(node_versions(ev))
    for c, cs, term, prev in crashed(ev):
        m = crash_match(ev, c["name"], prev, ("cuda-driver-too-old",), accept=lambda x: ngc_fatal(ev, x) and (
            x.signature.id != AMBIGUOUS or bool(container_gpus(c)) and not driver_ok(ev, c)))
        img = image_cuda(c)
        if not m and not (img and driver and cd.compare(img[0], driver) == "too-old" and not cuda_initialised(ev, c, prev)):
            continue   # no log line says so, and the tag does not, or the log shows CUDA working on the GPU
        severity = None
        if not m and (cd.is_ngc(c.get("image", "")) or crash_match(ev, c["name"], prev, ("app-error",))):
            severity = "warning"   # the tag says so, but the log shows another error (or NGC forward compat applies)
        unread = 'the log was not readable' if prev is None else 'the log does not say'
        what = quote(m, c, term) if m else (f"image {c.get('image')} needs a newer driver than node {spec(pod).get('nodeName')} "
                                           f"has (inferred from the image tag; {unread})")
        pod_driver = driver_pod_version(ev) if cd.node_driver(lbls) is None else None
        extra = driver_label_line(ev, lbls) + ([Line("object", f"pods/{name(pod_driver[1])}", f"driver image "
                                                     f"{pod_driver[1]['spec']['containers'][0].get('image')}")]
                                               if pod_driver else [])
        said, fix, more = _siblings_say(ev) if driver is None else ("", driver_fix(ev, img), [])
        return crash_hit(ev, c, cs, term, m, f"Container {c['name']} cannot use CUDA: {what}. {driver_facts(ev, img, m)}"
                         + said, snippet=affinity_snippet(ev, lbls, img), severity=severity, extra=extra + more, fix=fix)
    return Unknown.from_gap(ev.gap("pods/log")) if ev.gap("pods/log") else None


def _siblings_say(ev):
    """(sentence, fix or None, evidence lines) from the other GPU pods on the node when its driver is not known:
    other workloads failing alike make the node's driver the thing to fix; GPU pods Ready there make the image's
    CUDA the likelier cause."""
    node = spec(ev.pod).get("nodeName")
    alike = node_stack_fails(ev)
    if alike:
        return (f" Pods of other workloads on node {node} fail the same way: {siblings.names(p for p, _ in alike)}; "
                "the node's driver is the common cause.",
                f"Upgrade the NVIDIA driver on node {node} (or move these workloads to nodes with a newer one): "
                "several workloads with different images fail the same way there.",
                [Line("log", f"pods/{namespace(p)}/{name(p)}", x.line.strip()[:200]) for p, x in alike])
    well = siblings.healthy(ev, ev.pod)
    if well:
        return (f" Other GPU pods on node {node} are Ready: {siblings.names(well[:2])}; the node's GPU stack works, "
                "so the CUDA this image is built for is the likelier cause.", None,
                [Line("object", f"pods/{namespace(p)}/{name(p)}", "Ready, requests a GPU") for p in well[:2]])
    blind = siblings.unread(ev, ev.pod)
    if blind:
        return (f" Not checked: whether {siblings.names(blind[:3])} on the same node fail the same way (their GPU "
                "containers crashed too; their logs were not read).", None, [])
    return "", None, []


@rule("no-kernel-image-for-gpu", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("pods/log",), title="Binary has no kernels for this GPU's architecture",
      remediation="Use an image or wheel built for this GPU's compute capability (a newer CUDA/PyTorch build, or "
                  "TORCH_CUDA_ARCH_LIST including it), or schedule onto the GPU model the image was built for.",
      snippet="kubectl get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.compute.major,nvidia.com/gpu.compute.minor")
def no_kernel_image_for_gpu(ev):
    """A crashed container's log says `no kernel image is available for execution on the device` (or equivalent)."""
    pod, lbls = ev.pod, node_labels(ev)
    for c, cs, term, prev in crashed(ev):
        m = crash_match(ev, c["name"], prev, ("no-kernel-image-for-gpu",))
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
        warn = [x.as_line(name(pod)) for x in matches(ev, c["name"], prev, "no-kernel-image-for-gpu")
                if x.signature.id == "torch-arch-unsupported" and x.line != m.line][:1]
        avoid = (node_affinity(ev, "nvidia.com/gpu.product", "NotIn", [product]) + "\n# a stopgap until the image is "
                 "built for this GPU") if product else None
        return crash_hit(ev, c, cs, term, m, f"Container {c['name']} has no GPU code for {gpu}: {quote(m, c, term)}."
                         + (facts + "." if facts else ""), extra=warn, snippet=avoid)
    return None


def _hung(ev):
    """Containers Running but not Ready for HUNG_AFTER_S: a distributed job that hangs in a failed collective never
    exits (a rank that is still starting is not hung)."""
    out = []
    for c, cs, _ in podstate.all_container_states(ev.pod or {}):
        running = (cs.get("state") or {}).get("running")
        up = seconds_between((running or {}).get("startedAt"), ev.now())
        if running is not None and not cs.get("ready") and up is not None and up >= HUNG_AFTER_S:
            out.append((c, cs))
    return out


HUNG_AFTER_S = 10 * 60
# A failed collective or connection, not NCCL's benign start-up fallbacks ("NCCL WARN Failed to open libibverbs.so",
# "Could not find real path", "Ignoring ..."): those print on every healthy socket-only run.
_HANG_LINE = r"(?i)^(?!.*(?:libibverbs|Could not find|Ignoring|NET/Plugin|nccl-net|plugin)).*(?:fail|error|timed out|refused|abort)"


@rule("nccl-failure", phase="crash", severity="critical", rank=SPECIFIC, needs=("pods/log",),
      applies=lambda ev: has_terminations(ev) or bool(_hung(ev)),
      title="NCCL / distributed communication failed",
      remediation="Check that the ranks can reach each other (NetworkPolicy, headless Service, MASTER_ADDR/PORT), "
                  "that IB/RDMA devices are allocated when NCCL uses them (rdma/* resources), that /dev/shm is large "
                  "enough, and rerun with NCCL_DEBUG=INFO to see which transport failed.",
      snippet="# container $container\nenv:\n- name: NCCL_DEBUG\n  value: INFO\n- name: NCCL_DEBUG_SUBSYS\n  value: INIT,NET")
def nccl_failure(ev):
    """A crashed container's log ends in an NCCL error, a collective watchdog timeout or a c10d rendezvous failure."""
    pod = ev.pod
    for c, cs, term, prev in crashed(ev):
        m = crash_match(ev, c["name"], prev, ("nccl-failure",))
        if not m:
            continue
        lines = matches(ev, c["name"], prev, "nccl-failure")[:20]
        text = "\n".join(x.line for x in lines + matches(ev, c["name"], prev, "shm-too-small")[:5])
        hint = next((h for rx, h in NCCL_HINTS if re.search(rx, m.line) or re.search(rx, text)), "the NCCL lines do not say which transport failed")
        warn = [x.as_line(name(pod)) for x in lines if x.signature.id == "nccl-warn" and x.line != m.line][:1]
        policies = [name(p) for p in ev.all("NetworkPolicy") if namespace(p) == namespace(pod)]
        reach = policies and hint.startswith("network reachability")
        extra = f" NetworkPolicies in namespace {namespace(pod)}: {', '.join(policies)}." if reach else ""
        extra += rendezvous_peer(ev, c) if hint.startswith(("name resolution", "network reachability")) else ""
        shm = crash_match(ev, c["name"], prev, ("shm-too-small",)) or (not shm_volume(pod, c) and shm_inferred(ev, c, prev))
        what = "could not join the torch.distributed rendezvous" if m.signature.id == "c10d-bootstrap" else "failed in NCCL/torch.distributed"
        fix, snippet = nccl_fix(c, hint, (env_value(c, "NCCL_DEBUG") or "").upper() in ("INFO", "TRACE"))
        return crash_hit(ev, c, cs, term, m, f"Container {c['name']} {what}: {quote(m, c, term)}. "
                         f"Most likely: {hint}.{extra}", rank=DEFAULT if shm else None, extra=warn, fix=fix, snippet=snippet,
                         next=[f"kubectl logs {name(pod)} -n {namespace(pod)} -c {c['name']} --previous | grep -E 'NCCL (WARN|INFO)'"])
    for c, cs in _hung(ev):
        lines = [x for x in matches(ev, c["name"], False, "nccl-failure") if re.search(_HANG_LINE, x.line)]
        if lines:
            m = lines[-1]   # the first failure (matches are newest first)
            hint = next((h for rx, h in NCCL_HINTS if re.search(rx, m.line)), "the NCCL lines do not say which transport failed")
            return Hit(f"Container {c['name']} is Running but not Ready and its NCCL communication failed, so the job "
                       f"hangs instead of exiting: {quote(m, c, {})}. Most likely: {hint}.{rendezvous_peer(ev, c)}",
                       [m.as_line(name(pod))] + [x.as_line(name(pod)) for x in lines[:1] if x is not m],
                       values={"container": c["name"]},
                       next=[f"kubectl logs {name(pod)} -n {namespace(pod)} -c {c['name']} | grep -E 'NCCL (WARN|INFO)'"])
    return None
