"""Evidence helpers for probe kills: the kubelet's probe budget, the start time a container needs (ready lines,
progress bars, the killed run's length) and a startupProbe sized from it. Pure; no I/O."""
from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Optional

from ...logs import scan as logscan
from ...data.server_start import LOADING, LOG_TIME, PROGRESS, READY
from ...evidence import event_count
from ...kube.timeutil import human_duration, parse_time, seconds_between
from ._files import _indent
from ... import lazyre

_READY = tuple(lazyre.compile(p) for p in READY)
_LOADING = tuple(lazyre.compile(p) for p in LOADING)
_TIMES = tuple(lazyre.compile(p) for p in LOG_TIME)


def served(text: str) -> bool:
    """The log shows the server reached serving (a ready line or a served request)."""
    return any(rx.search(text) for rx in _READY)


def loading(line: str) -> bool:
    """The line is start-up progress: loading weights, downloading, compiling, capturing CUDA graphs."""
    return any(rx.search(line) for rx in _LOADING)


def _budget(p) -> int:
    return int(p.get("initialDelaySeconds") or 0) + int(p.get("failureThreshold") or 3) * int(p.get("periodSeconds") or 10)


def _probe_words(kind, p) -> str:
    delay = f"{p.get('initialDelaySeconds')}s + " if p.get("initialDelaySeconds") else ""
    return f"the {kind} ({delay}{p.get('failureThreshold') or 3} × {p.get('periodSeconds') or 10}s)"


def probe_budget(c):
    """(seconds before the kubelet gives up on a starting container, words, the probe whose handler to reuse)."""
    if c.get("startupProbe"):
        return _budget(c["startupProbe"]), _probe_words("startupProbe", c["startupProbe"]), c["startupProbe"]
    if c.get("livenessProbe"):
        return (_budget(c["livenessProbe"]), _probe_words("livenessProbe", c["livenessProbe"]) + " with no startupProbe",
                c["livenessProbe"])
    return 0, "", None


def _line_time(line: str, year: int) -> Optional[datetime]:
    for rx in _TIMES:
        m = rx.search(line)
        if m:
            g = m.groupdict()
            try:
                return datetime(int(g.get("y") or year), int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]),
                                int(g["s"]), tzinfo=timezone.utc)
            except ValueError:
                return None
    return None


def ready_after(text: str, started) -> Optional[float]:
    """Seconds from the run's start to its first ready line, from the nearest timestamped line at or before it."""
    start = parse_time(started)
    if not text or start is None:
        return None
    lines = logscan.clean(text).split("\n")
    i = next((n for n, l in enumerate(lines) if any(rx.search(l) for rx in _READY)), None)
    for j in range(i if i is not None else -1, max(-1, (i or 0) - 30), -1):
        t = _line_time(lines[j], start.year)
        if t:
            d = (t - start).total_seconds()
            return d if 0 <= d <= 6 * 3600 else None
    return None


def _seconds(clock: str) -> int:
    parts = [int(x) for x in clock.split(":")]
    return sum(v * 60 ** i for i, v in enumerate(reversed(parts)))


def _progress_left(text: str):
    """(seconds left, how far) from the last progress line of a log, or (None, "")."""
    best = None
    for n, line in enumerate(logscan.clean(text).split("\n")):
        for rx in PROGRESS:
            m = re.search(rx, line)
            if m:
                best = m
    if not best:
        return None, ""
    g = best.groupdict()
    done = f"{g['pct']}% done" if g.get("pct") else f"{g['done']} of {g['total']} files downloaded"
    return _seconds(g["left"]), done


def observed_start(ev, c, cs, term, text):
    """(seconds, how we know, exact): the longest of a ready line's time in any run and the killed run's length
    plus what its last progress line said was left (exact False when only the killed run's length is known)."""
    runs = [(ev.log(ev.pod, c["name"], False), ((cs.get("state") or {}).get("running") or {}).get("startedAt")),
            (ev.log(ev.pod, c["name"], True), ((cs.get("lastState") or {}).get("terminated") or {}).get("startedAt"))]
    ready = max([t for t in (ready_after(x, s) for x, s in runs) if t is not None], default=None)
    ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
    left, done = _progress_left(text)
    killed = ran + left if ran is not None and left is not None else ran
    parts = []
    if ready is not None:
        parts.append(f"a run that got ready did so {human_duration(ready)} after start")
    if ran is not None:
        parts.append(f"the killed run was still loading after {human_duration(ran)}"
                     + (f" with {done} and about {human_duration(left)} to go" if left is not None else ""))
    best = max([x for x in (ready, killed) if x is not None], default=None)
    if best is None:
        return None, "", False
    exact = left is not None or (ready is not None and ready >= (killed or 0))
    return best, ("about " if exact else "more than ") + human_duration(best) + " (" + "; ".join(parts) + ")", exact


# The longest start-up budget a fix proposes: a start longer than this (a download of hundreds of GB) belongs in an
# init container or on a pre-loaded volume, not behind a probe that lets a hung server sit unkilled for hours.
MAX_STARTUP_S = 2 * 3600


def startup_snippet(c, probe, observed: float):
    period = int(probe.get("periodSeconds") or 10)
    wanted = max(1, math.ceil(observed * 1.5 / period))
    threshold = min(wanted, max(1, MAX_STARTUP_S // period))
    handler = {k: v for k, v in probe.items() if k in ("httpGet", "tcpSocket", "grpc", "exec")}
    import yaml   # only for this snippet: a pod diagnosis does not load PyYAML otherwise
    body = _indent(yaml.safe_dump(handler, sort_keys=False, default_flow_style=False), 2)
    old = c.get("startupProbe") or {}
    was = (f"; was {int(old.get('failureThreshold') or 3)} × {int(old.get('periodSeconds') or 10)}s = {_budget(old)}s"
           if old else "")
    why = (f"≥ 1.5 × the observed {human_duration(observed)}" if threshold == wanted else
           f"capped at {human_duration(MAX_STARTUP_S)}: a start of {human_duration(observed)} belongs in an init "
           f"container or on a pre-loaded volume")
    return (f"# container {c['name']}: liveness and readiness probes start only after the startup probe succeeds\n"
            f"startupProbe:\n{body}  periodSeconds: {period}\n  failureThreshold: {threshold}   "
            f"# {threshold} × {period}s = {threshold * period}s {why}{was}"), threshold


def container_events(ev, name_: str, reason: str, pattern: str) -> list:
    """The pod's events of one reason whose message matches, about this container (fieldPath) when they say."""
    rx = re.compile(pattern)
    out = []
    for e in ev.events_for(ev.pod):
        field = (e.get("involvedObject") or e.get("regarding") or {}).get("fieldPath") or ""
        if e.get("reason") == reason and rx.search(e.get("message") or "") and (not field or f"{{{name_}}}" in field):
            out.append(e)
    return out


def kill_count(kills) -> str:
    n = sum(event_count(e) for e in kills)
    return "once" if n == 1 else f"{n} times"
