"""Several pods from saved files at once — a workload's pods or a scan's GPU pods — mirroring collect/podsets.py."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..evidence import Evidence, ScanEvidence, Target
from ..kube import workloads
from ..kube.objects import meta, status
from ..kube.timeutil import format_time
from .load import load


def _as_target(ev: Evidence, pods: List[dict]) -> List[Evidence]:
    return [ev.retarget(Target("Pod", meta(p).get("name"), meta(p).get("namespace"))) for p in pods]


def collect_workload(path: str, namespace: Optional[str], alias: str, wl_name: Optional[str],
                     tail: int = 80) -> Tuple[Evidence, List[Evidence]]:
    """The workload's evidence (its pods only) and one evidence per unhealthy pod, as the live collector gives."""
    kind = workloads.KINDS[alias].kind
    return _workload(load(path, kind, wl_name, namespace, tail))


def _workload(ev: Evidence) -> Tuple[Evidence, List[Evidence]]:
    """The workload's view (its own pods only) and its unhealthy pods' views of the whole snapshot."""
    wl = ev.get(ev.target.kind, ev.target.name, ev.target.namespace)
    pods = workloads.owned_pods(ev, wl)
    pod_evs = _as_target(ev, workloads.to_diagnose(pods))
    wev = ev.retarget(ev.target)
    wev.objects = dict(ev.objects, Pod=[p for p in ev.all("Pod") if p in pods])   # the pods' views keep every pod
    return wev, pod_evs


def scan_pods(path: str, namespace: Optional[str], all_namespaces: bool, tail: int = 80) -> ScanEvidence:
    """The unhealthy GPU pods of the saved namespace (or all), and its GPU workloads whose pods are missing or
    refused. Succeeded pods are not counted, as the live scan does not list them."""
    ev = load(path, "Scan", None, None, tail)
    ns = None if all_namespaces else namespace
    gpu = [p for p in ev.all("Pod") if workloads.uses_gpu(p) and (ns is None or meta(p).get("namespace") == ns)
           and status(p).get("phase") != "Succeeded"]
    scope = "all namespaces" if ns is None else f"namespace {ns}"
    wls = [_workload(ev.retarget(Target(o["kind"], meta(o).get("name"), meta(o).get("namespace"))))
           for o in workloads.scan_candidates(ev, ns)]
    return ScanEvidence(_as_target(ev, workloads.to_diagnose(gpu)), len(gpu), scope, format_time(ev.now()), wls)
