"""Why the kubelet rejected a pod already scheduled to its node (Failed pod status reasons such as OutOfnvidia.com/gpu,
NodeAffinity, TopologyAffinityError); data only, imported through event_signatures (never directly), and not the API
server's refusals to create a pod."""
from typing import Tuple

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
