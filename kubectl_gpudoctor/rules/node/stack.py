"""Node rules about the GPU stack's pods: the device plugin and the GPU operator's chain of components."""
from __future__ import annotations

from typing import List, Optional

from ...gpu import stack as gpustack, nodeview
from ...kube import podstate
from ...data import gpu_operator as go
from ...kube.objects import labels, name, namespace, spec
from ...kube.timeutil import human_duration, parse_time
from ._common import each_node, node_line, on_gpu_node, vendors
from ..registry import DEFAULT, GENERIC, SPECIFIC, Hit, Line, Unknown, rule

# Links that watch or label GPUs; when one of them is the first broken link, GPU pods still run.
NON_BLOCKING = ("dcgm-exporter", "dcgm", "gfd", "nfd")
DEVICE_PLUGIN_STAGE = go.COMPONENT_BY_KEY["device-plugin"].stage


def _pods_or_unknown(ev, node):
    if gpustack.pods_known(ev, name(node)):
        return None
    gap = ev.gap("pods")
    return Unknown(gap.needs() if gap else f"not checked: the pods on node {name(node)} were not listed")


def _error_line(ev, pod) -> Optional[Line]:
    err = gpustack.last_error(ev, pod)
    if not err:
        return None
    return Line("log", f"{namespace(pod)}/{name(pod)}/{err[0]} {'previous log' if err[1] else 'log'}", err[2])


def _logs_command(ev, pod) -> str:
    c = next((cs.get("name") for _, cs, _ in podstate.all_container_states(pod) if int(cs.get("restartCount") or 0)),
             None)
    if c:
        return f"kubectl logs -n {namespace(pod)} {name(pod)} -c {c} --previous --tail={ev.tail_lines}"
    stuck = gpustack.stuck_init(pod)
    which = f" -c {stuck['name']}" if stuck else " --all-containers"
    return f"kubectl logs -n {namespace(pod)} {name(pod)}{which} --tail={ev.tail_lines}"


def _state(pod) -> str:
    restarts = podstate.restarts(pod)
    return f"{podstate.display_status(pod)}, ready {gpustack.ready_count(pod)}" + (f", {restarts} restarts" if restarts else "")


@rule("device-plugin-not-running", phase="node", severity="critical", rank=DEFAULT, applies=on_gpu_node,
      targets=("Pod", "Node"), needs=("nodes", "pods"),
      title="No working device plugin on the node",
      remediation="Get the device plugin pod on $node Running and Ready: read its previous log for the error; if "
                  "no pod is there, make its DaemonSet select the node (labels, tolerations).",
      snippet="kubectl get ds -A -o wide | grep -Ei 'device-plugin|gpu-plugin'\n"
              "kubectl get pods -A --field-selector spec.nodeName=$node -o wide")
def device_plugin_not_running(ev):
    """No Running+Ready device-plugin pod on the node, or it keeps restarting; quotes its last error."""
    return each_node(ev, plugin_on)


def plugin_on(ev, node):
    unknown = _pods_or_unknown(ev, node)
    if unknown:
        return unknown
    wanted = vendors(ev, node)
    plugins = gpustack.device_plugin_pods(ev, node, wanted)
    ready = [p for p in plugins if gpustack.is_ready(p)]
    if ready:
        return _flapping(ev, ready)
    if plugins:
        return _not_ready(ev, node, plugins[0])
    if any(nodeview.advertised(node, v) or nodeview.dra_devices(ev, node, v) for v in wanted):
        return None  # something we do not recognise (a plugin outside Kubernetes, a DRA driver) offers the GPUs
    if gpustack.dra_plugin_pods(ev, node):
        return None  # a GPU DRA driver replaces the device plugin here: gpu-allocatable-zero says if it publishes GPUs
    return _absent(ev, node, wanted)


def _flapping(ev, ready: List[dict]):
    for pod in ready:
        term = gpustack.recent_restart(ev, pod)
        if not term:
            continue
        ago = human_duration((ev.now() - parse_time(term["finishedAt"])).total_seconds())
        lines = [Line("status", f"{name(pod)} containerStatuses[{term['container']}].lastState",
                      f"reason={term.get('reason')} exitCode={term.get('exitCode')} finishedAt={term.get('finishedAt')}")]
        err = _error_line(ev, pod)
        lines += [err] if err else []
        msg = (f"Device plugin pod {namespace(pod)}/{name(pod)} is Ready but restarted {term['restartCount']} time(s), "
               f"the last {ago} ago ({term.get('reason') or 'exit ' + str(term.get('exitCode'))})."
               + (f" Its last error: {gpustack.quoted(err.text)}." if err else ""))
        return Hit(msg, lines, severity="warning", snippet=_logs_command(ev, pod), next=[_logs_command(ev, pod)])
    return None


def _not_ready(ev, node, pod):
    comp = gpustack.component_of(pod)
    health = gpustack.health(ev, comp, pod)
    link, init = gpustack.link_of(comp, pod)
    lines = [Line("status", f"pods/{namespace(pod)}/{name(pod)}", _state(pod))]
    msg = f"Device plugin pod {namespace(pod)}/{name(pod)} on node {name(node)} is not ready ({_state(pod)})"
    if link is not comp:
        msg += f": it waits in init container {init} for the {link.title}"
    err = _error_line(ev, pod)
    if err:
        lines.append(err)
        msg += f". Its last error: {gpustack.quoted(err.text)}"
    elif health == "starting":
        msg += "; it is still starting"
    return Hit(msg.rstrip(".") + ".", lines, severity="warning" if health == "starting" else None,
               snippet=_logs_command(ev, pod), next=[_logs_command(ev, pod)],
               summary=f"Device plugin on {name(node)} is not ready ({podstate.display_status(pod)})")


def _absent(ev, node, wanted):
    lines, why, snippet = [], [], None
    policy = next(iter(ev.all("ClusterPolicy")), None)
    if policy is not None and ((spec(policy).get("devicePlugin") or {}).get("enabled") is False):
        why.append(f"ClusterPolicy {name(policy)} has devicePlugin.enabled=false")
    if ev.readable("daemonsets"):
        dss = [d for d in ev.all("DaemonSet") if gpustack.daemonset_component(d) is go.COMPONENT_BY_KEY["device-plugin"]
               and gpustack.vendor_of(gpustack.as_pod(d)) in wanted]
        for ds in dss[:3]:
            reasons = gpustack.skip_reasons(ds, node)
            st = ds.get("status") or {}
            said = "; ".join(reasons) if reasons else (
                f"it selects the node but runs no pod here (desired {st.get('desiredNumberScheduled', '?')}, "
                f"ready {st.get('numberReady', '?')}): read its events")
            why.append(f"DaemonSet {namespace(ds)}/{name(ds)} skips the node: {said}")
            lines.append(Line("object", f"daemonsets/{namespace(ds)}/{name(ds)}", said))
            snippet = snippet or _label_snippet(node, ds)
        if not dss:
            why.append(f"no device-plugin DaemonSet {_where_read(ev)}")
    else:
        gap = ev.gap("daemonsets")
        why.append(f"why its DaemonSet skips the node is unknown ({gap.needs() if gap else 'DaemonSets not read'})")
    hint = _deploy_label_hint(node)
    if hint and hint.split("=")[0].split()[-1] not in " ".join(why):
        why.append(hint)   # unless a DaemonSet's selector already named that label
    shown = ", ".join(go.VENDOR_NAMES[v] for v in sorted(wanted))
    msg = f"No {shown} device plugin pod runs on node {name(node)}, and it advertises no GPU: " + "; ".join(why) + "."
    lines.insert(0, node_line(node, "status.allocatable", "no allocatable GPU resource"))
    severity = None
    if nodeview.mig_reconfiguring(node):
        msg += " The MIG manager paused it for a MIG reconfiguration (see mig-config-failed): it returns when that finishes."
        severity, snippet = "warning", None
    return Hit(msg, lines, snippet=snippet, severity=severity, summary=f"No device plugin runs on node {name(node)}")


def _where_read(ev) -> str:
    """Where the DaemonSets were looked for: the cluster, or only the namespaces listed one by one once the
    cluster-wide list was refused (collect/node.py): a DaemonSet in another namespace was never seen."""
    scoped = ev.read_in("daemonsets")
    if not scoped:
        return "exists in the cluster"
    s = "s" if len(scoped) > 1 else ""
    return f"in namespace{s} {', '.join(scoped)} (the cluster-wide list was refused; other namespaces not read)"


def _deploy_label_hint(node) -> Optional[str]:
    lab = labels(node)
    key = go.COMPONENT_BY_KEY["device-plugin"].deploy_label
    if lab.get(key) == go.PAUSED_FOR_MIG:
        return None  # said with the MIG reconfiguration
    if key in lab and lab[key] != "true":
        return f"the GPU operator's switch {key}={lab[key]} turns the device plugin off on this node"
    if "nvidia" in nodeview.gpu_vendors(node) and lab.get("nvidia.com/gpu.present") != "true":
        return ("the node lacks nvidia.com/gpu.present=true, which the GPU operator sets only where node feature "
                "discovery found an NVIDIA PCI device (feature.node.kubernetes.io/pci-10de.present)")
    return None


def _label_snippet(node, ds) -> Optional[str]:
    sel = spec(spec(ds).get("template") or {}).get("nodeSelector") or {}
    missing = {k: v for k, v in sel.items() if labels(node).get(k) != v}
    if not missing:
        return None
    return f"kubectl label node {name(node)} " + " ".join(f"{k}={v}" for k, v in missing.items()) + " --overwrite"


@rule("gpu-operator-component-failing", phase="node", severity="critical", rank=GENERIC, applies=on_gpu_node,
      targets=("Pod", "Node"), needs=("nodes", "pods"),
      title="A GPU operator component on the node is failing",
      remediation="Fix the first broken link ($component) first: everything after it in driver -> toolkit -> "
                  "device plugin -> GFD/DCGM -> validator waits for it. Read its log.",
      snippet="kubectl get pods -A --field-selector spec.nodeName=$node -o wide | grep -Ei 'nvidia|gpu'")
def gpu_operator_component_failing(ev):
    """A GPU-operator pod on the node is not Ready; names the first broken link driver → toolkit → device plugin → GFD/DCGM → validator."""
    return each_node(ev, operator_on)


def operator_on(ev, node):
    unknown = _pods_or_unknown(ev, node)
    if unknown:
        return unknown
    broken = []
    for comp, pod in gpustack.component_pods(ev, node):
        health = gpustack.health(ev, comp, pod)
        if health == "ok" or (comp.device_plugin and gpustack.link_of(comp, pod)[0] is comp):
            continue  # a device plugin broken on its own is device-plugin-not-running
        link, init = gpustack.link_of(comp, pod)
        broken.append(((link.stage, link is not comp, go.COMPONENTS.index(comp)), comp, pod, health, link, init))
    if not broken:
        return None
    _, comp, pod, health, link, init = min(broken, key=lambda b: b[0])
    return _chain_hit(ev, node, comp, pod, health, link, init, [b for b in broken if b[2] is not pod])


def _chain_hit(ev, node, comp, pod, health, link, init, others):
    lines = [Line("status", f"pods/{namespace(pod)}/{name(pod)}", _state(pod))]
    msg = f"The first broken link of the GPU stack on node {name(node)} is the {link.title}: "
    if link is comp:
        msg += f"pod {namespace(pod)}/{name(pod)} is {_state(pod)}."
    else:
        msg += f"{comp.title} pod {namespace(pod)}/{name(pod)} is stuck in init container {init} ({_state(pod)})."
        if link.key in ("driver", "toolkit", "device-plugin") and not any(c is link for c, _ in gpustack.component_pods(ev, node)):
            msg += f" No {link.title} pod runs on the node" + (
                " (the driver is expected on the host when the operator's driver is disabled)." if link.key == "driver" else ".")
    err = _error_line(ev, pod)
    if err:
        lines.append(err)
        msg += f" Its log says: {gpustack.quoted(err.text)}."
    if others:
        msg += " Also not ready: " + ", ".join(f"{c.key} ({podstate.display_status(p)})" for _, c, p, *_ in others[:5]) + "."
    severity = "warning" if health == "starting" or link.key in NON_BLOCKING else None
    if link.key in NON_BLOCKING and health != "starting":
        msg += f" The {link.title} does not block GPU pods, but its data (metrics/labels) is stale."
    rank = SPECIFIC if link.stage < DEVICE_PLUGIN_STAGE else GENERIC
    return Hit(msg, lines, values={"component": link.title}, snippet=_logs_command(ev, pod), severity=severity,
               rank=rank, next=[_logs_command(ev, pod)],
               summary=f"GPU operator {link.title} is not ready on {name(node)} ({podstate.display_status(pod)})")
