"""The installed plugin against the suite's API server over TLS: verdicts, gaps, read-only requests, kubectl."""
import os
import subprocess

import pytest

from tests.casebook import all_cases, diagnose, expectations
from tests.conftest import ROOT
from tests.live import assert_read_only, clean_env, run_json, run_plugin, serving

HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
FIRST_SLICE = ("oom-killed", "killed-by-signal", "completed-under-controller", "command-not-found", "app-error",
               "crash-backoff", "runtimeclass-not-found", "missing-config-reference", "image-pull-failed",
               "insufficient-gpu", "untolerated-taint")


def _target(path):
    import yaml
    with open(os.path.join(path, "bundle.yaml")) as f:
        return (yaml.safe_load(f) or {})["target"]


def offline_evidence(case):
    from kubectl_gpudoctor.offline import load as offline
    return offline.load(case, "Pod")


def _clock_free(case, root_cause):
    """The case gives its root cause whatever today's date is (a live run reads the wall clock)."""
    from datetime import datetime, timezone
    from kubectl_gpudoctor import verdict
    ev = offline_evidence(case)
    ev.collected_at = datetime.now(timezone.utc)
    return verdict.diagnose_pod(ev).root_cause == root_cause


def _first_slice_fail_cases():
    out = []
    for rid, kind, path in all_cases():
        exp = expectations(path)
        partial = os.path.exists(os.path.join(path, "bundle.yaml")) and "gaps:" in open(os.path.join(path, "bundle.yaml")).read()
        if partial or exp.get("live") is False:
            continue  # a case modelling partial visibility is not a full cluster to serve
        if rid in FIRST_SLICE and kind == "fail" and exp.get("rootCause") == rid and _target(path)["kind"] == "Pod" \
                and _clock_free(path, rid):
            out.append(pytest.param(path, id=f"{rid}/{os.path.basename(path)}"))
    return out or [pytest.param(None, marks=pytest.mark.skip("no first-slice cases yet"))]


@pytest.mark.parametrize("case", _first_slice_fail_cases())
def test_first_slice_root_cause_live(case, tmp_path):
    target = _target(case)
    with serving(case, tmp_path, namespace=target["namespace"]) as (srv, kc):
        proc, doc = run_json(target["name"], "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1, proc.stderr
    assert doc["apiVersion"] == "gpudoctor/v1" and doc["kind"] == "PodDiagnosis"
    assert doc["rootCause"] == expectations(case)["rootCause"], doc["summary"]
    assert doc["status"] == "failing"
    assert set(doc) >= {"target", "status", "phase", "rootCause", "summary", "findings", "checks", "gaps",
                        "nextCommands", "collectedAt"}


def test_healthy_gpu_pod_is_healthy(tmp_path):
    target = _target(HEALTHY)
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        proc, doc = run_json(target["name"], "--kubeconfig", kc)
        text = run_plugin(target["name"], "--kubeconfig", kc, "--color", "never")
    assert_read_only(srv)
    assert proc.returncode == 0 and text.returncode == 0, proc.stderr
    assert doc["status"] == "healthy" and doc["rootCause"] is None
    assert not [f for f in doc["findings"] if f["severity"] == "critical"]
    assert text.stdout.startswith("HEALTHY")
    assert proc.stderr == "" and text.stderr == ""


CASE_DIR = os.path.join(ROOT, "tests", "cases")


@pytest.mark.parametrize("source,resource,kwargs,case,lost", [
    # each source forbidden on a case whose verdict depends on it: the root cause it gave is no longer claimed
    # (the scheduler's own message still says every node lacks GPUs, so insufficient-gpu may stand on it)
    ("nodes", "nodes", {}, "insufficient-gpu/fail-fragmented", None),
    ("events", "events", {}, "runtime-handler-not-configured/fail-containerd16-toolkit-not-ready",
     "runtime-handler-not-configured"),
    ("pods/log", "pods", {"subresource": "log"}, "app-error/fail-python-traceback", "app-error"),
    # (the runtime-handler verdict stands on the kubelet's events; whether the RuntimeClass exists is unknown)
    ("runtimeclasses", "runtimeclasses", {}, "runtime-handler-not-configured/fail-containerd16-toolkit-not-ready",
     None),
])
def test_forbidden_source_becomes_a_gap(source, resource, kwargs, case, lost, tmp_path):
    """403 is not absence: the tool still answers, and the checks needing that source say why they did not run."""
    case = os.path.join(CASE_DIR, case) if case else HEALTHY
    target = _target(case)
    with serving(case, tmp_path, namespace=target["namespace"]) as (srv, kc):
        srv.forbid(resource, **kwargs)
        proc, doc = run_json(target["name"], "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode in (0, 1), proc.stderr
    gaps = [g for g in doc["gaps"] if g["source"] == source]
    assert gaps and gaps[0]["reason"] == "forbidden", doc["gaps"]
    assert "forbidden" in gaps[0]["detail"]
    unknown = [c for c in doc["checks"] if c["result"] == "unknown"]
    assert any("forbidden" in c["reason"] and source.split("/")[-1] in c["reason"] for c in unknown), doc["checks"]
    if lost:
        assert lost not in [f["id"] for f in doc["findings"]], "a verdict was drawn from an unreadable source"
        assert next(c for c in doc["checks"] if c["id"] == lost)["result"] == "unknown"
    from kubectl_gpudoctor.rules import RULES
    for check in doc["checks"]:
        if source in RULES[check["id"]].needs and check["result"] != "not-applicable":
            assert check["result"] == "unknown" and "forbidden" in check["reason"], check


def test_forbidden_nodes_for_a_pending_pod_is_unknown_not_absent(tmp_path):
    """With nodes unreadable, a Pending GPU pod is never told "no GPU nodes"."""
    cases = [p for rid, kind, p in all_cases() if rid == "insufficient-gpu" and kind == "fail"]
    if not cases:
        pytest.skip("no insufficient-gpu case yet")
    case = cases[0]
    with serving(case, tmp_path, namespace=_target(case)["namespace"]) as (srv, kc):
        srv.forbid("nodes")
        proc, doc = run_json(_target(case)["name"], "--kubeconfig", kc)
    assert_read_only(srv)
    assert doc["rootCause"] != "gpu-not-advertised"
    assert any(g["source"] == "nodes" and g["reason"] == "forbidden" for g in doc["gaps"])
    unknown = [c for c in doc["checks"] if c["result"] == "unknown"]
    assert any("needs list nodes" in c["reason"] for c in unknown), unknown


def _pod_cases():
    out = []
    for rid, kind, path in all_cases():
        meta_path = os.path.join(path, "bundle.yaml")
        import yaml
        meta = yaml.safe_load(open(meta_path)) if os.path.exists(meta_path) else {}
        if (meta.get("target") or {}).get("kind", "Pod") != "Pod" or meta.get("gaps") or "sources" in meta:
            continue  # cases that model partial visibility are not a full cluster to serve
        if expectations(path).get("live") is False:
            continue
        out.append(pytest.param(path, id=f"{rid}/{os.path.basename(path)}"))
    return out


@pytest.mark.parametrize("case", _pod_cases())
def test_live_collection_sees_what_the_rules_need(case, tmp_path):
    """Served over HTTP, every case gets the same root cause and critical findings as read from disk:
    the collector fetches everything the rules need."""
    from kubectl_gpudoctor import verdict
    from kubectl_gpudoctor.collect.kubeconfig import ConnOptions
    from kubectl_gpudoctor.collect.pod import collect_pod

    offline = diagnose(case)
    target = _target(case)
    with serving(case, tmp_path, namespace=target["namespace"]) as (srv, kc):
        ev = collect_pod(ConnOptions(kubeconfig=kc), target["name"])
    assert_read_only(srv)
    ev.collected_at = offline_evidence(case).collected_at   # the case's frozen clock, not today's
    live = verdict.diagnose_pod(ev)
    critical = lambda d: sorted(f.id for f in d.findings if f.severity == "critical")
    assert (live.root_cause, critical(live)) == (offline.root_cause, critical(offline)), live.summary


def test_real_kubectl_runs_the_plugin(tmp_path):
    """kubectl finds kubectl-gpudoctor on PATH and runs it; the plugin reads kubectl's own flags."""
    target = _target(HEALTHY)
    env = clean_env(HOME=str(tmp_path))
    listed = subprocess.run(["kubectl", "plugin", "list"], capture_output=True, text=True, env=env)
    assert "kubectl-gpudoctor" in listed.stdout, listed.stdout + listed.stderr
    with serving(HEALTHY, tmp_path, namespace="default") as (srv, kc):
        proc = subprocess.run(["kubectl", "gpudoctor", target["name"], "-n", "serving", "--kubeconfig", kc, "-o", "json"],
                              capture_output=True, text=True, env=env, timeout=60)
        version = subprocess.run(["kubectl", "gpudoctor", "--version"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert '"status": "healthy"' in proc.stdout
    assert version.stdout.startswith("kubectl-gpudoctor ")
    assert_read_only(srv)


# --- failures before a verdict: one line on stderr, the contract's exit code -------------------------------

def _one_line_error(proc, code):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_unknown_pod_exits_2(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        line = _one_line_error(run_plugin("no-such-pod", "--kubeconfig", kc), 2)
    assert 'pods "no-such-pod" not found' in line


def test_forbidden_target_exits_3(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        srv.forbid("pods", name=_target(HEALTHY)["name"])
        line = _one_line_error(run_plugin(_target(HEALTHY)["name"], "--kubeconfig", kc), 3)
    assert "forbidden" in line


def test_wrong_token_exits_3(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        text = open(kc).read().replace(srv.token, "not-the-token")
        open(kc, "w").write(text)
        line = _one_line_error(run_plugin(_target(HEALTHY)["name"], "--kubeconfig", kc), 3)
    assert "Unauthorized" in line


def test_slow_server_times_out_with_exit_3(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        srv.delay("pods", seconds=3)
        line = _one_line_error(run_plugin(_target(HEALTHY)["name"], "--kubeconfig", kc, "--request-timeout", "1s"), 3)
    assert "timed out" in line


def test_unreachable_server_exits_3(tmp_path):
    import shutil
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        shutil.copy(srv.ca_file, tmp_path / "ca.crt")   # keep the CA; the server is gone once the block ends
        text = open(kc).read().replace(srv.ca_file, str(tmp_path / "ca.crt"))
        open(kc, "w").write(text)
    line = _one_line_error(run_plugin("anything", "--kubeconfig", kc), 3)
    assert "API server" in line


def test_slow_secondary_read_is_a_timeout_gap(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        srv.delay("runtimeclasses", seconds=3)
        proc, doc = run_json(_target(HEALTHY)["name"], "--kubeconfig", kc, "--request-timeout", "1s")
    assert proc.returncode in (0, 1)
    assert {"source": "runtimeclasses", "reason": "timeout"}.items() <= next(
        g for g in doc["gaps"] if g["source"] == "runtimeclasses").items()
