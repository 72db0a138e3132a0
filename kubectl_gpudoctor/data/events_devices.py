"""Event signatures of a GPU that does not reach the container (CDI injection, the NVIDIA container toolkit's
hook, the kubelet's device allocation); data only, imported through event_signatures (never directly)."""
from typing import Tuple

from .signature import EventSignature

DEVICES: Tuple[EventSignature, ...] = (
    # --- cdi-device-unresolvable ---------------------------------------------------------------------------------
    # nvidia-container-runtime in CDI mode: `could not apply required modification to OCI specification: error
    # modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices management.nvidia.com/gpu=GPU-…`
    # (NVIDIA/nvidia-container-toolkit#1239, gpustack/gpustack#4130); containerd's own CDI (enable_cdi, default in
    # 2.0) and CRI-O: `CDI device injection failed: unresolvable CDI devices nvidia.com/gpu=0`
    # (containerd pkg/cdi, moby/moby#47633, kata-containers#12549).
    EventSignature("cdi-unresolvable", "cdi-device-unresolvable",
                   r"unresolvable CDI devices? (?P<devices>[^\s:,]+(?:,\s*[^\s:,]+)*)",
                   "no CDI spec under /etc/cdi or /var/run/cdi on the node defines the requested device name"),
    # A spec that names device nodes which do not exist (driver not loaded when the spec was generated):
    # `CDI device injection failed: failed to stat "/dev/nvidia-modeset": no such file or directory`.
    EventSignature("cdi-injection-failed", "cdi-device-unresolvable",
                   r"(?:CDI device injection failed|failed to inject CDI devices): (?P<detail>[^\n]+)",
                   "the CDI spec exists but could not be applied (stale spec, or device nodes it names are missing)"),

    # --- cuda-requirement-unsatisfied (listed before the generic CLI error on purpose) ---------------------------
    # `nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a
    # newer version, or use an earlier cuda container` (NVIDIA/nvidia-docker#1442, NVIDIA/nvidia-container-toolkit#152,
    # ggml-org/llama.cpp#9665); the condition comes from the image's NVIDIA_REQUIRE_CUDA.
    EventSignature("cli-requirement", "cuda-requirement-unsatisfied",
                   r"requirement error: unsatisfied condition: (?P<condition>[^,\n]+?)(?:,|\s*$|\\n)",
                   "the node's driver supports an older CUDA than the image's NVIDIA_REQUIRE_CUDA demands"),

    # --- nvidia-container-cli-error: the legacy prestart hook failed ---------------------------------------------
    # `nvidia-container-cli: initialization error: nvml error: driver not loaded` (NVIDIA/nvidia-docker#1629,
    # NVIDIA/nvidia-container-toolkit#1269).
    EventSignature("cli-driver-not-loaded", "nvidia-container-cli-error",
                   r"nvidia-container-cli(?:\.real)?: (?P<detail>initialization error: nvml error: driver not loaded)",
                   "the NVIDIA kernel module is not loaded on the node (driver not installed, its container not "
                   "ready, or the node rebooted into a kernel without it)",
                   "Get the NVIDIA driver loaded on node $node: with the GPU operator, read the nvidia-driver-daemonset "
                   "pod's logs on that node; on a host-installed driver, check `nvidia-smi` and `lsmod | grep nvidia` "
                   "on the node. Pods start once the module is back."),
    # `nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared
    # object file` (NVIDIA/libnvidia-container#231, NVIDIA/gpu-operator#511 with the operator's `.real` binary).
    EventSignature("cli-load-library", "nvidia-container-cli-error",
                   r"nvidia-container-cli(?:\.real)?: (?P<detail>initialization error: load library failed: [^\n]+?)"
                   r"(?::\s*unknown)?(?:\\n|$|\n)",
                   "the toolkit cannot find the driver's user-space libraries: no driver on the host, or the "
                   "toolkit's driver root points at the wrong place (/run/nvidia/driver for the operator's driver "
                   "container versus / for a host driver)",
                   "Make the toolkit find the driver on node $node: with the GPU operator set driver.enabled to match "
                   "reality (false when the driver is preinstalled on the host) so the toolkit's root is right; "
                   "otherwise install the driver's user-space libraries (libnvidia-ml.so.1) on the host."),
    # `nvidia-container-cli: ldcache error: open failed: /sbin/ldconfig.real: no such file or directory` /
    # `ldcache error: process /sbin/ldconfig.real failed with error code: 1` (NVIDIA/nvidia-docker#914,
    # NVIDIA/nvidia-container-toolkit#147).
    EventSignature("cli-ldcache", "nvidia-container-cli-error",
                   r"nvidia-container-cli(?:\.real)?: (?P<detail>ldcache error: [^\n]+?)(?::\s*unknown)?(?:\\n|$|\n)",
                   "the toolkit's ldconfig setting does not match the host OS (`@/sbin/ldconfig.real` exists on "
                   "Debian/Ubuntu only)",
                   "Fix `ldconfig =` in the [nvidia-container-cli] section of the toolkit's config.toml on node $node "
                   "(`@/sbin/ldconfig` on RHEL-like hosts, `@/sbin/ldconfig.real` on Ubuntu), or reinstall the "
                   "toolkit package built for that OS."),
    # `nvidia-container-cli: mount error: stat failed: /run/nvidia/driver/proc/driver/nvidia/gpus/…` (the operator's
    # driver root went away), `mount error: file creation failed: …/nvidia-persistenced/socket` (NVIDIA/nvidia-docker#1300),
    # `mount error: failed to add device rules: … bpf_prog_query(BPF_CGROUP_DEVICE) failed` (toolkit#678).
    EventSignature("cli-mount", "nvidia-container-cli-error",
                   r"nvidia-container-cli(?:\.real)?: (?P<detail>mount error: [^\n]+?)(?::\s*unknown)?(?:\\n|$|\n)",
                   "the hook could not mount a driver file or device into the container (driver root changed, "
                   "driver container restarting, or cgroup device rules refused)"),
    # `nvidia-container-cli: device error: GPU-23a1…: unknown device` (Project-HAMi/HAMi#411),
    # `device error: unknown device id: no-gpu-has-2MiB-to-run` (gpushare-scheduler-extender#80).
    EventSignature("cli-device", "nvidia-container-cli-error",
                   r"nvidia-container-cli(?:\.real)?: (?P<detail>device error: [^\n]+?)(?::\s*unknown)?(?:\\n|$|\n)",
                   "the device plugin handed the container a GPU id this node does not have (GPU fell off the bus, "
                   "MIG layout changed, or a sharing extender ran out)",
                   "Restart the device plugin pod on node $node so it re-reads the GPUs, check `nvidia-smi -L` there "
                   "(a missing GPU usually follows an Xid), then delete this pod so it gets a valid device."),
    # `nvidia-container-cli: container error: cgroup subsystem devices not found` (NVIDIA/nvidia-docker#1660:
    # cgroup v2 host with an old toolkit), `initialization error: driver error: failed to process request`
    # (NVIDIA/nvidia-docker#1252), `initialization error: cuda error: unknown error` (libnvidia-container#103).
    EventSignature("cli-other", "nvidia-container-cli-error",
                   r"nvidia-container-cli(?:\.real)?: (?P<detail>(?:initialization|container|detection|driver) error: "
                   r"[^\n]+?)(?::\s*unknown)?(?:\\n|$|\n)",
                   "the NVIDIA container library failed before the container started"),

    # The hook itself as CRI-O/crun report it, without nvidia-container-cli's own words: `container create failed: error
    # executing hook `/usr/local/nvidia/toolkit/nvidia-container-runtime-hook` (exit code: 1)` (NVIDIA/gpu-operator#1598,
    # OpenShift 4.18.22 with crun 1.23); keyed on the stable tail (the hook's name), whatever the wrapper.
    EventSignature("hook-failed", "nvidia-container-cli-error",
                   r"(?P<detail>error (?:executing|running) (?:prestart )?hook\W+[^\n]{0,200}?nvidia-container-(?:runtime-)?hook"
                   r"\S*(?: \(exit code: -?\d+\)|:? exit status -?\d+)?)",
                   "the NVIDIA OCI hook (legacy, non-CDI mode) failed while the runtime created the container; its own "
                   "message is in the node's runtime journal (a runtime upgrade such as crun 1.23 broke the hook)",
                   "Read the hook's error on node $node (`journalctl -u crio` there); switch the toolkit to CDI mode "
                   "(cdi.enabled=true in the GPU operator) or pin the runtime version the hook works with, then delete "
                   "the pod."),

    # --- device-allocation-failed (UnexpectedAdmissionError) -----------------------------------------------------
    # `Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1,
    # Available: 0, which is unexpected` (kubernetes/kubernetes#130145, #96519).
    EventSignature("alloc-unavailable", "device-allocation-failed",
                   r"requested number of devices unavailable for (?P<resource>[^\s.]+(?:\.[^\s.]+)*?)\. "
                   r"Requested: (?P<requested>\d+), Available: (?P<available>\d+)",
                   "the kubelet's device manager had fewer free devices than the scheduler thought (devices held by "
                   "terminating pods, or the plugin re-registered with fewer healthy devices)"),
    # `Allocate failed due to no healthy devices present; cannot allocate unhealthy devices amd.com/gpu, which is
    # unexpected` (trueforge-org/truecharts#19201).
    EventSignature("alloc-unhealthy", "device-allocation-failed",
                   r"(?:no healthy devices present; )?cannot allocate unhealthy devices (?P<resource>[^\s,]+)",
                   "every device of that resource on the node is marked unhealthy by its device plugin"),
    # `Allocate failed due to rpc error: code = Unavailable desc = error reading from server: EOF, which is
    # unexpected` (Project-HAMi/HAMi#71), `device plugin GetPreferredAllocation rpc failed with err: …`
    # (kubernetes/kubernetes#97131).
    EventSignature("alloc-rpc", "device-allocation-failed",
                   r"Allocate failed due to (?P<detail>(?:device plugin \w+ )?rpc (?:error|failed)[^\n]*?)(?:, which is unexpected|$)",
                   "the device plugin did not answer the kubelet's Allocate call (crashed, restarting or hung)"),
    # DRA: the kubelet's NodePrepareResources call to the driver's kubelet plugin failed (Warning
    # FailedPrepareDynamicResources, kubernetes/kubernetes#118578): `Failed to prepare dynamic resources: prepare
    # dynamic resources: DRA driver compute-domain.nvidia.com is not registered` (kubernetes-sigs/dra-driver-nvidia-gpu
    # #814), or older kubelets `failed to get gRPC client for driver gpu.nvidia.com: plugin name gpu.nvidia.com not
    # found in the list of registered DRA plugins`. An unregistered driver is dra-driver-not-registered.
    EventSignature("dra-not-registered", "dra-driver-not-registered",
                   r"DRA driver (?P<driver>[\w.-]+) is not registered|plugin name (?P<driver2>[\w.-]+) not found in the "
                   r"list of registered DRA plugins|failed to get (?:gRPC client|DRA plugin) for driver (?P<driver3>[\w.-]+)",
                   "the node's kubelet has no registered plugin of that DRA driver (its kubelet plugin pod is not "
                   "running there, or never registered its socket)"),
    EventSignature("dra-prepare-failed", "device-allocation-failed",
                   r"(?:prepare dynamic resources|NodePrepareResources)(?: failed)?:? (?P<detail>[^\n]+)",
                   "the DRA driver's kubelet plugin failed to prepare the claimed devices (NodePrepareResources)"),
    EventSignature("alloc-other", "device-allocation-failed",
                   r"Allocate failed due to (?P<detail>[^\n]+?)(?:, which is unexpected|$)",
                   "the device manager could not allocate the requested devices"),
)
