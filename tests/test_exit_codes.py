"""Every exit-code branch of the contract (shared/design/contract.md): 0 no critical finding, 1 a problem diagnosed
or a failing target no rule explains, 2 usage or bad input, 3 could not diagnose (or a check crashed), 130
interrupted — first on the documents that own the code, then through the installed command."""
import os
import shutil
import signal
import subprocess

import pytest
import yaml

from kubectl_gpudoctor.exitcodes import Exit
from kubectl_gpudoctor.report import Check, Diagnosis, Finding, ScanReport
from tests.apiserver import FakeApiServer, load_case
from tests.casebook import CASES, diagnose
from tests.live import clean_env, plugin_path, run_plugin

CRASHLOOP = os.path.join(CASES, "app-error", "fail-python-traceback")   # exit 1, traceback in the previous log
POD = "qwen3-api-6f5d8c7b9-r2k8t"


def finding(severity):
    return Finding(id="x", phase="crash", severity=severity, title="t", message="m", evidence=[], remediation="r.",
                   snippet="", docs="")


def diag(status, health, findings=(), checks=(), members=()):
    return Diagnosis(kind="PodDiagnosis", target={"kind": "Pod", "namespace": "ml", "name": "p", "node": None},
                     status=status, phase="Running", root_cause=None, summary="s", findings=list(findings),
                     checks=list(checks), health=health, members=list(members))


CRASHED = Check("oom-killed", "unknown", "internal error: KeyError: 'x'", internal=True)


@pytest.mark.parametrize("d,code", [
    pytest.param(diag("failing", "failing", [finding("critical")]), Exit.PROBLEM, id="critical-finding"),
    pytest.param(diag("warning", "healthy", [finding("critical")]), Exit.PROBLEM, id="a-critical-finding-alone"),
    pytest.param(diag("failing", "failing", checks=[Check("app-error", "unknown", "pods/log forbidden")]),
                 Exit.PROBLEM, id="failing-unexplained-with-unknown-checks"),
    pytest.param(diag("unknown", "failing"), Exit.PROBLEM, id="unknown-but-the-target-fails"),
    pytest.param(diag("failing", "failing", checks=[CRASHED]), Exit.PROBLEM, id="failing-beats-a-crashed-check"),
    pytest.param(diag("unknown", "healthy", checks=[CRASHED]), Exit.UNDIAGNOSABLE, id="crashed-check"),
    pytest.param(diag("healthy", "healthy", members=[diag("unknown", "healthy", checks=[CRASHED])]),
                 Exit.UNDIAGNOSABLE, id="crashed-check-in-a-workload-pod"),
    pytest.param(diag("unknown", "progressing", checks=[Check("cni-failure", "unknown", "events forbidden")]),
                 Exit.OK, id="still-starting-and-unknown"),
    pytest.param(diag("warning", "healthy", [finding("warning")]), Exit.OK, id="warning-only"),
    pytest.param(diag("healthy", "healthy", [finding("info")]), Exit.OK, id="healthy"),
])
def test_diagnosis_exit_code_branches(d, code):
    assert d.exit_code == code


@pytest.mark.parametrize("items,code,status", [
    ([diag("healthy", "healthy"), diag("failing", "failing", [finding("critical")]),
      diag("unknown", "healthy", checks=[CRASHED])], Exit.PROBLEM, "failing"),
    ([diag("healthy", "healthy"), diag("unknown", "healthy", checks=[CRASHED])], Exit.UNDIAGNOSABLE, "warning"),
    ([diag("warning", "healthy", [finding("warning")])], Exit.OK, "warning"),
    ([diag("healthy", "healthy")], Exit.OK, "healthy"),
    ([], Exit.OK, "healthy"),
])
def test_scan_exit_code_branches(items, code, status):
    report = ScanReport(scope="all namespaces", items=items, gpu_pods=len(items))
    assert (report.exit_code, report.status) == (code, status)


def test_a_scan_counts_only_failing_pods_as_unexplained():
    """A pod whose check crashed (exit 3) is not "unexplained" (that bucket is for failing pods no rule explains)."""
    report = ScanReport(scope="ml", items=[diag("unknown", "healthy", checks=[CRASHED]), diag("failing", "failing")],
                        gpu_pods=2)
    assert report.by_root_cause == {"none": 1, "unexplained": 1}


def test_the_contract_numbers():
    assert [(e.name, int(e)) for e in Exit] == [("OK", 0), ("PROBLEM", 1), ("USAGE", 2), ("UNDIAGNOSABLE", 3),
                                               ("INTERRUPTED", 130)]


def test_a_healthy_pod_exits_0():
    proc = run_plugin("--from", os.path.join(CASES, "crash-backoff", "pass-no-restarts"))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)


def _without_logs(tmp_path):
    """The crash-looping pod of a real case, as a bundle taken by someone who may not read pods/log."""
    dest = tmp_path / "bundle"
    shutil.copytree(CRASHLOOP, dest, ignore=shutil.ignore_patterns("logs", "expect.yaml"))
    meta = yaml.safe_load((dest / "bundle.yaml").read_text())
    meta["sources"] = ["pods", "events", "nodes", "runtimeclasses", "persistentvolumeclaims", "secrets", "configmaps"]
    meta["gaps"] = [{"source": "pods/log", "reason": "forbidden", "verb": "get",
                     "detail": f'pods "{POD}" is forbidden: User "dev-alice" cannot get resource "pods/log" in API '
                               'group "" in the namespace "genai"'}]
    (dest / "bundle.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return str(dest)


def test_a_failing_pod_whose_explaining_checks_could_not_run_exits_1(tmp_path):
    """No critical finding (the log that would explain the crash is forbidden): still a problem, never 0."""
    path = _without_logs(tmp_path)
    d = diagnose(path)
    assert d.status == "failing" and d.root_cause is None, (d.status, d.root_cause, d.summary)
    assert not [f for f in d.findings if f.severity == "critical"]
    assert any(c.result == "unknown" for c in d.checks)
    proc = run_plugin("--from", path, "-o", "json")
    assert proc.returncode == 1, proc.stderr


def test_a_crashed_check_on_a_healthy_pod_exits_3(monkeypatch):
    """A rule that raises is a bug: the report lists it and the exit code refuses to claim "no problem"."""
    from kubectl_gpudoctor import verdict
    from kubectl_gpudoctor.offline import load as offline
    from kubectl_gpudoctor.rules.registry import RULES
    ev = offline.load(os.path.join(CASES, "app-error", "pass-specific-explains"), "Pod")
    ev_ok = offline.load(os.path.join(CASES, "crash-backoff", "pass-no-restarts"), "Pod")
    healthy = verdict.diagnose_pod(ev_ok)
    assert healthy.exit_code == Exit.OK, healthy.summary
    rule = next(r for r in RULES.values() if "Pod" in r.targets and (r.applies is None or r.applies(ev_ok))
                and not any(ev_ok.gap(s) for s in r.needs))

    def broken(_ev):
        raise KeyError("spec")
    from kubectl_gpudoctor.record import replace
    monkeypatch.delenv("GPUDOCTOR_STRICT", raising=False)   # the suite makes rule bugs raise; a user's run lists them
    monkeypatch.setitem(RULES, rule.id, replace(rule, check=broken))
    d = verdict.diagnose_pod(ev_ok)
    assert [c.id for c in d.checks if c.internal] == [rule.id]
    assert d.status == "unknown" and d.exit_code == Exit.UNDIAGNOSABLE, (d.status, d.summary)
    assert verdict.diagnose_pod(ev).exit_code == Exit.PROBLEM   # a diagnosed problem still says 1


@pytest.mark.parametrize("args", [["--no-such-flag", POD], ["--from", CRASHLOOP, "no-such-pod"],
                                  ["--from", "/nonexistent/bundle"], ["--tail", "0", POD]])
def test_usage_and_bad_input_exit_2(args):
    proc = run_plugin(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_cluster_unreachable_and_unauthorized_exit_3(tmp_path):
    objects, logs = load_case(CRASHLOOP)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="genai")
        good = run_plugin(POD, "--kubeconfig", kc, "-o", "json")
        wrong = run_plugin(POD, "--kubeconfig", kc, "--token", "not-the-token")
        ca = shutil.copy(srv.ca_file, tmp_path / "ca.crt")
        port = srv.port
    gone = (tmp_path / "kc").read_text().replace(str(srv.ca_file), str(ca))
    (tmp_path / "kc").write_text(gone)
    assert f":{port}" in gone
    srv_gone = run_plugin(POD, "--kubeconfig", kc)   # the same kubeconfig once the server has stopped
    assert good.returncode == 1, good.stderr
    for proc in (wrong, srv_gone):
        assert proc.returncode == 3, (proc.returncode, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_interrupted_exits_130(tmp_path):
    """Ctrl-C while the pod's answer is awaited: one line, exit 130, no traceback."""
    objects, logs = load_case(CRASHLOOP)
    with FakeApiServer(objects, logs) as srv:
        gate = srv.hold("pods", name=POD)
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="genai")
        proc = subprocess.Popen([plugin_path(), POD, "--kubeconfig", kc], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=clean_env())
        try:
            assert gate.arrived.acquire(timeout=30), "the pod's GET never reached the server"
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
