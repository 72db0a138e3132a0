"""Crash-phase rules on how a container exited: OOM kill, signal, exit 0 under a controller, missing command,
an unexplained application error (the back-off clock is backoff.py)."""
from __future__ import annotations

import re

from ...kube import podstate
from ...logs.crashrun import (failures, find, last_lines, log_ref, match_run, native_crash_lines, not_wrapper,
                              probe_kills, recent, run_log, stopped_sidecar, tail_match, unprefixed, where)
from ...data.signals import NATIVE_CRASH, PROBE_FAILED, PROBE_KILL, SIGNAL_MEANING, STOPPING, signal_of
from ...data.app_context import LOADER_ERROR, RUNTIME_NOT_FOUND
from ...data import event_signatures as event_sigs
from ...kube.objects import controller_of, meta, spec
from ...kube.quantity import format_bytes
from ...kube.timeutil import human_duration, seconds_between
from . import _memory as mem
from ._files import foreground_command, owner_words
from .._common import event_line, has_terminations, pod_events, status_line
from ..registry import DEFAULT, FALLBACK, GENERIC, SPECIFIC, Hit, Line, rule
from ._startup import back_words, container_events, kill_severity, loop_words, recent_kills

# nvidia-smi is never part of an image: a missing one means the NVIDIA runtime did not set the container up.
SMI_FIX = ("Give container $container its GPU through the NVIDIA runtime (resources.limits nvidia.com/gpu, and "
           "runtimeClassName where the cluster's GPU pods use one); nvidia-smi and the driver libraries come with it.")
# Killed this soon after start, repeatedly: a start-up peak (weights read into RAM), not a leak.
STARTUP_WINDOW_S = 300
# A kill is history (a warning) once the container has been Running and Ready past the kubelet's back-off reset for
# twice the run that ended in it (a leak that needed 6 h comes back within 6 h), or for a day whatever that run was.
SETTLED_S = 86400


@rule("oom-killed", phase="crash", severity="critical", rank=SPECIFIC,
      applies=lambda ev: has_terminations(ev) or (ev.pod is not None and podstate.stuck_in_creation(ev.pod)),
      title="Container killed for exceeding its memory limit (OOMKilled)",
      remediation="Raise resources.limits.memory of container $container above its peak; for a start-up "
                  "peak, memory-map the weights (safetensors) instead of reading them into RAM and run "
                  "format conversions in a separate Job.",
      snippet="# container $container\nresources:\n  requests:\n    memory: $suggested\n  limits:\n    memory: $suggested"
              "$sizing")
def oom_killed(ev):
    """OOMKilled, or a child the log and the node's OOMKilling event both name (a DataLoader worker): the kernel's OOM killer.

    A container's termination record says OOMKilled: the kernel's OOM killer ended it (limit reached, or node full),
    or the runtime says its init was OOM-killed before the command ran (StartError: the limit is far too low).
    A warning once the container has been Running and Ready for a day since, or for twice the run that ended in the kill.

    Also a child process OOM-killed while the main process survived to exit on its own (cgroup v1, or the kubelet's
    singleProcessOOMKill: the kernel kills the largest process only, and the termination says Error, not OOMKilled):
    the failed run's log names a SIGKILLed child (PyTorch's `DataLoader worker (pid N) is killed by signal: Killed.`)
    and node-problem-detector's OOMKilling event on the pod's node, within 90 s of the exit, names that child by pid
    or by the kernel's name for it (pt_data_worker). The log line alone is not enough (app-error quotes it as a clue)."""
    for c, cs, init in podstate.all_container_states(ev.pod):
        term = podstate.latest_termination(cs)
        at_start = _oom_at_start(term)
        if stopped_sidecar(ev.pod, c, init):
            continue
        limit = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if at_start:
            return _start_oom(c, cs, term, limit)
        if term.get("reason") == "OOMKilled":
            return _oom_hit(ev, c, cs, init, term, limit)
        child = _child_oom(ev, c, cs, term, limit)
        if child:
            return child
    return _init_oom_while_creating(ev)


def _oom_at_start(term: dict) -> bool:
    """The runtime's words for an init process OOM-killed before the command ran (StartError, not OOMKilled)."""
    return bool(term.get("reason") != "OOMKilled" and event_sigs.search(term.get("message") or "", "oom-killed"))


def _start_oom(c, cs, term, limit):
    suggested, comment = mem.init_oom_sizing(limit)
    return Hit(f"Container {c['name']} never started: the runtime's init process was OOM-killed by its memory "
               f"limit ({format_bytes(limit) if limit else 'none set'}), before the command ran.",
               [status_line(c["name"], where(cs, term), term)],
               values={"container": c["name"], "suggested": suggested, "sizing": comment})


def _oom_hit(ev, c, cs, init, term, limit):
    ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
    restarts = int(cs.get("restartCount") or 0)
    summary = _oom_summary(("Init container " if init else "Container ") + c["name"], ran, restarts, limit)
    suggested, comment, held, seen = mem.sizing(ev, c, term, limit, ran if ran and ran >= STARTUP_WINDOW_S else None)
    lines = [status_line(c["name"], where(cs, term), term)] + seen + _last_log_line(ev, c, cs, term)
    up = _settled_for(ev, cs, ran)
    note = f" Running and Ready for {human_duration(up)} since: a past kill to watch." if up is not None else ""
    return Hit(f"{summary}. The pattern is {_oom_pattern(ran, restarts)}.{held}{note}", lines,
               fix=_unlimited_fix(suggested) if not limit else None, summary=summary,
               severity="warning" if up is not None else None,
               values={"container": c["name"], "suggested": suggested, "sizing": comment})


def _oom_pattern(ran, restarts: int) -> str:
    if ran is not None and ran < STARTUP_WINDOW_S:
        return "a start-up peak (it dies within minutes of starting" + (", repeatedly)" if restarts > 1 else ")")
    return f"steady growth (it ran {human_duration(ran)} before reaching the limit: a leak or a growing cache)"


def _oom_summary(who: str, ran, restarts: int, limit) -> str:
    if limit:
        head = f"{who} was OOMKilled {human_duration(ran)} after start (limit {format_bytes(limit)})"
    else:
        head = (f"{who} was OOMKilled {human_duration(ran)} after start with no memory limit: the node ran out "
                f"of memory and the kernel chose it")
    return head + (f" — {restarts} restart{'s' if restarts != 1 else ''}" if restarts else "")


def _last_log_line(ev, c, cs, term) -> list:
    text, previous = run_log(ev, c["name"], cs, term)
    return [Line("log", log_ref(ev, c["name"], previous, "last line before the kill"), l[:300])
            for l in last_lines(text, 1)] if text else []


def _unlimited_fix(suggested) -> str:
    return ("Set requests.memory and limits.memory of container $container to "
            + ("$suggested, its peak at the kill + 25%," if suggested != mem.MEASURE else
               "its measured peak (the snippet says how to measure it)")
            + " so the scheduler reserves it.")


def _settled_for(ev, cs, ran):
    """How long the container has run since the kill, when that makes the kill history (SETTLED_S); else None."""
    up = seconds_between(((cs.get("state") or {}).get("running") or {}).get("startedAt"), ev.now())
    old = not recent(ev, cs) and up is not None and (up >= SETTLED_S or ran is not None and up > 2 * max(ran, STARTUP_WINDOW_S))
    return up if old else None


def _child_oom(ev, c, cs, term, limit):
    """A child process (a DataLoader worker) OOM-killed while the container's main process survived to exit on its
    own: the log names the child, the kernel's OOM kill on the node at that moment names the same child."""
    if term.get("exitCode") in (None, 0) or not recent(ev, cs):
        return None
    text, previous = run_log(ev, c["name"], cs, term)
    found = mem.child_oom(ev, term, text)
    if not found:
        return None
    said, child, seen = found
    _, _, comm, node_wide = seen
    ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
    where_ = ("when node " + ev.pod["spec"]["nodeName"] + " ran out of memory" if node_wide or not limit
              else f"at the container's {format_bytes(limit)} memory limit")
    summary = (f"Container {c['name']} exited {term.get('exitCode')} after the kernel's OOM killer killed {child} "
               f"{where_}")
    suggested, comment, held, lines = mem.sizing(ev, c, term, None if node_wide else limit,
                                                 ran if ran and ran >= STARTUP_WINDOW_S else None, seen=seen)
    lines = [status_line(c["name"], where(cs, term), term)] + lines
    lines.append(Line("log", log_ref(ev, c["name"], previous, "the child's kill"), said[:300]))
    return Hit(f"{summary}, {human_duration(ran)} after start: the kernel's line names {comm}. "
               f"The termination says {term.get('reason') or 'Error'}, not OOMKilled, because only the child was "
               f"killed (cgroup v1, or the kubelet's singleProcessOOMKill) and the main process exited on its own."
               f"{held}", lines, summary=summary,
               fix=None if limit else ("Set requests.memory and limits.memory of container $container to its measured "
                                       "peak (the snippet says how to measure it) so the scheduler reserves it."),
               values={"container": c["name"], "suggested": suggested, "sizing": comment
                       + "\n# fewer DataLoader workers (num_workers) need less: each is a process"
                       * ("DataLoader" in child)})


def _init_oom_while_creating(ev):
    """The runtime's init OOM reported while the container is still being created (CreateContainerError /
    RunContainerError, or a Failed event) before any termination record exists: the same finding."""
    if not podstate.stuck_in_creation(ev.pod):
        return None
    for c, cs, _ in podstate.creation_blocked(ev.pod):
        rec = podstate.waiting(cs)
        hit = event_sigs.search(rec.get("message") or "", "oom-killed")
        events = [e for e in container_events(ev, c["name"], "Failed", r"OOM")
                  if event_sigs.search(e.get("message") or "", "oom-killed")] if not hit else []
        if hit or events:
            limit = ((c.get("resources") or {}).get("limits") or {}).get("memory")
            lines = [status_line(c["name"], "state", rec)] + [event_line(e) for e in events[-1:]]
            suggested, comment = mem.init_oom_sizing(limit)
            return Hit(f"Container {c['name']} cannot start: the runtime's init process was OOM-killed by its memory "
                       f"limit ({format_bytes(limit) if limit else 'none set'}), before the command ran.", lines,
                       values={"container": c["name"], "suggested": suggested, "sizing": comment})
    return None


# The source a live read of the node's OOMKilling events is recorded under (collect/pod.py NODE_OOM_EVENTS_GAP).
NODE_OOM_EVENTS = "events#node-oom"
SIGNAL_FIX = ("Find who sent the signal: for SIGKILL/SIGTERM check the probe and Killing events, for "
              "SIGSEGV/SIGABRT/SIGBUS read the last log lines of container $container.")


@rule("killed-by-signal", phase="crash", severity="critical", rank=GENERIC, applies=has_terminations,
      title="Container killed by a signal", remediation=SIGNAL_FIX)
def killed_by_signal(ev):
    """Exit 128+N for signal N (not OOM) or a kill after failed probes; Ready again, a warning unless a slow crash loop (3+ restarts, one per 2h).

    A container exited with 128+N for a signal N (not an OOM kill), or the kubelet killed it after failed probes.

    A warning once the container is Running and Ready again (reported for an hour after the kill), unless that is a
    crash loop caught in a Ready moment: 3 or more restarts with a killed run under the back-off's 10-minute reset,
    or a slow crash loop, 3 or more restarts at one every 2 hours or oftener since the pod started (restartCount counts
    every restart of the pod's life; the kubelet resets the back-off after 10 minutes of running, so a container that
    crashes later than that restarts within seconds, is Ready between crashes and never shows CrashLoopBackOff).
    One recent crash while Ready again stays a warning; the fix then names the controller to roll back."""
    deleting = bool(meta(ev.pod).get("deletionTimestamp"))
    for c, cs, term, init in recent_kills(ev):
        code, sig = term.get("exitCode"), signal_of(term.get("exitCode"))
        kills = probe_kills(ev, c["name"], term)
        if term.get("reason") == "OOMKilled" or not (sig or kills) or (deleting and sig in ("SIGTERM", "SIGKILL")):
            continue
        lines = [status_line(c["name"], where(cs, term), term)] + [event_line(e) for e in kills[-1:]]
        if kills:
            lines += [event_line(e) for e in container_events(ev, c["name"], "Unhealthy", PROBE_FAILED)[-1:]]
        stops = pod_events(ev, ("Killing",), pattern=STOPPING + re.escape(c["name"]))
        if kills:
            probe = re.search(PROBE_KILL, kills[-1].get("message") or "")
            kind = (probe.group("probe") or probe.group("old") or "liveness").lower() if probe else "liveness"
            cause = (f"the kubelet killed it after failed {kind} probes"
                     + ("" if sig else f" (the process exited {code} on SIGTERM)"))
        elif sig in ("SIGTERM", "SIGKILL") and stops:
            cause, lines = "the kubelet stopped it (pod deletion, rollout or preemption)", lines + [event_line(stops[-1])]
        else:
            cause = SIGNAL_MEANING.get(sig, "killed by a signal")
        if sig in NATIVE_CRASH:
            text, previous = run_log(ev, c["name"], cs, term)
            lines += [Line("log", log_ref(ev, c["name"], previous, "crash"), l[:300]) for l in native_crash_lines(text)]
        sev, loop = kill_severity(cs, term, ev), loop_words(ev, cs, term)
        if loop and not sev:
            started = ((ev.pod.get("status") or {}).get("startTime")) or meta(ev.pod).get("creationTimestamp")
            lines.insert(1, Line("status", f"containerStatuses[{c['name']}]",
                                 f"restartCount={cs.get('restartCount')} ready=true pod startTime={started}"))
        return Hit(f"Container {c['name']} exited with code {code}" + (f" ({sig})" if sig else "") + f": {cause}."
                   + (back_words(ev, cs) if sev else loop), lines, values={"container": c["name"]}, severity=sev,
                   fix=SIGNAL_FIX + _rollback_words(ev) if loop and not sev else None)
    return None


# Controllers whose pod template has revisions that `kubectl rollout undo` returns to.
ROLLED_OUT = ("Deployment", "StatefulSet", "DaemonSet")


def _rollback_words(ev) -> str:
    """For a slow crash loop: the controller that keeps restarting the pod and, for a rolled-out one, how to compare
    its revisions and go back to the one that did not crash."""
    owner = controller_of(ev.pod) or {}
    kind, name_ = owner.get("kind"), owner.get("name") or ""
    hash_ = ((meta(ev.pod).get("labels") or {}).get("pod-template-hash")) or ""
    if kind == "ReplicaSet" and hash_ and name_.endswith("-" + hash_):
        kind, name_ = "Deployment", name_[: -len(hash_) - 1]
    if not kind:
        return ""
    ns = meta(ev.pod).get("namespace") or ""
    if kind in ROLLED_OUT:
        ref = f"{kind.lower()}/{name_} -n {ns}"
        return (f" It will crash again within hours under {kind} {name_}: if the crashes began with a change to it "
                f"(image, args), compare `kubectl rollout history {ref}` and go back with `kubectl rollout undo {ref}` "
                f"while the cause is fixed.")
    return f" {kind} {name_} restarts it after each crash: it will crash again within hours."


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
    if owner.get("kind") == "Job" or spec(pod).get("restartPolicy", "Always") != "Always" or meta(pod).get("deletionTimestamp"):
        return None
    for c, cs, term, init in failures(ev):
        if (init and c.get("restartPolicy") != "Always") or term.get("exitCode") != 0 or term.get("reason") == "OOMKilled":
            continue
        if int(cs.get("restartCount") or 0) == 0 and podstate.waiting(cs).get("reason") != "CrashLoopBackOff":
            continue
        if probe_kills(ev, c["name"], term):
            continue  # it exited 0 on the kubelet's SIGTERM after failed probes: killed-by-signal says so
        ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
        lines = [status_line(c["name"], where(cs, term), term)]
        text, previous = run_log(ev, c["name"], cs, term)
        lines += [Line("log", log_ref(ev, c["name"], previous, "end"), l[:300]) for l in last_lines(text, 2)]
        fg = foreground_command(c)
        if fg:
            return Hit(f"Container {c['name']} exits 0 at once ({human_duration(ran)}) because its shell command puts the "
                       f"server in the background (`&`) and the shell, the container's main process, ends; "
                       f"{owner_words(pod, owner)} restarts it ({cs.get('restartCount', 0)} restarts).", lines,
                       values={"container": c["name"]}, snippet=fg,
                       fix="Run the server in the foreground as the container's main process: drop the trailing `&` "
                           "(and nohup), and start it with `exec` so it receives SIGTERM.")
        return Hit(f"Container {c['name']} exited with code 0 (Completed) after {human_duration(ran)} and "
                   f"{owner_words(pod, owner)} restarts it: the process finished instead of serving "
                   f"({cs.get('restartCount', 0)} restarts).", lines, values={"container": c["name"]})
    return None


@rule("command-not-found", edits="container", phase="crash", severity="critical", rank=SPECIFIC,
      title="Container command not found",
      remediation="Fix command/args of container $container to a program that exists in the image "
                  "(check with `kubectl debug` or `docker run --rm -it --entrypoint sh $image`), or use the image that has "
                  "it.")
def command_not_found(ev):
    """Exit 127 (not the dynamic loader's), or the runtime's `executable file not found in $PATH` (StartError), an
    empty command (`exec: ""`) included.

    The dynamic loader also exits 127 (`error while loading shared libraries`): the command exists, a library does not."""
    for c, cs, init in podstate.all_container_states(ev.pod):
        if stopped_sidecar(ev.pod, c, init):
            continue
        term, wait = podstate.latest_termination(cs), podstate.waiting(cs)
        runtime = re.search(RUNTIME_NOT_FOUND, " ".join(x.get("message") or "" for x in (term, wait)))
        if runtime and (runtime.group("cmd") or runtime.group("cmd2") or "").rsplit("/", 1)[-1].startswith("nvidia-container"):
            runtime = None   # the node's NVIDIA runtime/hook is missing, not the container's command
        shell = term.get("exitCode") == 127 and term.get("reason") != "OOMKilled"
        if not (runtime or shell) or (term and not runtime and not recent(ev, cs)):
            continue
        if not runtime and match_run(ev, c, cs, term, "app-error", accept=lambda _, line: re.search(LOADER_ERROR, line)):
            continue   # the dynamic loader's 127: the command exists, a library it needs does not
        log = term and (match_run(ev, c, cs, term, "command-not-found", accept=lambda m, _: m.groupdict().get("cmd"))
                        or match_run(ev, c, cs, term, "command-not-found"))
        missing = (runtime.group("cmd") or runtime.group("cmd2")) if runtime else (log[1].groupdict().get("cmd") if log else None)
        lines = [status_line(c["name"], where(cs, term) if term else "state", term or wait)] + ([log[0]] if log else [])
        cmd = " ".join((c.get("command") or []) + (c.get("args") or []))[:120] or "(the image's ENTRYPOINT)"
        what = (f"`{missing}` does not exist in the image or is not in $PATH" if missing else "the command is the empty "
                "string (`command`/`args` rendered as [\"\"])" if runtime else "exit code 127 (command not found)")
        how = "the runtime could not start it" if runtime else "the shell could not find it"
        smi = missing == "nvidia-smi"
        return Hit(f"Container {c['name']} cannot run {cmd}: {what} ({how})."
                   + (" Images do not ship nvidia-smi: the NVIDIA container runtime injects it, with the driver libraries, "
                      "into a container that gets a GPU through it." if smi else ""), lines,
                   values={"container": c["name"], "image": c.get("image") or "the image"},
                   rank=DEFAULT if smi else None, fix=SMI_FIX if smi else None)
    return None


@rule("app-error", phase="crash", severity="warning", rank=FALLBACK, fallback=True, applies=has_terminations,
      needs=("pods/log",), title="Application error in the container log",
      remediation="Read the quoted line: it is the application's own error; fix its cause in the code, "
                  "arguments or configuration of container $container.")
def app_error(ev):
    """A container exited non-zero and its log ends with an error or exception line that no specific rule explains.

    It quotes the real error above an exception that only wraps it (vLLM's "Engine core initialization failed",
    torchrun's ChildFailedError). A quoted child killed by SIGKILL (a DataLoader worker) gets a clue: most often the
    OOM killer at the memory limit, unconfirmed until the node's kernel line says so (oom-killed when it does)."""
    found = (find(ev, "app-error", accept=not_wrapper) or find(ev, "app-error") or tail_match(ev, "app-error")
             or _app_error_ready_again(ev))
    if not found:
        return None
    c, cs, term, _, line, _ = found
    if term.get("reason") == "OOMKilled":
        return None
    code, said = term.get("exitCode"), unprefixed(line.text)
    back = back_words(ev, cs) if kill_severity(cs, term, ev) else loop_words(ev, cs, term)
    clue, next_ = _child_kill_clue(ev, c, said)
    fix = (f"Confirm who killed the worker (the node's OOMKilling events under Next, or the kernel log on node "
           f"{ev.pod['spec']['nodeName']}); if it was the OOM killer, raise resources.limits.memory of container "
           f"$container or run fewer workers (num_workers), else fix the worker's own error." if clue else None)
    return Hit(f"Container {c['name']} exited with code {code}; its log says: {said[:300]}" + back + clue,
               [status_line(c["name"], where(cs, term), term), line], values={"container": c["name"]},
               summary=f"Container {c['name']} exited with code {code}: {said[:160]}", next=next_, fix=fix,
               edits="container" if clue else None)


def _child_kill_clue(ev, c, said: str):
    """(sentence, next commands) when the quoted line says a child was SIGKILLed and oom-killed could not match the
    kernel's kill to it: most often the OOM killer at the memory limit, but a clue, not a finding. SIGKILL has other
    senders (a process's own kill -9, a watchdog, a node-wide OOM kill), and some threads saw it with memory to spare
    (pytorch/pytorch#8976), so only the kernel's own line, which node-problem-detector reports, proves an OOM kill."""
    child = mem.child_kill(said)
    node = (ev.pod.get("spec") or {}).get("nodeName")
    if not child or not node:
        return "", []
    limit = ((c.get("resources") or {}).get("limits") or {}).get("memory")
    gap = ev.gap(NODE_OOM_EVENTS)
    known = (f"node {node}'s OOMKilling events were not read ({gap.needs()})" if gap and gap.reason != "not-collected"
             else f"no OOMKilling event (node-problem-detector) on node {node} names it at that moment")
    return (f" A {child[2]} killed by SIGKILL while the main process lives on is most often the kernel's OOM killer "
            f"at the container's memory limit ({format_bytes(limit) if limit else 'none set: the node'}); "
            f"{known}, so that is unconfirmed: the node's kernel log (`Killed process`) would say.",
            [f"kubectl get events -n default --field-selector involvedObject.kind=Node,involvedObject.name={node},"
             f"reason=OOMKilling"])


def _app_error_ready_again(ev):
    """find() for the exits failures() leaves out: a container Running and Ready again within the hour after a
    non-zero exit whose failed run ends with an error line (reported as what it is, a warning)."""
    for c, cs, term, init in recent_kills(ev):
        if kill_severity(cs, term, ev) and term.get("exitCode", 0) != 0:
            found = match_run(ev, c, cs, term, "app-error", accept=not_wrapper) or match_run(ev, c, cs, term, "app-error")
            if found:
                return (c, cs, term, init) + found
    return None
