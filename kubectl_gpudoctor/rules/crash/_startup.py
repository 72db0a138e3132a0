"""Evidence helpers for probe kills: the kubelet's probe budget, the start time a container needs (ready lines,
progress bars, the killed run's length) and a startupProbe sized from it. Pure; no I/O."""
from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Optional

from ...logs import scan as logscan
from ...logs.crashrun import RECOVERED_AFTER_S, failures, stopped_sidecar
from ...kube import podstate
from ...kube.objects import condition
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


# --- a kill after the container had started: liveness, not start-up ---------------------------------------------

# A non-OOM kill stays news for an hour after it, even once the container is Running and Ready again: the user who
# saw a restart count move asks about it, and a kill that came under load comes back under the same load. Older
# kills of a container that is Ready again are history (not reported; an OOM kill has its own, longer window).
KILL_NEWS_S = 3600
# A crash loop can be caught in a Ready moment: this many restarts, each run shorter than the kubelet's back-off
# reset, is still the loop (the rule's own severity), not a kill the container came back from.
LOOP_RESTARTS = 3
# A slow crash loop: the kubelet resets a container's back-off once it has run 10 minutes (RECOVERED_AFTER_S), so a
# container that crashes after longer runs is restarted within 10 s every time, is Ready between crashes and never
# shows CrashLoopBackOff. Only restartCount keeps the count (every restart of the pod's life; the lastState and the
# pod's events, kept an hour, show the last one only). LOOP_RESTARTS restarts or more at one every SLOW_LOOP_EVERY_S
# or oftener on average since the pod started, the last one a recent non-zero exit, is a failing pod even when Ready
# at this instant: it will be down again within hours (a dozen outages a day or more, each dropping its work).
SLOW_LOOP_EVERY_S = 2 * 3600


def _num(p, key, default) -> int:
    try:
        return int(p.get(key) if p.get(key) is not None else default)
    except (TypeError, ValueError):
        return default


def probe_numbers(p):
    """(initialDelaySeconds, timeoutSeconds, periodSeconds, failureThreshold) with the API's defaults (0, 1, 10, 3)."""
    return (_num(p, "initialDelaySeconds", 0), _num(p, "timeoutSeconds", 1), _num(p, "periodSeconds", 10),
            _num(p, "failureThreshold", 3))


def probe_handler(p) -> str:
    """What the probe checks, as a user reads it: `GET /health on port 8000`, `TCP :8000`, `gRPC :9000`, `exec …`."""
    if isinstance(p.get("httpGet"), dict):
        h = p["httpGet"]
        scheme = "" if str(h.get("scheme") or "HTTP").upper() == "HTTP" else " (HTTPS)"
        return f"GET {h.get('path') or '/'} on port {h.get('port')}{scheme}"
    if isinstance(p.get("tcpSocket"), dict):
        return f"TCP :{p['tcpSocket'].get('port')}"
    if isinstance(p.get("grpc"), dict):
        return f"gRPC :{p['grpc'].get('port')}"
    cmd = (p.get("exec") or {}).get("command") if isinstance(p.get("exec"), dict) else None
    return ("exec " + " ".join(str(x) for x in cmd))[:120] if isinstance(cmd, list) and cmd else "its handler"


def never_answering_s(pod, c) -> int:
    """The longest a container whose probes never pass can run: the startupProbe's budget, then the livenessProbe's
    (a probe that times out holds its worker for timeoutSeconds, so each try takes the longer of period and timeout),
    one period of jitter each, and the grace period the kill waits before SIGKILL."""
    total = _num((pod.get("spec") or {}), "terminationGracePeriodSeconds", 30)
    for key in ("startupProbe", "livenessProbe"):
        p = c.get(key)
        if isinstance(p, dict):
            delay, timeout, period, threshold = probe_numbers(p)
            total += delay + (threshold + 1) * max(period, timeout)
    return total


def ready_during(pod, term):
    """The time the pod's Ready condition turned False inside the killed run, or None. A container is not ready when
    it (re)starts, so a transition to False after its run began means the pod had been Ready during that run."""
    cond = condition(pod, "Ready") or {}
    at = cond.get("lastTransitionTime")
    after = seconds_between(term.get("startedAt"), at)
    before = seconds_between(at, term.get("finishedAt"))
    if cond.get("status") == "False" and after is not None and before is not None and after >= 10 and before >= -30:
        return at
    return None


def started_before_kill(pod, c, term, text: str) -> str:
    """How we know the killed run had started (words), or "": its log shows it serving; or it outlived what probes that
    never pass allow and the pod was Ready during it; or it ran more than twice that (the probes had passed before
    they failed). A run killed within that window may be a slow start, whatever a condition's timestamp says."""
    if text and served(text):
        return "its log shows it serving"
    ran, limit = seconds_between(term.get("startedAt"), term.get("finishedAt")), never_answering_s(pod, c)
    if ran is None or ran <= limit:
        return ""
    at = ready_during(pod, term)
    if at:
        return f"the pod was Ready during that run, until {at}"
    if ran > 2 * limit:
        return (f"it ran {human_duration(ran)}, far past the {human_duration(limit)} its probes allow a container "
                f"that never answers, so they had passed before they failed")
    return ""


def ready_again(cs) -> bool:
    return (cs.get("state") or {}).get("running") is not None and cs.get("ready") is True


def recent_kills(ev):
    """(container, status, termination, is_init) of failures(ev), then of each container Running and Ready again
    whose last run ended non-zero (not OOMKilled: oom-killed has its own window) less than KILL_NEWS_S ago."""
    seen = set()
    for c, cs, term, init in failures(ev):
        seen.add((init, c.get("name")))
        yield c, cs, term, init
    for c, cs, init in podstate.all_container_states(ev.pod):
        term = podstate.last_terminated(cs)
        if (init, c.get("name")) in seen or not term or stopped_sidecar(ev.pod, c, init) or not ready_again(cs):
            continue
        age = seconds_between(term.get("finishedAt"), ev.now())
        if term.get("exitCode") not in (None, 0) and term.get("reason") != "OOMKilled" and age is not None \
                and 0 <= age <= KILL_NEWS_S:
            yield c, cs, term, init


def slow_loop(ev, cs, term) -> str:
    """Words for a slow crash loop (see SLOW_LOOP_EVERY_S): `3 restarts in 4h (one every 1h20m)`, or ""."""
    if ev is None or ev.pod is None or term.get("exitCode") in (None, 0) or term.get("reason") == "OOMKilled":
        return ""
    restarts = int(cs.get("restartCount") or 0)
    status_ = ev.pod.get("status") or {}
    life = seconds_between(status_.get("startTime") or (ev.pod.get("metadata") or {}).get("creationTimestamp"), ev.now())
    if restarts < LOOP_RESTARTS or life is None or life <= 0 or life / restarts > SLOW_LOOP_EVERY_S:
        return ""
    return f"{restarts} restarts in {human_duration(life)} (one every {human_duration(life / restarts)} on average)"


def kill_severity(cs, term, ev=None):
    """"warning" for a kill the container came back from (Running and Ready again), unless it is a crash loop caught
    in a Ready moment (LOOP_RESTARTS restarts, the killed run shorter than the back-off reset) or a slow crash loop
    (slow_loop: as many restarts at one every SLOW_LOOP_EVERY_S or oftener); else None."""
    if not ready_again(cs):
        return None
    ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
    if int(cs.get("restartCount") or 0) >= LOOP_RESTARTS and (ran is None or ran < RECOVERED_AFTER_S):
        return None
    if slow_loop(ev, cs, term):
        return None
    return "warning"


def loop_words(ev, cs, term) -> str:
    """The sentence a slow crash loop adds to a kill's message, or ""."""
    said = slow_loop(ev, cs, term) if ready_again(cs) else ""
    return (f" It is Ready now, between crashes: {said}, the last exit a crash. The kubelet resets its back-off "
            f"after 10 minutes of running, so a container that crashes later than that restarts within seconds "
            f"and never shows CrashLoopBackOff: a slow crash loop, not a recovery." if said else "")


def back_words(ev, cs) -> str:
    up = seconds_between(((cs.get("state") or {}).get("running") or {}).get("startedAt"), ev.now())
    return f" It has been Running and Ready again for {human_duration(up)}: one to watch, not an outage now."


def run_events(ev, name_: str, pattern: str, term) -> list:
    """The container's Unhealthy events matching `pattern` whose span overlaps the run that ended with `term`."""
    start, end = term.get("startedAt"), term.get("finishedAt")
    out = []
    for e in container_events(ev, name_, "Unhealthy", pattern):
        first = e.get("firstTimestamp") or e.get("eventTime") or e.get("lastTimestamp")
        last = e.get("lastTimestamp") or (e.get("series") or {}).get("lastObservedTime") or first
        a, b = seconds_between(start, last), seconds_between(first, end)
        if (a is None or a >= -5) and (b is None or b >= -5):
            out.append(e)
    return out


def failure_span(events) -> str:
    """`over 2d1h` from the first failure to the last of aggregated events, or ""."""
    firsts = [t for t in (parse_time(e.get("firstTimestamp") or e.get("lastTimestamp")) for e in events) if t]
    lasts = [t for t in (parse_time(e.get("lastTimestamp") or e.get("firstTimestamp")) for e in events) if t]
    span = (max(lasts) - min(firsts)).total_seconds() if firsts and lasts else None
    return f" over {human_duration(span)}" if span else ""


# A timeout this long is already generous: an endpoint that cannot answer within it is stalled, not slow.
GENEROUS_TIMEOUT_S = 30


def liveness_fix(c, p, failures_: int):
    """(fix, snippet) for a liveness probe whose failures were timeouts: the same handler with room for a slow answer.
    timeoutSeconds doubles (at least 5 s, at most GENEROUS_TIMEOUT_S); failureThreshold doubles, covers at least a
    minute of failures and the failures seen in the run up to three times the old threshold (an endpoint that failed
    now and then was slow under load, not dead). Each try takes the longer of period and timeout."""
    _, timeout, period, threshold = probe_numbers(p)
    new_timeout = timeout if timeout >= GENEROUS_TIMEOUT_S else min(GENEROUS_TIMEOUT_S, max(5, 2 * timeout))
    step = max(period, new_timeout)
    new_threshold = max(2 * threshold, math.ceil(60 / step), min(failures_, 3 * threshold))
    handler = {k: v for k, v in p.items() if k in ("httpGet", "tcpSocket", "grpc", "exec")}
    import yaml   # only for this snippet
    body = _indent(yaml.safe_dump(handler, sort_keys=False, default_flow_style=False), 2)
    kept = new_timeout == timeout
    snippet = (f"# container {c['name']}: the same check, with room for a slow answer under load (not a startupProbe)\n"
               f"livenessProbe:\n{body}  periodSeconds: {period}\n"
               f"  timeoutSeconds: {new_timeout}   # " + ("kept: already generous\n" if kept else
                                                      f"was {timeout}: the failures were timeouts\n") +
               f"  failureThreshold: {new_threshold}   # was {threshold}: {new_threshold} × {step}s = "
               f"{human_duration(new_threshold * step)} of failures before a restart")
    where = probe_handler(p)
    first = (f"timeoutSeconds {timeout} is already generous: an endpoint that cannot answer in {timeout}s is stalled, so "
             f"check CPU throttling (the container's cpu limit) and the server's request threads first. To ride out "
             f"such stalls, raise failureThreshold {threshold} → {new_threshold}" if kept else
             f"If it answers, only slowly, give the livenessProbe room: timeoutSeconds {timeout} → {new_timeout}, "
             f"failureThreshold {threshold} → {new_threshold}")
    timing = ("run it in the container while the server is busy: kubectl exec with `time` before the command"
              if isinstance(p.get("exec"), dict) else
              "time it while the server is busy: curl -w '%{time_total}' from a pod in the cluster, or the server's "
              "latency metrics")
    fix = (f"Check {where} of container {c['name']} under load ({timing}). {first}; better, point the "
           f"livenessProbe at a cheap endpoint that does not wait behind inference requests and keep the full check "
           f"for readiness. Not a startupProbe (the container had started).")
    return fix, snippet
