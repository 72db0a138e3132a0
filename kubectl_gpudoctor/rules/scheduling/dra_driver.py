"""Scheduling rule for a DRA driver whose kubelet plugin never registered: no ResourceSlice from it (for the node),
no running plugin pod there, or the kubelet's prepare error naming the driver."""
from __future__ import annotations

from ...data import event_signatures as sigs, gpu_operator as go
from ...gpu import stack as gpustack
from ...kube import podstate, storage
from ...kube.objects import name, namespace, spec, status
from .._common import current, event_line, pod_events
from ..registry import SPECIFIC, Hit, Line, rule


def _applies(ev):
    if ev.target.kind == "Node":
        return ev.node is not None
    return ev.pod is not None and bool(spec(ev.pod).get("resourceClaims")) and podstate.health(ev.pod) != "healthy"


def _drivers(ev):
    """The DRA drivers the pod's claims need: allocation results, else their DeviceClasses' CEL selectors."""
    out = []
    for entry in storage.pod_resource_claims(ev.pod):
        claim = ev.get("ResourceClaim", entry["claim"], namespace(ev.pod)) if entry["claim"] else None
        if not claim:
            continue
        results = ((status(claim).get("allocation") or {}).get("devices") or {}).get("results") or []
        found = [r.get("driver") for r in results if r.get("driver")]
        if not found:
            for _, cls in storage.claim_device_classes(claim):
                found += storage.class_drivers(ev.get("DeviceClass", cls) or {})
        out += [d for d in found if d not in out]
    return out


@rule("dra-driver-not-registered", phase="scheduling", severity="critical", rank=SPECIFIC,
      applies=_applies, targets=("Pod", "Node"),
      title="The DRA driver the pod's claim needs is not registered (its kubelet plugin is not running)",
      remediation="Get DRA driver $driver's kubelet plugin running on $where (its DaemonSet must tolerate and select "
                  "the GPU nodes; the plugin registers with the kubelet and then publishes ResourceSlices), then "
                  "the pod's claim can be allocated and prepared.",
      snippet="kubectl get resourceslices -o wide | grep $driver\nkubectl get pods -A -o wide | grep -i kubelet-plugin")
def dra_driver_not_registered(ev):
    """The kubelet says `DRA driver X is not registered` (FailedPrepareDynamicResources), or no ResourceSlice of
    the driver the pod's claim needs exists (on the pod's node, with no running plugin pod there); in the node
    view, the node's GPU DRA kubelet-plugin pod is not running and no ResourceSlice of that driver lists the node."""
    if ev.target.kind == "Node":
        return _on_node(ev, ev.node)
    pod, node = ev.pod, spec(ev.pod).get("nodeName")
    events = [e for e in current(ev, pod_events(ev, sigs.PREPARE_REASONS)) if e.get("type") == "Warning"]
    for e in reversed(events):
        hit = sigs.search(e.get("message") or "", "dra-driver-not-registered")
        if hit:
            driver = next(v for v in hit[1].groupdict().values() if v)
            return _hit(f"The kubelet on node {node} has no registered plugin of DRA driver {driver}: "
                        f"{hit[1].group(0)}{_plugin_facts(ev, node)}", [event_line(e)], driver, f"node {node}")
    if not ev.readable("resourceslices"):
        return None
    for driver in _drivers(ev):
        slices = storage.slices_of(ev, driver)
        if not node and not slices:
            return _hit(f"No ResourceSlice is published by DRA driver {driver} on any node: its kubelet plugin "
                        f"never registered, so the pod's claim cannot be allocated.",
                        [Line("object", "resourceslices", f"none with spec.driver={driver}")], driver, "the GPU nodes")
        mine = [s for s in slices if spec(s).get("nodeName") in (None, node) or (spec(s).get("allNodes"))]
        if node and podstate.stuck_in_creation(pod) and not mine and not _plugin_running(ev, node):
            return _hit(f"DRA driver {driver} publishes no ResourceSlice for node {node} and no plugin pod of it runs "
                        f"there{_plugin_facts(ev, node)}", [Line("object", "resourceslices",
                                                               f"none with spec.driver={driver} for node {node}")],
                        driver, f"node {node}")
    return None


def _on_node(ev, node):
    if not ev.readable("resourceslices"):
        return None
    for p in gpustack.dra_plugin_pods(ev, node):
        driver = go.DRA_GPU_DRIVERS.get(gpustack.vendor_of(p))
        mine = [s for s in storage.slices_of(ev, driver) if spec(s).get("nodeName") == name(node)]
        if driver and not mine and not gpustack.is_ready(p):
            others = sorted({spec(s).get("nodeName") for s in storage.slices_of(ev, driver) if spec(s).get("nodeName")})
            elsewhere = f" (it does for {', '.join(others[:3])})" if others else ""
            err = gpustack.last_error(ev, p)
            said = f" Its log says: {gpustack.quoted(err[2])}." if err else ""
            lines = [Line("object", f"pods/{name(p)}", podstate.display_status(p)),
                     Line("object", "resourceslices", f"none with spec.driver={driver} for node {name(node)}")]
            lines += [Line("log", f"{namespace(p)}/{name(p)}/{err[0]} {'previous log' if err[1] else 'log'}", err[2])] if err else []
            return _hit(f"DRA driver {driver}'s kubelet plugin pod {namespace(p)}/{name(p)} on node {name(node)} is "
                        f"{podstate.display_status(p)}, {gpustack.ready_count(p)} ready, and no ResourceSlice of "
                        f"{driver} lists the node{elsewhere}: the plugin never registered, so claims cannot use the "
                        f"node's GPUs.{said}", lines, driver, f"node {name(node)}")
    return None


def _plugin_running(ev, node):
    return any(gpustack.is_ready(p) for p in gpustack.dra_plugin_pods(ev, {"metadata": {"name": node}}))


def _plugin_facts(ev, node):
    if not node or not gpustack.pods_known(ev, node):
        return "."
    pods = gpustack.dra_plugin_pods(ev, {"metadata": {"name": node}})
    if not pods:
        return f"; no DRA kubelet-plugin pod runs on node {node}."
    p = pods[0]
    return f"; plugin pod {namespace(p)}/{name(p)} there is {podstate.display_status(p)}."


def _hit(msg, lines, driver, where):
    return Hit(msg, lines, values={"driver": driver, "where": where},
               summary=f"DRA driver {driver} is not registered on {where}")
