"""Several pods from saved files at once — a workload's pods or a scan's GPU pods — mirroring collect/podsets.py."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..evidence import Evidence, Target
from ..kube import workloads
from ..kube.objects import meta
from ..kube.timeutil import format_time
from .load import load


def _as_target(ev: Evidence, pods: List[dict]) -> List[Evidence]:
    return [ev.retarget(Target("Pod", meta(p).get("name"), meta(p).get("namespace"))) for p in pods]


def collect_workload(path: str, namespace: Optional[str], alias: str, wl_name: Optional[str],
                     tail: int = 80) -> Tuple[Evidence, List[Evidence]]:
    """The workload's evidence (its pods only) and one evidence per unhealthy pod, as the live collector gives."""
    kind = workloads.KINDS[alias].kind
    wev = load(path, kind, wl_name, namespace, tail)
    wl = wev.get(kind, wev.target.name, wev.target.namespace)
    pods = workloads.owned_pods(wev, wl)
    pod_evs = _as_target(wev, workloads.to_diagnose(pods))
    wev.objects["Pod"] = [p for p in wev.all("Pod") if p in pods]
    return wev, pod_evs


def scan_pods(path: str, namespace: Optional[str], all_namespaces: bool,
              tail: int = 80) -> Tuple[List[Evidence], int, str, Optional[str]]:
    """The unhealthy GPU pods of the saved namespace (or all): (evidences, GPU pods seen, scope, clock)."""
    ev = load(path, "Scan", None, None, tail)
    ns = None if all_namespaces else namespace
    gpu = [p for p in ev.all("Pod") if workloads.uses_gpu(p) and (ns is None or meta(p).get("namespace") == ns)]
    scope = "all namespaces" if ns is None else f"namespace {ns}"
    return _as_target(ev, workloads.to_diagnose(gpu)), len(gpu), scope, format_time(ev.now())
