"""Crash-phase rule for NVSwitch systems whose fabric manager is not running: CUDA error 802 in a GPU container (or
in the GPU operator's own CUDA validator on the node); rule bodies only."""
from __future__ import annotations

import re

from ...gpu import stack as gpustack
from ...kube import podstate
from ...kube.objects import labels, name, namespace, spec
from ...logs import scan as logscan
from .._common import has_terminations
from ._gpu_log import crash_hit, crash_match, crashed, quote
from ..registry import SPECIFIC, Hit, Line, rule

RULE = "fabric-manager-not-running"
# GPU models that are built into NVSwitch baseboards (HGX/DGX): the GFD product label of those nodes.
NVSWITCH_PRODUCTS = r"SXM|HGX|DGX|H100[- ]80GB[- ]HBM3|H200|H800|B200|B100|GB200|GH200|A800[- ]SXM"


def _applies(ev):
    if ev.target.kind == "Node":
        return ev.node is not None
    return has_terminations(ev) or (ev.pod is not None and bool(spec(ev.pod).get("nodeName"))
                                    and podstate.health(ev.pod) != "healthy")


@rule(RULE, phase="crash", severity="critical", rank=SPECIFIC, targets=("Pod", "Node"), applies=_applies,
      title="NVSwitch fabric not initialised: the fabric manager is not running",
      remediation="Start the NVIDIA fabric manager on node $node (the GPU operator's driver container runs it on "
                  "NVSwitch systems; a host-installed driver needs the nvidia-fabricmanager service of the same "
                  "version as the driver), then restart the pod.",
      snippet="kubectl get pods -A -o wide --field-selector spec.nodeName=$node | grep -E 'driver|fabric'\n"
              "kubectl debug node/$node -it --image=busybox -- chroot /host systemctl status nvidia-fabricmanager\n"
              "kubectl debug node/$node -it --image=busybox -- chroot /host nvidia-smi -q | grep -A2 -i fabric")
def fabric_manager_not_running(ev):
    """A GPU container's log (or the GPU operator's CUDA validator on the node) says CUDA error 802 `system not yet
    initialized`: on NVSwitch systems (HGX/DGX A100-SXM, H100, H200, B200) CUDA cannot start until the fabric
    manager has initialised the NVSwitch fabric; the node's GPU product label and driver pod are quoted."""
    if ev.target.kind == "Node":
        return _on_node(ev, ev.node)
    for c, cs, term, prev in crashed(ev):
        m = crash_match(ev, c["name"], prev, (RULE,))
        if m:
            return crash_hit(ev, c, cs, term, m, f"Container {c['name']} cannot initialise CUDA: {quote(m, c, term)}. "
                             f"{_node_facts(ev)}", extra=_node_lines(ev))
    for c, cs, _ in podstate.all_container_states(ev.pod):
        m = next(iter(logscan.scan(ev, ev.pod, c["name"], RULE)), None)
        if m and not cs.get("ready"):   # a server that retries CUDA start-up without exiting
            return Hit(f"Container {c['name']} cannot initialise CUDA: {quote(m, c, {})}. {_node_facts(ev)}",
                       [m.as_line(name(ev.pod))] + _node_lines(ev), values={"container": c["name"]})
    return None


def _on_node(ev, node):
    for comp, pod in gpustack.component_pods(ev, node):
        for c in (spec(pod).get("initContainers") or []) + (spec(pod).get("containers") or []):
            m = next(iter(logscan.scan(ev, pod, c["name"], RULE)), None)
            if m:
                return Hit(f"The {comp.title} pod {namespace(pod)}/{name(pod)} on node {name(node)} cannot initialise "
                           f"CUDA: {quote(m, c, {})}. {_facts(ev, node)}", [m.as_line(name(pod))] + _lines(node),
                           summary=f"Node {name(node)}: CUDA error 802, the NVSwitch fabric manager is not running")
    return None


def _node_facts(ev):
    return _facts(ev, ev.node) if ev.node else "The node could not be read to tell whether it is an NVSwitch system."


def _facts(ev, node):
    product = labels(node).get("nvidia.com/gpu.product", "")
    what = (f"Node {name(node)} has {product} GPUs, an NVSwitch system: CUDA starts only once the fabric manager has "
            f"initialised the NVSwitch fabric." if re.search(NVSWITCH_PRODUCTS, product, re.I) else
            f"Node {name(node)} ({product or 'GPU model not labelled'}): CUDA error 802 means the GPUs wait for the "
            f"fabric manager (NVSwitch systems).")
    drivers = [p for c, p in gpustack.component_pods(ev, node) if c.key == "driver"]
    if drivers:
        p = drivers[0]
        what += (f" Driver pod {namespace(p)}/{name(p)} (which runs the fabric manager under the GPU operator) is "
                 f"{podstate.display_status(p)}, {gpustack.ready_count(p)} ready.")
    return what


def _node_lines(ev):
    return _lines(ev.node) if ev.node else []


def _lines(node):
    product = labels(node).get("nvidia.com/gpu.product")
    return [Line("node", f"nodes/{name(node)}.metadata.labels", f"nvidia.com/gpu.product={product}")] if product else []
