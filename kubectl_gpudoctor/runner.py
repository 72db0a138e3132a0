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
