"""The kubelet's eviction, node-pressure and NotReady wording as data: pattern -> cause -> remedy."""
from __future__ import annotations

# Eviction causes, most specific first. Message formats from pkg/kubelet/eviction/helpers.go:
#   nodeLowMessageFmt                   "The node was low on resource: %v. "
#   thresholdMetMessageFmt (1.25+)      "Threshold quantity: %v, available: %v. "
#   containerMessageFmt (1.25+)         "Container %s was using %s, request is %s, has larger consumption of %v. "
#   containerMessageFmt (<= 1.24)       "Container %s was using %s, which exceeds its request of %s. "
#   containerEphemeralStorageMessageFmt "Container %s exceeded its local ephemeral storage limit %q. "
#   podEphemeralStorageMessageFmt       "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
#   emptyDirMessageFmt                  "Usage of EmptyDir volume %q exceeds the limit %q. "
#   nodeConditionMessageFmt (admission) "The node had condition: %v. "
# Kubelets before 1.9 wrote "The node was low on resource: [DiskPressure]." (kubernetes/kubernetes#91600,
# cloud-ark/kubeplus#1382). Graceful node shutdown: reason Terminated, "Pod was terminated in response to
# imminent node shutdown." (nodeshutdown_manager, 1.22+); 1.20-1.21 wrote reason Shutdown, "Node is shutting,
# evicting pods" (the graceful-node-shutdown docs of those releases).
DISK = "ephemeral-storage"
EVICTION_CAUSES = (
    # (cause, resource, regex)
    ("container-storage-limit", DISK, r'Container (?P<container>\S+) exceeded its local ephemeral storage limit "(?P<limit>[^"]+)"'),
    ("pod-storage-limit", DISK, r"Pod ephemeral local storage usage exceeds the total limit of containers (?P<limit>[0-9.]+[A-Za-z]*)"),
    ("emptydir-limit", DISK, r'Usage of EmptyDir volume "(?P<volume>[^"]+)" exceeds the limit "(?P<limit>[^"]+)"'),
    ("node-memory", "memory", r"The node was low on resource: (?:memory|\[MemoryPressure\])"),
    ("node-disk", DISK, r"The node was low on resource: (?:ephemeral-storage|nodefs|imagefs|\[DiskPressure\])"),
    ("node-inodes", "inodes", r"The node was low on resource: inodes"),
    ("node-pids", "pids", r"The node was low on resource: (?:pids|\[PIDPressure\])"),
    ("node-condition", "", r"The node had condition: \[(?P<conditions>[^\]]+)\]"),
    ("node-shutdown", "", r"terminated in response to imminent node shutdown|Node is shutting, evicting pods|"
                          r"Node is in progress of shutting down"),
    ("critical-preemption", "", r"Preempted in order to admit critical pod|preempted by [Kk]ubelet to accommodate a critical pod"),
)

THRESHOLD = r"Threshold quantity: (?P<threshold>[^,]+), available: (?P<available>[^.\s]+(?:\.\d+)?[A-Za-z]*)"
# Both container formats: (name, usage, request, resource).
CONTAINER_USAGE = (r"Container (?P<container>\S+) was using (?P<usage>\S+?),? (?:request is (?P<request>\S+?), has larger "
                   r"consumption of (?P<resource>[\w-]+)|which exceeds its request of (?P<request_old>\S+?))\.")

EVICTION_FIX = {
    "container-storage-limit": (
        "Container $container wrote more than its ephemeral-storage limit $limit into its own filesystem or logs. "
        "Put model downloads and caches on a volume (emptyDir with a sizeLimit, or a PVC) and point HF_HOME / "
        "the cache directory there, or raise limits.ephemeral-storage."),
    "pod-storage-limit": (
        "The pod's containers together wrote more than the sum of their ephemeral-storage limits ($limit). "
        "Move model downloads and caches to a volume (PVC, or emptyDir with a sizeLimit) or raise the limits."),
    "emptydir-limit": "emptyDir $volume outgrew its sizeLimit $limit: raise sizeLimit or use a PVC for that data.",
    "node-memory": (
        "The node ran out of memory and the kubelet evicted the pods using most memory above their requests. "
        "Set requests.memory close to the real use so the scheduler reserves it (see the snippet); requests "
        "equal to limits (Guaranteed QoS) are evicted last, and a GPU node needs room for the weights in RAM."),
    "node-disk": (
        "Node $node ran out of disk (nodefs/imagefs). Free it: prune unused images "
        "(`crictl rmi --prune` on the node; CUDA images are 5-20 GB each), remove leftover pod directories and "
        "container logs, and keep model downloads off the container filesystem (use a PVC or an emptyDir with a "
        "sizeLimit); set requests.ephemeral-storage so the scheduler accounts for what the pod writes."),
    "node-inodes": (
        "Node $node ran out of inodes: something wrote very many small files (extracted datasets, pip/HF caches). "
        "Clean them up and keep such data on a volume."),
    "node-pids": (
        "Node $node ran out of process ids: a pod forks too many processes or threads (DataLoader workers x "
        "OMP/tokenizer threads). Lower the worker and thread counts and set the kubelet's podPidsLimit."),
    "node-condition": (
        "The kubelet refused the pod because node $node reported $conditions when it arrived; free the resource "
        "on the node (see node-pressure) and let the controller recreate the pod."),
    "node-shutdown": (
        "Node $node was shut down (spot/preemptible reclaim, maintenance or autoscaler scale-down) and the kubelet "
        "stopped the pod. Checkpoint long GPU jobs, or run them on on-demand nodes; the controller recreates the pod."),
    "critical-preemption": (
        "The kubelet stopped this pod to admit a system-critical pod on node $node: raise this pod's priority or "
        "reserve capacity for node-critical daemons."),
    "unknown": "Read the eviction message; the kubelet names the resource it was short of.",
}

# Pressure conditions: what the kubelet is short of and what to do. Condition wording from the kubelet's
# setters (KubeletHasDiskPressure "kubelet has disk pressure", KubeletHasInsufficientMemory,
# KubeletHasInsufficientPID); taints node.kubernetes.io/{memory,disk,pid}-pressure:NoSchedule.
PRESSURE = {
    "MemoryPressure": ("memory", "the kubelet evicts the pods using the most memory above their requests and "
                                 "the scheduler sends no new pods without a toleration"),
    "DiskPressure": ("disk", "the kubelet garbage-collects images and evicts pods writing the most to local disk; "
                             "new pods are not scheduled there"),
    "PIDPressure": ("process ids", "the kubelet evicts pods with the most processes; new pods are not scheduled there"),
}
PRESSURE_FIX = {
    "MemoryPressure": "Find the pods using memory above their requests (`kubectl top pods -A --sort-by=memory` on "
                      "that node) and set requests close to real use.",
    "DiskPressure": "Free disk on the node: `crictl rmi --prune` (unused images), leftover pod directories under "
                    "/var/lib/kubelet/pods, large container logs, and model downloads written to container "
                    "filesystems (move them to PVCs).",
    "PIDPressure": "Find the pod forking too many processes and lower its worker/thread counts; set podPidsLimit.",
}

# NotReady causes from the Ready condition's message (kubelet setters, node lifecycle controller).
NOT_READY_CAUSES = (
    (r"Kubelet stopped posting node status|NodeStatusUnknown",
     "the kubelet stopped reporting: the machine is down or unreachable, or the kubelet is not running",
     "Check the machine (cloud console / BMC), then `systemctl status kubelet` and `journalctl -u kubelet` on it."),
    (r"container runtime network not ready|NetworkPluginNotReady|cni plugin not initialized|cni config uninitialized",
     "the CNI network plugin on the node is not ready",
     "Check the CNI agent pod on that node (calico-node, cilium, aws-node, kube-flannel) and /etc/cni/net.d."),
    (r"PLEG is not healthy",
     "the kubelet's pod lifecycle event generator is stuck: the container runtime does not answer in time",
     "Check containerd/CRI-O on the node (`systemctl status containerd`, `crictl ps`); hung containers or an "
     "overloaded disk are the usual cause."),
    (r"container runtime is down|container runtime status check|runtime not ready|RuntimeReady=false",
     "the container runtime (containerd/CRI-O) is down",
     "Restart and inspect the runtime on the node: `systemctl status containerd`, `journalctl -u containerd`."),
    (r"node is shutting down",
     "the node is shutting down",
     "Wait for the node to come back or be replaced; pods are recreated elsewhere."),
    (r"[Mm]issing node capacity|csinode is not yet initialized",
     "the kubelet has not finished initializing",
     "Check the kubelet log on the node for the component that is not ready."),
)
