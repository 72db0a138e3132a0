"""Runs the rules over evidence and decides: findings, root cause, status and exit code of a pod, node or
workload; the documents it fills live in report.py; renders nothing."""
from __future__ import annotations

import os
import string
from collections import Counter
from typing import Dict, Iterable, List, Optional

from .kube import podstate, workloads
from .evidence import Evidence
from .exitcodes import Exit
from .report import Check, Diagnosis, Finding, pod_rows
from .kube.objects import name, node_ready, spec
from .rules import RULES
from .rules.registry import PHASES, SEVERITIES, Hit, Rule, Unknown
from .kube.autoscaler import scaling_up
from .kube.timeutil import format_time, human_duration, parse_time
from .kube.workloads import WORKLOAD_KINDS


def run_rules(ev: Evidence, ignore: Iterable[str] = ()) -> tuple:
    """Every rule for the target's kind, in phase order: (findings, checks)."""
    ignore = set(ignore)
    findings: List[Finding] = []
    checks: List[Check] = []
    target = "Workload" if ev.target.kind in WORKLOAD_KINDS else ev.target.kind
    owner = _fix_target(ev)
    for r in RULES.values():
        if target not in r.targets:
            continue
        if r.id in ignore:
            checks.append(Check(r.id, "not-applicable", "ignored (--ignore)"))
            continue
        try:
            if r.applies is not None and not r.applies(ev):
                checks.append(Check(r.id, "not-applicable"))
                continue
            gap = next((g for g in (ev.gap(s) for s in r.needs) if g), None)
            if gap:
                checks.append(Check(r.id, "unknown", gap.needs()))
                continue
            hit = r.check(ev)
        except Exception as exc:  # a rule bug (in its check or its `applies`) must not hide the other findings
            if os.environ.get("GPUDOCTOR_STRICT"):
                raise
            checks.append(Check(r.id, "unknown", f"internal error: {type(exc).__name__}: {exc}", internal=True))
            continue
        if hit is None:
            checks.append(Check(r.id, "passed"))
        elif isinstance(hit, Unknown):
            checks.append(Check(r.id, "unknown", hit.reason))
        else:
            findings.append(_finding(r, hit, ev, owner))
            # An info finding is context, not a failed check.
            result = "passed" if findings[-1].severity == "info" else "failed"
            checks.append(Check(r.id, result, findings[-1].summary))
    return _drop_explained_fallbacks(findings, checks)


def _drop_explained_fallbacks(findings: List[Finding], checks: List[Check]) -> tuple:
    """A fallback rule (app-error) stays silent when a specific critical rule of its phase, or of an earlier
    phase (an init container's driver build failure quoted by the crash-phase fallback), fired."""
    specific = [f for f in findings if f.severity == "critical" and not RULES[f.id].fallback]
    kept = []
    for f in findings:
        earlier = [g for g in specific if PHASES.index(g.phase) <= PHASES.index(f.phase)]
        if RULES[f.id].fallback and earlier:
            for c in checks:
                if c.id == f.id:
                    c.result, c.reason = "passed", f"explained by {earlier[0].id}"
        else:
            kept.append(f)
    return kept, checks


def _fix_target(ev: Evidence):
    """The object a pod's fixes change (kube/owners.py): for a workload, the one its pod template belongs to (or
    what owns that workload); None for nodes."""
    from .kube.owners import fix_target
    if ev.target.kind == "Pod":
        return fix_target(ev, ev.pod) if ev.pod is not None else None
    if ev.target.kind in WORKLOAD_KINDS:
        wl = ev.get(ev.target.kind, ev.target.name, ev.target.namespace)
        return fix_target(ev, workloads.template_pod(wl)) if wl else None
    return None


def _finding(r: Rule, hit: Hit, ev: Evidence, owner=None) -> Finding:
    from .fixes import place, recreate_values
    values = dict(_default_values(ev), **recreate_values(owner))
    values.update({k: str(v) for k, v in hit.values.items()})
    fill = lambda text: string.Template(text or "").safe_substitute(values)
    summary = hit.summary or _first_sentence(hit.message)
    fix, snippet = place(owner, fill(hit.fix or r.remediation),
                         fill(hit.snippet if hit.snippet is not None else r.snippet).rstrip(), values.get("container"),
                         r.edits if hit.edits is None else hit.edits)
    finding = Finding(id=r.id, phase=r.phase, severity=hit.severity or r.severity, title=r.title,
                      message=hit.message, evidence=list(hit.evidence), remediation=fix,
                      snippet=snippet,
                      docs=r.docs, summary=summary, rank=hit.rank if hit.rank is not None else r.rank,
                      order=r.order, next=[fill(c) for c in hit.next], table=list(hit.table),
                      cause=hit.cause if hit.cause in RULES else "")
    return finding


def cause_id(f: Optional[Finding]) -> Optional[str]:
    """The root-cause id of a finding: the specific catalogue cause its evidence names, else its own id."""
    return (f.cause or f.id) if f else None


def _default_values(ev: Evidence) -> Dict[str, str]:
    pod = ev.pod or {}
    node = ev.node or {}
    return {"pod": ev.target.name if ev.target.kind == "Pod" else "", "namespace": ev.target.namespace or "",
            "node": name(node) or spec(pod).get("nodeName") or "", "tail": str(ev.tail_lines)}


def _first_sentence(text: str) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    for end in (". ", "; "):
        if end in line:
            return line.split(end, 1)[0].rstrip(".")
    return line.rstrip(".")


def root_cause(findings: List[Finding]) -> Optional[Finding]:
    """The most specific critical finding of the earliest failing phase."""
    critical = [f for f in findings if f.severity == "critical"]
    if not critical:
        return None
    return min(critical, key=lambda f: (PHASES.index(f.phase), -f.rank, f.order))


def order_findings(findings: List[Finding], cause: Optional[Finding]) -> List[Finding]:
    rest = sorted((f for f in findings if f is not cause),
                  key=lambda f: (SEVERITIES.index(f.severity), PHASES.index(f.phase), -f.rank, f.order))
    return ([cause] if cause else []) + rest


def diagnose_pod(ev: Evidence, ignore: Iterable[str] = ()) -> Diagnosis:
    from .nextsteps import pod_next_commands
    pod = ev.pod or {}
    findings, checks = run_rules(ev, ignore)
    cause = root_cause(findings)
    health = podstate.health(pod, ev.now())
    events = ev.events_for(pod) if ev.pod else []
    if health == "failing" and podstate.is_unscheduled_pending(pod) and scaling_up(ev):
        health = "progressing"   # a node autoscaler is adding a node for it: being served, not stuck
    elif health == "progressing" and podstate.stuck_starting(pod, events, ev.now()):
        health = "failing"       # creating for many minutes while the kubelet keeps warning: stuck, not starting
    unseen = None
    if health == "progressing" and ev.pod and not ev.readable("events"):
        age = podstate.not_started_for(pod, ev.now())
        if age is not None:      # no events to say why, but an hour not running is stuck: decide from status
            health, unseen = "failing", (human_duration(age), ev.gap("events"))
    status, summary = _status(findings, checks, cause, health, podstate.display_status(pod),
                              podstate.deciding_word(pod, events), unseen)
    nexts = _dedupe([c for f in order_findings(findings, cause) for c in f.next]
                    + pod_next_commands(ev))
    return Diagnosis(
        kind="PodDiagnosis",
        target={"kind": "Pod", "namespace": ev.target.namespace, "name": ev.target.name,
                "node": spec(pod).get("nodeName")},
        status=status, phase=podstate.display_status(pod), root_cause=cause_id(cause),
        summary=summary, findings=order_findings(findings, cause), checks=checks,
        gaps=[g.to_dict() for g in ev.gaps.values()], next_commands=nexts,
        collected_at=format_time(ev.now()), health=health,
        age=_age(pod, ev.now()))


def _age(pod: dict, now) -> str:
    created = parse_time(((pod or {}).get("metadata") or {}).get("creationTimestamp"))
    return human_duration((now - created).total_seconds()) if created and now else ""


def diagnose_node(ev: Evidence, ignore: Iterable[str] = ()) -> Diagnosis:
    from .nextsteps import node_next_commands
    from .gpu.nodeview import tables
    node = ev.node or {}
    findings, checks = run_rules(ev, ignore)
    cause = root_cause(findings)
    ready = node_ready(node)
    health = "healthy" if ready == "True" else "failing"
    shown = "Ready" if ready == "True" else ("NotReady" if ready == "False" else "Unknown")
    if spec(node).get("unschedulable"):
        shown += ",SchedulingDisabled"
    status, summary = _status(findings, checks, cause, health, shown)
    nexts = _dedupe([c for f in order_findings(findings, cause) for c in f.next]
                    + node_next_commands(ev))
    return Diagnosis(
        kind="NodeDiagnosis", target={"kind": "Node", "namespace": None, "name": ev.target.name, "node": ev.target.name},
        status=status, phase=shown, root_cause=cause_id(cause), summary=summary,
        findings=order_findings(findings, cause), checks=checks,
        gaps=[g.to_dict() for g in ev.gaps.values()], next_commands=nexts, collected_at=format_time(ev.now()),
        extra=tables(ev), health=health)


def _status(findings, checks, cause, health, shown, word=None, unseen=None):
    status, summary = _judged(findings, checks, cause, health, shown, word, unseen)
    broken = [c.id for c in checks if c.internal]
    if broken and status in ("healthy", "warning"):   # a crashed check may have hidden the problem
        return "unknown", (f"{len(broken)} check(s) failed with an internal error ({', '.join(broken[:3])}), "
                           f"so this is not a verdict; {summary}")
    return status, summary


def _judged(findings, checks, cause, health, shown, word=None, unseen=None):
    if cause:
        return "failing", cause.summary
    unknown = [c for c in checks if c.result == "unknown"]
    warnings = [f for f in findings if f.severity == "warning"]
    if health == "failing":
        if warnings:  # explained, but only at warning level: the pod still fails
            return "failing", warnings[0].summary
        # A failing pod stays failing when no rule explains it: name the unexplained phase and quote the newest
        # word about it, and say what could not be read.
        said = f"; the newest word ({word[0]}): {word[1][:300]}" if word else ""
        if unseen and not word:
            age, gap = unseen
            return "failing", (f"{shown} for {age}: not running yet, and events could not be read "
                               f"({gap.reason if gap else 'not read'}), so nothing read says why")
        if unknown:
            return "failing", (f"{shown}: no rule explains it from what could be read{said}; "
                               f"{len(unknown)} check(s) could not run ({unknown[0].reason})")
        return "failing", f"{shown}: no rule explains this failure{said}; read the evidence and the next commands"
    if warnings:
        return "warning", warnings[0].summary
    if health == "progressing":
        if unknown:
            return "unknown", (f"{shown}: still starting; {len(unknown)} check(s) could not run "
                               f"({unknown[0].reason}), so a creation problem may be hidden")
        if shown == "Terminating":
            return "warning", "Terminating: the pod is shutting down; nothing wrong found"
        if shown in ("Pending", "SchedulingGated") and not any(f.phase != "scheduling" for f in findings):
            return "warning", f"{shown}: not scheduled yet, nothing wrong found so far"
        return "warning", f"{shown}: still starting, nothing wrong found yet"
    return "healthy", f"{shown}: no problem found"


def _dedupe(items: List[str]) -> List[str]:
    seen, out = set(), []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def diagnose_workload(wev: Evidence, pods: List[Diagnosis], ignore: Iterable[str] = ()) -> Diagnosis:
    """The workload's own findings (FailedCreate) first; else the most common root cause of its failing pods."""
    wl = wev.get(wev.target.kind, wev.target.name, wev.target.namespace) or {}
    findings, checks = run_rules(wev, ignore)
    cause = root_cause(findings)
    failing = [d for d in pods if d.exit_code == Exit.PROBLEM]
    total = len(wev.all("Pod"))
    causes = Counter(d.root_cause for d in failing if d.root_cause)
    if cause and RULES[cause.id].fallback and causes:
        cause = None   # a failed Job whose failed pods are still there: their own root cause says more
    if cause:
        status, rc, summary = "failing", cause_id(cause), cause.summary
    elif failing:
        rc = causes.most_common(1)[0][0] if causes else None
        lead = next((d for d in failing if d.root_cause == rc), failing[0])
        status, summary = "failing", f"{len(failing)} of {total} pods failing; {lead.target['name']}: {lead.summary}"
    elif not workloads.settled(wl) and total == 0:
        status, rc, summary = "unknown", None, "no pods exist and no event says why"
    else:
        status, rc = ("healthy" if workloads.settled(wl) else "warning"), None
        summary = f"{workloads.readiness(wl)}; no pod is failing"
    nexts = [c for f in findings for c in f.next]
    nexts += [f"kubectl describe {wev.target.kind.lower()} {wev.target.name} -n {wev.target.namespace}"]
    nexts += [c for d in failing[:3] for c in d.next_commands[:2]]
    return Diagnosis(
        kind="WorkloadDiagnosis",
        target={"kind": wev.target.kind, "namespace": wev.target.namespace, "name": wev.target.name, "node": None},
        status=status, phase=workloads.readiness(wl), root_cause=rc, summary=summary,
        findings=order_findings(findings, cause), checks=checks, gaps=[g.to_dict() for g in wev.gaps.values()],
        next_commands=list(dict.fromkeys(nexts)), collected_at=format_time(wev.now()),
        extra={"pods": pod_rows(pods)}, health="failing" if status == "failing" else "healthy", members=pods)


def scan_items(pods: List[Diagnosis], wls: List[Diagnosis]) -> List[Diagnosis]:
    """A scan's items: the pods, then the workloads whose trouble their pods do not already show (pods refused
    at creation or missing, a failed Job with no pod left)."""
    own = [d for d in wls if d.status in ("failing", "unknown")
           and (any(cause_id(f) == d.root_cause for f in d.findings) or not d.members)]
    return pods + own
