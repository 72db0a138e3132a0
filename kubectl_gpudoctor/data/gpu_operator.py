"""GPU-operator and device-plugin components as data: names, labels, chain order, node labels, log wording."""
from __future__ import annotations

from typing import Tuple

from ..record import record


@record(frozen=True)
class Component:
    key: str                 # stable id used in tables and JSON
    title: str               # how a person names it
    stage: int               # position in the chain driver -> toolkit -> device plugin -> GFD/DCGM -> validator
    pattern: str             # regex over the owning DaemonSet's name, the pod's app labels and generateName
    deploy_label: str = ""   # gpu-operator's per-node switch for this component's DaemonSet
    device_plugin: bool = False
    one_shot: bool = False   # a workload pod that is meant to complete (Succeeded is healthy)


# Order matters: the first component whose pattern matches wins (validators before the device plugin,
# whose name they contain). Names from NVIDIA/gpu-operator assets/state-*/0500_daemonset.yaml
# (nvidia-driver-daemonset, nvidia-container-toolkit-daemonset, nvidia-device-plugin-daemonset,
# gpu-feature-discovery, nvidia-dcgm-exporter, nvidia-dcgm, nvidia-operator-validator, nvidia-mig-manager;
# pods carry `app: <daemonset name>`), NVIDIA/k8s-device-plugin's static manifest
# (DaemonSet nvidia-device-plugin-daemonset, pod label `name: nvidia-device-plugin-ds`) and helm chart
# (`<release>-nvidia-device-plugin`), GKE's `nvidia-gpu-device-plugin` (k8s-app label) and
# `nvidia-driver-installer`, ROCm/k8s-device-plugin (`amdgpu-device-plugin-daemonset`, `name: amdgpu-dp-ds`),
# intel-device-plugins-for-kubernetes (`intel-gpu-plugin`).
COMPONENTS: Tuple[Component, ...] = (
    Component("cuda-validator", "CUDA validation workload", 5, r"nvidia-cuda-validator", one_shot=True),
    Component("plugin-validator", "device-plugin validation workload", 5, r"nvidia-device-plugin-validator",
              one_shot=True),
    Component("validator", "GPU operator validator", 5, r"nvidia-operator-validator",
              "nvidia.com/gpu.deploy.operator-validator"),
    Component("mig-manager", "MIG manager", 4, r"mig-manager", "nvidia.com/gpu.deploy.mig-manager"),
    Component("gfd", "GPU feature discovery", 4, r"gpu-feature-discovery",
              "nvidia.com/gpu.deploy.gpu-feature-discovery"),
    Component("dcgm-exporter", "DCGM exporter", 4, r"dcgm-exporter", "nvidia.com/gpu.deploy.dcgm-exporter"),
    Component("dcgm", "DCGM host engine", 4, r"^nvidia-dcgm$|dcgm-hostengine", "nvidia.com/gpu.deploy.dcgm"),
    Component("mps-control", "MPS control daemon", 3, r"mps-control-daemon"),
    Component("toolkit", "NVIDIA container toolkit", 2, r"container-toolkit",
              "nvidia.com/gpu.deploy.container-toolkit"),
    Component("driver", "NVIDIA driver", 1,
              r"nvidia-driver-daemonset|nvidia-gpu-driver|nvidia-driver-installer|^nvidia-driver$",
              "nvidia.com/gpu.deploy.driver"),
    Component("device-plugin", "device plugin", 3,
              r"device-plugin|nvidia-device-plugin-ds|amdgpu-dp-ds|intel-gpu-plugin|gpu-device-plugin",
              "nvidia.com/gpu.deploy.device-plugin", device_plugin=True),
    Component("nfd", "node feature discovery worker", 0, r"node-feature-discovery-worker|nfd-worker"),
)

COMPONENT_BY_KEY = {c.key: c for c in COMPONENTS}

# Pod labels whose values name the component (operator pods: app; static plugin: name; GKE: k8s-app).
IDENTITY_LABELS = ("app", "name", "k8s-app", "app.kubernetes.io/name", "app.kubernetes.io/component",
                   "component", "daemonset")

# Images that are device plugins whatever the DaemonSet is called (GFD and the MPS daemon share the NVIDIA
# image since k8s-device-plugin v0.15, so the name patterns above are tried first).
DEVICE_PLUGIN_IMAGES = (r"k8s-device-plugin|nvidia-gpu-device-plugin|rocm/k8s-device-plugin|intel-gpu-plugin"
                        r"|neuron-device-plugin|habana\.ai/docker-k8s-device-plugin")

# Device plugins for other hardware share the `device-plugin` naming and run on GPU nodes: network devices
# (k8snetworkplumbingwg/sriov-network-device-plugin `kube-sriov-device-plugin-amd64`, app sriovdp; Mellanox
# k8s-rdma-shared-dev-plugin `rdma-shared-dp-ds`; aws-efa-k8s-device-plugin; InfiniBand), other accelerators
# (GKE tpu-device-plugin, FPGA/QAT/DLB/DSA/IAA/SGX plugins
# of intel-device-plugins-for-kubernetes) and generic ones (smarter-device-manager, squat generic-device-plugin,
# KubeVirt). Tokens are matched between separators so that e.g. `default` is not `efa`.
NOT_GPU_PLUGINS = (r"(?i)(^|[-_./:])(sriov|sriovdp|sriov-network|rdma|efa|infiniband|ib|"
                   r"tpu|fpga|xilinx|qat|dlb|dsa|iaa|sgx|vfio|kubevirt|hostdev|smarter|generic)(?=[-_./:]|$)")

# Which vendor a device plugin serves (from its names and image) and the resources it advertises.
# Intel Gaudi's habanalabs-device-plugin and AWS's neuron-device-plugin are accelerators of the GPU vocabulary
# (HabanaAI/habanalabs-k8s-device-plugin, aws-neuron/aws-neuron-sdk k8s neuron-device-plugin.yml).
VENDOR_HINTS = (("amd", r"amdgpu|amd-gpu|amd-device|rocm"), ("habana", r"habana|gaudi"), ("aws-neuron", r"neuron"),
                ("intel", r"intel"), ("nvidia", r"."))
VENDOR_NAMES = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "habana": "Intel Gaudi",
                "aws-neuron": "AWS Neuron"}
# The GPU resource names themselves (which vendor, which count) live in data/gpu_resources.py.

# DRA drivers that publish a vendor's GPUs as ResourceSlice devices instead of an extended resource: NVIDIA's
# DRA Driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu, DeviceClass gpu.nvidia.com; the GPU operator then
# disables the device plugin, gpu-operator#1541), ROCm/k8s-gpu-dra-driver (gpu.amd.com) and
# intel/intel-resource-drivers-for-kubernetes (gpu.intel.com). compute-domain.nvidia.com publishes no GPUs.
DRA_GPU_DRIVERS = {"nvidia": "gpu.nvidia.com", "amd": "gpu.amd.com", "intel": "gpu.intel.com"}
# A GPU DRA driver's kubelet plugin pod (nvidia-dra-driver-gpu-kubelet-plugin, k8s-gpu-dra-driver,
# intel-gpu-resource-driver-kubelet-plugin): where it runs, the GPUs are published as ResourceSlices.
DRA_PLUGIN_PODS = r"(dra-driver|resource-driver|kubelet-plugin).*gpu|gpu.*(dra-driver|resource-driver|kubelet-plugin)"

# The validator's init containers, in the order it runs them, and the link each one checks
# (gpu-operator assets/state-operator-validation/0500_daemonset.yaml).
VALIDATION_STAGES = (
    ("driver-validation", "driver"),
    ("toolkit-validation", "toolkit"),
    ("cuda-validation", "cuda-validator"),
    ("plugin-validation", "device-plugin"),
)
# Other components wait in an init container for the link before them (toolkit-validation waits for
# /run/nvidia/validations/toolkit-ready: "waiting for nvidia container stack to be setup").
WAITS_FOR = {"driver-validation": "driver", "toolkit-validation": "toolkit", "cuda-validation": "cuda-validator",
             "plugin-validation": "device-plugin"}

# --- node labels --------------------------------------------------------------------------------------

# Labels that say "this node has a GPU" even when nothing is advertised: GPU feature discovery, NFD's PCI
# vendor labels (10de NVIDIA, 1002 AMD), cloud node pools.
GPU_NODE_LABELS = {
    "nvidia": ("nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count",
               "feature.node.kubernetes.io/pci-10de.present", "feature.node.kubernetes.io/pci-0302_10de.present",
               "feature.node.kubernetes.io/pci-0300_10de.present", "cloud.google.com/gke-accelerator",
               "k8s.amazonaws.com/accelerator", "karpenter.k8s.aws/instance-gpu-manufacturer"),
    "amd": ("feature.node.kubernetes.io/amd-gpu", "feature.node.kubernetes.io/pci-1002.present",
            "feature.node.kubernetes.io/pci-0380_1002.present", "amd.com/gpu.product-name"),
    "intel": ("intel.feature.node.kubernetes.io/gpu", "gpu.intel.com/device-id.0300-56a0.present"),
    # Gaudi nodes: the habana.ai/gaudi label the HabanaAI device plugin DaemonSet selects; NFD PCI vendor 1da3
    # (Habana Labs). Neuron: NFD PCI vendor 1d0f (Amazon) is every Nitro device, so no label says Neuron alone.
    "habana": ("habana.ai/gaudi", "feature.node.kubernetes.io/pci-1da3.present"),
}
FALSE_VALUES = ("false", "0", "")
# Accelerator nodes that no vendor label marks, known by their cloud instance type: AWS Inferentia/Trainium
# (inf1, inf2, trn1, trn1n, trn2; aws-neuron-sdk's neuron-device-plugin selects them by instance type) and Gaudi
# (dl1, dl2q).
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
INSTANCE_TYPE_VENDORS = ((r"^(?:inf[12]|trn1n?|trn2)\.", "aws-neuron"), (r"^dl(?:1|2q)\.", "habana"))

# GPU feature discovery labels (k8s-device-plugin docs/gpu-feature-discovery): product, count, memory (MiB),
# driver and CUDA versions (older GFD: cuda.driver.major/minor/rev; newer adds cuda.driver-version.*).
GFD = {
    "product": "nvidia.com/gpu.product",
    "count": "nvidia.com/gpu.count",
    "memory": "nvidia.com/gpu.memory",
    "family": "nvidia.com/gpu.family",
    "migStrategy": "nvidia.com/mig.strategy",
    "migCapable": "nvidia.com/mig.capable",
    "migConfig": "nvidia.com/mig.config",
    "migConfigState": "nvidia.com/mig.config.state",
    "sharing": "nvidia.com/gpu.sharing-strategy",
    "replicas": "nvidia.com/gpu.replicas",
}
# Where the GPU model is named when GPU feature discovery does not run (GKE, EKS, AMD's labeller).
PRODUCT_FALLBACK_LABELS = ("cloud.google.com/gke-accelerator", "k8s.amazonaws.com/accelerator",
                           "amd.com/gpu.product-name", "karpenter.k8s.aws/instance-gpu-name",
                           "gpu.intel.com/product")   # Intel's NFD rules (intel-device-plugins deployments/nfd)
DRIVER_VERSION_LABELS = (("nvidia.com/cuda.driver-version.full",),
                         ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"))
CUDA_VERSION_LABELS = (("nvidia.com/cuda.runtime-version.full",),
                       ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"))

# MIG manager states (mig-parted deployments/gpu-operator/reconfigure-mig.sh: pending, rebooting, success, failed).
MIG_STATE_FAILED = "failed"
MIG_STATES_IN_PROGRESS = ("pending", "rebooting")
# What the MIG manager sets the operator's nvidia.com/gpu.deploy.* switches to while it reconfigures.
PAUSED_FOR_MIG = "paused-for-mig-change"

# The GPU operator's driver upgrade controller cordons and drains nodes (k8s-operator-libs upgrade states).
DRIVER_UPGRADE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
DRIVER_UPGRADE_DONE = ("upgrade-done", "")

# Lines in a device plugin's log that name unhealthy GPUs (k8s-device-plugin internal/rm/health.go and
# server.go: "XidCriticalError: Xid=79 on Device=GPU-…", "'nvidia.com/gpu' device marked unhealthy: GPU-…").
HEALTH_PATTERN = r"XidCriticalError|device marked unhealthy|marking device .* unhealthy"

# --- log wording ------------------------------------------------------------------------------------------

# The line worth quoting from a component's log, most specific first. Sources: NVIDIA/k8s-device-plugin#444,
# #303, #856 (NVML not loadable), #182; gpu-operator#85, #155 (driver: kernel version), #378 (validator:
# chroot nvidia-smi), #1043 (cuda-validation), mig-parted deployments/gpu-operator/reconfigure-mig.sh (MIG manager).
ERROR_PATTERNS = (
    # Searched per line, the whole line quoted: no `.*` around a fragment (a leading `.*` retried at every offset
    # made a long line quadratic).
    r"XidCriticalError|'[^']+' device marked unhealthy",
    r"nvml init failed|Failed to initialize NVML|could not load NVML library|ERROR_LIBRARY_NOT_FOUND",
    r"Incompatible (?:strategy|platform) detected|invalid MIG strategy|error starting plugins?",
    r"(?:No devices found|no devices found)\b",
    r"Could not register device plugin|Could not contact Kubelet|failed to dial device plugin",
    r"Could not resolve Linux kernel version|Unable to (?:load|open) |Could not find \S.*kernel|"
    r"modprobe: (?:FATAL|ERROR)|Kernel headers .*not found|Failed to install",
    r"chroot: failed to run command|Failed to allocate device vector|failed to validate ",
    r"Unable to validate the selected MIG configuration|MIG mode change did not take effect|"
    r"Error applying MIG|Error setting MIG|all orderings failed|Unable to bring up GPU operator components",
    r"level=(?:fatal|error)|^E\d{4} |^F\d{4} |\bFATAL\b|\bERROR\b|^Error: |panic: ",
    r"\b(?:failed|error)\b",
)

# The device plugin's own advice after it found no GPU library (k8s-device-plugin internal/rm/factory.go, v0.15+:
# "If this is a GPU node, did you configure the NVIDIA Container Toolkit?"; before: "If this is a GPU node, did you
# set the docker default runtime to `nvidia`?", gpu-operator#250).
PLUGIN_HINT = r"If this is a GPU node, did you .*"

# Lines that look like errors but are part of normal operation: mig-manager asserts the current config before
# applying a new one (gpu-operator#322), client-go warns about in-cluster config.
BENIGN_LINES = r"Assertion failure: selected configuration not currently applied|Neither --kubeconfig nor --master"
