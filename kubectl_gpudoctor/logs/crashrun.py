"""The run of a container that failed: its termination record, the log of that run, the failure region at the
end of that log, and the kubelet's probe kills during it. Pure functions over evidence; no I/O, no policy."""
from __future__ import annotations

import re
from datetime import timedelta
from functools import lru_cache
from typing import Iterator, List, Tuple

from . import scan as logscan
from .lines import fold
from ..kube import podstate
from ..data.signals import NATIVE_CRASH_LINE, PROBE_KILL
from ..data.log_regions import ELASTIC_REPORT, ERRORISH, LINE_PREFIX, NOT_FATAL, SUCCESS, TABLE, TRACEBACK, WRAPPER
from ..evidence import Evidence, Line
from ..kube.objects import is_terminated
from ..kube.timeutil import parse_time, seconds_between

# The kubelet resets a container's crash-loop back-off after 10 minutes of running: a crash older than that,
# followed by a Ready container, is history, not the current problem; so is one followed by an hour of running
# without becoming Ready (that is a readiness problem, not the old crash).
RECOVERED_AFTER_S, UNREADY_HISTORY_S = 600, 3600
_ERRORISH, _TRACEBACK, _SUCCESS, _NOT_FATAL, _WRAPPER, _PREFIX, _REPORT = (
    re.compile(p) for p in (ERRORISH, TRACEBACK, SUCCESS, NOT_FATAL, WRAPPER, LINE_PREFIX, ELASTIC_REPORT + "|" + TABLE))
_MAX_BLOCK, _MAX_GAP, _MAX_TRAILING = 150, 2, 15


def recent(ev: Evidence, cs: dict) -> bool:
    """The container's last termination still matters: it is waiting/terminated/not ready, or restarted < 10 min ago."""
    running = (cs.get("state") or {}).get("running")
    if running is None:
        return True
    up = seconds_between(running.get("startedAt"), ev.now())
    return up is None or up < (RECOVERED_AFTER_S if cs.get("ready") else UNREADY_HISTORY_S)


def stopped_sidecar(pod: dict, c: dict, init: bool) -> bool:
    """A native sidecar (an init container with restartPolicy: Always) of a finished pod: the kubelet stopped it when the
    main containers ended (SIGTERM, SIGKILL after the grace period), and its exit code does not count (KEP-753)."""
    return init and c.get("restartPolicy") == "Always" and is_terminated(pod)


def failures(ev: Evidence) -> Iterator[Tuple[dict, dict, dict, bool]]:
    """(container, status, termination record, is_init) for every container whose last run ended and still matters."""
    for c, cs, init in podstate.all_container_states(ev.pod):
        term = podstate.latest_termination(cs)
        if term and recent(ev, cs) and not stopped_sidecar(ev.pod, c, init):
            yield c, cs, term, init


def where(cs: dict, term: dict) -> str:
    return "state" if podstate.terminated(cs) is term else "lastState"


def run_log(ev: Evidence, name: str, cs: dict, term: dict) -> Tuple[str, bool]:
    """(text, previous) of the run that ended with `term`. While a container waits in back-off the kubelet
    serves that same run as its current log; once a new run is up, only `previous` belongs to it."""
    if podstate.terminated(cs) is term:
        order: tuple = (False, True)
    else:
        order = (True,) if (cs.get("state") or {}).get("running") is not None else (True, False)
    for previous in order:
        text = ev.log(ev.pod, name, previous)
        if text:
            return text, previous
    return "", order[0]


def log_ref(ev: Evidence, name: str, previous: bool, what: str) -> str:
    return f"{ev.target.name}/{name} {'previous ' if previous else ''}log, {what}"


def _is_failure_line(lines: List[str], i: int) -> bool:
    if _ERRORISH.search(lines[i]):
        return True
    line_views = logscan.views(lines, i)
    return any(logscan.search(rx, line_views) for _, rx in logscan.compiled())


def failure_block(text: str) -> List[Tuple[int, str]]:
    """[(lineno, line)] of the failure region (see _failure_block); every crash rule asks, so it is read once per log."""
    return list(_failure_block(text or ""))


@lru_cache(maxsize=32)
def _failure_block(text: str) -> Tuple[Tuple[int, str], ...]:
    """[(lineno, line)] of the failure region at the end of a log: the last error/traceback lines, reaching
    back over at most two ordinary lines (torchrun's per-rank failure report and text tables are not counted) and never past a line
    saying a connection or start succeeded.
    Empty when the log has no failure line near its end (the process was killed, or printed nothing)."""
    lines = logscan.clean(text or "").split("\n")
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    start, gap, seen = end, 0, False
    for i in range(end - 1, max(-1, end - 1 - _MAX_BLOCK), -1):
        line = lines[i]
        if not line.strip() or _REPORT.search(line):
            continue
        if _is_failure_line(lines, i) or (seen and _TRACEBACK.search(line)):
            start, gap, seen = i, 0, True
        elif _SUCCESS.search(line) or gap >= (_MAX_GAP if seen else _MAX_TRAILING):
            break
        else:
            gap += 1
    return tuple((n + 1, lines[n]) for n in range(start, end))


def block_matches(block: List[Tuple[int, str]], rule_id: str):
    """(Signature, lineno, line, re.Match) for a rule's signatures in a failure block, newest first. A retry
    notice counts only among the last three lines (the retries ran out), never before an unrelated crash."""
    tail = {n for n, _ in [x for x in block if x[1].strip()][-3:]}
    texts = [line for _, line in block]
    for idx in range(len(block) - 1, -1, -1):
        lineno, line = block[idx]
        if _NOT_FATAL.search(line) and lineno not in tail:
            continue
        line_views = logscan.views(texts, idx)
        for sig, rx in logscan.compiled(rule_id):
            m = logscan.search(rx, line_views)
            if m:
                yield sig, lineno, line, m


def match_run(ev: Evidence, c: dict, cs: dict, term: dict, rule_id: str, accept=None):
    """(evidence Line, re.Match) for the newest line of the rule's signatures in the failure region of the run
    that ended with `term` (and `accept(match, line)` when given), or None."""
    text, previous = run_log(ev, c["name"], cs, term)
    for _, lineno, line, m in block_matches(failure_block(text), rule_id):
        if accept is None or accept(m, line):
            return Line("log", log_ref(ev, c["name"], previous, f"line {lineno}"), line.strip()[:400]), m
    return None


def find(ev: Evidence, rule_id: str, nonzero: bool = True, accept=None):
    """(container, status, termination, is_init, evidence Line, re.Match) for the first container whose
    failed run ends with a line of the rule's signatures, or None."""
    for c, cs, term, init in failures(ev):
        if nonzero and term.get("exitCode", 0) == 0:
            continue
        found = match_run(ev, c, cs, term, rule_id, accept)
        if found:
            return (c, cs, term, init) + found
    return None


def status_match(cs: dict, rule_id: str):
    """(field, record, re.Match) when the runtime's message in the container status (StartError,
    RunContainerError, CreateContainerError, ContainerCannotRun) carries one of the rule's signatures."""
    for field, record in (("lastState", podstate.last_terminated(cs)), ("state", podstate.terminated(cs)),
                          ("state", podstate.waiting(cs))):
        message = fold(record.get("message") or "")
        for _, rx in logscan.compiled(rule_id):
            m = rx.search(message)
            if m:
                return field, record, m
    return None


def not_wrapper(_, line: str) -> bool:
    """For find(accept=): the line is not an exception that only wraps a root cause printed above it."""
    return not _WRAPPER.search(line)


def unprefixed(text: str) -> str:
    """A log line without its timestamp, process and logger prefixes."""
    return _PREFIX.sub("", text, count=1).strip() or text


def tail_match(ev: Evidence, rule_id: str, lines: int = 40):
    """Like find(), for a failed run whose log has no failure region: the newest line of the rule's signatures
    among the last `lines` lines (retry notices excluded)."""
    for c, cs, term, init in failures(ev):
        if term.get("exitCode", 0) == 0:
            continue
        text, previous = run_log(ev, c["name"], cs, term)
        all_lines = logscan.clean(text).split("\n")
        for n in range(len(all_lines) - 1, max(-1, len(all_lines) - 1 - lines), -1):
            if _NOT_FATAL.search(all_lines[n]):
                continue
            line_views = logscan.views(all_lines, n)
            for _, rx in logscan.compiled(rule_id):
                m = logscan.search(rx, line_views)
                if m:
                    ref = log_ref(ev, c["name"], previous, f"line {n + 1}")
                    return c, cs, term, init, Line("log", ref, all_lines[n].strip()[:400]), m
    return None


def last_lines(text: str, n: int = 3) -> List[str]:
    return [l.strip() for l in logscan.clean(text or "").split("\n") if l.strip()][-n:]


def native_crash_lines(text: str, n: int = 3) -> List[str]:
    """The lines where a native crash announces itself near the end of a log (with the crashing Python frame
    after faulthandler's "Current thread"), else the last lines."""
    lines = last_lines(text, 60)
    rx = re.compile(NATIVE_CRASH_LINE)
    first = next((i for i, l in enumerate(lines) if rx.search(l)), None)
    if first is None:
        return lines[-n:]
    out = [lines[first]]
    current = next((i for i in range(first + 1, len(lines)) if lines[i].startswith("Current thread")), None)
    rest = lines[current + 1:] if current is not None else lines[first + 1:]
    return out + rest[: n - 1]


def probe_kills(ev: Evidence, name: str, term: dict) -> List[dict]:
    """The kubelet's `Killing` events for failed liveness/startup probes of this container during this run."""
    started = parse_time(term.get("startedAt"))
    rx = re.compile(PROBE_KILL)
    out = []
    for e in ev.events_for(ev.pod) if ev.pod else []:
        if e.get("reason") != "Killing" or not rx.search(e.get("message") or ""):
            continue
        field = (e.get("involvedObject") or e.get("regarding") or {}).get("fieldPath") or ""
        if f"{{{name}}}" not in field and not re.search(rf"\b{re.escape(name)}\b", e.get("message") or ""):
            continue
        t = parse_time(e.get("lastTimestamp") or (e.get("series") or {}).get("lastObservedTime") or e.get("eventTime"))
        if started is None or t is None or t >= started - timedelta(seconds=5):
            out.append(e)
    return out


def before_shutdown(text: str) -> str:
    """The log up to the first line a stop signal made the process print (data/signals.py SHUTDOWN_NOISE): what a
    killed run was doing, without the shutdown traceback the kill itself caused."""
    from ..data.signals import SHUTDOWN_NOISE
    lines = (text or "").split("\n")
    rx = re.compile(SHUTDOWN_NOISE)
    cut = next((i for i, line in enumerate(lines) if rx.search(line)), None)
    return text if cut is None else "\n".join(lines[:cut])
