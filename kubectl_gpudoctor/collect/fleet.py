"""Collects the fleet for `nodes`: every node and every non-terminated pod, page by page (pods slimmed as they
stream by), the ClusterPolicy, and with --health each GPU node's dcgm-exporter metrics (bounded parallel GETs)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, List, Optional, Tuple

from ..evidence import Evidence, Gap
from ..kube.timeutil import format_time
from .api import Api, ClusterError
from .kubeconfig import ConnOptions, connect
from .parallel import Parallel, run_all

PAGE = 500
HEALTH_WORKERS = 8          # dcgm-exporter reads in flight at once with --health
MAX_HEALTH_NODES = 500      # GPU nodes whose metrics are read at most (the rest: a gap)


def collect_fleet(opts: ConnOptions, health: bool = False, connected: Optional[Callable] = None
                  ) -> Tuple[List[Evidence], List[Gap], str]:
    conn = connect(opts)
    api = Api(conn.client, opts.request_timeout)
    if connected:
        connected()
    when = format_time(datetime.now(timezone.utc).replace(microsecond=0))
    # Nodes and pods are listed side by side: two paged streams, one round trip each page.
    nodes_pages = Parallel(lambda _: _paged(api, "/api/v1/nodes", {}, "nodes", lambda n: n), [0], 1)
    from ..gpu import fleet
    pods = _paged(api, "/api/v1/pods", {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"}, "pods",
                  fleet.slim_pod)
    nodes = nodes_pages.results()[0]
    gaps: List[Gap] = []
    extra = []
    resp = api.get("/apis/nvidia.com/v1/clusterpolicies")
    if resp.reason == "ok":
        extra = [dict(o, kind="ClusterPolicy", apiVersion="nvidia.com/v1") for o in resp.body.get("items") or []]
    elif resp.reason != "not-found":
        gaps.append(Gap("clusterpolicies", resp.reason, resp.message, "list"))
    evs = fleet.node_evidence(nodes, pods, extra, None, gaps)
    for ev in evs:
        ev.collected_at = datetime.now(timezone.utc).replace(microsecond=0)
    if health:
        _read_health(api, evs)
    return evs, gaps, when


def _paged(api: Api, path: str, query: dict, what: str, keep) -> List[dict]:
    out, token = [], None
    while True:
        q = dict(query, limit=str(PAGE))
        if token:
            q["continue"] = token
        resp = api.get(path, q)
        if resp.reason != "ok":
            raise ClusterError(f"cannot list {what}: {resp.message}")
        out += [keep(o) for o in resp.body.get("items") or []]
        token = (resp.body.get("metadata") or {}).get("continue")
        if not token:
            return out


def _read_health(api: Api, evs: List[Evidence]) -> None:
    """Each GPU node's exporter metrics, at most HEALTH_WORKERS at a time; a node beyond the bound is a gap."""
    from . import dcgm

    def one(ev):
        pending = dcgm.start(api, ev, ev.node)
        dcgm.finish(pending, ev)
    run_all(one, evs[:MAX_HEALTH_NODES], HEALTH_WORKERS)
    for ev in evs[MAX_HEALTH_NODES:]:
        ev.add_gap(Gap("pods/proxy", "not-collected", f"more than {MAX_HEALTH_NODES} GPU nodes", "get"))
