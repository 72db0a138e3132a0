"""A container's history before a kill: one that had started and served, then was killed by its liveness probe, is
a liveness problem (liveness-probe-failing), never a slow start; a recent non-OOM kill stays reported for an hour
even when the container is Ready again (a warning), and an older one is history. Each behaviour on both sides."""
import os
import shutil

import yaml

from kubectl_gpudoctor.rules.crash import _startup as se
from tests.casebook import CASES, diagnose

SERVED = os.path.join(CASES, "liveness-probe-failing", "fail-vllm-served-6h-throughput-tail")
SEGV = os.path.join(CASES, "killed-by-signal", "fail-sigsegv-28min-ago-ready-again-warning")
HTTP = {"httpGet": {"path": "/health", "port": 8000, "scheme": "HTTP"}}


def _copy(src, tmp_path, edit=None, collected=None):
    """A copy of a case whose objects pass through `edit(obj)` (returning the object, or None to drop it)."""
    dest = tmp_path / os.path.basename(src)
    shutil.copytree(src, dest)
    if edit:
        path = dest / "objects.yaml"
        objs = [o for o in yaml.safe_load_all(path.read_text()) if o]
        path.write_text(yaml.safe_dump_all([x for x in (edit(o) for o in objs) if x], sort_keys=False))
    if collected:
        meta = yaml.safe_load((dest / "bundle.yaml").read_text())
        meta["collectedAt"] = collected
        (dest / "bundle.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return str(dest)


def _fired(diag):
    return {f.id: f for f in diag.findings}


# --- the probes' window: how long a container whose probes never pass can run --------------------------------------

def test_the_window_is_startup_then_liveness_budget_each_try_the_longer_of_period_and_timeout_plus_the_grace():
    pod = {"spec": {"terminationGracePeriodSeconds": 30}}
    c = {"startupProbe": dict(HTTP, periodSeconds=10, failureThreshold=60),
         "livenessProbe": dict(HTTP, periodSeconds=10, timeoutSeconds=1, failureThreshold=3)}
    assert se.never_answering_s(pod, c) == 30 + 61 * 10 + 4 * 10
    slow = {"livenessProbe": dict(HTTP, initialDelaySeconds=15, periodSeconds=5, timeoutSeconds=30, failureThreshold=3)}
    assert se.never_answering_s({"spec": {}}, slow) == 30 + 15 + 4 * 30   # a 30 s timeout holds the 5 s period


def _run(ran, ready_at=None):
    term = {"startedAt": "2026-12-02T08:00:00Z", "finishedAt": f"2026-12-02T08:{ran // 60:02d}:{ran % 60:02d}Z"}
    cond = {"type": "Ready", "status": "False", "lastTransitionTime": ready_at or "2026-12-02T07:59:30Z"}
    pod = {"spec": {"terminationGracePeriodSeconds": 30}, "status": {"conditions": [cond]}}
    c = {"livenessProbe": dict(HTTP, periodSeconds=10, timeoutSeconds=1, failureThreshold=3)}   # window 30 + 40 s
    return pod, c, term


def test_ready_during_the_run_counts_only_past_the_window_a_never_passing_probe_allows():
    assert se.started_before_kill(*_run(60, ready_at="2026-12-02T08:00:50Z"), "") == ""   # inside 70 s: maybe slow start
    assert "Ready during that run" in se.started_before_kill(*_run(100, ready_at="2026-12-02T08:01:30Z"), "")
    # Ready False since before the run (a container that never got ready): no evidence, 100 s < 2 x 70 s
    assert se.started_before_kill(*_run(100), "") == ""
    assert "far past the 70s" in se.started_before_kill(*_run(141), "")
    assert se.started_before_kill(*_run(139), "") == ""
    assert se.started_before_kill(*_run(30), "INFO:     Application startup complete.") == "its log shows it serving"


# --- severity: Ready again is a warning, a loop caught in a Ready moment is not ---------------------------------------

def test_kill_severity_warning_once_ready_again_unless_a_crash_loop_caught_ready():
    term = {"startedAt": "2026-12-02T08:00:00Z", "finishedAt": "2026-12-02T11:00:00Z"}
    short = {"startedAt": "2026-12-02T08:00:00Z", "finishedAt": "2026-12-02T08:02:00Z"}
    ready = {"state": {"running": {"startedAt": "2026-12-02T11:00:01Z"}}, "ready": True, "restartCount": 5}
    assert se.kill_severity(ready, term) == "warning"
    assert se.kill_severity(ready, short) is None            # 5 restarts of 2 minutes: still the loop
    assert se.kill_severity(dict(ready, restartCount=1), short) == "warning"
    assert se.kill_severity(dict(ready, ready=False), term) is None


# --- the hour a non-OOM kill stays news -----------------------------------------------------------------------------

def test_a_sigsegv_ready_again_is_a_warning_for_an_hour_then_history(tmp_path):
    inside = diagnose(_copy(SEGV, tmp_path / "a", collected="2026-12-03T11:01:00Z"))    # 58m49s after the kill
    outside = diagnose(_copy(SEGV, tmp_path / "b", collected="2026-12-03T11:03:00Z"))   # 60m49s after
    assert _fired(inside)["killed-by-signal"].severity == "warning" and inside.status == "warning"
    assert int(inside.exit_code) == 0
    assert "killed-by-signal" not in _fired(outside) and outside.status == "healthy", outside.summary


def test_the_same_kill_while_the_container_is_not_ready_stays_critical(tmp_path):
    def unready(o):
        if o["kind"] == "Pod":
            o["status"]["containerStatuses"][0]["ready"] = False
            for cond in o["status"]["conditions"]:
                if cond["type"] in ("Ready", "ContainersReady"):
                    cond["status"] = "False"
        return o
    diag = diagnose(_copy(SEGV, tmp_path, edit=unready, collected="2026-12-03T10:05:00Z"))
    assert _fired(diag)["killed-by-signal"].severity == "critical" and diag.status == "failing"


# --- liveness, not slow start ---------------------------------------------------------------------------------------

def test_a_six_hour_run_is_not_a_slow_start_but_the_same_kill_80s_in_is(tmp_path):
    served = diagnose(SERVED)
    assert served.root_cause == "liveness-probe-failing"
    assert "probe-kills-slow-start" not in _fired(served)
    assert "startupProbe:" not in (_fired(served)["liveness-probe-failing"].snippet or "")

    def short_run(o):   # the same pod and events, its killed run 80 s long, never Ready in it
        if o["kind"] == "Pod":
            last = o["status"]["containerStatuses"][0]["lastState"]["terminated"]
            last["startedAt"] = "2026-12-02T14:31:02Z"
            for cond in o["status"]["conditions"]:
                if cond["type"] in ("Ready", "ContainersReady"):
                    cond["lastTransitionTime"] = o["metadata"]["creationTimestamp"]
        return o
    slow = diagnose(_copy(SERVED, tmp_path, edit=short_run))
    assert "liveness-probe-failing" not in _fired(slow)
    assert slow.root_cause == "probe-kills-slow-start", (slow.root_cause, list(_fired(slow)))


def test_a_startup_probe_kill_is_never_a_liveness_problem(tmp_path):
    def startup_kill(o):
        if o["kind"] == "Event" and o["reason"] == "Killing":
            o["message"] = "Container vllm failed startup probe, will be restarted"
        return o
    diag = diagnose(_copy(SERVED, tmp_path, edit=startup_kill))
    assert "liveness-probe-failing" not in _fired(diag)


def test_a_5xx_answer_points_at_the_log_and_proposes_no_probe_numbers(tmp_path):
    def unhealthy(o):
        if o["kind"] == "Event" and o["message"].startswith("Liveness probe failed"):
            o["message"] = "Liveness probe failed: HTTP probe failed with statuscode: 503"
        return o
    f = _fired(diagnose(_copy(SERVED, tmp_path, edit=unhealthy)))["liveness-probe-failing"]
    assert "answered HTTP 503" in f.message and "reported itself unhealthy" in f.message
    assert not f.snippet and "--previous" in f.remediation and "timeoutSeconds" not in f.remediation


def test_a_refused_connection_says_the_server_stopped_listening(tmp_path):
    def refused(o):
        if o["kind"] == "Event" and o["message"].startswith("Liveness probe failed"):
            o["message"] = ('Liveness probe failed: Get "http://10.244.3.17:8000/health": dial tcp 10.244.3.17:8000: '
                            "connect: connection refused")
        return o
    f = _fired(diagnose(_copy(SERVED, tmp_path, edit=refused)))["liveness-probe-failing"]
    assert "refused the connection" in f.message and not f.snippet


def test_without_a_liveness_probe_the_rule_stays_silent(tmp_path):
    def no_liveness(o):
        if o["kind"] == "Pod":
            o["spec"]["containers"][0].pop("livenessProbe")
        return o
    assert "liveness-probe-failing" not in _fired(diagnose(_copy(SERVED, tmp_path, edit=no_liveness)))


# --- the numbers a timeout fix proposes -----------------------------------------------------------------------------

def test_timeout_fix_numbers():
    c = {"name": "vllm"}
    fix, snippet = se.liveness_fix(c, dict(HTTP, periodSeconds=10, timeoutSeconds=1, failureThreshold=3), 3)
    assert "timeoutSeconds 1 → 5" in fix and "failureThreshold 3 → 6" in fix
    assert "timeoutSeconds: 5" in snippet and "6 × 10s = 60s" in snippet
    fix, snippet = se.liveness_fix(c, dict(HTTP, periodSeconds=15, timeoutSeconds=10, failureThreshold=4), 4)
    assert "timeoutSeconds 10 → 20" in fix and "8 × 20s" in snippet      # each try waits the 20 s timeout
    fix, snippet = se.liveness_fix(c, dict(HTTP, periodSeconds=5, timeoutSeconds=30, failureThreshold=3), 44)
    assert "already generous" in fix and "timeoutSeconds: 30   # kept" in snippet
    assert "failureThreshold 3 → 9" in fix                               # the 44 failures, capped at 3 x 3
    assert "startupProbe:" not in fix + snippet


def test_probe_handler_words():
    assert se.probe_handler(HTTP) == "GET /health on port 8000"
    assert se.probe_handler({"tcpSocket": {"port": 8000}}) == "TCP :8000"
    assert se.probe_handler({"exec": {"command": ["sh", "-c", "curl -sf localhost:8000/health"]}}) == \
        "exec sh -c curl -sf localhost:8000/health"
    assert se.probe_handler({"grpc": {"port": 9000}}) == "gRPC :9000"


# --- memory after an OOM kill: the kill's own figure, else how to measure ----------------------------------------

NPD = os.path.join(CASES, "oom-killed", "fail-no-limit-npd-oomkilling-peak")


def test_the_kernels_oom_figure_counts_only_for_the_kill_it_describes(tmp_path):
    near = _fired(diagnose(NPD))["oom-killed"]
    assert "memory: 34Gi" in near.snippet

    def later(o):   # the same kernel line ten minutes after the container's kill: another kill, not this one
        if o["kind"] == "Event" and o["reason"] == "OOMKilling":
            o["firstTimestamp"] = o["lastTimestamp"] = "2026-11-30T09:03:51Z"
        return o

    def elsewhere(o):
        if o["kind"] == "Event" and o["reason"] == "OOMKilling":
            o["involvedObject"] = {"kind": "Node", "name": "gpu-node-12", "uid": "gpu-node-12"}
        return o
    for edit in (later, elsewhere):
        f = _fired(diagnose(_copy(NPD, tmp_path / edit.__name__, edit=edit)))["oom-killed"]
        assert "memory: <measured peak + 25%>" in f.snippet and "34Gi" not in f.snippet, f.snippet
        assert "cat /sys/fs/cgroup/memory.peak" in f.snippet


def test_a_runtime_init_oom_reads_a_tiny_limit_as_a_unit_slip_never_a_multiple():
    from kubectl_gpudoctor.rules.crash import _memory as mem
    assert mem.init_oom_sizing("8Mi")[0] == "8Gi" and "8Gi was probably meant" in mem.init_oom_sizing("8Mi")[1]
    assert mem.init_oom_sizing("512Mi")[0] == mem.MEASURE
    assert mem.init_oom_sizing(None)[0] == mem.MEASURE


def test_the_failures_span_reads_timestamps_as_times_not_text():
    from datetime import datetime, timezone
    events = [{"firstTimestamp": "2026-11-12T11:15:48Z", "lastTimestamp": datetime(2026, 11, 14, 9, 22, 48, tzinfo=timezone.utc)},
              {"firstTimestamp": "2026-11-13T00:00:00.000000Z", "lastTimestamp": "2026-11-13T01:00:00Z"}]
    assert se.failure_span(events) == " over 46h7m"
    assert se.failure_span([]) == "" and se.failure_span([{"lastTimestamp": "2026-11-13T01:00:00Z"}]) == ""


def test_without_logs_the_status_alone_rules_out_a_slow_start(tmp_path):
    """pods/log forbidden: the 6 h run and the Ready condition still say the container had started, so the slow-start
    check passes instead of waiting on the log, and the liveness kill is reported from status and events."""
    dest = tmp_path / "nolog"
    shutil.copytree(SERVED, dest)
    shutil.rmtree(dest / "logs")
    meta = yaml.safe_load((dest / "bundle.yaml").read_text())
    meta["gaps"] = [{"source": "pods/log", "reason": "forbidden", "verb": "get",
                     "detail": 'pods "qwen-14b-7b9c6d5f48-t8wzq" is forbidden: User "dev-bob" cannot get resource '
                               '"pods/log" in API group "" in the namespace "llm"'}]
    (dest / "bundle.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    diag = diagnose(str(dest))
    check = {c.id: c.result for c in diag.checks}
    assert check["probe-kills-slow-start"] == "passed", check["probe-kills-slow-start"]
    assert diag.root_cause == "liveness-probe-failing"
    assert "Ready during that run" in _fired(diag)["liveness-probe-failing"].message


def test_an_exec_probe_that_timed_out_leaves_an_empty_reason_and_reads_as_a_timeout(tmp_path):
    """Since 1.20 the kubelet enforces exec timeouts and the event says only `Liveness probe failed: `
    (kubernetes/kubernetes#106111): a timeout, advised as one; an HTTP probe's empty reason is not guessed at."""
    def exec_probe(o):
        if o["kind"] == "Pod":
            c = o["spec"]["containers"][0]
            c["livenessProbe"] = {"exec": {"command": ["sh", "-c", "curl -sf localhost:8000/health"]},
                                  "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1}
        if o["kind"] == "Event" and o["message"].startswith("Liveness probe failed"):
            o["message"] = "Liveness probe failed: "
        return o
    f = _fired(diagnose(_copy(SERVED, tmp_path / "exec", edit=exec_probe)))["liveness-probe-failing"]
    assert "exec sh -c curl -sf localhost:8000/health did not answer within 1s" in f.summary
    assert "kubectl exec with `time`" in f.remediation and "timeoutSeconds: 5" in f.snippet

    def empty_http(o):
        if o["kind"] == "Event" and o["message"].startswith("Liveness probe failed"):
            o["message"] = "Liveness probe failed: "
        return o
    f = _fired(diagnose(_copy(SERVED, tmp_path / "http", edit=empty_http)))["liveness-probe-failing"]
    assert not f.snippet and "--previous" in f.remediation
