"""Batch-scheduler queues (Kueue, Volcano, KAI) as data: where a pod names its queue, the queue objects' API groups,
and the words those schedulers use for a queue that is missing, not a leaf, or closed."""

# (system, how the pod (or its workload / pod template) names its queue: ("label"|"annotation", key), queue kind,
#  API group of that kind)
# Kueue: label kueue.x-k8s.io/queue-name names a namespaced LocalQueue, whose spec.clusterQueue names a ClusterQueue
#   (kueue.sigs.k8s.io docs, "Run a Kubernetes Job"; pod integration gates pods with kueue.x-k8s.io/admission).
# Volcano: annotation scheduling.volcano.sh/queue-name (volcano-sh/volcano#2276) or the PodGroup's spec.queue
#   (pod annotation scheduling.k8s.io/group-name); Queue status.state Open|Closed|Closing, hierarchical queues name
#   their spec.parent (volcano-sh/volcano docs/design/queue/queue-state-management.md, hierarchical-queue design).
# KAI scheduler: label kai.scheduler/queue (older runai/queue, kai-scheduler/KAI-Scheduler#44) names a Queue of
#   scheduling.run.ai/v2 whose spec.parentQueue builds the tree; only leaf queues take jobs (KAI-Scheduler#621).
SOURCES = (
    ("kueue", ("label", "kueue.x-k8s.io/queue-name"), "LocalQueue", "kueue.x-k8s.io"),
    ("volcano", ("annotation", "scheduling.volcano.sh/queue-name"), "Queue", "scheduling.volcano.sh"),
    ("kai", ("label", "kai.scheduler/queue"), "Queue", "scheduling.run.ai"),
    ("kai", ("label", "runai/queue"), "Queue", "scheduling.run.ai"),
)
PODGROUP_ANNOTATION = "scheduling.k8s.io/group-name"
# A queue matters only to the scheduler that reads it: Volcano and KAI schedule pods whose schedulerName names them
# (KAI's quick start: `schedulerName: kai-scheduler`; Run:ai's `runai-scheduler`); Kueue holds a pod with its
# admission gate or a Job with spec.suspend. A queue label that no running queueing system reads decides nothing.
SCHEDULER_NAMES = {"volcano": ("volcano",), "kai": ("kai-scheduler", "runai-scheduler")}
KUEUE_GATE = "kueue.x-k8s.io/"
VOLCANO_GROUP = "scheduling.volcano.sh"
KUEUE_GROUP = "kueue.x-k8s.io"

# Collector paths (LIST, cluster-wide for cluster-scoped kinds); a 404 means the CRD is not installed.
PATHS = {
    ("kueue", "LocalQueue"): "/apis/kueue.x-k8s.io/v1beta1/namespaces/{ns}/localqueues",
    ("kueue", "ClusterQueue"): "/apis/kueue.x-k8s.io/v1beta1/clusterqueues",
    ("kueue", "Workload"): "/apis/kueue.x-k8s.io/v1beta1/namespaces/{ns}/workloads",
    ("volcano", "Queue"): "/apis/scheduling.volcano.sh/v1beta1/queues",
    ("volcano", "PodGroup"): "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups",
    ("kai", "Queue"): "/apis/scheduling.run.ai/v2/queues",
}
# Every kind of those systems the collector reads.
KINDS = tuple(sorted({kind for _, kind in PATHS}))

# The schedulers' own words (pod condition/events, Kueue Workload conditions, PodGroup conditions/events, webhook
# denials): (what is wrong, pattern with a `queue` group where the words name it).
# KAI-Scheduler#820: PodScheduled "QueueDoesNotExist: Queue 'non-exist' does not exist."; Kueue#540/#3836:
#   QuotaReserved "LocalQueue lq doesn't exist", "ClusterQueue cq is inactive", kueue#7929 "localQueue doesn't exist
#   or inactive"; Volcano#5960/#195: "can only submit job to queue with state 'Open'", `queue "q" not found`,
#   hierarchical queues: "can only submit PodGroup to leaf queues".
WORDS = (
    ("missing", r"QueueDoesNotExist|Queue '(?P<queue>[^']+)' does not exist"),
    ("missing", r"(?:LocalQueue|ClusterQueue) (?P<queue>\S+) doesn'?t exist|localQueue doesn't exist"),
    ("missing", r'queues?(?:\.scheduling\.volcano\.sh)? "(?P<queue>[^"]+)" not found|unable to find job queue'),
    ("inactive", r"(?:LocalQueue|ClusterQueue) (?P<queue>\S+) is (?:inactive|stopped|not active)"),
    ("closed", r"queue with state '?Open'?|queue (?P<queue>\S+) (?:is )?(?:closed|closing|not open)"),
    ("not-leaf", r"leaf queues?|not a leaf"),
)
