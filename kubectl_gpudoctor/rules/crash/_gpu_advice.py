"""Facts and fixes the GPU crash rules compute from evidence (GPU memory and /dev/shm sizing, the node's driver
against the image's CUDA, node-affinity snippets): helpers that must hold no rule and do no I/O."""
from __future__ import annotations

import re
from typing import Optional

from ...logs import scan as logscan
from ...gpu import stack as gpustack
from ...kube import podstate
from ...data import cuda_driver as cd
from ...data.signatures_distributed import MEMLOCK_SNIPPET
from ...data.signatures_gpu import CUDA_INITIALISED
from ...kube.objects import condition, container_gpus, labels, name, spec
from ...kube.quantity import parse_quantity
from ._gpu_visibility import ipc_lock
from ..registry import Line


def node_labels(ev) -> dict:
    return labels(ev.node) if ev.node else {}


# The GPU operator's driver container is tagged with the driver it installs: nvcr.io/nvidia/driver:535.104.05-ubuntu22.04
_DRIVER_TAG = r":(\d{3}\.\d+(?:\.\d+)?)(?:-|$)"


def driver_pod_version(ev) -> Optional[tuple]:
    """(version text, pod) of the node's driver from its GPU-operator driver pod's image tag, or None."""
    if not ev.node:
        return None
    for comp, pod in gpustack.component_pods(ev, ev.node):
        if comp.key == "driver":
            for c in spec(pod).get("containers") or []:
                m = re.search(_DRIVER_TAG, c.get("image") or "")
                if m:
                    return m.group(1), pod
    return None


def node_versions(ev) -> dict:
    """The node's labels, with the driver version from the driver pod's image when no GFD label gives it: the node's
    driver judged against the image's CUDA needs a version from somewhere."""
    lbls = node_labels(ev)
    if cd.node_driver(lbls) is None:
        found = driver_pod_version(ev)
        if found:
            lbls = dict(lbls, **{cd.DRIVER_FULL_LABEL: found[0]})
    return lbls


def image_cuda(c) -> Optional[tuple]:
    """The CUDA an image is built for: its tag, else the container's CUDA_VERSION / NVIDIA_REQUIRE_CUDA env (the CUDA
    base images set both; a pod spec that repeats them states the image's CUDA)."""
    img = cd.image_cuda(c.get("image", ""))
    if img:
        return img
    env = {e.get("name"): e.get("value") or "" for e in c.get("env") or [] if "valueFrom" not in e}
    m = re.match(r"(1[0-3])\.(\d)", env.get("CUDA_VERSION", "")) or re.search(r"cuda>=(1[0-3])\.(\d)",
                                                                            env.get("NVIDIA_REQUIRE_CUDA", ""))
    return ((int(m.group(1)), int(m.group(2))), "CUDA_VERSION env" if env.get("CUDA_VERSION") else
            "NVIDIA_REQUIRE_CUDA env") if m else None


def oom_advice(ev, m, c):
    """(fix, snippet) from an out-of-memory line, using vLLM's/TGI's own numbers when the line gives them; else
    node affinity for GPUs with more memory than this node's (GFD nvidia.com/gpu.memory, MiB)."""
    fit = re.search(r"estimated maximum model length is (\d+)|stored in KV cache \((\d+)\)", m.line)
    if fit:
        n = fit.group(1) or fit.group(2)
        return (f"The KV cache holds only {n} tokens at this --gpu-memory-utilization: set --max-model-len {n} or "
                "lower, raise --gpu-memory-utilization if memory is free, quantize, or add GPUs (--tensor-parallel-size).",
                f"# container {c['name']} args\n- --max-model-len\n- \"{n}\"")
    if m.signature.id == "vllm-free-memory":
        return ("Another process already holds GPU memory: lower --gpu-memory-utilization to what is free, or find "
                "the other process (a shared/time-sliced GPU, a leftover pod).", None)
    tgi = re.search(r"handle (\d+) prefill tokens", m.line)
    if tgi:
        return (f"Lower --max-batch-prefill-tokens below {tgi.group(1)} (and --max-batch-total-tokens), or use a "
                "bigger GPU / more shards.",
                f"# container {c['name']} args\n- --max-batch-prefill-tokens\n- \"{int(tgi.group(1)) // 2}\"")
    mem = str(node_labels(ev).get("nvidia.com/gpu.memory") or "")
    return None, (node_affinity(ev, "nvidia.com/gpu.memory", "Gt", [mem]) + "   # MiB: a GPU with more memory than this one"
                  if mem.isdigit() else None)


def shm_volume(pod, c) -> Optional[dict]:
    """The volume mounted at /dev/shm in this container, or None (the runtime's 64Mi default)."""
    for vm in c.get("volumeMounts") or []:
        if (vm.get("mountPath") or "").rstrip("/") == "/dev/shm":
            return next((v for v in spec(pod).get("volumes") or [] if v.get("name") == vm.get("name")),
                        {"name": vm.get("name")})
    return None


def shm_size(c, current=None) -> str:
    """Half the container's memory limit (tmpfs pages count against it), between 1Gi and 16Gi, 8Gi without a
    limit; at least twice a sizeLimit that proved too small."""
    limit = parse_quantity(((c.get("resources") or {}).get("limits") or {}).get("memory"))
    gib = max(1, min(16, int(limit) // 2 // 2 ** 30)) if limit else 8
    now = parse_quantity(current)
    if now and gib * 2 ** 30 <= now:
        gib = -(-int(now) * 2 // 2 ** 30)
    return f"{gib}Gi"


def driver_ok(ev, c) -> bool:
    """The node's driver (labels, else the driver pod's image) runs the image's CUDA (tag, else env): then cudart's
    'driver insufficient' means no libcuda at all (an injection fault), not an old driver."""
    img, lbls = image_cuda(c), node_versions(ev)
    driver = cd.node_driver(lbls)
    if img and driver:
        return cd.compare(img[0], driver) != "too-old"
    if img and not driver and sibling_runs_cuda(ev, img[0]):
        return True
    if not driver and node_stack_fails(ev):
        return True   # pods of other workloads on the node fail alike: the node's stack, whatever the image's CUDA
    return cd.runs_on(c.get("image", ""), lbls)


def node_stack_fails(ev) -> list:
    """(sibling, line) of pods of other workloads on the pod's node whose GPU runs fail as this pod's does."""
    from ...gpu import siblings
    return siblings.failing_alike(ev, ev.pod, siblings.own_failure(ev)) if ev.pod else []


def sibling_runs_cuda(ev, cuda) -> Optional[str]:
    """A Ready GPU pod on the same node whose container is built for this CUDA or newer: the node's driver runs it, so
    its version is new enough even when no label or driver pod says which it is. The sibling's name, or None."""
    node = spec(ev.pod).get("nodeName") if ev.pod else None
    for p in ev.pods_on(node) if node else []:
        if name(p) == name(ev.pod) or not gpustack.is_ready(p):
            continue
        for c in spec(p).get("containers") or []:
            theirs = image_cuda(c)
            if theirs and container_gpus(c) and theirs[0][0] == cuda[0] and (theirs[0][1] or 0) >= (cuda[1] or 0) \
                    or theirs and container_gpus(c) and theirs[0][0] > cuda[0]:
                return name(p)
    return None


def cuda_initialised(ev, c, prev) -> bool:
    """The failed run's log shows CUDA working on the GPU (a memory pool, a device created, weights loaded)."""
    text = ev.log(ev.pod, c["name"], prev) if prev is not None else ""
    return bool(text and re.search(CUDA_INITIALISED, logscan.clean(text)))


def ngc_fatal(ev, m) -> bool:
    """The NGC entrypoint's 'compatibility mode is UNAVAILABLE' is fatal only below the CUDA major's driver floor
    (e.g. a 25.x image on R580 prints it and runs in minor-version compatibility)."""
    if m.signature.id != "ngc-driver-unavailable":
        return True
    found = cd.parse_version(re.search(r"version (\S+) was detected", m.line).group(1))
    text = logscan.clean(ev.log(ev.pod, m.container, m.previous) or "").split("\n")
    built = re.search(r"built for NVIDIA Driver Release (\d+\.\d+)", "\n".join(text[max(0, m.lineno - 3):m.lineno]))
    cuda = cd.driver_max_cuda(cd.parse_version(built.group(1))) if built else None
    return bool(found and cuda and cd.compare(cuda, found) == "too-old")


def driver_facts(ev, img, m) -> str:
    """What the image needs and what the node's driver supports, in one sentence."""
    lbls = node_versions(ev)
    driver, driver_text = cd.node_driver(lbls), cd.node_driver_text(lbls)
    parts = []
    if img:
        need, floor = cd.toolkit_driver(img[0]), cd.driver_floor(img[0])
        parts.append(f"The image is built for CUDA {cd.cuda_str(img[0])} ({img[1]}), which needs driver >= {cd.fmt(floor)}"
                     + (f" (>= {cd.fmt(need)} to run without minor-version-compatibility limits)" if need and need != floor else ""))
    found = re.search(r"found version (\d+)", m.line) if m else None
    if found and cd.cuda_from_driver_api(found.group(1)) and not driver:
        parts.append(f"the driver supports CUDA up to {cd.cuda_str(cd.cuda_from_driver_api(found.group(1)))}")
    if driver:
        top = cd.driver_max_cuda(driver)
        parts.append(f"the node runs driver {driver_text}" + (f" (CUDA up to {cd.cuda_str(top)})" if top else ""))
    if m and m.signature.id == "cuda-insufficient-driver" and not driver:
        parts.append("cudart also says this when no libcuda was injected at all, and the node's driver is not labelled")
    if not parts:
        return "The node's driver version is not labelled (no GPU feature discovery labels)."
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def driver_label_line(ev, node_lbls) -> list:
    text = cd.version_label_text(node_lbls)
    return [Line("node", f"nodes/{spec(ev.pod).get('nodeName')} labels", text)] if text else []


def node_affinity(ev, key, op, values) -> str:
    """A required node-affinity snippet for the pod, with its real name."""
    return node_affinity_terms(ev, [[(key, op, values)]])


def node_affinity_terms(ev, terms) -> str:
    """A required node-affinity snippet from terms of (key, operator, values): the scheduler ORs the
    nodeSelectorTerms and ANDs the matchExpressions inside one term."""
    out = [f"# pod {name(ev.pod)} (spec)\naffinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n"
           "      nodeSelectorTerms:"]
    for term in terms:
        exprs = [f"        - key: {key}\n          operator: {op}\n          values: [{_quoted(values)}]"
                 for key, op, values in term]
        out.append("      - matchExpressions:\n" + "\n".join(exprs))
    return "\n".join(out)


def _quoted(values) -> str:
    return ", ".join(f'"{v}"' for v in values)


def needed_driver_major(node_lbls, img) -> Optional[int]:
    """The lowest driver branch the pod needs: the image's CUDA's corresponding driver when the image says which CUDA,
    else any branch newer than the node's (the log said this one is too old)."""
    if img:
        need = cd.toolkit_driver(img[0]) or cd.driver_floor(img[0])
        return need[0] if need else None
    driver = cd.node_driver(node_lbls)
    return driver[0] + 1 if driver else None


def affinity_snippet(ev, node_lbls, img) -> Optional[str]:
    """Node affinity for nodes whose driver runs the image's CUDA, on the GFD labels this node carries: the
    driver-major label Gt (needed major - 1); without a driver label, the CUDA version the driver supports
    (cuda.runtime-version) above this node's, as "major above, or same major and minor above" (Gt compares
    integers, so "above 12.2" is major Gt 12, or major In 12 and minor Gt 2). A node without GFD labels gets
    none (the rule's `kubectl get nodes -L` shows which nodes have them)."""
    major = needed_driver_major(node_lbls, img)
    if major:
        return node_affinity(ev, cd.driver_major_label(node_lbls), "Gt", [str(major - 1)])
    top = cd.node_cuda(node_lbls)
    if not top:
        return None
    mkey, nkey = cd.runtime_labels(node_lbls)
    return node_affinity_terms(ev, [[(mkey, "Gt", [str(top[0])])],
                                    [(mkey, "In", [str(top[0])]), (nkey, "Gt", [str(top[1])])]])


def nodes_with_driver(ev, major, exclude=None) -> list:
    """Names of the nodes read whose GFD driver label is at least this branch."""
    out = []
    for node in ev.all("Node"):
        driver = cd.node_driver(labels(node))
        if driver and driver[0] >= major and name(node) != exclude:
            out.append(name(node))
    return sorted(out)


def driver_fix(ev, img) -> Optional[str]:
    """The fix naming the node, its driver and the nodes read whose driver label is new enough; None when the node's
    driver is not known (the rule's own remediation, or what the other pods on the node say, then)."""
    node, lbls = spec(ev.pod).get("nodeName"), node_versions(ev)
    driver, text = cd.node_driver(lbls), cd.node_driver_text(lbls)
    if not driver:
        return None
    top = cd.driver_max_cuda(driver)
    major = needed_driver_major(lbls, img)
    need = (f"the image's CUDA {cd.cuda_str(img[0])} (driver {major} or newer)" if img
            else "the CUDA this image is built for")
    others = nodes_with_driver(ev, major, exclude=node) if major else []
    where = (f"; nodes read with such a driver: {', '.join(others[:4])}" if others else "")
    older = f"CUDA {cd.cuda_str(top)} or older" if top else "an older CUDA"
    return (f"Node {node} runs NVIDIA driver {text}" + (f" (CUDA up to {cd.cuda_str(top)})" if top else "")
            + f", too old for {need}: run the pod on nodes with a newer driver (the node affinity below{where}), "
            f"upgrade the driver on {node}, or use an image built for {older}.")


def master_addr(c):
    """(MASTER_ADDR, MASTER_PORT) from the container's literal env, None where unset."""
    env = {e.get("name"): e.get("value") for e in c.get("env") or [] if "valueFrom" not in e}
    return env.get("MASTER_ADDR") or None, env.get("MASTER_PORT") or None


def rendezvous_peer(ev, c) -> str:
    """' MASTER_ADDR=x (port p): pod x is Pending, ...' from the container's literal env and, when it was read, the pod
    the address names (Kubeflow PyTorchJob: MASTER_ADDR is the master pod's name and its headless Service's)."""
    addr, port = master_addr(c)
    if not addr:
        return ""
    text = f" MASTER_ADDR={addr}" + (f" (port {port})" if port else "")
    peer = ev.get("Pod", addr.split(".")[0], ev.target.namespace)
    if peer is None or peer is ev.pod:
        return text + "."
    shown = podstate.display_status(peer)
    if (condition(peer, "Ready") or {}).get("status") == "True":
        return text + f": pod {name(peer)} is {shown} and Ready."
    return (text + f": pod {name(peer)} is {shown}, so nothing serves that address yet; the rank will keep failing "
            "until it runs (or wait for it in an init container).")


def nccl_fix(c, hint: str, debug_on: bool):
    """(fix, snippet) for what an NCCL/rendezvous failure most likely is; None keeps the rule's own."""
    if hint.startswith("the memory-lock limit"):
        return None, None if ipc_lock(c) else MEMLOCK_SNIPPET
    addr = master_addr(c)[0]
    if hint.startswith("name resolution") and addr:
        return ("Start the rank that serves MASTER_ADDR before the others, or make this container wait until "
                f"{addr} resolves (an init container, as the Kubeflow training operator adds), and check the name and "
                "namespace of the headless Service behind it.",
                f"# pod template of the workers: wait for the rendezvous host\ninitContainers:\n- name: wait-for-master\n"
                f"  image: busybox:1.36\n  command: [\"sh\", \"-c\", \"until nslookup {addr}; do echo waiting for {addr}; "
                f"sleep 2; done\"]")
    return None, "" if debug_on else None
