"""Event signatures of a pod sandbox the node's runtime cannot create for its RuntimeClass (handler not configured,
runtime binary missing, RuntimeClass not found); data only, imported through event_signatures (never directly)."""
from typing import Tuple

from .signature import EventSignature

RUNTIME: Tuple[EventSignature, ...] = (
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
)
