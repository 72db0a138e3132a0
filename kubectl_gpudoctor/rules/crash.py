"""Crash-phase rules about how a container exited: OOM kills, signals, exit 0 under a controller, back-off."""
from __future__ import annotations

import math
import re
from datetime import timedelta

from .. import logscan, podstate
from ..data.signals import SIGNAL_MEANING, signal_of
from ..k8s import container_resources, controller_of, spec
from ..quantity import format_bytes, parse_quantity
from ..timeutil import format_time, human_duration, parse_duration, parse_time, seconds_between
from .common import event_line, has_restarts, has_terminations, pod_events, status_line
from .registry import FALLBACK, GENERIC, SPECIFIC, Hit, Line, rule

# A container killed this soon after it started, repeatedly, is hitting a start-up peak
# (weights loaded into RAM, format conversion), not a slow leak.
STARTUP_WINDOW_S = 300
LONG_RUNNING_OWNERS = ("ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController")
# The kubelet's crash-loop back-off: 10 s, doubling, capped at 5 min, reset after 10 min of running.
BACKOFF_INITIAL_S, BACKOFF_MAX_S, BACKOFF_RESET_S = 10, 300, 600


def _terminations(pod, nonzero=True):
    """(container spec, status, termination record, is_init) for containers that exited."""
    for c, cs, init in podstate.all_container_states(pod):
        term = podstate.latest_termination(cs)
        if term and (not nonzero or term.get("exitCode", 0) != 0):
            yield c, cs, term, init


def _field(cs, term):
    return "state" if podstate.terminated(cs) is term else "lastState"


@rule("oom-killed", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Container killed for exceeding its memory limit (OOMKilled)",
      remediation="Raise resources.limits.memory of container $container above its peak; for a start-up "
                  "peak, memory-map the weights (safetensors) instead of reading them into RAM and run "
                  "format conversions in a separate Job.",
      snippet="# container $container\nresources:\n  requests:\n    memory: $suggested\n  limits:\n    memory: $suggested")
def oom_killed(ev):
    """A container's termination record says OOMKilled: the kernel killed it at its cgroup memory limit."""
    pod = ev.pod
    for c, cs, term, _ in _terminations(pod):
        if term.get("reason") != "OOMKilled":
            continue
        res = container_resources(c)
        limit = (c.get("resources") or {}).get("limits", {}).get("memory")
        ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
        restarts = int(cs.get("restartCount") or 0)
        early = ran is not None and ran < STARTUP_WINDOW_S
        pattern = ("a start-up peak (it dies within minutes of starting" + (", repeatedly)" if restarts > 1 else ")")
                   if early else "steady growth (it ran a long time before reaching the limit)")
        if limit:
            head = f"Container {c['name']} was OOMKilled {human_duration(ran)} after start (limit {format_bytes(limit)})"
            suggested = _suggest(limit)
        else:
            head = f"Container {c['name']} was OOMKilled {human_duration(ran)} after start with no memory limit (the node ran out of memory)"
            suggested = _suggest(res.get("memory") or "8Gi")
        summary = head + (f" — {restarts} restarts" if restarts else "")
        msg = f"{summary}. The pattern is {pattern}."
        return Hit(msg, [status_line(c["name"], _field(cs, term), term)],
                   values={"container": c["name"], "suggested": suggested}, summary=summary)
    return None


def _suggest(limit) -> str:
    """1.5 x the current limit, rounded up to a whole Gi."""
    q = parse_quantity(limit) or 0
    return f"{max(1, math.ceil(float(q) * 1.5 / 2 ** 30))}Gi"


@rule("killed-by-signal", phase="crash", severity="critical", rank=GENERIC, applies=has_terminations,
      title="Container killed by a signal",
      remediation="Find who sent the signal: for SIGKILL/SIGTERM check the probe and Killing events, for "
                  "SIGSEGV/SIGABRT/SIGBUS read the last log lines of container $container.")
def killed_by_signal(ev):
    """A container exited with 128+N for a signal N, and the record is not an OOM kill."""
    pod = ev.pod
    for c, cs, term, _ in _terminations(pod):
        code = term.get("exitCode")
        sig = signal_of(code) if term.get("reason") != "OOMKilled" else ""
        if not sig:
            continue
        lines = [status_line(c["name"], _field(cs, term), term)]
        kills = pod_events(ev, ("Killing", "Unhealthy"), pattern=re.escape(c["name"]) + r"|probe")
        lines += [event_line(e) for e in kills[-3:]]
        cause = SIGNAL_MEANING.get(sig, "killed by a signal")
        if kills and sig in ("SIGKILL", "SIGTERM"):
            cause = "the kubelet killed it after failed probes (see the events)"
        return Hit(f"Container {c['name']} exited with code {code} ({sig}): {cause}.", lines,
                   values={"container": c["name"]})
    return None


@rule("completed-under-controller", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Container exits successfully but its owner expects it to keep running",
      remediation="Run one-off work as a Job (restartPolicy: OnFailure), or keep the server process in the "
                  "foreground (no `&`, no daemonizing entrypoint) in container $container.",
      snippet="apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: $pod-job\n  namespace: $namespace\nspec:\n"
              "  backoffLimit: 2\n  template:\n    spec:\n      restartPolicy: OnFailure\n      containers: [...]  # as today")
def completed_under_controller(ev):
    """A container exited 0 and was restarted because the pod's restartPolicy is Always (Deployment, StatefulSet…)."""
    pod = ev.pod
    owner = controller_of(pod) or {}
    if owner.get("kind") == "Job" or spec(pod).get("restartPolicy", "Always") != "Always":
        return None
    for c, cs, term, init in _terminations(pod, nonzero=False):
        if init or term.get("exitCode") != 0:
            continue
        if int(cs.get("restartCount") or 0) == 0 and podstate.waiting(cs).get("reason") != "CrashLoopBackOff":
            continue
        ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
        who = f"its {owner['kind']} {owner.get('name')}" if owner else "restartPolicy Always"
        return Hit(f"Container {c['name']} exited with code 0 (Completed) after {human_duration(ran)} and "
                   f"{who} restarts it: the process finished instead of serving "
                   f"({cs.get('restartCount', 0)} restarts).",
                   [status_line(c["name"], _field(cs, term), term)], values={"container": c["name"]})
    return None


_NOT_FOUND = re.compile(r"executable file not found in \$PATH|exec: \"[^\"]+\": stat [^:]+: no such file or directory"
                        r"|exec: \"[^\"]+\": no such file or directory", re.I)


@rule("command-not-found", phase="crash", severity="critical", rank=SPECIFIC,
      title="Container command not found",
      remediation="Fix command/args of container $container to a program that exists in the image "
                  "(check with `kubectl debug` or `docker run --entrypoint sh <image>`), or use the image that has it.")
def command_not_found(ev):
    """Exit 127, or the runtime reports `executable file not found in $PATH` for the container's command."""
    pod = ev.pod
    for c, cs, _ in podstate.all_container_states(pod):
        term, wait = podstate.latest_termination(cs), podstate.waiting(cs)
        text = " ".join(x.get("message") or "" for x in (term, wait))
        runtime_says = _NOT_FOUND.search(text)
        shell_says = term.get("exitCode") == 127 and term.get("reason") != "OOMKilled"
        if not (runtime_says or shell_says):
            continue
        log = logscan.first(ev, pod, [c["name"]], "command-not-found")
        cmd = " ".join(c.get("command") or []) or "(image ENTRYPOINT)"
        lines = [status_line(c["name"], "state" if podstate.terminated(cs) or wait else "lastState", term or wait)]
        if log:
            lines.append(log.as_line(pod["metadata"]["name"]))
        what = runtime_says.group(0) if runtime_says else "exit code 127 (command not found)"
        return Hit(f"Container {c['name']} cannot start its command {cmd!s}: {what}.", lines,
                   values={"container": c["name"]})
    return None


@rule("app-error", phase="crash", severity="warning", rank=FALLBACK, fallback=True, applies=has_terminations,
      needs=("pods/log",), title="Application error in the container log",
      remediation="Read the quoted line: it is the application's own error; fix its cause in the code, "
                  "arguments or configuration of container $container.")
def app_error(ev):
    """A container exited non-zero and its log has an error or exception line that no specific rule explains."""
    pod = ev.pod
    for c, cs, term, _ in _terminations(pod):
        if term.get("reason") == "OOMKilled":
            continue
        m = logscan.first(ev, pod, [c["name"]], "app-error")
        if not m:
            continue
        return Hit(f"Container {c['name']} exited with code {term.get('exitCode')}; its log says: {m.line.strip()[:300]}",
                   [status_line(c["name"], _field(cs, term), term), m.as_line(pod["metadata"]["name"])],
                   values={"container": c["name"]},
                   summary=f"Container {c['name']} exited with code {term.get('exitCode')}: {m.line.strip()[:160]}")
    return None


_BACKOFF_MSG = re.compile(r"back-off (\S+) restarting failed container")


@rule("crash-backoff", phase="crash", severity="info", rank=FALLBACK, applies=has_restarts,
      title="Crash-loop back-off clock",
      remediation="After fixing the cause, delete the pod (`kubectl delete pod $pod -n $namespace`) so its "
                  "controller recreates it now instead of waiting out the back-off.")
def crash_backoff(ev):
    """A container restarted: its restart count, current back-off and the time of the next attempt."""
    pod = ev.pod
    for c, cs, _ in podstate.all_container_states(pod):
        restarts = int(cs.get("restartCount") or 0)
        if restarts == 0:
            continue
        wait = podstate.waiting(cs)
        m = _BACKOFF_MSG.search(wait.get("message") or "")
        delay = parse_duration(m.group(1)) if m else min(BACKOFF_INITIAL_S * 2 ** restarts, BACKOFF_MAX_S)
        finished = parse_time(podstate.last_terminated(cs).get("finishedAt"))
        nxt = ""
        if wait.get("reason") == "CrashLoopBackOff" and finished is not None:
            nxt = f", next attempt at about {format_time(finished + timedelta(seconds=delay))}"
        msg = (f"Container {c['name']} has restarted {restarts} times; the kubelet waits {human_duration(delay)} "
               f"before restarting it{nxt}. The back-off starts at 10s, doubles per crash up to 5m, and resets "
               f"once the container runs 10 minutes without crashing.")
        return Hit(msg, [Line("status", f"containerStatuses[{c['name']}]",
                              f"restartCount={restarts} waiting={wait.get('reason', '-')} {wait.get('message', '')}".strip())])
    return None

