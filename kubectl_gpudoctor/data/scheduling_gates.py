"""Known pod scheduling gates and the controllers that remove them (knowledge as data)."""

# (gate name or "domain/" prefix, who removes it, what it waits for, commands to look at it)
# Kueue injects kueue.x-k8s.io/admission into pods it manages and removes it when the Workload is admitted
# (sigs.k8s.io/kueue, pod integration); kueue.x-k8s.io/topology waits for a topology-aware assignment.
GATES = (
    ("kueue.x-k8s.io/admission", "Kueue",
     "admission of the pod's Workload into its ClusterQueue (quota for the requested GPUs)",
     ["kubectl get workloads -n $namespace", "kubectl get clusterqueues",
      "kubectl describe localqueue -n $namespace $queue"]),
    ("kueue.x-k8s.io/topology", "Kueue",
     "a topology-aware assignment for the pod's PodSet",
     ["kubectl get workloads -n $namespace"]),
    ("kueue.x-k8s.io/", "Kueue", "Kueue admission", ["kubectl get workloads -n $namespace"]),
)


def describe(gate: str):
    """(controller, waits for, commands) for a gate; the gate's domain when it is not a known one."""
    for key, who, what, cmds in GATES:
        if gate == key or (key.endswith("/") and gate.startswith(key)):
            return who, what, cmds
    domain = gate.split("/", 1)[0] if "/" in gate else gate
    return f"the controller that owns {domain}", "that controller's admission decision", []
