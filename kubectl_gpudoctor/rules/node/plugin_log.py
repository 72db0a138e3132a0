"""Node rule for a device plugin that runs but advertises nothing: its own log says why (node view)."""
from __future__ import annotations

from ...data import gpu_resources as gr
from ...gpu import nodeview, stack as gpustack
from ...kube import podstate
from ...kube.objects import controller_of, name, namespace
from ._common import node_line, node_target
from ..registry import DEFAULT, Hit, Line, rule


def running_plugin(ev, node):
    """(pod, vendor) of a Running device plugin on the node whose vendor's GPUs the node does not advertise."""
    for pod in gpustack.device_plugin_pods(ev, node, set(gr.VENDOR_RESOURCES)):
        vendor = gpustack.vendor_of(pod)
        if (pod.get("status") or {}).get("phase") == "Running" and not nodeview.advertised(node, vendor) \
                and not nodeview.dra_devices(ev, node, vendor):
            return pod, vendor
    return None


def plugin_names(pod) -> dict:
    """$pluginpod, $pluginnamespace and $daemonset for a fix that names the node's own components."""
    owner = controller_of(pod) or {}
    ds = f"DaemonSet {namespace(pod)}/{owner['name']}" if owner.get("kind") == "DaemonSet" else f"pod {namespace(pod)}/{name(pod)}"
    return {"pluginpod": name(pod), "pluginnamespace": namespace(pod), "daemonset": ds}


def said(ev, pod, node):
    """(sentence, lines): the plugin's deciding log line and its own advice, or why they are unknown."""
    err = gpustack.last_error(ev, pod)
    hint = gpustack.plugin_hint(ev, node)
    lines, text = [], ""
    if err:
        lines.append(Line("log", f"{namespace(pod)}/{name(pod)}/{err[0]} {'previous log' if err[1] else 'log'}", err[2]))
        text = f" Its log says: {gpustack.quoted(err[2])}."
    if hint and (not err or hint not in err[2]):
        text += f" It asks: {gpustack.quoted(hint)}"
    return text, lines


@rule("device-plugin-finds-no-gpu", phase="node", severity="critical", rank=DEFAULT, targets=("Node",),
      applies=node_target,
      needs=("nodes", "pods"),
      title="A device plugin runs on the node but finds no GPU",
      remediation="If $node has GPUs, make them visible to $daemonset: install the driver and configure the NVIDIA "
                  "Container Toolkit as containerd's runtime on $node, then delete pod $pluginnamespace/$pluginpod so it "
                  "starts again; if $node has no GPU, keep $daemonset off it with a nodeSelector or affinity.",
      snippet="kubectl logs -n $pluginnamespace $pluginpod --tail=$tail\n"
              "kubectl delete pod -n $pluginnamespace $pluginpod   # after fixing the node, so it re-detects the GPUs")
def device_plugin_finds_no_gpu(ev):
    """A device plugin pod is Running on the node but the node advertises none of that vendor's GPUs; quotes the
    plugin's own log line (no NVML library, no devices found)."""
    node = ev.node
    found = running_plugin(ev, node)
    if not found or nodeview.is_gpu_node(node):
        return None   # on a node labelled as a GPU node, gpu-allocatable-zero quotes the plugin
    pod, vendor = found
    text, lines = said(ev, pod, node)
    gap = ev.gap("pods/log")
    if not lines and gap is not None:
        text += f" Its log, which says why, could not be read ({gap.needs()})."
    lines.insert(0, node_line(node, "status.allocatable", f"no {gr.VENDOR_DEFAULT_RESOURCE[vendor]}"))
    msg = (f"Device plugin pod {namespace(pod)}/{name(pod)} is {podstate.display_status(pod)} on node {name(node)} "
           f"(ready {gpustack.ready_count(pod)}), but the node advertises "
           f"no {gr.VENDOR_DEFAULT_RESOURCE[vendor]}: the plugin found no GPU it can serve.{text}")
    return Hit(msg, lines, values=plugin_names(pod),
               summary=f"Device plugin on {name(node)} runs but finds no GPU")
