"""Scheduling-phase rules: the pod is Pending and no node was assigned (gates, advertised GPU/MIG/RDMA resources)."""
from __future__ import annotations

import re

from ...gpu import nodeview
from ...kube import placement
from ...data import gpu_operator as go, scheduling_gates
from ...kube.objects import (allocatable, capacity, gpu_request, is_netdev_resource, labels, name, netdev_request,
                             node_resources, spec)
from .._common import unscheduled
from ..registry import SPECIFIC, Hit, Line, Unknown, rule
from ._common import names, plugin_daemonset_cause, stack_cause, with_scale_up


def _wants_gpu(ev):
    return unscheduled(ev) and bool(gpu_request(ev.pod))


def _nodes_or_unknown(ev):
    return None if ev.readable("nodes") else Unknown.from_gap(ev.gap("nodes"))


@rule("scheduling-gated", phase="scheduling", severity="critical", rank=SPECIFIC + 10, applies=unscheduled,
      title="Pod is held back by scheduling gates",
      remediation="The scheduler does not consider the pod until $controller removes gate $gate (it waits for "
                  "$waits); look there, not at the nodes.",
      snippet="kubectl get pod $pod -n $namespace -o jsonpath='{.spec.schedulingGates}'")
def scheduling_gated(ev):
    """`spec.schedulingGates` is non-empty: the pod waits for a queueing/admission controller (e.g. Kueue)."""
    gates = [g.get("name") for g in spec(ev.pod).get("schedulingGates") or [] if g.get("name")]
    if not gates:
        return None
    who, waits, cmds = scheduling_gates.describe(gates[0])
    queue = labels(ev.pod).get("kueue.x-k8s.io/queue-name", "<queue>")
    lines = [Line("spec", "spec.schedulingGates", ", ".join(gates))]
    lines += [Line("status", "conditions[PodScheduled]", "SchedulingGated")] if "SchedulingGated" in str(ev.pod.get("status")) else []
    return Hit(f"The pod carries scheduling gate(s) {', '.join(gates)}: the scheduler ignores it until {who} "
               f"removes them (it waits for {waits}).", lines,
               values={"controller": who, "gate": gates[0], "waits": waits, "queue": queue},
               next=[c.replace("$queue", queue) for c in cmds])


def _mig_explains(nodes, res):
    """A MIG naming mismatch (mig-profile-mismatch) explains why `res` is advertised nowhere."""
    mig = any(r.startswith("nvidia.com/mig-") for n in nodes for r in node_resources(n) if allocatable(n, r) > 0)
    if res == "nvidia.com/gpu":
        return mig
    return res.startswith("nvidia.com/mig-") and (mig or bool(placement.advertising(nodes, "nvidia.com/gpu")))


_GPU_LABELS = {"nvidia.com": r"^(nvidia\.com/gpu\.(present|product|count)|feature\.node\.kubernetes\.io/pci-10de\.|"
                             r"cloud\.google\.com/gke-accelerator$|k8s\.amazonaws\.com/accelerator$)",
               "amd.com": r"^(amd\.com/gpu|feature\.node\.kubernetes\.io/pci-1002\.)",
               "gpu.intel.com": r"^(gpu\.intel\.com/|intel\.feature\.node\.kubernetes\.io/gpu)"}


def _looks_like_gpu_node(node, res):
    rx = _GPU_LABELS.get(res.split("/", 1)[0])
    return bool(rx) and any(re.search(rx, k) for k in labels(node))


@rule("gpu-not-advertised", phase="scheduling", severity="critical", rank=SPECIFIC, applies=_wants_gpu,
      title="No node advertises the requested GPU resource",
      remediation="Make the device plugin advertise $res: check the GPU operator / device plugin pods on the GPU "
                  "nodes (`kubectl get pods -A -o wide | grep -i -e device-plugin -e gpu-operator`), or add a GPU "
                  "node pool; then compare the nodes' allocatable with the command below.",
      snippet="kubectl get nodes -o custom-columns='NAME:.metadata.name,$short:.status.allocatable.$escaped'")
def gpu_not_advertised(ev):
    """The pod requests a GPU-class resource that no node advertises (absent or 0 allocatable everywhere)."""
    unknown = _nodes_or_unknown(ev)
    if unknown:
        return unknown  # the scheduler's `Insufficient` alone cannot tell "none advertised" from "all full"
    nodes = ev.all("Node")
    wanted = placement.requested(ev.pod)
    missing = [r for r in gpu_request(ev.pod)
               if r in wanted and not placement.advertised_anywhere(nodes, r) and not _mig_explains(nodes, r)]
    if not missing:
        return None
    res = missing[0]
    looks = _gpu_nodes_for(ev, nodes, res)
    lines = [Line("spec", "resources", f"requests {res}: {gpu_request(ev.pod)[res]}")]
    lines += [Line("node", f"nodes/{name(n)}.status.allocatable", f"{res}: {allocatable(n, res)} "
                   f"(capacity: {(n.get('status') or {}).get('capacity', {}).get(res, 'absent')})") for n in looks[:5]]
    msg = f"No node advertises {res}: it is absent or 0 in status.allocatable of all {len(nodes)} node(s)."
    instead = sorted({f"{r} on {name(n)}" for n in nodes for r in node_resources(n) if allocatable(n, r) > 0})
    if instead:
        msg += f" Advertised GPU resources: {', '.join(instead[:4])} (a different resource name)."
    else:
        msg, lines = _why_unadvertised(ev, msg, lines, looks, res)
    short = res.rsplit("/", 1)[-1].upper()
    return with_scale_up(ev, Hit(msg, lines, values={"res": res, "short": short, "escaped": res.replace(".", "\\.")},
                                 next=[f"kubectl gpudoctor node {name(n)}" for n in looks[:3]]))


def _gpu_nodes_for(ev, nodes, res):
    """The nodes that are GPU nodes of the resource's vendor by their labels, instance type or capacity: a node
    listed with GPU capacity is never "no GPU node", whatever its allocatable says."""
    vendor = nodeview.vendor_nodes(ev, ev.pod)
    return [n for n in nodes if _looks_like_gpu_node(n, res) or n in vendor or capacity(n, res) > 0]


def _basis(node, res) -> str:
    """What makes the node a GPU node, and what it lacks: `gpu-1 (capacity 8, allocatable 0)`."""
    if capacity(node, res) > 0:
        return f"{name(node)} (capacity {capacity(node, res)}, allocatable {allocatable(node, res)})"
    lab = labels(node)
    rx = _GPU_LABELS.get(res.split("/", 1)[0])
    key = next((k for k in lab if rx and re.search(rx, k)), None) or \
        next((k for k in go.INSTANCE_TYPE_LABELS if lab.get(k)), None)
    return f"{name(node)} ({key}={lab[key]})" if key else name(node)


def _why_unadvertised(ev, msg, lines, looks, res):
    """Which GPU nodes there are and what their own stack (device plugin, operator, DaemonSet) says."""
    stack = nodeview.stack_nodes(ev, ev.pod)
    if looks:
        shown = ", ".join(_basis(n, res) for n in looks[:4]) + (f" and {len(looks) - 4} more" if len(looks) > 4 else "")
        msg += (f" {len(looks)} node(s) are GPU nodes by their labels or capacity: {shown}; their device plugin "
                f"advertises no allocatable {res}.")
    elif stack:
        msg += f" No node carries GPU labels or GPU capacity, but a device plugin for it runs on {names(stack)}."
    else:
        msg += " No node carries GPU labels or GPU capacity either"
    cause = (stack_cause(ev, stack) if stack else None) or plugin_daemonset_cause(ev)
    if not looks and not stack:
        msg += "." if cause else ": the cluster has no GPU node right now (or the pool is at zero)."
    if cause:
        msg, lines = f"{msg} {cause[0]}", lines + cause[1]
    if looks and "taint" not in (cause[0] if cause else ""):
        msg += _plugin_blocking_taints(looks)
    return msg, lines


# The device plugin / GPU operator DaemonSets tolerate nvidia.com/gpu by default, not site-specific taints.
_PLUGIN_TOLERATED = ("nvidia.com/gpu", "node.kubernetes.io/", "CriticalAddonsOnly")


def _plugin_blocking_taints(nodes):
    taints = sorted({f"{t.get('key')}={t.get('value') or ''}:{t.get('effect')}" for n in nodes
                     for t in spec(n).get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")
                     and not (t.get("key") or "").startswith(_PLUGIN_TOLERATED)})
    return (f" Their taints ({', '.join(taints[:3])}) may also keep the device plugin DaemonSet off them unless it "
            f"tolerates them.") if taints else ""


def _mig_profiles(nodes):
    return {name(n): {r: allocatable(n, r) for r in node_resources(n)
                      if r.startswith("nvidia.com/mig-") and allocatable(n, r) > 0} for n in nodes}


def _slices(res):
    m = re.match(r"nvidia\.com/mig-(\d+)g", res)
    return int(m.group(1)) if m else 0


@rule("mig-profile-mismatch", phase="scheduling", severity="critical", rank=SPECIFIC, applies=_wants_gpu,
      title="Requested GPU resource does not match the MIG devices the nodes expose",
      remediation="Request a resource the nodes advertise ($advertised), or change the nodes' MIG configuration "
                  "(label nvidia.com/mig.config) so that they expose $res.",
      snippet="resources:\n  limits:\n    $suggest: $count")
def mig_profile_mismatch(ev):
    """The pod requests nvidia.com/gpu but GPU nodes expose only nvidia.com/mig-* (mixed strategy), or a MIG profile no node advertises."""
    unknown = _nodes_or_unknown(ev)
    if unknown:
        return unknown
    nodes = ev.all("Node")
    unadvertised = [(res, need) for res, need in gpu_request(ev.pod).items()
                    if (res == "nvidia.com/gpu" or res.startswith("nvidia.com/mig-"))
                    and not placement.advertised_anywhere(nodes, res)]
    if not unadvertised:
        return None   # the common case, decided without reading every node's MIG devices
    profiles = {n: p for n, p in _mig_profiles(nodes).items() if p}
    whole = placement.advertising(nodes, "nvidia.com/gpu")
    for res, need in unadvertised:
        if res == "nvidia.com/gpu" and profiles:
            suggest = max({r for p in profiles.values() for r in p}, key=_slices)
            why = "GPU nodes expose only MIG devices (MIG strategy mixed), no whole nvidia.com/gpu"
        elif res.startswith("nvidia.com/mig-") and (profiles or whole):
            single = [n for n in whole if res.split("mig-", 1)[1] in labels(n).get("nvidia.com/gpu.product", "")]
            suggest = "nvidia.com/gpu" if single or not profiles else max({r for p in profiles.values() for r in p}, key=_slices)
            why = (f"no node advertises the MIG profile {res}" +
                   ("; with the single MIG strategy those slices are advertised as nvidia.com/gpu" if single else ""))
        else:
            continue
        adv = "; ".join(f"{n}: " + ", ".join(f"{r} x{c}" for r, c in sorted(p.items())) for n, p in list(profiles.items())[:5])
        if whole:
            adv = "; ".join(filter(None, [adv, f"nvidia.com/gpu on {names(whole)}"]))
        lines = [Line("spec", "resources", f"requests {res}: {need}")]
        lines += [Line("node", f"nodes/{n}.status.allocatable", ", ".join(f"{r}: {c}" for r, c in sorted(p.items())))
                  for n, p in list(profiles.items())[:5]]
        return Hit(f"The pod requests {res}, but {why}. Advertised: {adv}.", lines,
                   values={"res": res, "suggest": suggest, "count": need, "advertised": adv})
    return None


@rule("rdma-not-advertised", phase="scheduling", severity="critical", rank=SPECIFIC,
      applies=lambda ev: unscheduled(ev) and bool(netdev_request(ev.pod)),
      title="No node advertises the requested RDMA / network device resource",
      remediation="Deploy or fix the device plugin that advertises $res (NVIDIA Network Operator's RDMA shared "
                  "device plugin, or the SR-IOV network device plugin) on the GPU nodes, or request the name "
                  "the nodes advertise ($advertised).",
      snippet="kubectl get nodes -o json | jq -r '.items[] | [.metadata.name, (.status.allocatable | to_entries[] "
              "| select(.key | test(\"rdma|hostdev|openshift.io\")) | \"\\(.key)=\\(.value)\")] | @tsv'")
def rdma_not_advertised(ev):
    """The pod requests rdma/* (or another network-device resource) that no node advertises, or none of its GPU nodes."""
    unknown = _nodes_or_unknown(ev)
    if unknown:
        return unknown
    nodes, gpus = ev.all("Node"), gpu_request(ev.pod)
    adv_all = sorted({f"{r} on {name(n)}" for n in nodes for r in node_resources(n, is_netdev_resource)
                      if allocatable(n, r) > 0})
    advertised = ", ".join(adv_all[:6]) or "none"
    for res, need in netdev_request(ev.pod).items():
        having = placement.advertising(nodes, res)
        lines = [Line("spec", "resources", f"requests {res}: {need}")]
        if not having:
            return Hit(f"No node advertises {res} (network-device resources advertised: {advertised}).", lines,
                       values={"res": res, "advertised": advertised})
        gpu_nodes = [n for n in nodes if all(allocatable(n, g) > 0 for g in gpus)] or \
            [n for n in nodes if nodeview.is_gpu_node(n)]   # the GPU resource itself blocks: judge the GPU nodes
        if gpus and gpu_nodes and not any(n in having for n in gpu_nodes):
            return Hit(f"{res} is advertised only on nodes without {', '.join(gpus)} ({names(having)}): no GPU node "
                       f"offers it.", lines, values={"res": res, "advertised": advertised})
    return None
