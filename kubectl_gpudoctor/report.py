"""Aggregates pod diagnoses into a WorkloadDiagnosis or a ScanReport; every per-pod decision stays in verdict.py."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

from . import workloads
from .evidence import Evidence
from .exitcodes import Exit
from .timeutil import format_time
from .verdict import API_VERSION, Diagnosis, order_findings, root_cause, run_rules


def pod_rows(diagnoses: Iterable[Diagnosis]) -> List[dict]:
    return [{"namespace": d.target["namespace"], "pod": d.target["name"], "node": d.target.get("node"),
             "status": d.status, "phase": d.phase, "rootCause": d.root_cause, "summary": d.summary[:100]}
            for d in diagnoses]


def diagnose_workload(wev: Evidence, pods: List[Diagnosis], ignore: Iterable[str] = ()) -> Diagnosis:
    """The workload's own findings (FailedCreate) first; else the most common root cause of its failing pods."""
    wl = wev.get(wev.target.kind, wev.target.name, wev.target.namespace) or {}
    findings, checks = run_rules(wev, ignore)
    cause = root_cause(findings)
    failing = [d for d in pods if d.exit_code == Exit.PROBLEM]
    total = len(wev.all("Pod"))
    causes = Counter(d.root_cause for d in failing if d.root_cause)
    if cause:
        status, rc, summary = "failing", cause.id, cause.summary
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


@dataclass
class ScanReport:
    """Every unhealthy GPU pod of a namespace (or the cluster), grouped by root cause."""
    scope: str
    items: List[Diagnosis]
    gpu_pods: int
    collected_at: Optional[str] = None
    gaps: List[dict] = field(default_factory=list)

    @property
    def by_root_cause(self) -> Dict[str, int]:
        counts = Counter(d.root_cause or ("unexplained" if d.exit_code == Exit.PROBLEM else "none") for d in self.items)
        return dict(counts.most_common())

    @property
    def exit_code(self) -> Exit:
        return Exit.PROBLEM if any(d.exit_code == Exit.PROBLEM for d in self.items) else Exit.OK

    def to_dict(self) -> dict:
        return {"apiVersion": API_VERSION, "kind": "ScanReport", "scope": self.scope, "gpuPods": self.gpu_pods,
                "items": [d.to_dict() for d in self.items], "byRootCause": self.by_root_cause,
                "gaps": self.gaps, "collectedAt": self.collected_at}
