"""The order of phases and of rules, declared once: the registry sorts by it (it breaks root-cause ties and orders
docs/rules.md and `kubectl gpudoctor rules`)."""

# The earliest failing phase holds the root cause (rule-catalogue.md); node rules also run under a pod.
PHASES = ("scheduling", "creation", "init", "crash", "eviction", "network", "node")

# Within a phase, rank decides first; this order decides between equal ranks. A new rule id goes here.
RULE_ORDER = (
    # scheduling: a workload whose pods are refused at creation, then the pod's own predicates
    "pod-creation-rejected",
    "scheduling-gated",
    "gpu-not-advertised",
    "mig-profile-mismatch",
    "rdma-not-advertised",
    "node-selector-mismatch",
    "untolerated-taint",
    "gpu-nodes-unavailable",
    "pod-affinity-unsatisfiable",
    "reservation-mismatch",
    "unbound-pvc",
    "volume-zone-conflict",
    "dra-claim-unallocated",
    "insufficient-gpu",
    "insufficient-node-resources",
    "no-scheduler-activity",
    # creation
    "runtimeclass-not-found",
    "missing-config-reference",
    "image-pull-failed",
    "node-admission-rejected",
    "volume-mount-failed",
    "runtime-handler-not-configured",
    "cdi-device-unresolvable",
    "nvidia-container-cli-error",
    "cuda-requirement-unsatisfied",
    "device-allocation-failed",
    # init
    "init-container-failing",
    "driver-kernel-mismatch",
    # crash: how the container exited, then GPU, CUDA, host and application causes
    "oom-killed",
    "killed-by-signal",
    "completed-under-controller",
    "command-not-found",
    "app-error",
    "crash-backoff",
    "gpu-out-of-memory",
    "gpu-not-requested",
    "gpu-not-visible",
    "driver-libraries-missing",
    "cuda-driver-too-old",
    "no-kernel-image-for-gpu",
    "nccl-failure",
    "gpu-vendor-mismatch",
    "gpu-busy-exclusive-mode",
    "shm-too-small",
    "exec-format-error",
    "not-executable",
    "missing-model-files",
    "model-cache-read-only",
    "auth-failure",
    "dependency-unreachable",
    "probe-kills-slow-start",
    "job-failed",
    # eviction and the node under the pod
    "evicted",
    "node-pressure",
    "node-not-ready",
    "deadline-exceeded",
    # network
    "cni-failure",
    "networkpolicy-blocks-traffic",
    "rdma-device-missing",
    # node
    "gpu-allocatable-zero",
    "gpus-unhealthy",
    "mig-config-failed",
    "node-cordoned",
    "gpu-inventory",
    "device-plugin-not-running",
    "device-plugin-finds-no-gpu",
    "gpu-operator-component-failing",
)
