"""Runs the rules over evidence and decides: findings, root cause, status and exit code; renders nothing."""
from __future__ import annotations

import os
import string
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

from . import podstate
from .evidence import Evidence
from .exitcodes import Exit
from .k8s import name, node_ready, spec
from .rules import RULES
from .evidence import Line
from .rules.registry import PHASES, Hit, Rule, Unknown
from .rules.scheduling_common import scaling_up
from .timeutil import format_time
from .workloads import WORKLOAD_KINDS

API_VERSION = "gpudoctor/v1"


@dataclass
class Finding:
    id: str
    phase: str
    severity: str
    title: str
    message: str
    evidence: List[Line]
    remediation: str
    snippet: str
    docs: str
    summary: str = ""
    rank: int = 0
    order: int = 0
    next: List[str] = field(default_factory=list)
    table: List[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"id": self.id, "phase": self.phase, "severity": self.severity, "title": self.title,
                "message": self.message, "evidence": [e.to_dict() for e in self.evidence],
                "remediation": self.remediation, "snippet": self.snippet or None, "docs": self.docs,
                "table": self.table}


@dataclass
class Check:
    id: str
    result: str      # passed | failed | unknown | not-applicable
    reason: str = ""

    def to_dict(self) -> dict:
        return {"id": self.id, "result": self.result, "reason": self.reason}


@dataclass
class Diagnosis:
    kind: str
    target: Dict[str, Optional[str]]
    status: str
    phase: str
    root_cause: Optional[str]
    summary: str
    findings: List[Finding] = field(default_factory=list)
    checks: List[Check] = field(default_factory=list)
    gaps: List[dict] = field(default_factory=list)
    next_commands: List[str] = field(default_factory=list)
    collected_at: Optional[str] = None
    extra: Dict[str, object] = field(default_factory=dict)   # kind-specific tables (node inventory)
    health: str = ""          # the target's own state (healthy | progressing | failing); not in the document
    members: List["Diagnosis"] = field(default_factory=list)   # a workload's pod diagnoses ("items")

    @property
    def exit_code(self) -> Exit:
        if any(f.severity == "critical" for f in self.findings) or self.status == "failing":
            return Exit.PROBLEM
        if self.status == "unknown" and self.health == "failing":
            return Exit.PROBLEM
        return Exit.OK

    def to_dict(self) -> dict:
        doc = {"apiVersion": API_VERSION, "kind": self.kind, "target": self.target, "status": self.status,
               "phase": self.phase, "rootCause": self.root_cause, "summary": self.summary,
               "findings": [f.to_dict() for f in self.findings],
               "checks": [c.to_dict() for c in self.checks], "gaps": self.gaps,
               "nextCommands": self.next_commands, "collectedAt": self.collected_at}
        doc.update(self.extra)
        if self.kind == "WorkloadDiagnosis":
            doc["items"] = [m.to_dict() for m in self.members]
        return doc


def run_rules(ev: Evidence, ignore: Iterable[str] = ()) -> tuple:
    """Every rule for the target's kind, in phase order: (findings, checks)."""
    ignore = set(ignore)
    findings: List[Finding] = []
    checks: List[Check] = []
    target = "Workload" if ev.target.kind in WORKLOAD_KINDS else ev.target.kind
    for r in RULES.values():
        if target not in r.targets:
            continue
        if r.id in ignore:
            checks.append(Check(r.id, "not-applicable", "ignored (--ignore)"))
            continue
        if r.applies is not None and not r.applies(ev):
            checks.append(Check(r.id, "not-applicable"))
            continue
        gap = next((g for g in (ev.gap(s) for s in r.needs) if g), None)
        if gap:
            checks.append(Check(r.id, "unknown", gap.needs()))
            continue
        try:
            hit = r.check(ev)
        except Exception as exc:  # a rule bug must not hide the other findings
            if os.environ.get("GPUDOCTOR_STRICT"):
                raise
            checks.append(Check(r.id, "unknown", f"internal error: {type(exc).__name__}: {exc}"))
            continue
        if hit is None:
            checks.append(Check(r.id, "passed"))
        elif isinstance(hit, Unknown):
            checks.append(Check(r.id, "unknown", hit.reason))
        else:
            findings.append(_finding(r, hit, ev))
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


def _finding(r: Rule, hit: Hit, ev: Evidence) -> Finding:
    values = dict(_default_values(ev))
    values.update({k: str(v) for k, v in hit.values.items()})
    fill = lambda text: string.Template(text or "").safe_substitute(values)
    summary = hit.summary or _first_sentence(hit.message)
    finding = Finding(id=r.id, phase=r.phase, severity=hit.severity or r.severity, title=r.title,
                      message=hit.message, evidence=list(hit.evidence), remediation=fill(hit.fix or r.remediation),
                      snippet=fill(hit.snippet if hit.snippet is not None else r.snippet).rstrip(),
                      docs=r.docs, summary=summary, rank=hit.rank if hit.rank is not None else r.rank,
                      order=r.order, next=[fill(c) for c in hit.next], table=list(hit.table))
    return finding


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
    sev = {"critical": 0, "warning": 1, "info": 2}
    rest = sorted((f for f in findings if f is not cause),
                  key=lambda f: (sev[f.severity], PHASES.index(f.phase), -f.rank, f.order))
    return ([cause] if cause else []) + rest


def diagnose_pod(ev: Evidence, ignore: Iterable[str] = ()) -> Diagnosis:
    from .nextsteps import pod_next_commands
    pod = ev.pod or {}
    findings, checks = run_rules(ev, ignore)
    cause = root_cause(findings)
    health = podstate.health(pod, ev.now())
    if health == "failing" and podstate.is_unscheduled_pending(pod) and scaling_up(ev):
        health = "progressing"   # a node autoscaler is adding a node for it: being served, not stuck
    status, summary = _status(findings, checks, cause, health, podstate.display_status(pod))
    nexts = _dedupe([c for f in order_findings(findings, cause) for c in f.next]
                    + pod_next_commands(ev))
    return Diagnosis(
        kind="PodDiagnosis",
        target={"kind": "Pod", "namespace": ev.target.namespace, "name": ev.target.name,
                "node": spec(pod).get("nodeName")},
        status=status, phase=podstate.display_status(pod), root_cause=cause.id if cause else None,
        summary=summary, findings=order_findings(findings, cause), checks=checks,
        gaps=[g.to_dict() for g in ev.gaps.values()], next_commands=nexts,
        collected_at=format_time(ev.now()), health=health)


def diagnose_node(ev: Evidence, ignore: Iterable[str] = ()) -> Diagnosis:
    from .nextsteps import node_next_commands
    from .nodeview import tables
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
        status=status, phase=shown, root_cause=cause.id if cause else None, summary=summary,
        findings=order_findings(findings, cause), checks=checks,
        gaps=[g.to_dict() for g in ev.gaps.values()], next_commands=nexts, collected_at=format_time(ev.now()),
        extra=tables(ev), health=health)


def _status(findings, checks, cause, health, shown):
    if cause:
        return "failing", cause.summary
    unknown = [c for c in checks if c.result == "unknown"]
    warnings = [f for f in findings if f.severity == "warning"]
    if health == "failing":
        if warnings:  # explained, but only at warning level: the pod still fails
            return "failing", warnings[0].summary
        if unknown:
            return "unknown", (f"{shown}: no rule explains it from what could be read; "
                               f"{len(unknown)} check(s) could not run ({unknown[0].reason})")
        return "failing", f"{shown}: no rule explains this failure; read the evidence and the next commands"
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
