"""Scheduling rules beyond the GPU devices: CPU/memory/pod slots on the GPU nodes, and no scheduler acting at all."""
from __future__ import annotations

from .. import placement
from ..k8s import condition, meta, spec
from ..quantity import format_bytes
from ..timeutil import human_duration, seconds_between
from .common import unscheduled
from .registry import DEFAULT, GENERIC, Hit, Line, Unknown, rule
from .scheduling_common import scheduler_word, wants_device

CORE_REASONS = r"^Insufficient (cpu|memory|ephemeral-storage|hugepages-\S+)$|^Too many pods$"


def _amount(res, value):
    if res in ("memory", "ephemeral-storage"):
        return format_bytes(int(max(value, 0)))
    return f"{value:g}" if res == "pods" else f"{max(value, 0):.2f}".rstrip("0").rstrip(".")


@rule("insufficient-node-resources", phase="scheduling", severity="critical", rank=DEFAULT, applies=wants_device,
      title="GPU nodes lack the CPU, memory or pod slots the pod requests",
      remediation="Lower the pod's $res request to what a GPU node can give, or free $res on the nodes listed "
                  "(allocatable is below capacity: system reservations and DaemonSets take their share).",
      snippet="kubectl describe node $candidate | sed -n '/Allocatable:/,/Events:/p'")
def insufficient_node_resources(ev):
    """Nodes with enough free GPUs for the pod lack its cpu / memory / ephemeral-storage requests or pod slots (`Insufficient memory`)."""
    said = scheduler_word(ev)
    core = said.parsed.matching(CORE_REASONS) if said and said.parsed else []
    if not ev.readable("nodes"):
        if core and said.parsed.covers_all("insufficient") and not any("/" in t for _, t in core):
            return Hit(f"The scheduler reports {', '.join(f'{n} node(s) {t}' for n, t in core)} (nodes unreadable).",
                       [said.line], values={"res": core[0][1].split()[-1], "candidate": "<node>"})
        return Unknown.from_gap(ev.gap("nodes"))
    views = placement.analyse(ev, ev.pod)
    roomy = [v for v in placement.capacity_pool(views) if not placement.shortfall(ev, ev.pod, v.node)]
    if not roomy:
        return None   # the GPUs themselves are short: insufficient-gpu
    shorts = {v.name: placement.core_shortfall(ev, ev.pod, v.node) for v in roomy}
    if any(s == {} for s in shorts.values()):
        return None
    if any(s is None for s in shorts.values()):
        gap = ev.gap("pods")
        return Unknown(gap.needs() if gap else "not checked: the pods on the GPU nodes were not listed")
    parts, lines = [], [said.line] if core else []
    for node, short in list(shorts.items())[:5]:
        text = "; ".join(f"{r}: needs {_amount(r, n)}, {_amount(r, f)} free of {_amount(r, a)} allocatable"
                         for r, (n, f, a) in short.items())
        parts.append(f"{node} ({text})")
        lines.append(Line("node", f"nodes/{node}.status.allocatable", text))
    first = next(iter(next(iter(shorts.values()))))
    never = all(any(n > a for n, _, a in s.values()) for s in shorts.values())
    lead = ("No GPU node can ever fit the pod: its request exceeds their allocatable" if never else
            "The GPU nodes with free GPUs lack other resources the pod requests")
    return Hit(f"{lead}: {', '.join(parts)}.", lines, values={"res": first, "candidate": roomy[0].name})


def _queue_free(ev):
    s = spec(ev.pod)
    return unscheduled(ev) and not s.get("schedulingGates") and not s.get("resourceClaims")


@rule("no-scheduler-activity", phase="scheduling", severity="critical", rank=GENERIC, applies=_queue_free,
      title="No scheduler has looked at the pod",
      remediation="Make sure the scheduler named in spec.schedulerName ($scheduler) is installed and running "
                  "(a typo there leaves the pod Pending forever), or remove schedulerName to use the default scheduler.",
      snippet="kubectl get pods -A | grep -i $scheduler\nkubectl get pod $pod -n $namespace -o jsonpath='{.spec.schedulerName}'")
def no_scheduler_activity(ev):
    """Pending for minutes with no PodScheduled condition and no FailedScheduling event: no scheduler has acted on it."""
    if scheduler_word(ev) or condition(ev.pod, "PodScheduled"):
        return None
    age = seconds_between(meta(ev.pod).get("creationTimestamp"), ev.now())
    if age is None or age < 300:
        return None
    name = spec(ev.pod).get("schedulerName") or "default-scheduler"
    custom = name != "default-scheduler"
    where = ("no scheduler by that name seems to run (is it installed, and spelled right?)" if custom else
             "kube-scheduler has not processed it (is the control plane's scheduler healthy?)")
    return Hit(f"The pod has been Pending for {human_duration(age)} and no scheduler has recorded any decision "
               f"(no PodScheduled condition, no FailedScheduling event). spec.schedulerName is {name}: {where}.",
               [Line("spec", "spec.schedulerName", name), Line("status", "status.conditions", "no PodScheduled condition")],
               severity=None if custom else "warning", values={"scheduler": name})
