"""Collects the node view's evidence: the node and everything that needs only its name in one round trip, then
what those answers name (collect/node.py's reads, whose imports load while the first round is in flight); GET/LIST
only."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import List

from ..evidence import Evidence, Target
from . import dcgm
from .api import Api, Request, TargetNotFound, quote, read_target
from .kubeconfig import ConnOptions, connect
from .parallel import Parallel


def collect_node(opts: ConnOptions, node_name: str, tail: int, connected=None) -> Evidence:
    """`connected()`, when given, is called once the connection is set up and the first request is next."""
    conn = connect(opts)
    api = Api(conn.client, opts.request_timeout)
    if connected:
        connected()
    ev = Evidence(target=Target("Node", node_name), tail_lines=tail)
    ev.collected_at = datetime.now(timezone.utc).replace(microsecond=0)
    # The node, and all that needs only its name: one round trip.
    target = Parallel(lambda path: read_target(api, path, f'nodes "{node_name}"'), [f"/api/v1/nodes/{quote(node_name)}"], 1)
    api.run(node_requests(node_name), ev)
    try:
        node = target.results()[0]
    except TargetNotFound as exc:   # the failure path only: what the name may have meant
        from .suggest import node_hints
        raise TargetNotFound(f"{exc}{node_hints(api, conn.namespace, node_name)}") from None
    from . import node as reads   # the GPU-stack readers; the rules' thread (preload.py) has loaded what they use
    node.setdefault("kind", "Node")
    ev.add(node)
    ev.mark_read("nodes")
    ev.pod_nodes = {node_name}   # the node's own pods are listed; no other node's
    # Second round: what the node and its pods name. DRA discovery rides along; only a node whose GPUs DRA
    # publishes needs a third round (its ResourceSlices and claims), as does a refused DaemonSet list.
    second = reads.dra_discovery(node)
    if _refused(ev, "events"):
        # The kubelet records node events in namespace default; a namespaced reader may still see them.
        ev.gaps.pop("events")
        second.append(_events(node_name, "/api/v1/namespaces/default/events"))
    metrics = dcgm.start(api, ev, node)   # the exporter's metrics ride along with the second round
    api.run(second + reads.daemonset_requests(ev) + reads.log_requests(ev, reads.MAX_LOGS), ev)
    third = reads.dra_requests(ev)
    fallback = reads.namespaced_daemonset_requests(ev) if _refused(ev, "daemonsets") else []
    if fallback:
        ev.gaps.pop("daemonsets")
    api.run(third + fallback, ev)
    dcgm.finish(metrics, ev)
    return ev


def _events(node_name: str, path: str) -> Request:
    return Request("events", "list", path,
                   {"fieldSelector": f"involvedObject.kind=Node,involvedObject.name={node_name}"}, "Event")


def _refused(ev: Evidence, source: str) -> bool:
    gap = ev.gaps.get(source)
    return gap is not None and gap.reason == "forbidden"


def node_requests(node_name: str) -> List[Request]:
    """First round: everything that needs only the node's name."""
    return [
        Request("pods", "list", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={node_name}"}, "Pod"),
        _events(node_name, "/api/v1/events"),
        Request("runtimeclasses", "list", "/apis/node.k8s.io/v1/runtimeclasses", kind="RuntimeClass"),
        # A 404 means the GPU operator's CRD is not installed: not an error.
        Request("clusterpolicies", "list", "/apis/nvidia.com/v1/clusterpolicies", kind="ClusterPolicy",
                optional_api=True),
    ]
