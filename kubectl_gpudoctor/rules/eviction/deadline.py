"""Eviction-phase rule for a pod the kubelet failed at its spec.activeDeadlineSeconds; it must not read the
containers' exit codes as a crash."""
from __future__ import annotations

from ...kube import podstate
from ...kube.objects import spec, status
from ...kube.timeutil import human_duration
from .._common import event_line, killed_at_job_deadline, pod_events
from ..registry import SPECIFIC, Hit, Line, rule


@rule("deadline-exceeded", phase="eviction", severity="critical", rank=SPECIFIC,
      applies=lambda ev: ev.pod is not None and (podstate.deadline_exceeded(ev.pod)
                                                 or spec(ev.pod).get("activeDeadlineSeconds") is not None
                                                 or bool(killed_at_job_deadline(ev))),
      title="Pod ran longer than its activeDeadlineSeconds",
      remediation="Raise spec.activeDeadlineSeconds of the pod template (or remove it) if the work legitimately "
                  "takes longer, or find why this run was slower (a stall, a hang waiting for peers or data).",
      snippet="spec:\n  activeDeadlineSeconds: $suggested   # was $deadline")
def deadline_exceeded(ev):
    """The kubelet failed the pod (reason DeadlineExceeded) once it had run for spec.activeDeadlineSeconds."""
    pod = ev.pod
    by_job = killed_at_job_deadline(ev)
    if by_job and not podstate.deadline_exceeded(pod):
        job, cond = by_job
        deadline = spec(job).get("activeDeadlineSeconds")
        limit = f"its deadline of {human_duration(deadline)}" if deadline else "its deadline"
        return Hit(f"Job {job['metadata']['name']} ran longer than {limit} (spec.activeDeadlineSeconds) and its "
                   f"controller stopped this pod: the containers' signal exits are the kill, not a crash.",
                   [Line("status", f"jobs/{job['metadata']['name']}.status.conditions[Failed]",
                         f"{cond.get('reason')}: {cond.get('message', '')}"),
                    Line("spec", f"jobs/{job['metadata']['name']}.spec.activeDeadlineSeconds", str(deadline))],
                   values={"deadline": deadline or "unset", "suggested": int(deadline * 2) if deadline else 3600},
                   summary=f"Job {job['metadata']['name']} exceeded its activeDeadlineSeconds"
                           + (f" ({human_duration(deadline)})" if deadline else ""))
    if not podstate.deadline_exceeded(pod):
        return None
    deadline = spec(pod).get("activeDeadlineSeconds")
    st = status(pod)
    lines = [Line("status", "status.reason", f"{st.get('reason')}: {st.get('message', '')}".strip(": ")),
             Line("spec", "spec.activeDeadlineSeconds", str(deadline if deadline is not None else "not set on the pod"))]
    lines += [event_line(e) for e in pod_events(ev, ("DeadlineExceeded",))[-1:]]
    limit = f"its deadline of {human_duration(deadline)}" if deadline else "its deadline"
    return Hit(f"The kubelet stopped the pod after it ran longer than {limit} (spec.activeDeadlineSeconds); its "
               f"containers' exit codes are the kill, not a crash.", lines,
               values={"deadline": deadline or "unset", "suggested": int(deadline * 2) if deadline else 3600},
               summary="Pod exceeded its activeDeadlineSeconds" + (f" ({human_duration(deadline)})" if deadline else ""))
