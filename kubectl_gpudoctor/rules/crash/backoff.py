"""Crash-phase rule on the kubelet's crash-loop back-off clock (restart count, current delay, next attempt); it
explains no crash, so it must stay an info-level fallback."""
from __future__ import annotations

from datetime import timedelta

from ...kube import podstate
from ...logs.crashrun import recent
from ...kube.objects import is_terminated
from ...kube.timeutil import format_time, human_duration, parse_duration, parse_time
from .._common import has_restarts
from ..registry import FALLBACK, Hit, Line, rule
from ... import lazyre

# The kubelet's crash-loop back-off: 10s, doubling, capped at 5m, reset after 10m of running.
BACKOFF_INITIAL_S, BACKOFF_MAX_S = 10, 300
_BACKOFF_MSG = lazyre.compile(r"back-off (\S+) restarting failed container")


def _can_restart(ev) -> bool:
    """A container restarted and the pod can still restart it: not Succeeded or Failed, where no next attempt comes."""
    return has_restarts(ev) and not is_terminated(ev.pod)


@rule("crash-backoff", phase="crash", severity="info", rank=FALLBACK, applies=_can_restart,
      title="Crash-loop back-off clock",
      remediation="After fixing the cause, delete the pod (`kubectl delete pod $pod -n $namespace`) and $recreates "
                  "now instead of waiting out the back-off.")
def crash_backoff(ev):
    """A container restarted recently: its restart count, current back-off and the time of the next attempt."""
    restarted = [(c, cs) for c, cs, _ in podstate.all_container_states(ev.pod)
                 if int(cs.get("restartCount") or 0) > 0 and recent(ev, cs)]
    restarted.sort(key=lambda x: podstate.waiting(x[1]).get("reason") != "CrashLoopBackOff")
    for c, cs in restarted[:1]:
        restarts, wait = int(cs["restartCount"]), podstate.waiting(cs)
        m = _BACKOFF_MSG.search(wait.get("message") or "")
        # first restart at once, then 10s x 2^(restartCount-1)
        delay = parse_duration(m.group(1)) if m else min(BACKOFF_INITIAL_S * 2 ** (restarts - 1), BACKOFF_MAX_S)
        finished = parse_time(podstate.last_terminated(cs).get("finishedAt"))
        if wait.get("reason") == "CrashLoopBackOff":
            nxt = f" at about {format_time(finished + timedelta(seconds=delay))}" if finished else ""
            now = f"it is waiting {human_duration(delay)} before the next attempt{nxt}"
        else:
            now = f"the next crash will wait {human_duration(delay)}"
        msg = (f"Container {c['name']} has restarted {restarts} time{'s' if restarts != 1 else ''}; {now}. The back-off starts at 10s, doubles "
               f"per crash up to 5m, and resets once the container runs 10 minutes without crashing.")
        return Hit(msg, [Line("status", f"containerStatuses[{c['name']}]",
                              f"restartCount={restarts} waiting={wait.get('reason', '-')} {wait.get('message', '')}".strip())])
    return None
