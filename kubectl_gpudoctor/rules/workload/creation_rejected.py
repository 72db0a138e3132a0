"""Workload rules (deploy/x, sts/x, job/x…): problems above the pods, when the controller cannot create them."""
from __future__ import annotations

import re
from string import Template

from ...fixes import patch_command, template_field, where, workload_target
from ...kube import workloads
from ...data.admission_messages import CAUSES
from ...kube.objects import condition, name, spec
from .._common import event_line
from ..registry import SPECIFIC, Hit, Line, Unknown, rule


def _workload(ev):
    return ev.get(ev.target.kind, ev.target.name, ev.target.namespace)


# The pod-template field each refusal is about ($c: the containers, named when there is one). Pod Security and
# webhooks judge the whole template; the queue a scheduler refuses is not a template field.
FIELDS = {"quota-exceeded": "$c.resources.requests", "quota-needs-requests": "$c.resources",
          "runtimeclass-not-found": "runtimeClassName", "pod-security": "", "webhook-denied": "",
          "limitrange": "$c.resources", "serviceaccount-missing": "serviceAccountName",
          "priorityclass-missing": "priorityClassName"}


def _template(wl) -> dict:
    """The pod template's spec of a Deployment, StatefulSet, DaemonSet, Job (a CronJob's under its jobTemplate)."""
    tmpl = spec(wl).get("template") or (spec(wl).get("jobTemplate") or {}).get("spec", {}).get("template") or {}
    return spec(tmpl)


def _placed(ev, wl, cause: str, fix: str):
    """(fix, snippet): the fix naming the object to edit, the field inside it and the command (kubectl edit, Helm,
    Git, re-create); for a missing RuntimeClass, the patch to an existing one when one is known."""
    if cause not in FIELDS:
        return fix, None
    ft = workload_target(ev, wl)
    names = [c.get("name") for c in _template(wl).get("containers") or [] if c.get("name")]
    field = FIELDS[cause].replace("$c", f"containers[name={names[0]}]" if len(names) == 1 else "containers[*]")
    fix = fix.replace("the pod template", f"the pod template of {ft.top.what}")
    fix = fix.rstrip() + " " + where(ft, at=template_field(ft, field or None), pods=False)
    if cause != "runtimeclass-not-found":
        return fix, None
    # The GPU operator's RuntimeClass is `nvidia`; with a single RuntimeClass there is nothing else to choose.
    existing = sorted(name(rc) for rc in ev.all("RuntimeClass"))
    pick = "nvidia" if "nvidia" in existing else (existing[0] if len(existing) == 1 else None)
    patch = patch_command(ft, "runtimeClassName", pick) if pick else None
    return fix, "\n".join(["kubectl get runtimeclass"] + ([patch + f"   # existing: {', '.join(existing)}"] if patch else []))


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
            placed, snippet = _placed(ev, wl, cause, fix)
            # The admission error names a catalogue cause (a missing RuntimeClass, a queue): that id is the root
            # cause of the workload, as it would be of its pods.
            return Hit(f"{wl['kind']} {name(wl)} cannot create its pods: {said}.", [line for _, line in found[-2:]],
                       values=values, fix=placed, snippet=snippet, summary=f"{wl['kind']} {name(wl)} cannot create pods: {said}",
                       cause=cause)
    return Hit(f"{wl['kind']} {name(wl)} cannot create its pods: {text}", [line for _, line in found[-2:]],
               summary=f"{wl['kind']} {name(wl)} cannot create pods")
