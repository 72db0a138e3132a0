"""The fleet for `nodes --from`: every node and pod of a saved input (bundle, `kubectl get -o yaml|json`, cluster-info
dump), split into one evidence per GPU node as the live collector does; never the network."""
from __future__ import annotations

from typing import List, Tuple

from ..evidence import Evidence, Gap
from ..kube.objects import is_terminated
from ..kube.timeutil import format_time


def load_fleet(path: str, tail: int = 80) -> Tuple[List[Evidence], List[Gap], str]:
    from ..gpu import fleet
    from ..gpu.dcgm import SOURCE
    from .load import load
    ev = load(path, "Scan", None, None, tail)
    pods = [fleet.slim_pod(p) for p in ev.all("Pod") if not is_terminated(p)]
    gaps = [g for g in ev.gaps.values() if g.source in ("nodes", "pods")]
    evs = fleet.node_evidence(ev.all("Node"), pods, ev.all("ClusterPolicy"), ev.collected_at, gaps)
    for e in evs:
        e.metrics = ev.metrics
        e.stack_only = ev.stack_only   # a must-gather: the GPU stack's pods only, requests unknown
        if ev.readable(SOURCE):
            e.mark_read(SOURCE)
    return evs, gaps, format_time(ev.now())
