"""The `nodes` verdict: every GPU node's node rules run on its own evidence, the nodes that cannot run GPU pods by
root cause, free GPUs by model and profile; the FleetReport document (decisions here, printing in render/fleet.py)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .evidence import Evidence, Gap
from .exitcodes import Exit
from .gpu import fleet
from .kube.objects import name, node_ready
from .record import field, record


@record
class FleetReport:
    status: str                                   # healthy | warning | failing
    nodes: List[dict]
    free: List[dict]
    unavailable: List[dict]
    gpu_nodes: int
    collected_at: Optional[str] = None
    gaps: List[dict] = field(default_factory=list)
    health: List[dict] = field(default_factory=list)   # with --health: GPUs with a critical finding

    @property
    def exit_code(self) -> Exit:
        return Exit.PROBLEM if self.status == "failing" else Exit.OK

    def to_dict(self) -> dict:
        return {"apiVersion": "gpudoctor/v1", "kind": "FleetReport", "status": self.status,
                "gpuNodes": self.gpu_nodes, "nodes": self.nodes, "free": self.free,
                "unavailable": self.unavailable, "health": self.health, "gaps": self.gaps,
                "collectedAt": self.collected_at}


# Node rules that say the node cannot run (new) GPU pods, whatever else they find.
BLOCKING_SEVERITY = "critical"


def decide(evs: List[Evidence], gaps: List[Gap], collected_at: Optional[str], ignore=()) -> FleetReport:
    from .rules import RULES
    from .verdict import root_cause, run_rules
    rows: List[dict] = []
    causes: Dict[str, Tuple[str, str]] = {}
    health: List[dict] = []
    for ev in evs:
        node = ev.node
        rows += fleet.node_rows(ev)
        findings, _ = run_rules(ev, ignore)
        cause = root_cause(findings)
        if cause is not None:
            causes[name(node)] = (cause.id, RULES[cause.id].title)
        elif node_ready(node) != "True":
            causes[name(node)] = ("node-not-ready", "Node is not Ready")
        health += [{"node": name(node), "rule": f.id, "summary": f.summary} for f in findings
                   if f.id in ("gpu-xid-critical", "gpu-memory-errors", "gpu-throttled")]
    status = "failing" if causes else "healthy"
    return FleetReport(status=status, nodes=rows, free=fleet.free_summary(rows), unavailable=fleet.unavailable(causes),
                       gpu_nodes=len(evs), collected_at=collected_at, gaps=[g.to_dict() for g in gaps], health=health)
