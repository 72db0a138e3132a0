"""Two mechanisms the r5- blind batch found missing, each on both sides, from the testers' own cases edited one fact at
a time: a child process (a DataLoader worker) killed by the kernel's OOM killer while the container exits 1 is an
OOM kill of the container's memory limit only when the node's OOMKilling event names that child (the log's wording
alone is a clue); a slow crash loop (>= 3 restarts at one every 2 h or oftener) is failing even when Ready now."""
import os
from datetime import datetime, timedelta, timezone

from kubectl_gpudoctor.rules.crash import _startup as se
from tests.casebook import diagnose
from tests.conftest import ROOT
from tests.test_probe_history import _copy, _fired

FAILING = os.path.join(ROOT, "tests", "realworld", "failing")
LOADER = os.path.join(FAILING, "r5-job-dataloader-cgroup-oom")
SEGV = os.path.join(FAILING, "r5-vllm-segfault-ready-again")
KERNEL = ("Memory cgroup out of memory: Killed process 4123 (pt_data_worker) total-vm:3033696kB, anon-rss:1011232kB, "
          "file-rss:81276kB, shmem-rss:0kB, UID:0 pgtables:41236kB oom_score_adj:999")


def _oom_event(message=None, at=None):
    def edit(o):
        if o["kind"] == "Event" and o["reason"] == "OOMKilling":
            if message == "drop":
                return None
            o["message"] = message or o["message"]
            if at:
                o["firstTimestamp"] = o["lastTimestamp"] = at
        return o
    return edit


# --- a DataLoader worker OOM-killed inside a container that exits 1 ---------------------------------------------------

def test_the_worker_named_by_the_nodes_oom_kill_is_the_root_cause_not_the_apps_error():
    diag = diagnose(LOADER)
    f = _fired(diag)
    assert diag.root_cause == "oom-killed" and diag.status == "failing", (diag.root_cause, list(f))
    assert "DataLoader worker (pid 4123)" in f["oom-killed"].message and "not OOMKilled" in f["oom-killed"].message
    assert "at the container's 16Gi memory limit" in f["oom-killed"].message
    assert any("Killed process 4123 (pt_data_worker)" in e.text for e in f["oom-killed"].evidence)
    assert "Job resnet-finetune" in f["oom-killed"].remediation
    assert "num_workers" in f["oom-killed"].snippet
    assert "app-error" not in f   # explained


def test_pids_counted_in_two_namespaces_still_match_by_the_kernels_name_for_the_worker(tmp_path):
    other_pid = KERNEL.replace("process 4123", "process 3504804")   # the node's pid of the container's pid 4123
    diag = diagnose(_copy(LOADER, tmp_path, edit=_oom_event(other_pid)))
    assert diag.root_cause == "oom-killed", diag.root_cause


def test_another_process_killed_at_that_moment_proves_nothing(tmp_path):
    stranger = KERNEL.replace("process 4123 (pt_data_worker)", "process 3504804 (java)")
    diag = diagnose(_copy(LOADER, tmp_path, edit=_oom_event(stranger)))
    assert "oom-killed" not in _fired(diag) and "app-error" in _fired(diag)


def test_a_kill_of_that_worker_ten_minutes_away_is_not_this_exit(tmp_path):
    diag = diagnose(_copy(LOADER, tmp_path, edit=_oom_event(at="2026-11-25T07:28:16Z")))
    assert "oom-killed" not in _fired(diag)


def test_the_loaders_wording_alone_is_a_clue_in_the_apps_error_not_an_oom_claim(tmp_path):
    diag = diagnose(_copy(LOADER, tmp_path, edit=_oom_event("drop")))
    f = _fired(diag)
    assert "oom-killed" not in f and diag.root_cause in (None, "app-error"), (diag.root_cause, list(f))
    msg = f["app-error"].message
    assert "most often the kernel's OOM killer" in msg and "unconfirmed" in msg and "16Gi" in msg, msg
    assert any("reason=OOMKilling" in n for n in f["app-error"].next), f["app-error"].next
    assert "num_workers" in f["app-error"].remediation and "Confirm who killed" in f["app-error"].remediation
    assert "Job resnet-finetune" in f["app-error"].remediation


def test_a_worker_dead_of_a_bus_error_is_neither_oom_nor_the_clue(tmp_path):
    dest = _copy(LOADER, tmp_path)
    log = os.path.join(dest, "logs", "research", "resnet-finetune-9hx2m", "train.previous.log")
    with open(log) as fh:
        text = fh.read().replace("signal: Killed.", "signal: Bus error.")
    with open(log, "w") as fh:
        fh.write(text)
    f = _fired(diagnose(dest))
    assert "oom-killed" not in f
    assert "OOM killer" not in (f["app-error"].message if "app-error" in f else "")


def test_live_reads_the_nodes_oom_events_for_a_child_kill_in_the_log_and_only_then(tmp_path):
    from kubectl_gpudoctor.collect.pod import child_oom_event_requests
    from kubectl_gpudoctor.offline import load as offline
    reqs = child_oom_event_requests(offline.load(LOADER, "Pod"))
    assert [r.query["fieldSelector"] for r in reqs] == [
        "involvedObject.kind=Node,involvedObject.name=a100-node-04,reason=OOMKilling"]
    dest = _copy(LOADER, tmp_path)
    os.remove(os.path.join(dest, "logs", "research", "resnet-finetune-9hx2m", "train.previous.log"))
    assert child_oom_event_requests(offline.load(dest, "Pod")) == []


# --- a slow crash loop caught while Ready -------------------------------------------------------------------------

def _restarts(n, started=None):
    def edit(o):
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("vllm-qwen"):
            o["status"]["containerStatuses"][0]["restartCount"] = n
            if started:
                o["status"]["startTime"] = o["metadata"]["creationTimestamp"] = started
        return o
    return edit


def test_three_segfaults_in_four_hours_ready_now_is_a_failing_pod_whose_fix_names_the_deployment():
    diag = diagnose(SEGV)
    f = _fired(diag)["killed-by-signal"]
    assert diag.root_cause == "killed-by-signal" and diag.status == "failing" and f.severity == "critical"
    assert "3 restarts in 4h" in f.message and "slow crash loop" in f.message, f.message
    assert "Deployment vllm-qwen" in f.remediation and "kubectl rollout undo deployment/vllm-qwen -n llm" in f.remediation
    assert any("restartCount=3" in e.text for e in f.evidence)


def test_one_crash_while_ready_again_stays_a_warning(tmp_path):
    diag = diagnose(_copy(SEGV, tmp_path, edit=_restarts(1)))
    f = _fired(diag)["killed-by-signal"]
    assert f.severity == "warning" and diag.status == "warning" and "slow crash loop" not in f.message
    assert "rollout undo" not in f.remediation


def test_three_restarts_over_a_month_ready_again_stay_a_warning(tmp_path):
    diag = diagnose(_copy(SEGV, tmp_path, edit=_restarts(3, started="2026-10-30T09:15:00Z")))
    assert _fired(diag)["killed-by-signal"].severity == "warning" and diag.status == "warning"


def test_the_loop_needs_a_recent_last_crash_an_older_one_is_history(tmp_path):
    diag = diagnose(_copy(SEGV, tmp_path, collected="2026-11-30T10:15:00Z"))   # 1h17m after the last crash
    assert "killed-by-signal" not in _fired(diag), diag.summary


def _ev(restarts, life_s):
    at = datetime(2026, 11, 30, 9, 15, tzinfo=timezone.utc)
    started = (at - timedelta(seconds=life_s)).strftime("%Y-%m-%dT%H:%M:%SZ")

    class Ev:
        pod = {"status": {"startTime": started}}

        def now(self):
            return at
    return Ev(), {"restartCount": restarts, "ready": True, "state": {"running": {"startedAt": "2026-11-30T09:00:00Z"}}}


def test_the_threshold_is_three_restarts_at_one_every_two_hours_or_oftener():
    term = {"exitCode": 139, "reason": "Error", "startedAt": "2026-11-30T08:00:00Z", "finishedAt": "2026-11-30T08:59:58Z"}
    ev, cs = _ev(3, 6 * 3600)
    assert se.slow_loop(ev, cs, term) and se.kill_severity(cs, term, ev) is None
    ev, cs = _ev(3, 6 * 3600 + 60)
    assert not se.slow_loop(ev, cs, term) and se.kill_severity(cs, term, ev) == "warning"
    ev, cs = _ev(2, 60 * 60)
    assert not se.slow_loop(ev, cs, term)
    ev, cs = _ev(3, 3600)
    assert not se.slow_loop(ev, cs, dict(term, reason="OOMKilled", exitCode=137))   # oom-killed's own window
    assert not se.slow_loop(ev, cs, dict(term, exitCode=0, reason="Completed"))
