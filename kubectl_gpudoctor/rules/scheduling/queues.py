"""Scheduling rule for batch-scheduler queues (Kueue, Volcano, KAI): the queue a pod or workload names is missing,
not a leaf, or closed, so nothing schedules however much capacity is free."""
from __future__ import annotations

import re

from ...data import scheduler_queues as sq
from ...evidence import source_of
from ...kube import workloads
from ...kube.objects import annotations, condition, labels, name, namespace, spec, status
from .._common import event_line, unscheduled
from ..registry import SPECIFIC, Hit, Line, Unknown, rule


def _applies(ev):
    if ev.target.kind == "Pod":
        return unscheduled(ev) and bool(_refs(ev, ev.pod))
    wl = ev.get(ev.target.kind, ev.target.name, ev.target.namespace)
    return wl is not None and ev.target.kind != "Node" and not workloads.settled(wl) and bool(_refs(ev, wl))


def _held_by(obj, system):
    """The queueing system actually holds this pod (or workload): its scheduler is named, or Kueue's gate/suspend."""
    pod_spec = (spec(obj).get("template") or {}).get("spec") or spec(obj)
    if system == "kueue":
        gates = [g.get("name") or "" for g in pod_spec.get("schedulingGates") or []]
        return any(g.startswith(sq.KUEUE_GATE) for g in gates) or bool(spec(obj).get("suspend"))
    return pod_spec.get("schedulerName") in sq.SCHEDULER_NAMES[system] or \
        str(obj.get("apiVersion", "")).startswith("batch.volcano.sh")


def _refs(ev, obj):
    """(system, queue kind, queue name, where it is named) for each queue the object (or its pod template) names
    and whose queueing system holds it."""
    return [r for r in _named(ev, obj) if _held_by(obj, r[0])]


def _named(ev, obj):
    tmpl = ((spec(obj).get("template") or {}).get("metadata")) or {}
    found = []
    for system, (where, key), kind, _group in sq.SOURCES:
        for src, what in ((labels(obj), "label"), (annotations(obj), "annotation"),
                          (tmpl.get("labels") or {}, "label"), (tmpl.get("annotations") or {}, "annotation")):
            if what == where and src.get(key):
                found.append((system, kind, src[key], f"{where} {key}={src[key]}"))
                break
    group = annotations(obj).get(sq.PODGROUP_ANNOTATION)
    pg = _find(ev, "PodGroup", sq.VOLCANO_GROUP, group, namespace(obj)) if group else None
    if pg and spec(pg).get("queue") and not any(f[0] == "volcano" for f in found):
        found.append(("volcano", "Queue", spec(pg)["queue"], f"PodGroup {group} spec.queue={spec(pg)['queue']}"))
    if obj.get("apiVersion", "").startswith("batch.volcano.sh") and spec(obj).get("queue"):
        found.append(("volcano", "Queue", spec(obj)["queue"], f"spec.queue={spec(obj)['queue']}"))
    return found


def _find(ev, kind, group, obj_name, ns=None):
    for o in ev.all(kind):
        if name(o) == obj_name and (ns is None or namespace(o) in (None, "", ns)) \
                and (o.get("apiVersion") or group).startswith(group):
            return o
    return None


@rule("scheduler-queue-invalid", phase="scheduling", severity="critical", rank=SPECIFIC + 15,
      targets=("Pod", "Workload"), applies=_applies,
      title="The batch-scheduler queue the pod is submitted to is missing, not a leaf, or closed",
      remediation="Point the pod template at a queue that exists, is a leaf and is open (the $where), or create / "
                  "open queue $queue; the batch scheduler admits nothing from it until then, whatever capacity is free.",
      snippet="kubectl get $queuekind $queue -o yaml")
def scheduler_queue_invalid(ev):
    """The Kueue LocalQueue/ClusterQueue, Volcano Queue or KAI Queue the pod (or its workload) names does not
    exist, has child queues (not a leaf), or is closed/stopped/inactive; or the scheduler's own words say so."""
    obj = ev.pod if ev.target.kind == "Pod" else ev.get(ev.target.kind, ev.target.name, ev.target.namespace)
    said = _said(ev, obj)
    unknown = None
    for system, kind, queue, where in _refs(ev, obj):
        res = _judge(ev, system, kind, queue, namespace(obj))
        if isinstance(res, Unknown) and said:
            res = (f"{kind} {queue}: the scheduler says it {said[0]}", [])
        if isinstance(res, Unknown):
            unknown = unknown or res
            continue
        if res:
            what, lines = res
            lines = [Line("spec", "metadata", where)] + lines + ([said[1]] if said else [])
            return Hit(f"{what}; the {system} scheduler admits nothing from it, so the pod stays Pending whatever "
                       f"capacity is free.", lines, values={"queue": queue, "queuekind": kind.lower(), "where": where},
                       summary=f"{kind} {queue} {_short(what)}")
    if said:
        return Hit(f"The batch scheduler says the pod's queue {said[0]}.", [said[1]],
                   values={"queue": "?", "queuekind": "queue", "where": "queue label"})
    return unknown


def _short(what):
    return what.split(": ", 1)[-1] if ": " in what else what


def _judge(ev, system, kind, queue, ns):
    """(what is wrong, lines), None when the queue is fine, or Unknown when it could not be read."""
    group = next(g for s, _, k, g in sq.SOURCES if s == system)
    q = _find(ev, kind, group, queue, ns if kind == "LocalQueue" else None)
    src = source_of(kind)
    if q is None:
        if (ev.readable(src) and _installed(ev, group)) or _listed(ev, kind, group):
            scope = f" in namespace {ns}" if kind == "LocalQueue" else ""
            return f"{kind} {queue}: does not exist{scope}", [Line("object", src, f"{queue} not found")]
        if ev.readable(src):   # read, and the system is not installed: no queue of it to judge
            return None
        return Unknown.from_gap(ev.gap(src))
    ref = f"{src}/{queue}"
    if system == "kueue":
        bad = _kueue_stopped(q, kind, queue)
        if bad or kind != "LocalQueue":
            return bad
        cq = spec(q).get("clusterQueue")
        return _judge(ev, system, "ClusterQueue", cq, ns) if cq else None
    state = status(q).get("state") or ""
    if system == "volcano" and state in ("Closed", "Closing"):
        return f"{kind} {queue}: is {state} (status.state)", [Line("object", ref, f"status.state: {state}")]
    parent_key = "parent" if system == "volcano" else "parentQueue"
    children = [name(o) for o in ev.all(kind) if spec(o).get(parent_key) == queue
                and (o.get("apiVersion") or group).startswith(group)]
    if children:
        return (f"{kind} {queue}: is not a leaf queue (child queues {', '.join(children[:3])}); jobs must name a leaf",
                [Line("object", ref, f"children: {', '.join(children[:5])}")])
    return None


def _listed(ev, kind, group):
    """Other queues of that scheduler are in the input: the queues were listed (a saved dump that holds none of them
    says nothing about them, since the batch scheduler's objects are not part of a plain snapshot)."""
    return any((o.get("apiVersion") or "").startswith(group) for o in ev.all(kind))


def _installed(ev, group):
    """Some object of that queueing system was read (a queue of any kind, a Kueue Workload, a PodGroup). A list
    answered 404 because the scheduler's API is not served reads as empty, and a queue cannot be "missing" from a
    scheduler that is not installed: a pod it would hold is then held by its gate alone (scheduling-gated)."""
    return any((o.get("apiVersion") or "").startswith(group) for kind in sq.KINDS for o in ev.all(kind))


def _kueue_stopped(q, kind, queue):
    ref = f"{source_of(kind)}/{queue}"
    stop = spec(q).get("stopPolicy")
    if stop in ("Hold", "HoldAndDrain"):
        return f"{kind} {queue}: is stopped (spec.stopPolicy: {stop})", [Line("object", ref, f"stopPolicy: {stop}")]
    cond = condition(q, "Active")
    if cond and cond.get("status") == "False":
        why = (cond.get("message") or cond.get("reason") or "").strip()
        return f"{kind} {queue}: is inactive ({why})", [Line("object", f"{ref}.status.conditions[Active]", why)]
    return None


def _said(ev, obj):
    """(what the words say, line): the batch scheduler's own words about the queue (pod or workload condition,
    events, Kueue Workload and Volcano PodGroup conditions), or None."""
    texts = []
    for c in status(obj).get("conditions") or []:
        if c.get("status") == "False" and c.get("message"):
            texts.append((c["message"], Line("status", f"conditions[{c.get('type')}]", c["message"])))
    texts += [((e.get("message") or ""), event_line(e)) for e in ev.events_for(obj)]
    uid = (obj.get("metadata") or {}).get("uid")
    group = annotations(obj).get(sq.PODGROUP_ANNOTATION)
    for kind in ("Workload", "PodGroup"):
        for o in ev.all(kind):
            owners = [r.get("uid") for r in (o.get("metadata") or {}).get("ownerReferences") or []]
            if (uid and uid in owners) or (kind == "PodGroup" and name(o) == group and namespace(o) == namespace(obj)):
                texts += [(c.get("message") or "", Line("object", f"{source_of(kind)}/{name(o)}.status.conditions"
                                                                  f"[{c.get('type')}]", c.get("message") or ""))
                          for c in status(o).get("conditions") or [] if c.get("message")]
                texts += [((e.get("message") or ""), event_line(e)) for e in ev.events_for(o)]
    for text, line in reversed(texts):
        for what, pattern in sq.WORDS:
            if re.search(pattern, text, re.I):
                return {"missing": "does not exist", "inactive": "is inactive", "closed": "is closed",
                        "not-leaf": "is not a leaf queue"}[what] + f" ({text.strip()[:200]})", line
    return None
