"""The one GPU vocabulary: every extended resource that gives a container an accelerator (or a share of one),
whose hardware it is, and how it counts; everything that asks "does this request / node have a GPU" reads it."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from ..record import record


@record(frozen=True)
class GpuResource:
    pattern: str            # full-match regex of the resource name
    vendor: str             # whose hardware: nvidia | amd | intel | habana | aws-neuron
    counts: bool = True     # counts devices (or device slices); False: a share of one (memory, cores)
    native: bool = True     # advertised by the vendor's own device plugin, whose node stack the node rules judge
    advertised: bool = True  # nodes advertise it as allocatable; False: only a scheduler extender tracks it
    scheme: str = ""        # the sharing scheme / plugin, for messages


RESOURCES = (
    GpuResource(r"nvidia\.com/gpu", "nvidia"),
    # time-slicing / MPS with renameByDefault (k8s-device-plugin README "Shared Access to GPUs")
    GpuResource(r"nvidia\.com/gpu\.shared", "nvidia", scheme="NVIDIA GPU sharing"),
    GpuResource(r"nvidia\.com/mig-.+", "nvidia", scheme="MIG"),
    # HAMi: nvidia.com/gpu counts vGPUs; memory (MiB or %) and cores are held by its scheduler, not the node
    GpuResource(r"nvidia\.com/(gpumem|gpumem-percentage|gpucores|priority)", "nvidia", counts=False, native=False,
                advertised=False, scheme="HAMi"),
    # Volcano vGPU device plugin (volcano-vgpu-device-plugin): node allocatable volcano.sh/vgpu-number/-memory/-cores
    GpuResource(r"volcano\.sh/vgpu-number", "nvidia", native=False, scheme="Volcano vGPU"),
    GpuResource(r"volcano\.sh/vgpu-(memory|cores)", "nvidia", counts=False, native=False, scheme="Volcano vGPU"),
    # Alibaba Cloud gpushare-device-plugin: GPU memory in GiB (aliyun.com/gpu-mem) and whole cards
    GpuResource(r"aliyun\.com/gpu-count", "nvidia", native=False, scheme="Alibaba gpushare"),
    GpuResource(r"aliyun\.com/gpu-(mem|core\.percentage)", "nvidia", counts=False, native=False,
                scheme="Alibaba gpushare"),
    # Tencent gpu-manager vcuda: 100 vcuda-core = one card; memory in 256 MiB units
    GpuResource(r"tencent\.com/vcuda-(core|memory)", "nvidia", counts=False, native=False, scheme="gpu-manager vcuda"),
    GpuResource(r"amd\.com/gpu", "amd"),
    # Intel GPU plugin: one gpu.intel.com/i915 (or xe) per card; millicores, memory.max, tiles and i915_monitoring
    # are GPU Aware Scheduling's shares and monitoring access (intel-device-plugins-for-kubernetes gpu_plugin README)
    GpuResource(r"gpu\.intel\.com/(i915|xe)", "intel"),
    GpuResource(r"gpu\.intel\.com/.+", "intel", counts=False, scheme="Intel GPU Aware Scheduling"),
    # Intel Gaudi (HabanaAI habanalabs device plugin: habana.ai/gaudi) and AWS Inferentia/Trainium
    # (aws-neuron-sdk neuron-device-plugin: aws.amazon.com/neuron, neurondevice, neuroncore).
    GpuResource(r"habana\.ai/gaudi\w*", "habana"),
    GpuResource(r"aws\.amazon\.com/neuron(core|device)?", "aws-neuron"),
)

# The default resource name of each vendor whose node stack the node rules know.
VENDOR_DEFAULT_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "gpu.intel.com/i915",
                           "habana": "habana.ai/gaudi", "aws-neuron": "aws.amazon.com/neuron"}
# Vendors of the node rules (device plugin, GPU operator): the native resources of these count their GPUs.
VENDOR_RESOURCES = {v: "^(?:" + "|".join(r.pattern for r in RESOURCES if r.vendor == v and r.counts and r.native) + ")$"
                    for v in VENDOR_DEFAULT_RESOURCE}

_COMPILED = tuple((re.compile(r.pattern), r) for r in RESOURCES)


@lru_cache(maxsize=1024)   # asked for every resource of every node: a cluster names a few dozen resources
def lookup(res: str) -> Optional[GpuResource]:
    """The vocabulary entry of a resource name (the first that matches), or None for a non-GPU resource."""
    return next((r for rx, r in _COMPILED if rx.fullmatch(res)), None)

# Node annotations in which GPU-sharing device plugins register the node's physical cards, one `GPU-<uuid>` each
# (HAMi `hami.io/node-nvidia-register`, Volcano vGPU `volcano.sh/node-vgpu-register`); GFD's label counts them too.
PHYSICAL_GPU_ANNOTATIONS = ("hami.io/node-nvidia-register", "volcano.sh/node-vgpu-register")
PHYSICAL_GPU_LABEL = "nvidia.com/gpu.count"
GPU_UUID = r"GPU-[0-9a-fA-F]{8}-"
