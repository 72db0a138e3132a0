"""Workload rules (deploy/x, sts/x, job/x…): problems above the pods, when the controller cannot create them."""
from __future__ import annotations

import re
from string import Template

from ...kube import workloads
from ...data.admission_messages import CAUSES
from ...kube.objects import condition, name
from .._common import event_line
from ..registry import SPECIFIC, Hit, Line, Unknown, rule


def _workload(ev):
    return ev.get(ev.target.kind, ev.target.name, ev.target.namespace)


@rule("pod-creation-rejected", phase="scheduling", severity="critical", rank=SPECIFIC, targets=("Workload",),
      applies=lambda ev: _workload(ev) is not None,
      title="The API server refuses to create the workload's pods",
      remediation="Fix what the admission error names; the controller retries on its own.")
def pod_creation_rejected(ev):
    """The controller reports FailedCreate (a Deployment's ReplicaFailure condition): quota, RuntimeClass, Pod
    Security, an admission webhook or a LimitRange refused its pods, so they never exist."""
    wl = _workload(ev)
    if workloads.settled(wl):
        return None   # old FailedCreate events of a workload whose pods are all up are history
    found = []
    for owner in [wl] + workloads.current_replicasets(ev, wl):
        cond = condition(owner, "ReplicaFailure")
        if cond and cond.get("status") == "True" and cond.get("message"):
            found.append((cond["message"], Line("status", f"{owner['kind'].lower()}s/{name(owner)}.status.conditions"
                                                          f"[ReplicaFailure]", cond["message"])))
        events = [e for e in ev.events_for(owner) if e.get("reason") == "FailedCreate"]
        if events:
            found.append((events[-1].get("message") or "", event_line(events[-1])))
    if not found:
        return Unknown.from_gap(ev.gap("events")) if ev.gap("events") else None
    text = found[-1][0]
    for cause, pattern, what, fix in CAUSES:
        m = re.search(pattern, text)
        if m:
            values = {k: v for k, v in m.groupdict().items() if v}
            said = Template(what).safe_substitute(values)
            # The admission error names a catalogue cause (a missing RuntimeClass, a queue): that id is the root
            # cause of the workload, as it would be of its pods.
            return Hit(f"{wl['kind']} {name(wl)} cannot create its pods: {said}.", [line for _, line in found[-2:]],
                       values=values, fix=fix, summary=f"{wl['kind']} {name(wl)} cannot create pods: {said}",
                       cause=cause)
    return Hit(f"{wl['kind']} {name(wl)} cannot create its pods: {text}", [line for _, line in found[-2:]],
               summary=f"{wl['kind']} {name(wl)} cannot create pods")
