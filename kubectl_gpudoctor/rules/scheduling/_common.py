"""Helpers shared by the scheduling rules: the scheduler's latest word, applicability, node views; no I/O."""
from __future__ import annotations

import re
from datetime import datetime
from typing import List, Optional

from ...gpu import stack as gpustack, nodeview
from ...kube import placement, schedmsg
from ...evidence import Evidence, Line, event_time
from ...kube.objects import condition, labels, name, namespace, spec
from ...kube.timeutil import format_time, parse_time
from ...kube.autoscaler import provisioning, scaling_up
from ...record import record
from .._common import event_line, pod_events, unscheduled
from ..registry import Hit


@record
class Said:
    """What the scheduler last said about the pod (event or PodScheduled condition)."""
    text: str
    parsed: Optional[schedmsg.SchedulingFailure]
    line: Line
    when: Optional[datetime]

    def family(self, name_: str):
        return self.parsed.family(name_) if self.parsed else []

    def says(self, pattern: str) -> bool:
        return bool(re.search(pattern, self.text, re.I))


def scheduler_word(ev: Evidence) -> Optional[Said]:
    """The newest scheduler statement: a FailedScheduling event, or the PodScheduled condition's message
    (it outlives events, which expire after an hour). The newest of the two wins."""
    found: List[Said] = []
    events = [e for e in pod_events(ev, ("FailedScheduling",)) if "karpenter" not in _reporter(e)]
    if events:
        e = events[-1]
        found.append(Said((e.get("message") or "").strip(), schedmsg.parse(e.get("message") or ""), event_line(e),
                          event_time(e)))
    cond = condition(ev.pod, "PodScheduled") or {}
    if cond.get("status") == "False" and cond.get("reason") == "Unschedulable" and cond.get("message"):
        when = parse_time(cond.get("lastProbeTime") or cond.get("lastTransitionTime"))
        text = cond["message"].strip()
        if not found or text != found[0].text:
            found.append(Said(text, schedmsg.parse(text), Line("status", "conditions[PodScheduled]", text), when))
    if not found:
        return None
    return max(found, key=lambda s: s.when.timestamp() if s.when else 0.0)


def _reporter(e: dict) -> str:
    return " ".join(str(x) for x in (e.get("reportingComponent"), e.get("reportingController"),
                                      (e.get("source") or {}).get("component"))).lower()


def with_scale_up(ev: Evidence, hit: Hit) -> Hit:
    """Quote the autoscaler's scale-up on a capacity finding; while it is recent the finding is a warning."""
    prov = provisioning(ev)
    if prov is None:
        return hit
    hit.evidence.append(event_line(prov))
    hit.message += f" A node autoscaler is bringing a node: {(prov.get('message') or '').strip()}"
    if scaling_up(ev):
        hit.severity = "warning"
        hit.summary = f"{hit.summary or hit.message.split('. ')[0].rstrip('.')}; a node autoscaler is adding a node"
    return hit


def wants_device(ev: Evidence) -> bool:
    """Unscheduled and requests a GPU-class or network-device resource."""
    return unscheduled(ev) and bool(placement.requested(ev.pod))


def said_line(said: Optional[Said], family: str) -> List[Line]:
    return [said.line] if said and said.family(family) else []


def node_labels_line(views, keys: List[str], limit: int = 6) -> List[Line]:
    """The GPU nodes' actual values for the label keys the pod selects on."""
    out = []
    for v in views[:limit]:
        lab = labels(v.node)
        shown = ", ".join(f"{k}={lab[k]}" if k in lab else f"{k} (absent)" for k in keys) or "no labels selected"
        out.append(Line("node", f"nodes/{v.name}.metadata.labels", shown))
    return out


def fmt_taint(t: dict) -> str:
    return f"{t.get('key')}={t.get('value', '') or ''}:{t.get('effect')}"


def names(views, limit: int = 6) -> str:
    shown = [v.name if hasattr(v, "name") else name(v) for v in views[:limit]]
    more = f" and {len(views) - limit} more" if len(views) > limit else ""
    return ", ".join(shown) + more


def when_text(said: Optional[Said]) -> str:
    return f" (scheduler, {format_time(said.when)})" if said and said.when else ""


def node_name_of(pod: dict) -> str:
    return spec(pod).get("nodeName") or ""


# --- the GPU nodes' own stack, for a pod that waits for GPUs ---------------------------------------------------

def stack_cause(ev: Evidence, nodes: List[dict], order=("plugin", "operator", "unhealthy", "zero"),
                lead: str = "The GPU node's own stack says why") -> Optional[tuple]:
    """(sentence, lines): why the GPU nodes offer no (or fewer) GPUs, from their own stack: the first critical
    node-rule finding on them in `order` with its quoted log line, else a running device plugin's own log line on a
    node that advertises nothing. None when their stack looks fine."""
    from ..node import resources as node, stack as node_operator  # the node phase registers after this one: import at call time
    checks = {"plugin": node_operator.plugin_on, "operator": node_operator.operator_on,
              "unhealthy": node.unhealthy_on, "zero": node.allocatable_zero_on}
    for key in order:
        for n in nodes:
            hit = checks[key](ev, n)
            if isinstance(hit, Hit) and hit.severity in (None, "critical"):
                quote = [ln for ln in hit.evidence if ln.source in ("log", "object")][-1:]
                first = hit.message.split(". ")[0].rstrip(".")
                said = f": {gpustack.quoted(quote[0].text)}" if quote and quote[0].text not in first else ""
                return _sentence(f"{lead}: {first}{said}") + _hint(ev, n), quote
    return _plugin_log(ev, nodes)


def _sentence(text: str) -> str:
    return text if text.rstrip("\"'").endswith((".", "?", "!")) else text + "."


def _hint(ev: Evidence, node: dict) -> str:
    hint = gpustack.plugin_hint(ev, node)
    return f" The device plugin asks: {gpustack.quoted(hint)}" if hint else ""


def _plugin_log(ev: Evidence, nodes: List[dict]) -> Optional[tuple]:
    wanted = nodeview.request_vendors(ev.pod)
    for n in nodes:
        if any(nodeview.advertised(n, v) for v in wanted):
            continue
        for p in gpustack.device_plugin_pods(ev, n, wanted):
            err = gpustack.last_error(ev, p)
            if err:
                ref = f"{namespace(p)}/{name(p)}/{err[0]} {'previous log' if err[1] else 'log'}"
                return (_sentence(f"Device plugin pod {namespace(p)}/{name(p)} runs on node {name(n)} and advertises "
                                  f"no GPU; its log says: {gpustack.quoted(err[2])}") + _hint(ev, n), [Line("log", ref, err[2])])
    return None


# Control-plane taints keep every ordinary DaemonSet off those nodes: not the reason the plugin is missing.
CONTROL_PLANE = "node-role.kubernetes.io/"


def plugin_daemonset_cause(ev: Evidence) -> Optional[tuple]:
    """(sentence, lines) when the device plugin's DaemonSet places no pod at all (desiredNumberScheduled 0) because
    taints repel it from nodes it selects (k8s-device-plugin#68, #421). A selector that keeps it off CPU nodes is
    by design (no GPU node yet, e.g. a pool at zero): nothing is said then."""
    if not ev.readable("daemonsets"):
        return None
    wanted = nodeview.request_vendors(ev.pod)
    for ds in ev.all("DaemonSet"):
        comp = gpustack.daemonset_component(ds)
        if not comp or not comp.device_plugin or gpustack.vendor_of(gpustack.as_pod(ds)) not in wanted \
                or int((ds.get("status") or {}).get("desiredNumberScheduled", -1)) != 0:
            continue
        why = []
        for n in ev.all("Node"):
            reasons = gpustack.skip_reasons(ds, n)
            if reasons and all("taint" in r and CONTROL_PLANE not in r for r in reasons):
                why.append(f"on node {name(n)} {'; '.join(reasons)}")
        if why:
            text = (f"DaemonSet {namespace(ds)}/{name(ds)} places its pod on no node (desiredNumberScheduled 0): "
                    + "; ".join(why[:3]))
            return (f"The device plugin runs nowhere: {text}.",
                    [Line("object", f"daemonsets/{namespace(ds)}/{name(ds)}", text)])
    return None

