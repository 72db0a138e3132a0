"""Why the API server refused to create a workload's pods: FailedCreate wording -> cause -> fix, as data."""

# Controllers report a refused pod as a Warning FailedCreate event on themselves (and a Deployment mirrors it in
# its ReplicaFailure condition):
#   ReplicaSet/Job/DaemonSet: `Error creating: pods "chat-7f9c6d5b8-" is forbidden: exceeded quota: …`
#   StatefulSet: `create Pod train-0 in StatefulSet train failed error: pods "train-0" is forbidden: …`
# Wording: kubernetes/website#641 (quota walkthrough), kubernetes/kubernetes#16941, hmcts/cnp-flux-config#13765
# and #2122, kubeflow/pipelines#7699, uoe-eidf-cluster-users/eidf-epcc-cluster#26, microsoft/pai#5215.
CAUSES = (
    ("quota-exceeded",
     r"exceeded quota: (?P<quota>[\w.-]+), requested: (?P<requested>[^\s,]+(?:,[^\s,]+)*), "
     r"used: (?P<used>[^\s,]+(?:,[^\s,]+)*), limited: (?P<limited>[^\s,]+(?:,[^\s,]+)*)",
     "ResourceQuota $quota is used up (requested $requested; used $used; limited $limited)",
     "Free quota (finish or scale down other workloads in namespace $namespace), lower the request, or raise "
     "ResourceQuota $quota (`kubectl describe quota $quota -n $namespace`)."),
    ("quota-needs-requests",
     r"failed quota: (?P<quota>[\w.-]+): must specify (?P<missing>[\w.,/-]+)",
     "ResourceQuota $quota requires every pod to set $missing",
     "Set $missing on every container (and init container) of the pod template; a quota on a resource makes "
     "requests/limits for it mandatory."),
    ("runtimeclass-not-found",
     r'pod rejected: RuntimeClass "(?P<runtimeclass>[^"]+)" not found',
     "RuntimeClass $runtimeclass does not exist, so admission rejects every pod",
     "Fix runtimeClassName in the pod template or create RuntimeClass $runtimeclass (the GPU operator creates "
     "`nvidia` when its toolkit is enabled)."),
    ("pod-security",
     r'violates PodSecurity "(?P<level>[^"]+)": (?P<detail>.+)',
     "the namespace's Pod Security level $level forbids the pod ($detail)",
     "Change the pod template to meet Pod Security \"$level\" (or, if the pod truly needs it, label the namespace "
     "pod-security.kubernetes.io/enforce with a less strict level)."),
    # Volcano's admission webhook refuses jobs/podgroups of a missing or non-open queue: `admission webhook
    # "validatejob.volcano.sh" denied the request: can only submit job to queue with state 'Open'`
    # (volcano-sh/volcano#5960), `unable to find job queue: queues.scheduling.volcano.sh "q1" not found`.
    ("scheduler-queue-invalid",
     r"(?P<detail>can only submit (?:job|PodGroup) to (?:leaf )?queues?(?: with state '?Open'?)?[^,;]*"
     r"|unable to find job queue[^,;]*|queues?\.scheduling\.volcano\.sh \"(?P<queue>[^\"]+)\" not found)",
     "the batch-scheduler queue refuses it ($detail)",
     "Submit to a queue that exists, is a leaf and is open (`kubectl get queues`), or open/create it."),
    ("webhook-denied",
     r'admission webhook "(?P<webhook>[^"]+)" denied the request: (?P<detail>.+)',
     "admission webhook $webhook denied the pod: $detail",
     "Change the pod template to satisfy the policy behind webhook $webhook (its message says what it wants)."),
    ("limitrange",
     r"(?P<detail>(?:maximum|minimum) (?P<resource>[\w./-]+) usage per (?:Container|Pod) is (?P<bound>\S+), "
     r"(?:but|no) (?:limit|request) is (?P<value>\S+))",
     "a LimitRange in the namespace rejects the pod ($detail)",
     "Keep the pod's requests/limits inside the namespace's LimitRange (`kubectl describe limitrange -n "
     "$namespace`)."),
    ("serviceaccount-missing",
     r'serviceaccount "(?P<serviceaccount>[^"]+)" not found',
     "ServiceAccount $serviceaccount does not exist",
     "Create ServiceAccount $serviceaccount in namespace $namespace or fix serviceAccountName in the pod template."),
    ("priorityclass-missing",
     r'no PriorityClass with name (?P<priorityclass>\S+) was found',
     "PriorityClass $priorityclass does not exist",
     "Create PriorityClass $priorityclass or fix priorityClassName in the pod template."),
)
