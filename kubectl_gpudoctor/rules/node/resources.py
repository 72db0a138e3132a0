"""Node rules from the node object: GPUs advertised or unhealthy, MIG state, cordon (the GPU inventory follows)."""
from __future__ import annotations

import re

from ...gpu import stack as gpustack, nodeview
from ...data import gpu_operator as go, gpu_resources as gr
from ...kube import podstate
from ...kube.objects import allocatable, capacity, labels, name, namespace, spec, taints
from ...kube.timeutil import human_duration
from .._common import event_line
from ._common import (NEW_NODE_S, age_s, dra_unknown, each_node, node_events, node_line, node_target, on_gpu_node,
                      vendors)
from ..registry import DEFAULT, GENERIC, SPECIFIC, Hit, Line, rule
from . import plugin_log

# --- rules -----------------------------------------------------------------------------------------------

@rule("gpu-allocatable-zero", phase="node", severity="critical", rank=GENERIC, applies=on_gpu_node,
      targets=("Pod", "Node"), needs=("nodes",),
      title="GPU node advertises no allocatable GPUs",
      remediation="Get the device plugin (and the driver under it) running on $node: it is what turns the "
                  "node's GPUs into allocatable $resource; see the device plugin and GPU operator findings.",
      snippet="kubectl get node $node -o jsonpath='{.status.allocatable}'\n"
              "kubectl get pods -A --field-selector spec.nodeName=$node -o wide | grep -Ei 'nvidia|gpu|device-plugin'")
def gpu_allocatable_zero(ev):
    """The node looks like a GPU node (GFD/NFD/cloud labels or GPU capacity) but advertises 0 of its GPU resources."""
    return each_node(ev, allocatable_zero_on)


def _by_instance_type(kind):
    return {v for rx, v in go.INSTANCE_TYPE_VENDORS if re.match(rx, kind)}


def allocatable_zero_on(ev, node):
    if not nodeview.is_gpu_node(node):
        return None   # a node that only runs a device plugin may be a CPU node: gpu-not-advertised quotes the plugin
    for vendor in sorted(vendors(ev, node)):
        if nodeview.advertised(node, vendor) or nodeview.dra_devices(ev, node, vendor):
            continue   # with DRA the GPUs are ResourceSlice devices, not an allocatable extended resource
        if dra_unknown(ev, node):
            return dra_unknown(ev, node)
        lab = labels(node)
        why = [f"{k}={lab[k]}" for k in go.GPU_NODE_LABELS.get(vendor, ()) + go.INSTANCE_TYPE_LABELS[:1]
               if k in lab and (k in go.GPU_NODE_LABELS.get(vendor, ()) or vendor in _by_instance_type(lab[k]))][:3]
        res = nodeview.vendor_resources(node, vendor) or [gr.VENDOR_DEFAULT_RESOURCE[vendor]]
        shown = ", ".join(f"{r} {capacity(node, r)}/{allocatable(node, r)}" for r in res)
        basis = f"its labels say so ({', '.join(why)})" if why else "its capacity lists GPUs"
        msg = (f"Node {name(node)} has {go.VENDOR_NAMES[vendor]} GPUs — {basis} — but advertises none as "
               f"allocatable (capacity/allocatable: {shown}).")
        age = age_s(ev, node)
        severity = None
        if age is not None and age < NEW_NODE_S:
            msg += f" The node joined {human_duration(age)} ago: its GPU stack may still be installing."
            severity = "warning"
        elif nodeview.mig_reconfiguring(node):
            msg += " A MIG reconfiguration is in progress: the device plugin is paused until it finishes."
            severity = "warning"
        dra = gpustack.dra_plugin_pods(ev, node)
        if dra:
            msg += (f" DRA driver pod {namespace(dra[0])}/{name(dra[0])} runs on the node, but no ResourceSlice of "
                    f"{go.DRA_GPU_DRIVERS.get(vendor, vendor)} lists its GPUs: its kubelet plugin publishes none.")
        lines = [node_line(node, "metadata.labels", ", ".join(why))] if why else []
        lines.append(node_line(node, "status.allocatable", shown))
        values, fix = {"resource": res[0]}, None
        plugin = plugin_log.running_plugin(ev, node)
        if plugin and not dra:   # the plugin runs, so its own log says why it serves nothing (as in the pod view)
            text, said = plugin_log.said(ev, plugin[0], node)
            # its state as kubectl's STATUS shows it: phase Running with the container in CrashLoopBackOff reads so
            msg += (f" Device plugin pod {namespace(plugin[0])}/{name(plugin[0])} is {podstate.display_status(plugin[0])} "
                    f"there (ready {gpustack.ready_count(plugin[0])}) but serves no GPU." + text)
            lines += said
            values.update(plugin_log.plugin_names(plugin[0]))
            fix = ("Fix what the log of $pluginnamespace/$pluginpod ($daemonset) names on $node — usually the driver, or "
                   "the NVIDIA Container Toolkit as containerd's runtime — then delete that pod so it detects the GPUs again.")
        return Hit(msg, lines, values=values, severity=severity, fix=fix,
                   summary=f"Node {name(node)} advertises no allocatable {res[0]}")
    return None


@rule("gpus-unhealthy", phase="node", severity="critical", rank=DEFAULT, applies=on_gpu_node,
      targets=("Pod", "Node"), needs=("nodes",),
      title="GPUs marked unhealthy (capacity > allocatable)",
      remediation="Find the failed GPU (Xid errors in the device plugin log or `dmesg` on $node), drain the node "
                  "and reset or replace the GPU; the device plugin does not mark a GPU healthy again by itself, "
                  "so restart its pod once the GPU is back.",
      snippet="kubectl drain $node --ignore-daemonsets --delete-emptydir-data\n"
              "kubectl debug node/$node -it --image=ubuntu -- chroot /host sh -c 'dmesg | grep -i xid; nvidia-smi -q | grep -i -A3 retired'")
def gpus_unhealthy(ev):
    """A GPU resource's capacity exceeds its allocatable: the device plugin marked GPUs unhealthy (e.g. after an Xid)."""
    return each_node(ev, unhealthy_on)


def unhealthy_on(ev, node):
    short = [(r, capacity(node, r), allocatable(node, r)) for r in nodeview.node_gpu_resources(node)
             if capacity(node, r) > allocatable(node, r)]
    if not short:
        return None
    res, cap, alloc = short[0]
    lines = [node_line(node, "status", f"{r}: capacity {c}, allocatable {a}") for r, c, a in short]
    said = gpustack.health_lines(ev, node)
    lines += [Line("log", ref, text) for ref, text in said[:6]]
    msg = f"{cap - alloc} of {cap} {res} on node {name(node)} are unhealthy (capacity {cap}, allocatable {alloc})."
    if said:
        msg += f" The device plugin reported: {gpustack.quoted(said[-1][1])}."
    fix, rank = None, None
    if alloc == 0 and not gpustack.device_plugin_ready(ev, node):
        rank = GENERIC   # the plugin's absence explains it: device-plugin-not-running is the cause
        msg += (" All of them are out, and no device plugin is ready on the node: the kubelet marks a resource's "
                "devices unhealthy when its device plugin disconnects.")
        fix = "Bring the device plugin on $node back first (see device-plugin-not-running); if GPUs stay unhealthy, drain and reset them."
    return Hit(msg, lines, fix=fix, rank=rank, summary=f"{cap - alloc} of {cap} {res} unhealthy on node {name(node)}")


@rule("mig-config-failed", phase="node", severity="critical", rank=SPECIFIC,
      applies=lambda ev: on_gpu_node(ev) and ev.node is not None and bool(nodeview.mig_state(ev.node)),
      targets=("Pod", "Node"), needs=("nodes",),
      title="MIG reconfiguration failed or has not finished",
      remediation="Read the MIG manager's log on $node and fix what it names: a profile ($migconfig) its mig-parted "
                  "config does not define for this GPU, or GPU processes that block a MIG mode change. Then set "
                  "nvidia.com/mig.config to a profile the config defines, or restart the MIG manager pod to retry the "
                  "same one: writing the same label value again changes nothing.",
      snippet="kubectl logs -n $mignamespace $migpod --tail=$tail\n"
              "kubectl get configmap -n $mignamespace -o name | grep -i mig   # the mig-parted config: its profiles\n"
              "kubectl delete pod -n $mignamespace $migpod   # retry the current profile once its cause is fixed")
def mig_config_failed(ev):
    """The MIG manager's state label says `failed` (critical) or `pending`/`rebooting` (warning)."""
    node = ev.node
    state, config = nodeview.mig_state(node)
    if state not in (go.MIG_STATE_FAILED,) + go.MIG_STATES_IN_PROGRESS:
        return None
    lines = [node_line(node, "metadata.labels", f"{go.GFD['migConfigState']}={state}, {go.GFD['migConfig']}={config or '(unset)'}")]
    values = {"migconfig": config or "<profile>", "mignamespace": "<namespace>", "migpod": "<mig-manager-pod>"}
    mig = next((p for c, p in gpustack.component_pods(ev, node) if c.key == "mig-manager"), None)
    err = None
    if mig is not None:
        values.update(mignamespace=mig["metadata"].get("namespace"), migpod=name(mig))
        err = gpustack.last_error(ev, mig)
        if err:
            lines.append(Line("log", f"{name(mig)}/{err[0]} {'previous log' if err[1] else 'log'}", err[2]))
    if state == go.MIG_STATE_FAILED:
        msg = f"The MIG manager failed to apply MIG config {config or '(unset)'} on node {name(node)}."
        severity = None
    else:
        msg = (f"A MIG reconfiguration to {config or '(unset)'} is {state} on node {name(node)}: the device plugin "
               f"is paused and GPU pods cannot start here until it finishes.")
        severity = "warning"
    if err:
        msg += f" Its log says: {gpustack.quoted(err[2])}."
    unseen = None if mig is not None else ("kubectl get pods -A -o wide --field-selector spec.nodeName="
                                           f"{name(node)} | grep -i mig-manager")
    return Hit(msg, lines, values=values, severity=severity, snippet=unseen)


@rule("node-cordoned", phase="node", severity="warning", rank=DEFAULT, applies=node_target, targets=("Node",),
      title="Node is cordoned (unschedulable)",
      remediation="Uncordon $node once the maintenance that cordoned it is over; new pods are not scheduled there.",
      snippet="kubectl uncordon $node")
def node_cordoned(ev):
    """spec.unschedulable is true: no new pod is scheduled on the node."""
    node = ev.node
    if not spec(node).get("unschedulable"):
        return None
    lines = [node_line(node, "spec.unschedulable", "true")]
    taint = next((t for t in taints(node) if t.get("key") == "node.kubernetes.io/unschedulable"), None)
    since = f" since {taint['timeAdded']}" if (taint or {}).get("timeAdded") else ""
    msg = f"Node {name(node)} is cordoned{since}: the scheduler places no new pod on it."
    upgrade = nodeview.driver_upgrade_state(node)
    if upgrade:
        msg += f" The GPU operator's driver upgrade is in progress ({go.DRIVER_UPGRADE_LABEL}={upgrade}); it uncordons the node when done."
        lines.append(node_line(node, "metadata.labels", f"{go.DRIVER_UPGRADE_LABEL}={upgrade}"))
    autoscaler = next((t for t in taints(node) if t.get("key") == "ToBeDeletedByClusterAutoscaler"), None)
    if autoscaler:
        msg += " The cluster autoscaler is removing this node (taint ToBeDeletedByClusterAutoscaler)."
    events = [e for e in node_events(ev, node) if e.get("reason") == "NodeNotSchedulable"]
    lines += [event_line(e) for e in events[-1:]]
    return Hit(msg, lines)
