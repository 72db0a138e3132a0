"""Scheduling-phase rules: the pod is Pending and no node was assigned."""
from __future__ import annotations

from .. import placement, schedmsg
from ..k8s import gpu_request, name
from .common import event_line, latest, pod_events, unscheduled
from .registry import DEFAULT, SPECIFIC, Hit, Line, Unknown, rule


def scheduler_summary(ev):
    """The newest FailedScheduling event and its parsed message (None, None when there is none)."""
    event = latest(pod_events(ev, ("FailedScheduling",)))
    return event, (schedmsg.parse(event.get("message") or "") if event else None)


def _wants_gpu(ev):
    return unscheduled(ev) and bool(gpu_request(ev.pod))


@rule("insufficient-gpu", phase="scheduling", severity="critical", rank=DEFAULT, applies=_wants_gpu,
      title="Not enough free GPUs on any node",
      remediation="Wait for GPUs to free up, add GPU nodes (or let the autoscaler add them), or free GPUs held "
                  "by the pods listed; lower the request if the workload can run on fewer GPUs.",
      snippet="kubectl get pods -A --field-selector spec.nodeName=$candidate -o wide   # who holds the GPUs")
def insufficient_gpu(ev):
    """The scheduler says `Insufficient <gpu resource>`, or nodes advertise it but none has enough free."""
    pod = ev.pod
    event, parsed = scheduler_summary(ev)
    said = parsed.matching(r"^Insufficient (nvidia\.com|amd\.com|gpu\.intel\.com)/") if parsed else []
    lines = [event_line(event)] if said else []
    if not ev.readable("nodes"):
        if said:
            return Hit(f"The scheduler found no node with enough free GPUs: {_said(said)}.", lines)
        return Unknown.from_gap(ev.gap("nodes"))
    table, short = [], []
    for res, need in gpu_request(pod).items():
        rows = placement.gpu_table(ev, res)
        if not rows:
            continue  # no node advertises it: gpu-not-advertised / mig-profile-mismatch explain that
        table += rows
        if any(r["free"] is None for r in rows):
            if said:
                continue
            gap = ev.gap("pods")
            return Unknown(gap.needs() if gap else "not checked: the pods on the GPU nodes were not listed")
        if any(r["free"] >= need for r in rows):
            continue  # a node has room: something else blocks (taints, selectors, affinity)
        total_free = sum(max(r["free"], 0) for r in rows)
        note = (f"; {total_free} {res} are free in total but no single node has {need} (fragmentation)"
                if total_free >= need else "")
        short.append(f"the pod needs {need} {res}, the most free on one node is "
                     f"{max(r['free'] for r in rows)}{note}")
    if not short and not (said and not table):
        return None
    best = max(table, key=lambda r: r["free"] or 0)["node"] if table else ""
    for r in sorted(table, key=lambda r: -(r["free"] or 0))[:3]:
        held = placement.holders(ev, ev.get("Node", r["node"]), r["resource"])
        if held:
            lines.append(Line("node", f"nodes/{r['node']}", f"{r['resource']} held by: {', '.join(held[:8])}"))
    msg = "; ".join(short) if short else f"The scheduler reports {_said(said)}"
    return Hit(msg[0].upper() + msg[1:] + ".", lines, values={"candidate": best or "<node>"},
               table=table, summary=f"No node has enough free GPUs ({msg.split(';')[0]})")


def _said(items):
    return ", ".join(f"{n} {text}" for n, text in items)


@rule("untolerated-taint", phase="scheduling", severity="critical", rank=SPECIFIC, applies=unscheduled,
      title="GPU nodes carry a taint the pod does not tolerate",
      remediation="Add a toleration for the taint to the pod template (GPU node pools are often tainted "
                  "nvidia.com/gpu so that only GPU pods land there).")
def untolerated_taint(ev):
    """Every node that would fit carries a NoSchedule/NoExecute taint the pod does not tolerate."""
    pod = ev.pod
    event, parsed = scheduler_summary(ev)
    said = parsed.matching(r"untolerated taint|had taint .*that the pod didn't tolerate") if parsed else []
    if ev.readable("nodes"):
        fitting = placement.fitting_nodes(ev, pod)
        if not fitting:
            return None  # resources block first: insufficient-gpu / gpu-not-advertised
        blocked = {name(n): placement.blocking_taints(pod, n) for n in fitting}
        if not all(blocked.values()):
            return None
        taints = [t for ts in blocked.values() for t in ts]
        lines = [Line("node", f"nodes/{n}.spec.taints", ", ".join(_fmt(t) for t in ts)) for n, ts in list(blocked.items())[:5]]
        lines += [event_line(event)] if said else []
        return Hit(f"All {len(fitting)} node(s) with room for the pod carry taints it does not tolerate: "
                   f"{', '.join(sorted({_fmt(t) for t in taints}))}.", lines,
                   snippet=placement.toleration_snippet(taints))
    if not said:
        return Unknown.from_gap(ev.gap("nodes")) if ev.gap("nodes") else None
    keys = [{"key": k, "value": v, "effect": None} for _, text in said for k, v in schedmsg.taints_in(text)]
    keys = [t for t in keys if not t["key"].startswith(placement.CONDITION_TAINT_PREFIX)]
    return Hit(f"The scheduler reports {_said(said)}.", [event_line(event)],
               snippet=placement.toleration_snippet(keys) if keys else None)


def _fmt(t):
    return f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}"
