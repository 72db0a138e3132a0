"""Crash-phase rules for application causes: probes killing a slow start, a command that cannot be executed,
missing model files, an unwritable cache, rejected credentials, an unreachable dependency."""
from __future__ import annotations

import re

from ...logs.crashrun import (before_shutdown, failure_block, failures, find, last_lines, log_ref, probe_kills, run_log, status_match,
                              where)
from ...data.signals import (PROBE_FAILED, PROBE_REFUSED, PROBE_STATUS, PROBE_TIMEOUT, PROBE_WRONG_TARGET,
                             READINESS_FAILED)
from ...data.log_regions import DISTRIBUTED
from ...evidence import event_count
from ...kube.timeutil import human_duration, seconds_between
from . import _access as xe, _files as ae, _startup as se
from .._common import event_line, has_terminations, status_line
from ..registry import DEFAULT, SPECIFIC, Hit, Line, Unknown, rule

@rule("exec-format-error", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Container binary built for another CPU architecture (exec format error)",
      remediation="Run an image built for $nodearch (a multi-arch image, or the $nodearch tag), or keep the pod on "
                  "$imagearch nodes with a nodeSelector; if the entrypoint is a script, make sure its first line is a #! line.",
      snippet="# pod spec: only nodes of the architecture the image is built for\nnodeSelector:\n  kubernetes.io/arch: $imagearch\n"
              "# or build for both: docker buildx build --platform linux/amd64,linux/arm64 -t $image --push .")
def exec_format_error(ev):
    """The runtime or the log says `exec format error`: the kernel cannot execute the container's binary."""
    for c, cs, term, _ in failures(ev):
        found = status_match(cs, "exec-format-error")
        line, m = (status_line(c["name"], found[0], found[1]), found[2]) if found else (None, None)
        if not found:
            hit = ae.match(ev, c, cs, term, "exec-format-error")
            if not hit:
                continue
            line, m = hit
        why, node_arch, guess, node_line = ae.arch_story(ev, c, m.groupdict().get("cmd") or "")
        lines = ([line] if found else [status_line(c["name"], where(cs, term), term), line]) + [x for x in (node_line,) if x]
        return Hit(f"Container {c['name']} cannot start its command: exec format error — {why}.", lines,
                   values={"container": c["name"], "nodearch": node_arch or "the node's architecture", "imagearch": guess,
                           "image": c.get("image") or "IMAGE"})
    return None


@rule("not-executable", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      title="Container command is not executable (permission denied)",
      remediation="Make $path executable: set the execute bit in the image (RUN chmod +x $path) or, for a script "
                  "mounted from a ConfigMap/Secret, set defaultMode 0755; or run it through its interpreter. If the mode "
                  "is right, look for a noexec mount or an SELinux/AppArmor denial on the node.")
def not_executable(ev):
    """Exit 126, or the runtime/shell reports `permission denied` executing the container's command."""
    for c, cs, term, _ in failures(ev):
        found = status_match(cs, "not-executable")
        logged = None if found else ae.match(ev, c, cs, term, "not-executable")
        code126 = term.get("exitCode") == 126 and term.get("reason") != "OOMKilled"
        if not (found or logged or code126):
            continue
        m = found[2] if found else (logged[1] if logged else None)
        argv = c.get("command") or []
        direct = argv[0] if argv and not (len(argv) > 1 and argv[1] == "-c") else None
        path = (m.groupdict().get("cmd") if m else None) or direct or "its command"
        lines = [status_line(c["name"], where(cs, term), term)] + ([logged[0]] if logged else [])
        mount, vol = ae.covering_mount(ev.pod, c, path)
        mode, snippet = ae.exec_mode_fix(c, path, mount, vol)
        if mount:
            lines.append(Line("spec", f"containers[{c['name']}].volumeMounts[{mount['name']}]",
                              f"{mount.get('mountPath')} from {ae.volume_words(vol)}{mode}"))
        where_ = (f" (it comes from {ae.volume_words(vol)} mounted at {mount.get('mountPath')}{mode})" if mount
                  else " (the file is in the image, not on a volume)")
        return Hit(f"Container {c['name']} cannot execute {path}: permission denied, exit "
                   f"{term.get('exitCode')}{where_}.", lines, values={"container": c["name"], "path": path}, snippet=snippet)
    return None


@rule("missing-model-files", edits="container", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("pods/log",), title="Model or config files missing at the path the server reads",
      remediation="Put the model at $path: mount the volume that holds it at the right mountPath (and subPath), or "
                  "download it first (an init container or Job writing to the same volume).",
      snippet="kubectl debug $pod -n $namespace -it --copy-to=$pod-debug --container=$container -- sh -c 'ls -la $dir'")
def missing_model_files(ev):
    """The failed run ends with a file-not-found error on a model or config path; names the volume covering it.

    Wording: FileNotFoundError, transformers' `does not appear to have a file named config.json`, vLLM's
    `Invalid repository ID or local directory specified`, Triton's `failed to stat file`."""
    found = find(ev, "missing-model-files", accept=ae.model_path_accepted)
    if not found:
        return None
    c, cs, term, _, line, m = found
    path = m.group("path").rstrip(".'\"")
    lines = [status_line(c["name"], where(cs, term), term), line]
    if not ae.is_local(path):
        return Hit(f"Container {c['name']} exited {term.get('exitCode')}: the hub repo {path} has no "
                   f"{m.groupdict().get('file') or 'such file'} (wrong repo id or revision, or an adapter-only repo).",
                   lines, values={"container": c["name"], "path": path, "dir": path}, snippet="")
    mount, vol = ae.covering_mount(ev.pod, c, path)
    lines.append(ae.mount_line(c, mount, vol))
    where_ = ae.parent_dir(path, m)
    return Hit(f"Container {c['name']} exited {term.get('exitCode')} because {path} does not exist or is "
               f"incomplete: {ae.mount_story(ev.pod, c, path, mount, vol)}.", lines,
               values={"container": c["name"], "path": where_, "dir": where_})


@rule("model-cache-read-only", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("pods/log",), title="Model or cache path is not writable",
      remediation="Give container $container a writable cache: an emptyDir (or PVC) mounted at /cache and $envvar "
                  "pointing into it; keep model volumes read-only and set HF_HUB_OFFLINE=1 when the weights are pre-loaded.",
      snippet="# container $container\nenv:\n- name: $envvar\n  value: $cachedir\nvolumeMounts:\n- name: cache\n  mountPath: /cache\n"
              "# pod spec\nvolumes:\n- name: cache\n  emptyDir:\n    sizeLimit: 50Gi")
def model_cache_read_only(ev):
    """The failed run ends with `Read-only file system` / `[Errno 30]` (or `[Errno 13]` on a cache) writing a cache.

    Reports the read-only mount, readOnlyRootFilesystem or the non-root user behind it, and the variable that moves
    that library's cache (HF_HOME, TRITON_CACHE_DIR, ...)."""
    found = find(ev, "model-cache-read-only")
    if not found:
        return None
    c, cs, term, _, line, m = found
    path = (m.groupdict().get("path") or "").rstrip("'\"") or "(path not printed)"
    mount, vol = ae.covering_mount(ev.pod, c, path) if path.startswith("/") else (None, None)
    why, spec_line = ae.not_writable_story(ev.pod, c, path, mount, vol, "Errno 13" in line.text)
    text, _ = run_log(ev, c["name"], cs, term)
    block = "\n".join(l for _, l in failure_block(text))
    envvar, sub = ae.cache_env(path, block)
    lines = [status_line(c["name"], where(cs, term), term), line] + ([spec_line] if spec_line else [])
    return Hit(f"Container {c['name']} exited {term.get('exitCode')} writing {path}: {why}.", lines,
               values={"container": c["name"], "envvar": envvar, "cachedir": "/cache" + (f"/{sub}" if sub else "")})


@rule("auth-failure", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations, needs=("pods/log",),
      title="Credentials rejected by the model hub, object store or API",
      remediation="Fix the credentials container $container uses ($creds): create or rotate the Secret, grant the "
                  "account access (gated models: request access on the model page), or fix the service account's role.")
def auth_failure(ev):
    """The failed run ends with a 401/403 from a model hub, object store or API; names the Secret or service account.

    Wording: huggingface_hub GatedRepoError / `Invalid credentials in Authorization header`, botocore AccessDenied /
    `(403) when calling the HeadObject operation`, RBAC `is forbidden`. Names only, never values."""
    found = find(ev, "auth-failure")
    if not found:
        return None
    c, cs, term, _, line, m = found
    text, _ = run_log(ev, c["name"], cs, term)
    target = xe.auth_target(line.text, text)
    creds = xe.credential_refs(ev, c, target)
    lines = [status_line(c["name"], where(cs, term), term), line] + [Line("spec", f"containers[{c['name']}]", x) for x in creds]
    meaning, snippet, fix = xe.auth_meaning(ev, c, target, line.text, creds, text)
    return Hit(f"Container {c['name']} exited {term.get('exitCode')}: {meaning}.", lines, snippet=snippet, fix=fix,
               values={"container": c["name"], "creds": "; ".join(creds) or "none found in the spec"})


@rule("dependency-unreachable", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("pods/log",), title="A service the container depends on is unreachable at start",
      remediation="Make sure $target is up and reachable before container $container starts: check the backend's "
                  "Service name, namespace, port and ready endpoints, and wait for it in an init container.",
      snippet="# pod spec: wait for the backend before the app starts\ninitContainers:\n- name: wait-for-$hostname\n"
              "  image: busybox:1.36\n  command: [\"sh\", \"-c\", \"$waitcmd\"]")
def dependency_unreachable(ev):
    """The failed run ends with `Connection refused` or a name-resolution failure connecting to another service.

    Wording: `Error 111 connecting to redis:6379`, `dial tcp: lookup x on 10.96.0.10:53: no such host`, `could not
    translate host name`, `Name or service not known`, `getaddrinfo ENOTFOUND`; torch.distributed rendezvous excluded."""
    found = find(ev, "dependency-unreachable", accept=lambda m, line: not re.search(DISTRIBUTED, line))
    if not found:
        return None
    c, cs, term, _, line, m = found
    host, port, why = xe.endpoint(m)
    meaning, snippet, fix = xe.dependency_meaning(ev, host, port, why)
    return Hit(f"Container {c['name']} exited {term.get('exitCode')} because it could not reach "
               f"{host + (':' + port if port else '') if host else 'a service'} ({why}): {meaning}.",
               [status_line(c["name"], where(cs, term), term), line], snippet=snippet, fix=fix,
               values={"container": c["name"], "target": f"{host}:{port}" if port else (host or "the backend"),
                       "hostname": re.sub(r"[^a-z0-9-]", "-", (host or "backend").lower())[:40].strip("-"),
                       "waitcmd": xe.wait_command(host, port, why)})


@rule("probe-kills-slow-start", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("events",), title="Probes kill the container before it finishes starting",
      remediation="Add a startupProbe to container $container sized from the observed start time: liveness and "
                  "readiness probes start only after it succeeds, so a slow model load is no longer killed.")
def probe_kills_slow_start(ev):
    """Liveness/startup probes killed a container that was still loading: the probe budget is below its start time.

    Budget: initialDelaySeconds + failureThreshold × periodSeconds of the startupProbe (else the livenessProbe).
    Start time: a ready line of any run, else the killed run's length plus what its progress bar said was left.
    Never for a container that had started before the kill (its log served, the pod was Ready during the run, or the
    run outlived what probes that never pass allow): that is liveness-probe-failing."""
    for c, cs, term, _ in failures(ev):
        kills = probe_kills(ev, c["name"], term)
        if not kills or se.started_before_kill(ev.pod, c, term, ""):
            continue   # no probe kill, or the status alone shows it had started: not a slow start
        text, previous = run_log(ev, c["name"], cs, term)
        if not text:
            if ev.gap("pods/log"):
                return Unknown.from_gap(ev.gap("pods/log"))
            continue
        text = before_shutdown(text) or text   # the probe's SIGTERM makes its own shutdown traceback
        tail = last_lines(text, 6)
        loading = any(se.loading(l) for l in tail)
        probe_msg = (se.container_events(ev, c["name"], "Unhealthy", PROBE_FAILED)[-1:] or [{}])[0]
        if se.started_before_kill(ev.pod, c, term, text) or re.search(PROBE_WRONG_TARGET, probe_msg.get("message") or "") \
                or (failure_block(text) and not loading):
            continue  # it had started (liveness-probe-failing), wrong probe path, or it failed by itself
        budget, words, probe = se.probe_budget(c)
        observed, how, exact = se.observed_start(ev, c, cs, term, text)
        if observed is None or (exact and budget >= observed) or probe is None:
            continue
        lines = [status_line(c["name"], where(cs, term), term), event_line(kills[-1])]
        lines += [event_line(probe_msg)] if probe_msg else []
        lines += [Line("log", log_ref(ev, c["name"], previous, "last line before the kill"), tail[-1][:300])]
        snippet, threshold = se.startup_snippet(c, probe, observed)
        old = c.get("startupProbe")
        fix = (f"Raise failureThreshold of container {c['name']}'s startupProbe from {int(old.get('failureThreshold') or 3)} "
               f"to {threshold} (with periodSeconds {int(old.get('periodSeconds') or 10)}): its budget of "
               f"{human_duration(budget)} is below the observed start, so the kubelet kills the model load."
               if old else None)
        summary = (f"Container {c['name']} was killed {se.kill_count(kills)} by failed probes while starting: the probes "
                   f"allow {human_duration(budget)}, it needs {how.split(' (')[0]}")
        return Hit(f"Container {c['name']} was killed {se.kill_count(kills)} by the kubelet after failed probes "
                   f"while it was still {'loading' if loading else 'starting (no error, no ready line)'}: {words} "
                   f"allows {human_duration(budget)}, and it needs {how}.",
                   lines, snippet=snippet, rank=SPECIFIC if loading else DEFAULT, summary=summary, fix=fix,
                   values={"container": c["name"], "threshold": threshold})
    return None


LIVENESS_FAILED = r"^Liveness probe (?:failed|errored)"


@rule("liveness-probe-failing", phase="crash", severity="critical", rank=SPECIFIC, applies=has_terminations,
      needs=("events",), title="The liveness probe killed a container that had been serving",
      remediation="Find why $endpoint of container $container stopped answering: read the end of its previous log "
                  "(kubectl logs $pod -n $namespace -c $container --previous). The probe did its job; a startupProbe "
                  "would not help (the container had started).")
def liveness_probe_failing(ev):
    """The kubelet restarted a container after failed liveness probes although it had started and served before.

    Started: its log served, the pod was Ready during that run, or the run outlived by far what probes that never
    pass allow.

    A liveness problem, never a startupProbe's: it names the probe, its numbers, the failures' wording and count.
    Timeouts get room (timeoutSeconds, failureThreshold from the events); refusals and 5xx answers point at the log.
    A warning once the container is Running and Ready again, for an hour after the kill."""
    for c, cs, term, _ in se.recent_kills(ev):
        kills = [k for k in probe_kills(ev, c["name"], term) if not re.search(r"(?i)startup probe", k.get("message") or "")]
        probe = c.get("livenessProbe")
        text, _ = run_log(ev, c["name"], cs, term)
        why = kills and isinstance(probe, dict) and se.started_before_kill(ev.pod, c, term, before_shutdown(text) or text)
        if not why:
            continue
        failed = se.run_events(ev, c["name"], LIVENESS_FAILED, term)
        ready_fails = se.run_events(ev, c["name"], READINESS_FAILED, term)
        said = (failed[-1].get("message") or "").partition(":")[2].strip() if failed else ""
        did, meaning, fix = _probe_meaning(said, probe)
        n = sum(event_count(e) for e in failed)
        snippet = ""
        if fix == "timeout":
            fix, snippet = se.liveness_fix(c, probe, n)
        sev = se.kill_severity(cs, term, ev)
        message, summary = _liveness_words(c, term, probe, kills, failed, ready_fails, said, why, did, meaning)
        lines = [status_line(c["name"], where(cs, term), term), event_line(kills[-1])]
        lines += [event_line(e) for e in (failed[-1:] + ready_fails[-1:])]
        return Hit(message + (se.back_words(ev, cs) if sev else se.loop_words(ev, cs, term)), lines, snippet=snippet, severity=sev,
                   values={"container": c["name"], "endpoint": se.probe_handler(probe)},
                   summary=summary + ("; it is Ready again" if sev else ""),
                   fix=fix if fix != "log" else None, edits="container" if snippet else "")
    return None


def _liveness_words(c, term, probe, kills, failed, ready_fails, said, why, did, meaning):
    """(message, summary) of a liveness kill: the probe, its numbers, the failures' count, span and wording."""
    _, timeout, period, threshold = se.probe_numbers(probe)
    n = sum(event_count(e) for e in failed)
    ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
    step = max(period, timeout)
    times = f"{n} time{'s' if n != 1 else ''}"
    message = (f"Container {c['name']} had started ({why}) when the kubelet killed it after failed liveness probes, "
               f"{se.kill_count(kills)}, exit {term.get('exitCode')} after {human_duration(ran)}: "
               f"{se.probe_handler(probe)} with timeoutSeconds {timeout}, periodSeconds {period}, failureThreshold "
               f"{threshold} (a restart after {threshold} × {step}s = {human_duration(threshold * step)} of failures) "
               f"failed {times}{se.failure_span(failed)}" + (f" ({said[:160]})" if said else "")
               + f": it {did}, {meaning}."
               + (f" That is more failures than the {threshold} in a row that kill: it failed now and then before, "
                  f"slow under load rather than dead." if n > threshold else "")
               + (f" Readiness failed too ({sum(event_count(e) for e in ready_fails)} times)." if ready_fails else ""))
    summary = (f"Container {c['name']} was killed by its liveness probe after {human_duration(ran)} of running: "
               f"{se.probe_handler(probe)} {did} ({n} failure{'s' if n != 1 else ''})")
    return message, summary


def _probe_meaning(said: str, probe: dict):
    """(what the endpoint did, what that says about the server, "timeout" | "log"): too late, or not at all."""
    _, timeout, _, _ = se.probe_numbers(probe)
    status = re.search(PROBE_STATUS, said)
    timed_out_exec = not said.strip() and isinstance(probe.get("exec"), dict)   # an exec timeout leaves no reason
    if re.search(PROBE_TIMEOUT, said) or timed_out_exec:
        return (f"did not answer within {timeout}s", "the endpoint was slow, its answer queued behind the work "
                "(a busy server, CPU throttling, a long engine step)", "timeout")
    if status:
        return (f"answered HTTP {status.group('code')}", "the application reported itself unhealthy (servers such as "
                "vLLM and TGI fail /health once their engine died)", "log")
    if re.search(PROBE_REFUSED, said):
        return "refused the connection", "nothing listened on the port: the server process had stopped", "log"
    return "failed", "read the probe's output and the previous log", "log"
