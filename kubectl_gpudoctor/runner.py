"""Runs one command's diagnosis: evidence from --from or the live cluster, then the verdict; no printing."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .collect.kubeconfig import ConnOptions
from .exitcodes import Exit


@dataclass
class Options:
    conn: ConnOptions = field(default_factory=ConnOptions)
    output: str = "text"
    color: str = "auto"
    source: Optional[str] = None        # --from
    tail: int = 80
    ignore: Tuple[str, ...] = ()
    verbose: bool = False


def pod_diagnosis(opts: Options, pod_name: Optional[str]):
    from . import verdict
    return verdict.diagnose_pod(pod_evidence(opts, pod_name), opts.ignore)


def pod_evidence(opts: Options, pod_name: Optional[str]):
    if opts.source:
        from . import offline
        return offline.load(opts.source, "Pod", pod_name, opts.conn.namespace, opts.tail)
    from .collect.pod import collect_pod
    return collect_pod(opts.conn, pod_name, opts.tail)


def node_diagnosis(opts: Options, node_name: Optional[str]):
    from . import verdict
    if opts.source:
        from . import offline
        ev = offline.load(opts.source, "Node", node_name, None, opts.tail)
    else:
        from .collect.node import collect_node
        ev = collect_node(opts.conn, node_name, opts.tail)
    return verdict.diagnose_node(ev, opts.ignore)


def workload_diagnosis(opts: Options, alias: str, wl_name: str):
    """deploy/x, sts/x, job/x…: the workload's own findings and a diagnosis of each unhealthy pod."""
    from . import podstate, report, verdict, workloads
    from .evidence import Target
    kind = workloads.KINDS[alias].kind
    if opts.source:
        from . import offline
        wev = offline.load(opts.source, kind, wl_name, opts.conn.namespace, opts.tail)
        wl = wev.get(kind, wev.target.name, wev.target.namespace)
        pods = workloads.owned_pods(wev, wl)
        pod_evs = [wev.retarget(Target("Pod", p["metadata"]["name"], p["metadata"].get("namespace")))
                   for p in pods if podstate.health(p) != "healthy"]
        wev.objects["Pod"] = [p for p in wev.all("Pod") if p in pods]
    else:
        from .collect.podsets import collect_workload
        wev, pod_evs = collect_workload(opts.conn, alias, wl_name, opts.tail)
    return report.diagnose_workload(wev, [verdict.diagnose_pod(e, opts.ignore) for e in pod_evs], opts.ignore)


def scan(opts: Options, all_namespaces: bool):
    """Every unhealthy GPU pod of the namespace (or cluster), diagnosed and grouped by root cause."""
    from . import podstate, report, verdict, workloads
    from .evidence import Target
    from .timeutil import format_time
    if opts.source:
        from . import offline
        ev = offline.load(opts.source, "Scan", None, None, opts.tail)
        ns = None if all_namespaces else opts.conn.namespace
        gpu = [p for p in ev.all("Pod") if workloads.uses_gpu(p) and (ns is None or p["metadata"].get("namespace") == ns)]
        evs = [ev.retarget(Target("Pod", p["metadata"]["name"], p["metadata"].get("namespace")))
               for p in gpu if podstate.health(p) != "healthy"]
        scope, count, when = ("all namespaces" if ns is None else f"namespace {ns}"), len(gpu), format_time(ev.now())
    else:
        from .collect.podsets import scan_pods
        evs, count, scope = scan_pods(opts.conn, all_namespaces, opts.tail)
        when = format_time(evs[0].now()) if evs else None
    items = [verdict.diagnose_pod(e, opts.ignore) for e in evs]
    return report.ScanReport(scope=scope, items=items, gpu_pods=count, collected_at=when)


def classify(exc: BaseException) -> Optional[Tuple[Exit, str]]:
    """(exit code, one-line message) for the failures a user can cause or meet; None for bugs."""
    from .collect.api import ClusterError, TargetNotFound
    from .collect.kubeconfig import KubeconfigError, NoConfiguration
    from .offline import OfflineError

    if isinstance(exc, (OfflineError, KubeconfigError, TargetNotFound)):
        return Exit.USAGE, str(exc)
    if isinstance(exc, (ClusterError, NoConfiguration)):
        return Exit.UNDIAGNOSABLE, str(exc)
    return None


def rule_rows() -> List[dict]:
    from .rules import RULES
    return [{"id": r.id, "phase": r.phase, "severity": r.severity, "title": r.title} for r in RULES.values()]
