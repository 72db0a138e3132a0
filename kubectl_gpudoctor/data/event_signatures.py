"""Event and container-status message signatures as data: regex -> meaning -> the rule it supports.

These match what the kubelet, the container runtime (containerd 1.6/1.7/2.x, CRI-O, cri-dockerd) and the
NVIDIA container stack (nvidia-container-toolkit 1.13-1.17, legacy hook and CDI mode) write into pod events and
container state messages. Container *logs* are matched by data/log_signatures.py, not here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Tuple


@dataclass(frozen=True)
class EventSignature:
    id: str
    rule: str
    pattern: str       # searched case-insensitively; named groups feed the rule's message
    meaning: str
    fix: str = ""      # a more specific remediation for this family ($placeholders allowed)


SIGNATURES: Tuple[EventSignature, ...] = (
    # --- runtime-handler-not-configured: the RuntimeClass's handler is unknown to the node's runtime ----------
    # containerd 1.6/1.7: `failed to get sandbox runtime: no runtime for "nvidia" is configured`
    # (NVIDIA/gpu-operator#413, #549, #730); containerd 1.7.x/2.x: `unable to get OCI runtime for sandbox "<id>":
    # no runtime for "nvidia" is configured` (NVIDIA/gpu-operator#2168).
    EventSignature("containerd-no-runtime", "runtime-handler-not-configured",
                   r'no runtime for "(?P<handler>[^"]+)" is configured',
                   "containerd on this node has no [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes."
                   "<handler>] entry"),
    # CRI-O: `failed to find runtime handler nvidia from runtime list map[crun:0xc… runc:0xc…]`
    # (NVIDIA/NVSentinel#442, NVIDIA/gpu-operator#1298: on CRI-O the operator installs an OCI hook, not a handler).
    EventSignature("crio-no-handler", "runtime-handler-not-configured",
                   r"failed to find runtime handler (?P<handler>\S+) from runtime list(?P<known> map\[[^\]]*\])?",
                   "CRI-O on this node has no [crio.runtime.runtimes.<handler>] entry"),
    # cri-dockerd / dockershim accept only their own runtime: `RuntimeHandler "nvidia" not supported`
    # (sgl-project/sglang#5515, kai-scheduler/KAI-Scheduler#627).
    EventSignature("dockershim-handler", "runtime-handler-not-configured",
                   r'RuntimeHandler "(?P<handler>[^"]+)" not supported',
                   "the Docker-based runtime (cri-dockerd) ignores RuntimeClass handlers; it only runs its default "
                   "runtime"),

    # The handler is configured but its binary is gone (toolkit uninstalled or not yet installed, default_runtime_name
    # still "nvidia"): `OCI runtime create failed: unable to retrieve OCI runtime error (open …/log.json: no such file
    # or directory): fork/exec /usr/bin/nvidia-container-runtime: no such file or directory` (NVIDIA/nvidia-docker#686,
    # #1121) or `exec: "nvidia-container-runtime": executable file not found in $PATH` (NVIDIA/nvidia-docker#1190,
    # NVlabs/BundleSDF#95).
    EventSignature("runtime-binary-missing", "runtime-handler-not-configured",
                   r'(?:fork/exec (?P<binary>\S*nvidia-container-runtime[\w.-]*): no such file or directory'
                   r'|exec: "(?P<binary2>[^"]*nvidia-container-runtime[^"]*)": executable file not found in \$PATH)',
                   "the runtime's configuration points at an NVIDIA runtime binary that is not on the node (the toolkit "
                   "was removed or has not installed it yet)",
                   "Put the NVIDIA runtime back on node $node or stop pointing at it: with the GPU operator, check that "
                   "the nvidia-container-toolkit pod on that node is Running (it installs the binaries under "
                   "/usr/local/nvidia/toolkit); after removing the operator, set containerd's default_runtime_name back "
                   "to runc and restart containerd."),

    # --- runtimeclass-not-found ----------------------------------------------------------------------------------
    # kubelet: `Failed to create pod sandbox: runtimeclass.node.k8s.io "nvidia" not found`
    # (pkg/kubelet/kuberuntime/kuberuntime_sandbox.go LookupRuntimeHandler); admission plugin RuntimeClass:
    # `pod rejected: RuntimeClass "nvidia" not found`.
    EventSignature("runtimeclass-404", "runtimeclass-not-found",
                   r'runtimeclass\.node\.k8s\.io "(?P<rc>[^"]+)" not found|RuntimeClass "(?P<rc2>[^"]+)" not found',
                   "the API server has no RuntimeClass of that name"),

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
    EventSignature("alloc-other", "device-allocation-failed",
                   r"Allocate failed due to (?P<detail>[^\n]+?)(?:, which is unexpected|$)",
                   "the device manager could not allocate the requested devices"),

    # --- volume-mount-failed -------------------------------------------------------------------------------------
    # kubelet operation_generator.go: `MountVolume.SetUp failed for volume "x" : …`, `MountVolume.MountDevice failed
    # for volume "pvc-…" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name
    # efs.csi.aws.com not found in the list of registered CSI drivers`, `MountVolume.NewMounter initialization failed
    # for volume …`, `MapVolume.SetUpDevice failed for volume …` (kubernetes/kubernetes#29166, #110158).
    EventSignature("mount-op", "volume-mount-failed",
                   r'(?P<op>(?:MountVolume|MapVolume|UnmapVolume)\.\w+|AttachVolume\.Attach) failed for volume '
                   r'"(?P<volume>[^"]+)"(?: \(UniqueName: "[^"]*"\))?(?: : | )(?P<detail>[^\n]*)',
                   "the kubelet (or the attach/detach controller) could not prepare this volume"),
    # attachdetach-controller: `Multi-Attach error for volume "pvc-…" Volume is already exclusively attached to one
    # node and can't be attached to another` / `Volume is already used by pod(s) x` (openshift-docs#24970).
    EventSignature("multi-attach", "volume-mount-failed",
                   r'Multi-Attach error for volume "(?P<volume>[^"]+)"\s*(?P<detail>[^\n]*)',
                   "a ReadWriteOnce volume is still attached to another node (an old pod there still uses it, or the "
                   "detach did not finish)",
                   "Free the volume: delete or move the pod that still uses it on the other node (`kubectl get pods -A "
                   "-o wide` for the claim), or wait for the detach; use a ReadWriteMany class if several pods need it."),
    # kubelet volume_manager.go: `Unable to attach or mount volumes: unmounted volumes=[models], unattached
    # volumes=[models kube-api-access-x], failed to process volumes=[]: timed out waiting for the condition`
    # (1.2x; `context deadline exceeded` in newer kubelets; cert-manager#4694, ceph-csi#1109).
    EventSignature("unmounted", "volume-mount-failed",
                   r"Unable to attach or mount volumes: unmounted volumes=\[(?P<volumes>[^\]]*)\]",
                   "the kubelet gave up waiting for these volumes; the MountVolume/AttachVolume events say why"),
    # kubelet <= 1.18: `Unable to mount volumes for pod "x": timeout expired waiting for volumes to attach or mount
    # for pod "ns"/"x". list of unmounted volumes=[data]. list of unattached volumes=[…]`.
    EventSignature("unmounted-old", "volume-mount-failed",
                   r"list of unmounted volumes=\[(?P<volumes>[^\]]*)\]",
                   "the kubelet gave up waiting for these volumes"),
)

# Why an image pull failed, from kubelet/containerd/CRI-O/registry wording; the first matching row wins.
# (sub-reason, pattern, remedy)
PULL_CAUSES: Tuple[Tuple[str, str, str], ...] = (
    # containerd: `unexpected status code https://registry-1.docker.io/v2/…: 429 Too Many Requests - Server message:
    # toomanyrequests: You have reached your pull rate limit` (kata-containers#10109); ECR `toomanyrequests: Rate
    # exceeded`; the kubelet's own `pull QPS exceeded` (--registry-qps).
    ("rate-limited", r"429 Too Many Requests|toomanyrequests|rate limit|Rate exceeded|pull QPS exceeded",
     "Authenticate the pulls (an imagePullSecret) or use a registry mirror/cache: the registry is rate-limiting "
     "node $node."),
    # containerd: `no match for platform in manifest: not found`; Docker: `no matching manifest for linux/arm64/v8 in
    # the manifest list entries`; CRI-O: `choosing image instance: no image found in image index for architecture
    # arm64, variant "v8", OS linux` / `no image found in manifest list for architecture`.
    ("platform", r"no match for platform in manifest|no matching manifest for|no image found in (?:image index|"
                 r"manifest list) for architecture",
     "Use an image built for node $node's architecture (label kubernetes.io/arch), or a multi-arch tag of $image."),
    # containerd: `failed to authorize: failed to fetch anonymous token: unexpected status …: 401 Unauthorized`
    # (nvcr.io, NVIDIA/TensorRT-LLM#306); Docker Hub answers `pull access denied, repository does not exist or may
    # require authorization: server message: insufficient_scope: authorization failed` for a private AND a missing
    # repository, so the remedy names both.
    ("unauthorized", r"401 Unauthorized|403 Forbidden|unauthorized|authorization failed|pull access denied|"
                     r"insufficient_scope|no basic auth credentials|authentication required|denied: ",
     "Check that $image exists and give the pod registry credentials: an imagePullSecret of type "
     "kubernetes.io/dockerconfigjson in namespace $namespace (nvcr.io takes user `$$oauthtoken` and an NGC API key)."),
    # containerd: `failed to resolve reference "ghcr.io/x/y:v0.0.29": ghcr.io/x/y:v0.0.29: not found`
    # (cvisionai/tator#439); CRI-O/Docker: `manifest unknown`; ECR: `name unknown: The repository with name … does not
    # exist`.
    ("not-found", r"not found|manifest unknown|repository does not exist|NotFound|name unknown",
     "Fix the image name or tag: $image does not exist in the registry (check the tag list, e.g. "
     "`crane ls <repository>` or the registry UI)."),
    ("network", r"no such host|dial tcp[^\n]*(?:i/o timeout|connection refused|network is unreachable)|"
                r"connection reset by peer|x509: certificate|tls: failed to verify|server gave HTTP response to HTTPS",
     "Fix node $node's path to the registry (DNS, proxy, firewall, CA certificates) or use a reachable mirror."),
    # Large CUDA images (several GB): containerd cancels a pull that makes no progress for image_pull_progress_timeout
    # (`cancel pulling image … because of no progress in 1m0s`) and the kubelet reports `rpc error: code = Canceled
    # desc = failed to pull and unpack image …: context canceled` (kubernetes/kubernetes#131521, #59376).
    ("timeout", r"context deadline exceeded|context canceled|Client\.Timeout exceeded|TLS handshake timeout|i/o timeout",
     "The pull was cut off: check the registry's reachability and throughput from node $node; for very large "
     "images pre-pull them (a DaemonSet or the node image), use a closer mirror, or raise containerd's "
     "image_pull_progress_timeout."),
    ("no-space", r"no space left on device",
     "Free disk on node $node (`crictl rmi --prune` removes unused images) or give it a larger disk: the image "
     "layers do not fit."),
)


# kubelet admission rejections (pkg/kubelet/lifecycle/predicate.go, kubelet.go rejectPod: phase Failed, reason, and
# message "Pod was rejected: <message>"; before ~1.24 the message was "Pod <message>").
# reason pattern -> what it means for a pod that was already scheduled to this node.
ADMISSION_REASONS: Tuple[Tuple[str, str], ...] = (
    # `OutOfnvidia.com/gpu` + `Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 1, capacity: 1`
    (r"^OutOf(?P<resource>.+)$",
     "the kubelet counted the node's {resource} as already in use when the pod arrived: another pod took it between "
     "scheduling and admission, pods still terminating hold it, or the device plugin re-registered with fewer devices"),
    # `Predicate NodeAffinity failed` (+ `: node(s) didn't match Pod's node affinity/selector` since 1.31,
    # kubernetes/kubernetes#125498; #93338 labels not yet seen by the kubelet; flyteorg/flyte#6461 on GKE).
    (r"^NodeAffinity$",
     "the node's labels no longer match the pod's nodeSelector/affinity when the kubelet admitted it (labels changed "
     "after scheduling, e.g. GPU feature discovery relabelling the node, or the kubelet had not yet seen new labels)"),
    (r"^NodeName$", "spec.nodeName names a different node than the one that received the pod"),
    (r"^NodePorts$", "a hostPort the pod asks for is already taken on the node"),
    (r"^TaintToleration$", "the node has a NoExecute taint the pod does not tolerate"),
    # `TopologyAffinityError` / `Resources cannot be allocated with Topology locality` (topology manager
    # single-numa-node/restricted; pytorch/ci-infra#696 4-GPU pods on a 2-socket p5 node).
    (r"^TopologyAffinityError$",
     "the kubelet's topology manager (single-numa-node or restricted policy) could not place the GPUs and CPUs on one "
     "NUMA node: the free GPUs are spread across sockets"),
    (r"^SysctlForbidden$", "the pod sets a sysctl the kubelet does not allow"),
    (r"^AppArmor$", "the AppArmor profile the pod asks for is not loaded on the node"),
    (r"^PodOS\w+$", "the pod's spec.os does not match the node's operating system"),
    (r"^NodeShutdown$", "the node was shutting down when the pod arrived"),
    (r"^InitContainerRestartPolicyForbidden$", "the node's kubelet is too old for sidecar init containers"),
)
# Status reasons of a Failed pod that are NOT admission rejections (other rules explain them).
NOT_ADMISSION = ("Evicted", "UnexpectedAdmissionError", "DeadlineExceeded", "NodeLost", "Terminated", "Shutdown",
                 "Preempting")
REJECTED_MESSAGE = r"^Pod (?:was rejected: )?(?P<message>.+)$"

# Event reasons under which the families above appear (kubelet events.go; attachdetach-controller).
SANDBOX_REASONS = ("FailedCreatePodSandBox",)
CONTAINER_REASONS = ("Failed", "FailedCreatePodContainer", "FailedStartContainer")
MOUNT_REASONS = ("FailedMount", "FailedAttachVolume", "FailedMapVolume")


def by_id(sig_id: str) -> EventSignature:
    return next(s for s in SIGNATURES if s.id == sig_id)


def for_rule(rule: str) -> Tuple[EventSignature, ...]:
    return tuple(s for s in SIGNATURES if s.rule == rule)


@lru_cache(maxsize=None)
def _rx(pattern: str):
    return re.compile(pattern, re.I)


def search(text: str, rule: str) -> Optional[Tuple[EventSignature, "re.Match"]]:
    """The first signature of `rule` found in `text`, with its match (signatures are tried in order)."""
    for sig in for_rule(rule):
        m = _rx(sig.pattern).search(text or "")
        if m:
            return sig, m
    return None
