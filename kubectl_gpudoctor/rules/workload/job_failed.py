"""Workload rule for Jobs: the Job itself failed (backoff limit, deadline, pod failure policy), even with no pod left."""
from __future__ import annotations

from ...kube.objects import condition, name, spec, status
from .._common import event_line
from ..registry import FALLBACK, Hit, Line, rule

# What the job controller's Failed reasons mean, and what to change (pkg/controller/job/job_controller.go).
_REASONS = {
    "BackoffLimitExceeded": ("its pods failed $failed time(s), more than spec.backoffLimit ($backoff) allows",
                             "Read why its pods failed (`kubectl logs job/$job -n $namespace --previous`), fix that, "
                             "then re-create the Job: a failed Job does not retry."),
    "DeadlineExceeded": ("it ran longer than spec.activeDeadlineSeconds ($deadline s), so the job controller "
                         "deleted its running pods",
                         "Raise spec.activeDeadlineSeconds above what the Job needs, time spent waiting for GPUs "
                         "included, or fix what kept its pods from running; then re-create the Job."),
    "PodFailurePolicy": ("a pod failure matched a FailJob rule of spec.podFailurePolicy",
                         "Read the failed pod's exit code and log, fix the cause, then re-create the Job."),
}


@rule("job-failed", phase="crash", severity="critical", rank=FALLBACK, targets=("Workload",),
      applies=lambda ev: ev.target.kind == "Job" and ev.get("Job", ev.target.name, ev.target.namespace) is not None,
      title="The Job failed and will not run again",
      remediation="Fix what failed its pods, then re-create the Job: a failed Job does not retry.")
def job_failed(ev):
    """The Job's Failed condition is True (BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy): its pods'
    own root cause explains it when they are still there; with no pod left this is the finding."""
    job = ev.get("Job", ev.target.name, ev.target.namespace)
    cond = condition(job, "Failed")
    if not cond or cond.get("status") != "True":
        return None
    reason, text = cond.get("reason") or "Failed", cond.get("message") or ""
    st, sp = status(job), spec(job)
    values = {"job": name(job), "failed": st.get("failed", 0), "backoff": sp.get("backoffLimit", 6),
              "deadline": sp.get("activeDeadlineSeconds", "?")}
    said, fix = _REASONS.get(reason, ("the job controller marked it Failed", None))
    from string import Template
    said = Template(said).safe_substitute({k: str(v) for k, v in values.items()})
    lines = [Line("status", f"jobs/{name(job)}.status.conditions[Failed]", f"reason={reason} message={text}")]
    events = [e for e in ev.events_for(job) if e.get("reason") == reason]
    lines += [event_line(e) for e in events[-1:]]
    msg = f"Job {name(job)} failed ({reason}: {text or 'no message'}): {said}."
    return Hit(msg, lines, values=values, fix=fix, summary=f"Job {name(job)} failed: {text or reason}")
