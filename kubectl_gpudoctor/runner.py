"""Runs one command's diagnosis: evidence from saved files (offline/) or the live cluster (collect/), then the
verdict; no printing."""
from __future__ import annotations

from typing import List, Optional, Tuple

from .collect.kubeconfig import ConnOptions
from .exitcodes import Exit
from .preload import Preload
from .record import field, record


@record
class Options:
    conn: ConnOptions = field(default_factory=ConnOptions)
    output: str = "text"
    color: str = "auto"
    source: Optional[str] = None        # --from
    tail: int = 80
    ignore: Tuple[str, ...] = ()
    verbose: bool = False


def pod_diagnosis(opts: Options, pod_name: Optional[str]):
    preload = Preload()
    ev = pod_evidence(opts, pod_name, preload.start)
    preload.wait()
    from . import verdict
    return verdict.diagnose_pod(ev, opts.ignore)


def live_names(opts: Options, what: str, name: Optional[str]) -> None:
    """Names typed on the command line must be Kubernetes names before any of them reaches a URL (exit 2)."""
    from .kube import names
    names.check(what, name)
    names.check("namespace", opts.conn.namespace, label=True)


def pod_evidence(opts: Options, pod_name: Optional[str], waiting=None):
    """`waiting()` is called once the pod's own request is sent, while its answer is awaited."""
    if opts.source:
        from .offline.load import load
        return load(opts.source, "Pod", pod_name, opts.conn.namespace, opts.tail)
    live_names(opts, "pod", pod_name)
    from .collect.pod import collect_pod
    return collect_pod(opts.conn, pod_name, opts.tail, waiting)


def bundle_evidence(opts: Options, command: str, target: str):
    """What `bundle` writes: a pod's evidence, or a workload's merged with its unhealthy pods' evidence (so that
    --from gives the workload verdict the live command gave)."""
    if command == "pod":
        return pod_evidence(opts, target)
    from .kube.workloads import parse_ref
    alias, name = parse_ref(target)
    if opts.source:
        from .offline.podsets import collect_workload
        wev, pod_evs = collect_workload(opts.source, opts.conn.namespace, alias, name, opts.tail)
    else:
        live_names(opts, alias, name)
        from .collect.podsets import collect_workload
        wev, pod_evs = collect_workload(opts.conn, alias, name, opts.tail)
    return wev.merged(pod_evs)


def saved_target(opts: Options) -> Tuple[str, object]:
    """("pod"|"node"|"workload", target) for `--from PATH` without a target: what the bundle was made for."""
    from .kube.workloads import KINDS
    from .offline.load import saved_target as saved
    t = saved(opts.source)
    kind = (t or {}).get("kind")
    if kind == "Node":
        return "node", None
    alias = next((a for a, k in KINDS.items() if k.kind == kind), None)
    return ("workload", (alias, None)) if alias else ("pod", None)


def node_diagnosis(opts: Options, node_name: Optional[str]):
    preload = Preload()
    if opts.source:
        from .offline.load import load
        ev = load(opts.source, "Node", node_name, None, opts.tail)
    else:
        live_names(opts, "node", node_name)
        from .collect.nodeview import collect_node
        ev = collect_node(opts.conn, node_name, opts.tail, preload.start)
    preload.wait()
    from . import verdict
    return verdict.diagnose_node(ev, opts.ignore)


def workload_diagnosis(opts: Options, alias: str, wl_name: str):
    """deploy/x, sts/x, job/x…: the workload's own findings and a diagnosis of each unhealthy pod."""
    from . import verdict
    if opts.source:
        from .offline.podsets import collect_workload
        wev, pod_evs = collect_workload(opts.source, opts.conn.namespace, alias, wl_name, opts.tail)
    else:
        live_names(opts, alias, wl_name)
        from .collect.podsets import collect_workload
        wev, pod_evs = collect_workload(opts.conn, alias, wl_name, opts.tail)
    return verdict.diagnose_workload(wev, [verdict.diagnose_pod(e, opts.ignore) for e in pod_evs], opts.ignore)


def scan(opts: Options, all_namespaces: bool):
    """Every unhealthy GPU pod of the namespace (or cluster) and every GPU workload whose pods are missing or
    refused, diagnosed and grouped by root cause."""
    import gc
    gc.enable()   # long-running: let the cyclic collector work (launch.py turns it off for one-shot diagnoses)
    from . import verdict
    from .report import ScanReport
    if opts.source:
        from .offline.podsets import scan_pods
        found = scan_pods(opts.source, opts.conn.namespace, all_namespaces, opts.tail)
    else:
        live_names(opts, "pod", None)
        from .collect.podsets import scan_pods
        found = scan_pods(opts.conn, all_namespaces, opts.tail)
    pods = [verdict.diagnose_pod(e, opts.ignore) for e in found.pods]
    wls = [verdict.diagnose_workload(wev, [verdict.diagnose_pod(e, opts.ignore) for e in evs], opts.ignore)
           for wev, evs in found.workloads]
    return ScanReport(scope=found.scope, items=verdict.scan_items(pods, wls), gpu_pods=found.gpu_pods,
                      collected_at=found.collected_at, gaps=[g.to_dict() for g in found.gaps])


def classify(exc: BaseException) -> Optional[Tuple[Exit, str]]:
    """(exit code, one-line message) for the failures a user can cause or meet; None for bugs."""
    from .collect.api import ClusterError, TargetNotFound
    from .collect.kubeconfig import CredentialError, KubeconfigError, NoConfiguration
    from .collect.transport import Refused
    from .kube.names import InvalidName
    from .offline.bundle import BundleError
    from .offline.load import OfflineError

    if isinstance(exc, (OfflineError, KubeconfigError, Refused, TargetNotFound, InvalidName, BundleError)):
        return Exit.USAGE, str(exc)
    if isinstance(exc, (ClusterError, NoConfiguration, CredentialError)):
        return Exit.UNDIAGNOSABLE, str(exc)
    return None


def rule_rows() -> List[dict]:
    from .rules import RULES
    return [{"id": r.id, "phase": r.phase, "severity": r.severity, "title": r.title} for r in RULES.values()]


def fleet_report(opts: Options, health: bool = False):
    """`nodes`: every GPU node of the cluster (or of a saved input) in one report."""
    from .fleetreport import decide
    if opts.source:
        from .offline.fleet import load_fleet
        evs, gaps, when = load_fleet(opts.source, opts.tail)
    else:
        from .collect.fleet import collect_fleet
        evs, gaps, when = collect_fleet(opts.conn, health)
    return decide(evs, gaps, when, opts.ignore)
