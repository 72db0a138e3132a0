"""The documents of the contract (PodDiagnosis, NodeDiagnosis, WorkloadDiagnosis, ScanReport) and their JSON shape;
every decision that fills them is made in verdict.py."""
from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Optional

from .evidence import Line
from .exitcodes import Exit
from .record import field, record

API_VERSION = "gpudoctor/v1"


@record
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
    cause: str = ""    # a more specific catalogue id the finding's own evidence names (the root cause then)

    def to_dict(self) -> dict:
        return {"id": self.id, "phase": self.phase, "severity": self.severity, "title": self.title,
                "message": self.message, "evidence": [e.to_dict() for e in self.evidence],
                "remediation": self.remediation, "snippet": self.snippet or None, "docs": self.docs,
                "table": self.table}


@record
class Check:
    id: str
    result: str      # passed | failed | unknown | not-applicable
    reason: str = ""
    internal: bool = False   # the rule itself raised: a bug, never a fact about the cluster

    def to_dict(self) -> dict:
        return {"id": self.id, "result": self.result, "reason": self.reason}


@record
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
    age: str = ""             # a pod's age when collected (scan's triage list); not in the document

    @property
    def internal_failures(self) -> List[Check]:
        return [c for c in self.checks if c.internal] + [c for m in self.members for c in m.internal_failures]

    @property
    def exit_code(self) -> Exit:
        if any(f.severity == "critical" for f in self.findings) or self.status == "failing":
            return Exit.PROBLEM
        if self.status == "unknown" and self.health == "failing":
            return Exit.PROBLEM
        if self.internal_failures:   # a check crashed: "no problem" cannot be claimed
            return Exit.UNDIAGNOSABLE
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


SUMMARY_COLUMN = 100   # characters of a summary shown in a table row; the document keeps it whole


def pod_rows(diagnoses: Iterable[Diagnosis]) -> List[dict]:
    return [{"namespace": d.target["namespace"], "pod": d.target["name"], "node": d.target.get("node"),
             "status": d.status, "phase": d.phase, "rootCause": d.root_cause, "summary": cut(d.summary)}
            for d in diagnoses]


def scan_rows(diagnoses: Iterable[Diagnosis]) -> List[dict]:
    """A scan's table: pods by name, workloads as kind/name (what `kubectl gpudoctor` takes next)."""
    return [{"namespace": d.target["namespace"], "name": target_ref(d), "node": d.target.get("node"),
             "status": d.status, "phase": d.phase, "rootCause": d.root_cause, "summary": cut(d.summary)}
            for d in diagnoses]


def target_ref(d: Diagnosis) -> str:
    return d.target["name"] if d.target["kind"] in ("Pod", "Node") else f"{d.target['kind'].lower()}/{d.target['name']}"


def cause_key(d: Diagnosis) -> str:
    return d.root_cause or ("unexplained" if d.exit_code == Exit.PROBLEM else "none")


def cut(text: str, width: int = SUMMARY_COLUMN) -> str:
    """The text, or its first characters and … where it is cut."""
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


@record
class ScanReport:
    """Every unhealthy GPU pod of a namespace (or the cluster), and its GPU workloads whose pods are missing or
    refused, grouped by root cause."""
    scope: str
    items: List[Diagnosis]
    gpu_pods: int
    collected_at: Optional[str] = None
    gaps: List[dict] = field(default_factory=list)

    @property
    def by_root_cause(self) -> Dict[str, int]:
        return {cause: len(items) for cause, items in self.groups().items()}

    def groups(self) -> Dict[str, List[Diagnosis]]:
        """The items by root cause ("unexplained": failing with none; "none": not healthy, nothing critical),
        the cause with the most items first."""
        groups: Dict[str, List[Diagnosis]] = {}
        for d in self.items:
            groups.setdefault(cause_key(d), []).append(d)
        order = [cause for cause, _ in Counter({k: len(v) for k, v in groups.items()}).most_common()]
        return {cause: groups[cause] for cause in order}

    @property
    def exit_code(self) -> Exit:
        codes = {d.exit_code for d in self.items}
        return Exit.PROBLEM if Exit.PROBLEM in codes else Exit.UNDIAGNOSABLE if Exit.UNDIAGNOSABLE in codes else Exit.OK

    @property
    def status(self) -> str:
        """failing (something diagnosed), warning (something not healthy), else healthy."""
        if self.exit_code == Exit.PROBLEM:
            return "failing"
        return "warning" if any(d.status != "healthy" for d in self.items) else "healthy"

    def to_dict(self) -> dict:
        return {"apiVersion": API_VERSION, "kind": "ScanReport", "status": self.status, "scope": self.scope,
                "gpuPods": self.gpu_pods,
                "items": [d.to_dict() for d in self.items], "byRootCause": self.by_root_cause,
                "gaps": self.gaps, "collectedAt": self.collected_at}
