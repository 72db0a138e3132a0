"""Reads the node's dcgm-exporter metrics through the API server's pod proxy: one bounded GET per node, started
alongside a collection round; a refused or failed read is a gap (needs get pods/proxy)."""
from __future__ import annotations

from typing import Optional

from ..evidence import Evidence, Gap
from ..kube.objects import name, namespace
from .api import Api
from .parallel import Parallel


def start(api: Api, ev: Evidence, node: Optional[dict]) -> Optional[Parallel]:
    """The exporter's metrics GET, sent now (None when the node runs no exporter pod)."""
    from ..gpu import dcgm   # the GPU-stack readers load once the first round is in flight (tests/test_imports.py)
    pods = dcgm.exporter_pods(ev, node) if node is not None else []
    if not pods:
        return None
    pod = pods[0]
    return Parallel(lambda p: (p, api.get(dcgm.proxy_path(p), text=True)), [pod], 1)


def finish(pending: Optional[Parallel], ev: Evidence) -> None:
    """Store the answer: the metric text, or a gap naming the verb and subresource it needs."""
    if pending is None:
        return
    from ..gpu import dcgm
    pod, resp = pending.results()[0]
    if resp.reason == "ok":
        ev.mark_read(dcgm.SOURCE)
        ev.metrics[(namespace(pod), name(pod))] = (resp.body or "")[:dcgm.MAX_METRICS_BYTES]
        return
    reason = resp.reason if resp.reason in ("forbidden", "unauthorized", "timeout") else "error"
    detail = resp.message or f"HTTP {resp.status}"
    ev.add_gap(Gap(dcgm.SOURCE, reason, f"dcgm-exporter {namespace(pod)}/{name(pod)}: {detail}", "get"))


def pod_node(ev: Evidence) -> Optional[dict]:
    """Under a pod diagnosis: the node of a scheduled GPU pod in trouble, whose GPUs' health may be the cause."""
    from ..kube import podstate
    from ..kube.objects import gpu_request
    pod = ev.pod
    if pod is None or not gpu_request(pod) or podstate.health(pod) == "healthy":
        return None
    return ev.node
