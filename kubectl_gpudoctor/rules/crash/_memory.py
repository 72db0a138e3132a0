"""Evidence helpers for memory sizing after an OOM kill: the kill's own figure (the kernel's OOM line, as
node-problem-detector reports it on the node) and, when no peak is known, how to measure one. Pure; no I/O.

An OOM kill happens at the limit, so a limit kill never shows the peak the container wanted: only a measured run
with room does. A constant factor on the limit is a guess that hides this; the snippet says how to measure."""
from __future__ import annotations

import math
import re
from typing import Optional

from ...data.signals import CHILD_SIGKILL, KERNEL_OOM_KILL, KERNEL_OOM_REASONS
from ...evidence import Line
from ...kube.quantity import format_bytes, parse_quantity
from ...kube.timeutil import human_duration, seconds_between

GI = 2 ** 30
# Headroom over an observed peak: allocator jitter and a larger request now and then.
HEADROOM = 1.25
# The kernel log line and the container's termination are the same moment, seen by two readers.
KILL_MATCH_S = 90
MEASURE = "<measured peak + 25%>"


def _kernel_kills(ev, term):
    """(seconds off the termination, event, match) of the kernel's OOM kills on the pod's node within KILL_MATCH_S."""
    node = ((ev.pod or {}).get("spec") or {}).get("nodeName")
    for e in ev.events_for({"kind": "Node", "metadata": {"name": node}}) if node else ():
        m = re.search(KERNEL_OOM_KILL, e.get("message") or "")
        gap = seconds_between(term.get("finishedAt"), e.get("lastTimestamp") or e.get("eventTime"))
        if e.get("reason") in KERNEL_OOM_REASONS and m and gap is not None and abs(gap) <= KILL_MATCH_S:
            yield abs(gap), e, m


def _seen(ev, e, m) -> tuple:
    rss = sum(int(m.group(k) or 0) for k in ("anon", "file", "shmem")) * 1024
    line = Line("event", f"node/{ev.pod['spec']['nodeName']} {e.get('reason')} {e.get('lastTimestamp') or ''}".strip(),
                (e.get("message") or "")[:300])
    return line, rss, m.group("comm"), (m.group("scope") or "") == "Out of memory"


def oom_line(ev, term) -> Optional[tuple]:
    """(Line, resident bytes, process name, node-wide) of the kernel's OOM kill nearest the termination on the
    pod's node, or None (no node-problem-detector event was read)."""
    best = min(_kernel_kills(ev, term), key=lambda k: k[0], default=None)
    return _seen(ev, best[1], best[2]) if best else None


def child_kill(text: str) -> Optional[tuple]:
    """(line, pid, what the child is, its kernel names) of the last child-SIGKILL line of a run's log, or None."""
    found = None
    for line in (text or "").split("\n"):
        for pattern, what, comms in CHILD_SIGKILL:
            m = re.search(pattern, line)
            if m:
                found = (line.strip(), m.group("pid"), what, comms)
    return found


def child_oom(ev, term, text: str) -> Optional[tuple]:
    """(log line, child words, (Line, resident bytes, process name, node-wide)) when the run's log says a child was
    SIGKILLed and the kernel's OOM kill on the node at that moment names that child: its pid (one pid namespace) or
    the name the kernel gives such a child. A kill of another process at the same time proves nothing: None."""
    child = child_kill(text)
    if not child:
        return None
    line, pid, what, comms = child
    named = [k for k in _kernel_kills(ev, term) if k[2].group("pid") == pid or k[2].group("comm") in comms]
    best = min(named, key=lambda k: k[0], default=None)
    return (line, f"its {what} (pid {pid})", _seen(ev, best[1], best[2])) if best else None


def _allocatable(ev):
    node = ev.node if ev.node is not None else {}
    return parse_quantity(((node.get("status") or {}).get("allocatable") or {}).get("memory"))


def _size(n: float) -> str:
    """A resident set as a person reads it: 26.2Gi, 3.1Gi, 640Mi."""
    return f"{n / GI:.1f}".rstrip("0").rstrip(".") + "Gi" if n >= GI else f"{max(1, round(n / 2 ** 20))}Mi"


def _gib(n: float) -> str:
    return f"{max(1, math.ceil(n / GI))}Gi"


def sizing(ev, c, term, limit, grew, seen=None) -> tuple:
    """(suggested quantity, snippet comment, extra sentence, evidence Lines) for the memory snippet of an OOM kill
    (`seen`: the kernel's kill already matched to it, else the nearest in time)."""
    seen = seen or oom_line(ev, term)
    lim = parse_quantity(limit) if limit else None
    lines = [seen[0]] if seen else []
    if seen and not lim:
        _, rss, comm, _ = seen
        want, room = _gib(rss * HEADROOM), _allocatable(ev)
        fits = ("" if room is None or parse_quantity(want) <= room else
                f"\n# {want} is more than node {ev.pod['spec']['nodeName']} can give ({float(room) / GI:.1f}Gi "
                f"allocatable):\n# use a larger node, or hold less in host RAM")
        return (want, f"\n# the kernel killed {comm} holding {_size(rss)} when the node ran out;\n"
                f"# that is its observed peak: size it at that + 25%{fits}", "", lines)
    held = ""
    if seen and lim:
        _, rss, comm, _ = seen
        share = rss / float(lim)
        held = (f" The killed process ({comm}) held {_size(rss)} of the {format_bytes(limit)} limit"
                + (": other processes of the container (workers, tmpfs or /dev/shm pages) held the rest."
                   if share < 0.5 else "."))
    return MEASURE, measure_comment(ev, c, limit, grew), held, lines


def measure_comment(ev, c, limit, grew) -> str:
    """How to measure the peak the kill could not show, as snippet comments with the pod's names; `grew`: the seconds
    a run grew before its kill, past the start-up window (a leak or a cache outgrows any limit)."""
    pod, ns, name = ev.target.name, ev.target.namespace, c.get("name")
    if limit:
        head = f"# the peak is above {format_bytes(limit)}: the kill happens at the limit, so it was\n# never measured."
    else:
        head = "# no limit was set, so the node ran out: the container's own peak\n# was never measured."
    why = (f"\n# It grew for {human_duration(grew)}: a leak or an unbounded cache outgrows any limit; watch\n"
           f"# it grow over a day before raising it, and bound the cache if it keeps growing." if grew else "")
    return (f"\n{head}{why}\n# Measure it in one run with room, then set both to that peak + 25%:\n"
            f"#   kubectl exec {pod} -n {ns} -c {name} --\n"
            f"#     cat /sys/fs/cgroup/memory.peak   (cgroup v2, Linux 5.19+; cgroup v1:\n"
            f"#     /sys/fs/cgroup/memory/memory.max_usage_in_bytes), or in Prometheus\n"
            f"#   max_over_time(container_memory_working_set_bytes{{namespace=\"{ns}\",\n"
            f"#   container=\"{name}\"}}[1d])")


def init_oom_sizing(limit) -> tuple:
    """(suggested, comment) when the runtime's init was OOM-killed: a limit below what the runtime itself needs (a
    few MiB) is usually a unit slip (8Mi for 8Gi); say so, never a multiple of it."""
    q = parse_quantity(limit) if limit else None
    m = re.fullmatch(r"(\d+)(Mi|M)", str(limit or ""))
    if q is not None and q < 64 * 2 ** 20 and m:
        return (f"{m.group(1)}Gi", f"\n# {limit} cannot hold even the runtime's init process: {m.group(1)}Gi was "
                f"probably meant;\n# confirm it against the application's measured peak")
    return MEASURE, (f"\n# {format_bytes(limit) if limit else 'the limit'} cannot hold even the runtime's init process;"
                     f"\n# set it to the application's measured peak + 25%")
