"""Helpers shared by the creation rules: the kubelet's order of work as ranks, and where a signature was seen.

Ranks follow the kubelet's order of work for a pod (admission, volumes, sandbox, then per container: image,
config, create, start): when several steps report failures, the earliest one is what blocks the pod.
"""
from __future__ import annotations

import re
from typing import List, Optional

from ...data import event_signatures as sigs
from ...kube import podstate
from ...record import field, record
from .._common import current, event_line, pod_events, status_line
from ..registry import SPECIFIC, Line, Unknown

ADMISSION, VOLUMES, SANDBOX, IMAGE, CONFIG, CREATE, START = (SPECIFIC + n for n in (14, 12, 10, 8, 6, 4, 2))


@record
class Found:
    """Where a signature was seen: the signature, its match, the evidence lines and the container (if any)."""
    sig: sigs.EventSignature
    match: re.Match
    lines: List[Line] = field(default_factory=list)
    container: Optional[str] = None

    def group(self, *names: str) -> str:
        return next((self.match.group(n) for n in names if self.match.groupdict().get(n)), "")


def find(ev, rule_id: str, reasons=()) -> Optional[Found]:
    """The freshest sign of a rule's signatures: a stuck container's status message, else a current Warning event."""
    for c, cs, _ in podstate.creation_blocked(ev.pod):
        for fld, rec in (("state", podstate.waiting(cs)),
                         ("state" if podstate.terminated(cs) else "lastState", podstate.latest_termination(cs))):
            hit = sigs.search(rec.get("message") or "", rule_id)
            if hit:
                return Found(hit[0], hit[1], [excerpt_line(c["name"], fld, rec, hit[1])], c["name"])
    if reasons and set(reasons) & set(sigs.CREATION_REASONS):
        reasons = tuple(reasons) + sigs.CREATION_REASONS   # a failure inside creation, whichever step reported it
    warnings = [e for e in pod_events(ev, reasons) if e.get("type") == "Warning"]
    for e in reversed(current(ev, warnings)):
        hit = sigs.search(e.get("message") or "", rule_id)
        if hit:
            path = (e.get("involvedObject") or e.get("regarding") or {}).get("fieldPath") or ""
            m = re.search(r"\{(.+)\}", path)
            return Found(hit[0], hit[1], [event_line(e)], m.group(1) if m else None)
    return None


def events_unknown(ev) -> Optional[Unknown]:
    """Nothing found while the pod is stuck: unknown if the events could not be read (a gap is not 'no events')."""
    return Unknown.from_gap(ev.gap("events")) if ev.gap("events") else None


def excerpt_line(container: str, fld: str, rec: dict, m: re.Match) -> Line:
    """A status line whose message keeps the part that matched (runtime errors put the cause at the end)."""
    msg = (rec.get("message") or "").strip()
    if len(msg) > 300 and m.start() > 150:
        rec = dict(rec, message="…" + msg[max(0, m.start() - 120):m.end() + 120])
    return status_line(container, fld, rec)


def node_runtime(ev) -> str:
    return ((ev.node or {}).get("status") or {}).get("nodeInfo", {}).get("containerRuntimeVersion", "")
