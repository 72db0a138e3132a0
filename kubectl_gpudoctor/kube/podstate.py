"""What a pod's status says: kubectl's STATUS column, container states, and whether the pod is healthy."""
from __future__ import annotations

from datetime import datetime
from typing import Dict, Iterator, List, Optional, Tuple

from .objects import condition, containers, meta, spec, status
from .timeutil import seconds_between

# Waiting reasons that mean "this will not get better by itself".
FAILING_WAITING = {
    "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull",
    "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "StartError",
    "PreStartHookError", "PostStartHookError", "ContainerCannotRun",
}
PROGRESSING_WAITING = {"ContainerCreating", "PodInitializing"}


def statuses(pod: dict, init: bool = False) -> List[dict]:
    return status(pod).get("initContainerStatuses" if init else "containerStatuses") or []


def status_by_name(pod: dict) -> Dict[str, dict]:
    """Container name -> containerStatus, init containers included."""
    return {s.get("name"): s for s in statuses(pod, True) + statuses(pod)}


def all_container_states(pod: dict) -> Iterator[Tuple[dict, dict, bool]]:
    """(container spec, its status or {}, is_init) for every container, init containers first."""
    by_name = status_by_name(pod)
    for init in (True, False):
        for c in containers(pod, init=init):
            yield c, by_name.get(c.get("name")) or {}, init


def waiting(cs: dict) -> dict:
    return (cs.get("state") or {}).get("waiting") or {}


def terminated(cs: dict) -> dict:
    return (cs.get("state") or {}).get("terminated") or {}


def last_terminated(cs: dict) -> dict:
    return (cs.get("lastState") or {}).get("terminated") or {}


def latest_termination(cs: dict) -> dict:
    """The most recent termination record: the current state if terminated, else lastState."""
    return terminated(cs) or last_terminated(cs)


def is_scheduled(pod: dict) -> bool:
    if spec(pod).get("nodeName"):
        return True
    cond = condition(pod, "PodScheduled")
    return bool(cond and cond.get("status") == "True")


def is_unscheduled_pending(pod: dict) -> bool:
    return status(pod).get("phase", "Pending") == "Pending" and not is_scheduled(pod)


def restarts(pod: dict) -> int:
    return sum(int(s.get("restartCount") or 0) for s in statuses(pod, True) + statuses(pod))


def display_status(pod: dict) -> str:
    """The STATUS column of `kubectl get pod` (kubectl's printPod, same precedence)."""
    st = status(pod)
    reason = st.get("reason") or st.get("phase") or "Pending"
    cond = condition(pod, "PodScheduled")
    if cond and cond.get("reason") == "SchedulingGated":
        reason = "SchedulingGated"
    init_specs = containers(pod, init=True)
    initializing = False
    for i, cs in enumerate(statuses(pod, True)):
        term, wait = terminated(cs), waiting(cs)
        c_spec = next((c for c in init_specs if c.get("name") == cs.get("name")), {})
        if term and term.get("exitCode") == 0:
            continue
        if c_spec.get("restartPolicy") == "Always" and cs.get("started"):
            continue
        if term:
            if term.get("reason"):
                reason = "Init:" + term["reason"]
            elif term.get("signal"):
                reason = f"Init:Signal:{term['signal']}"
            else:
                reason = f"Init:ExitCode:{term.get('exitCode')}"
        elif wait.get("reason") and wait.get("reason") != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    initialized = condition(pod, "Initialized")
    if not initializing or (initialized and initialized.get("status") == "True"):
        has_running = False
        for cs in reversed(statuses(pod)):
            term, wait = terminated(cs), waiting(cs)
            if wait.get("reason"):
                reason = wait["reason"]
            elif term.get("reason"):
                reason = term["reason"]
            elif term:
                reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode')}"
            elif cs.get("ready") and (cs.get("state") or {}).get("running") is not None:
                has_running = True
        if reason == "Completed" and has_running:
            ready = condition(pod, "Ready")
            reason = "Running" if ready and ready.get("status") == "True" else "NotReady"
    if meta(pod).get("deletionTimestamp"):
        reason = "Unknown" if st.get("reason") == "NodeLost" else "Terminating"
    return reason


# The scheduler binds a schedulable pod within seconds. Until it records a verdict on the pod (PodScheduled=False
# with reason Unschedulable, or SchedulerError when a plugin failed) or a gate holds it, a young unscheduled pod
# is still being scheduled (volume binding, the scheduling queue), not stuck.
SCHEDULER_VERDICTS = ("Unschedulable", "SchedulerError")
SCHEDULING_GRACE_S = 300


def scheduler_judged(pod: dict, now: Optional[datetime] = None) -> bool:
    """The scheduler has said why the pod waits, a scheduling gate holds it, or it has waited past the grace
    period (always True without a clock or a creationTimestamp: nothing tells that it is young)."""
    cond = condition(pod, "PodScheduled") or {}
    if (cond.get("status") == "False" and cond.get("reason") in SCHEDULER_VERDICTS) or spec(pod).get("schedulingGates"):
        return True
    age = seconds_between(meta(pod).get("creationTimestamp"), now) if now else None
    return age is None or age >= SCHEDULING_GRACE_S


def health(pod: dict, now: Optional[datetime] = None) -> str:
    """healthy | progressing | failing, judged from the status alone (rules explain why); `now` (the evidence
    clock) lets a pod the scheduler has not judged yet count as progressing."""
    st = status(pod)
    phase = st.get("phase") or "Pending"
    if phase == "Succeeded":
        return "healthy"
    if phase == "Failed":
        return "failing"
    if meta(pod).get("deletionTimestamp"):
        return "progressing"   # Terminating: its containers stop on purpose (a stuck one is the node's problem)
    if phase == "Pending" and not is_scheduled(pod):
        return "failing" if scheduler_judged(pod, now) else "progressing"
    for _, cs, _ in all_container_states(pod):
        if waiting(cs).get("reason") in FAILING_WAITING:
            return "failing"
        term = terminated(cs)
        if term and term.get("exitCode", 0) != 0:
            return "failing"
    if phase == "Running":
        ready = condition(pod, "Ready")
        if ready and ready.get("status") == "True":
            return "healthy"
        return "progressing"
    return "progressing"


# How the kubelet marks a pod it stopped itself: node-pressure eviction (Evicted), graceful node shutdown
# (Terminated; Shutdown before 1.22), critical-pod preemption (Preempting), and since 1.26 the
# DisruptionTarget condition with reason TerminationByKubelet. Since 1.27 such a pod may end Succeeded when its
# containers exit 0 on SIGTERM (kubernetes/kubernetes#118310).
KUBELET_TERMINATION_REASONS = {"Evicted", "Terminated", "Shutdown", "Preempting"}


def deadline_exceeded(pod: dict) -> bool:
    """The kubelet failed the pod for running longer than spec.activeDeadlineSeconds (its exits are the kill)."""
    return status(pod).get("phase") == "Failed" and status(pod).get("reason") == "DeadlineExceeded"


def terminated_by_kubelet(pod: dict) -> bool:
    """The kubelet itself stopped this pod (eviction, node shutdown, preemption): its exits are not crashes."""
    st = status(pod)
    if st.get("phase") not in ("Failed", "Succeeded"):
        return False
    if st.get("reason") in KUBELET_TERMINATION_REASONS:
        return True
    cond = condition(pod, "DisruptionTarget")
    return bool(cond and cond.get("status") == "True" and cond.get("reason") == "TerminationByKubelet")


# The runtime could not start the process: the container never ran (containerd reports exit 128 StartError,
# dockershim ContainerCannotRun). A CrashLoopBackOff whose last termination is one of these is a creation failure.
START_FAILURES = {"StartError", "ContainerCannotRun"}
# Waiting reasons of a container the kubelet is failing to create (not "still starting", not a crash loop).
CREATION_FAILING_WAITING = {
    "CreateContainerError", "CreateContainerConfigError", "RunContainerError", "StartError", "ContainerCannotRun",
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "PreStartHookError",
}


def creation_blocked(pod: dict) -> List[Tuple[dict, dict, bool]]:
    """Containers stuck before their process ever ran: failing creation, or last exit a start failure."""
    out = []
    for c, cs, init in all_container_states(pod):
        wait, last = waiting(cs), latest_termination(cs)
        if (cs.get("state") or {}).get("running") is not None:
            continue
        if wait.get("reason") in CREATION_FAILING_WAITING or last.get("reason") in START_FAILURES:
            out.append((c, cs, init))
    return out


def stuck_in_creation(pod: dict) -> bool:
    """On a node and stuck before its containers run: a container failing to be created or started, or nothing has
    run yet (volumes, sandbox, images). A running pod's old creation events do not count."""
    if not is_scheduled(pod) or terminated_by_kubelet(pod):
        return False
    if creation_blocked(pod):
        return True
    return status(pod).get("phase", "Pending") in ("Pending", "Failed") and never_ran(pod)


def never_ran(pod: dict) -> bool:
    """No container of the pod has run yet (sandbox, volume or image stage: ContainerCreating, PodInitializing)."""
    for _, cs, _ in all_container_states(pod):
        state = cs.get("state") or {}
        if state.get("running") is not None or cs.get("started"):
            return False
        term = latest_termination(cs)
        if term and term.get("reason") not in START_FAILURES:
            return False
    return True


def rejected_at_admission(pod: dict) -> bool:
    """The kubelet's admission failed the pod (UnexpectedAdmissionError, "Pod was rejected: …"): its containers never
    ran, or, re-admitted after a kubelet/node restart, were killed by the kubelet (kubernetes/kubernetes#118559)."""
    st = status(pod)
    return st.get("phase") == "Failed" and (st.get("reason") == "UnexpectedAdmissionError"
                                            or (st.get("message") or "").startswith(("Pod was rejected", "Pod Predicate",
                                                                                      "Pod Allocate failed")))


# Waiting reasons the kubelet reaches only after the pod's volumes are mounted and its sandbox exists.
_PAST_VOLUMES = ("ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "CreateContainerError",
                 "RunContainerError", "CrashLoopBackOff", "PodInitializing", "StartError")


def past_volume_setup(pod: dict) -> bool:
    """The kubelet mounted the pod's volumes: a container was created, ran, or waits on a later step."""
    for _, cs, _ in all_container_states(pod):
        state = cs.get("state") or {}
        if cs.get("containerID") or state.get("running") is not None or state.get("terminated") is not None:
            return True
        if latest_termination(cs) or waiting(cs).get("reason") in _PAST_VOLUMES:
            return True
    return False


# A scheduled pod still creating its containers (ContainerCreating, Init, PodInitializing) after this long, with
# the kubelet warning about it, is stuck rather than starting: a multi-GB CUDA image pulls in a few minutes.
STUCK_AFTER_S = 10 * 60
_NOT_DECIDING = ("Pulling", "Pulled", "Scheduled", "Created", "Started", "Killing", "SuccessfulAttachVolume")


def stuck_starting(pod: dict, events: List[dict], now: Optional[datetime]) -> bool:
    """A scheduled pod that has not got its containers running for STUCK_AFTER_S while Warnings keep coming."""
    if now is None or status(pod).get("phase", "Pending") != "Pending" or not is_scheduled(pod):
        return False
    since = (condition(pod, "PodScheduled") or {}).get("lastTransitionTime") or meta(pod).get("creationTimestamp")
    age = seconds_between(since, now)
    return age is not None and age >= STUCK_AFTER_S and bool(deciding_events(events))


# Without events to read, only the clock can tell stuck from slow: an hour not running is not "starting".
STUCK_UNSEEN_AFTER_S = 60 * 60


def not_started_for(pod: dict, now: Optional[datetime]) -> Optional[float]:
    """Seconds a scheduled pod has been Pending (its containers not all started), when that is past
    STUCK_UNSEEN_AFTER_S; None otherwise."""
    if now is None or status(pod).get("phase", "Pending") != "Pending" or not is_scheduled(pod):
        return None
    since = (condition(pod, "PodScheduled") or {}).get("lastTransitionTime") or meta(pod).get("creationTimestamp")
    age = seconds_between(since, now)
    return age if age is not None and age >= STUCK_UNSEEN_AFTER_S else None


def deciding_events(events: List[dict]) -> List[dict]:
    """The Warning events that say what blocks a pod (oldest first)."""
    return [e for e in events if e.get("type") == "Warning" and e.get("reason") not in _NOT_DECIDING]


def deciding_word(pod: dict, events: List[dict]) -> Optional[Tuple[str, str]]:
    """(where, text) of the newest thing the cluster said about a pod no rule explains: a container's waiting or
    termination message, else its newest Warning event, else the PodScheduled condition."""
    for c, cs, init in all_container_states(pod):
        for fld, rec in (("state", waiting(cs)), ("lastState", latest_termination(cs))):
            if rec.get("message"):
                kind = "initContainer" if init else "container"
                return (f"{kind} {c.get('name')} {fld}", f"{rec.get('reason') or ''}: {rec['message']}".strip(": "))
    warned = deciding_events(events)
    if warned:
        e = warned[-1]
        return ("event", f"{e.get('reason')}: {e.get('message') or ''}".strip())
    cond = condition(pod, "PodScheduled") or {}
    if cond.get("status") == "False" and cond.get("message"):
        return ("conditions[PodScheduled]", f"{cond.get('reason')}: {cond['message']}")
    return None

