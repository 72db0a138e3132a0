"""Evidence-level helpers shared by rule bodies: applicability predicates, event lookups, evidence lines."""
from __future__ import annotations

import re
from typing import Iterable, List, Optional, Tuple

from ..kube import podstate
from ..evidence import Evidence, Line, event_count, event_time
from ..kube.objects import name
from ..kube.timeutil import format_time

# --- applicability (`applies=`) -------------------------------------------------


def unscheduled(ev: Evidence) -> bool:
    """The pod is Pending and no node was assigned: scheduling rules apply."""
    return ev.pod is not None and podstate.is_unscheduled_pending(ev.pod)


def scheduled(ev: Evidence) -> bool:
    return ev.pod is not None and podstate.is_scheduled(ev.pod)


def has_terminations(ev: Evidence) -> bool:
    """Some container has a termination record (it ran and exited at least once), and the kubelet did not stop
    the pod itself (an evicted pod's 137 is the eviction, not a crash: the eviction rules explain it), nor its
    Job at the Job's deadline."""
    return (ev.pod is not None and not podstate.terminated_by_kubelet(ev.pod)
            and not podstate.rejected_at_admission(ev.pod) and not podstate.deadline_exceeded(ev.pod)
            and not killed_at_job_deadline(ev)
            and any(podstate.latest_termination(cs) for _, cs, _ in podstate.all_container_states(ev.pod)))


def killed_at_job_deadline(ev: Evidence) -> Optional[Tuple[dict, dict]]:
    """(Job, its Failed condition) when the pod's Job failed at spec.activeDeadlineSeconds and the pod's containers
    were stopped by a signal (the Job controller deletes its pods: SIGTERM, then SIGKILL), not by their own error."""
    pod = ev.pod or {}
    owner = next((r for r in (pod.get("metadata") or {}).get("ownerReferences") or [] if r.get("kind") == "Job"), None)
    job = ev.get("Job", owner["name"], (pod.get("metadata") or {}).get("namespace")) if owner else None
    cond = next((c for c in ((job or {}).get("status") or {}).get("conditions") or []
                 if c.get("type") == "Failed" and c.get("status") == "True" and c.get("reason") == "DeadlineExceeded"), None)
    if not cond:
        return None
    exits = [podstate.latest_termination(cs).get("exitCode") for _, cs, _ in podstate.all_container_states(pod)
             if podstate.latest_termination(cs)]
    return (job, cond) if exits and all(isinstance(x, int) and x >= 128 for x in exits) else None


def has_restarts(ev: Evidence) -> bool:
    return ev.pod is not None and podstate.restarts(ev.pod) > 0


# --- events ------------------------------------------------------------------------


def pod_events(ev: Evidence, reasons: Iterable[str] = (), pattern: Optional[str] = None) -> List[dict]:
    """The target pod's events (oldest first), filtered by reason and/or message regex."""
    if ev.pod is None:
        return []
    wanted = set(reasons)
    rx = re.compile(pattern, re.I | re.S) if pattern else None
    return [e for e in ev.events_for(ev.pod)
            if (not wanted or e.get("reason") in wanted) and (rx is None or rx.search(e.get("message") or ""))]


def latest(events: List[dict]) -> Optional[dict]:
    return events[-1] if events else None


def event_line(e: dict) -> Line:
    count = event_count(e)
    when = format_time(event_time(e)) or ""
    times = f" (x{count})" if count > 1 else ""
    return Line("event", f"{e.get('type', 'Normal')} {e.get('reason', '')} {when}{times}".strip(),
                (e.get("message") or "").strip())


def first_match(events: List[dict], pattern: str) -> Tuple[Optional[dict], Optional[re.Match]]:
    """The newest event whose message matches, and the match."""
    rx = re.compile(pattern, re.I | re.S)
    for e in reversed(events):
        m = rx.search(e.get("message") or "")
        if m:
            return e, m
    return None, None


def status_line(container: str, field: str, record: dict) -> Line:
    parts = [f"{k}={record[k]}" for k in ("reason", "exitCode", "signal", "startedAt", "finishedAt") if record.get(k) not in (None, "")]
    msg = (record.get("message") or "").strip()
    if msg:
        parts.append(f"message={msg[:300]}")
    return Line("status", f"containerStatuses[{container}].{field}", " ".join(parts))


def pod_name(ev: Evidence) -> str:
    return name(ev.pod) if ev.pod else ev.target.name


# --- creation-stage helpers (creation and network rules) ----------------------------------------------------

def creating(ev: Evidence) -> bool:
    """The pod is on a node and stuck before its containers run: a container failing to be created or started,
    or nothing has run yet (volumes, sandbox, images). A running pod's old creation events do not count."""
    return ev.pod is not None and podstate.stuck_in_creation(ev.pod)


# Normal events that prove the kubelet got past the pod-level steps (volumes, sandbox) after an earlier failure.
_PROGRESS = ("Pulling", "Pulled", "Created", "Started")


def current(ev: Evidence, events: List[dict]) -> List[dict]:
    """Events not superseded by later progress: a container-level event is stale once that container Started
    after it; a pod-level one (sandbox, mount) once any container was pulled, created or started after it."""
    progress = [(e, event_time(e)) for e in ev.events_for(ev.pod) if e.get("type", "Normal") == "Normal"
                and e.get("reason") in _PROGRESS] if ev.pod else []
    out = []
    for e in events:
        when, path = event_time(e), _field_path(e)
        if when is None:
            out.append(e)
            continue
        later = [p for p, t in progress if t is not None and t > when]
        if path:
            later = [p for p in later if p.get("reason") == "Started" and _field_path(p) == path]
        if not later:
            out.append(e)
    return out


def _field_path(e: dict) -> str:
    return ((e.get("involvedObject") or e.get("regarding") or {}).get("fieldPath")) or ""
