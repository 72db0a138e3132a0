"""Faults give honest answers: odd 200 bodies are gaps, refused is not a timeout, TLS names the server, stderr one line."""
import os
import shutil
import socket

import yaml

from tests.apiserver import FakeApiServer, _make_cert, load_case
from tests.conftest import ROOT
from tests.live import run_json, run_plugin

HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
PENDING = os.path.join(ROOT, "examples", "pending-fragmented-gpus")
INIT = os.path.join(ROOT, "tests", "cases", "init-container-failing", "pass-init-still-downloading")
POD = "chat-6b7c9d8f4-m2kqz"


class _Garbling(FakeApiServer):
    """Answers 200 with a body that is not the JSON object the API promises (a proxy's login page, a bare list)."""

    def __init__(self, *args, garble=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.garble = garble or {}

    def _serve(self, req, query, accept):
        if req.resource in self.garble and req.sub is None:
            return self.garble[req.resource]
        return super()._serve(req, query, accept)


def test_a_200_that_is_not_an_object_is_a_gap_not_an_empty_list(tmp_path):
    objects, logs = load_case(PENDING)
    pod = next(o for o in objects if o["kind"] == "Pod" and o["spec"].get("schedulerName", "x") and
               not o["spec"].get("nodeName"))
    for body in (b"<html><body>Sign in to the corporate proxy</body></html>", b"[]", b'"ok"'):
        with _Garbling(objects, logs, garble={"nodes": body}) as srv:
            kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace=pod["metadata"]["namespace"])
            proc, doc = run_json(pod["metadata"]["name"], "--kubeconfig", kc)
        assert proc.returncode in (0, 1, 3), proc.stderr
        assert "nodes" in {g["source"] for g in doc["gaps"]}, (body, doc["gaps"])
        assert doc["rootCause"] not in ("gpu-nodes-unavailable", "gpu-not-advertised"), doc["summary"]
        assert "no GPU node" not in proc.stdout and "no node" not in doc["summary"].lower(), doc["summary"]


def test_a_scan_whose_pod_list_is_not_an_object_fails_in_one_line(tmp_path):
    objects, logs = load_case(HEALTHY)
    with _Garbling(objects, logs, garble={"pods": b"<html>gateway</html>"}) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        scan = run_plugin("scan", "--kubeconfig", kc)
        find = run_plugin(POD, "-A", "--kubeconfig", kc)
    for proc in (scan, find):
        assert proc.returncode == 3, proc.stderr
        assert proc.stderr.count("\n") == 1 and "internal error" not in proc.stderr, proc.stderr


def test_a_pod_stuck_in_init_for_hours_with_events_forbidden_is_not_still_starting(tmp_path):
    case = tmp_path / "init"
    shutil.copytree(INIT, case)
    meta = yaml.safe_load((case / "bundle.yaml").read_text())
    meta["collectedAt"] = "2026-11-30T15:26:00Z"     # six hours after the init container started
    meta["gaps"] = [{"source": "events", "reason": "forbidden", "verb": "list",
                     "detail": 'events is forbidden: User "dev" cannot list resource "events" in API group "" '
                               'in the namespace "ml-serving"'}]
    (case / "bundle.yaml").write_text(yaml.safe_dump(meta))
    proc, doc = run_json("--from", str(case))
    assert "still starting" not in doc["summary"], doc["summary"]
    assert doc["status"] in ("failing", "unknown") and proc.returncode != 0
    assert "events" in doc["summary"] and "6h" in doc["summary"].replace(" ", ""), doc["summary"]


def _kubeconfig(path, server, cluster=None, user=None):
    cluster = dict({"server": server}, **(cluster or {}))
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": user or {"token": "t0ken"}}]}))
    return str(path)


def test_connection_refused_is_not_a_timeout(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()   # nothing listens there now
    proc = run_plugin("pod", "x", "--kubeconfig", _kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{port}"))
    assert proc.returncode == 3
    assert "timed out" not in proc.stderr and "refused" in proc.stderr, proc.stderr
    assert f"https://127.0.0.1:{port}" in proc.stderr and proc.stderr.count("\n") == 1


def test_tls_failure_names_the_server_and_the_reason(tmp_path):
    objects, logs = load_case(HEALTHY)
    (tmp_path / "other").mkdir()
    other_ca, _ = _make_cert(tmp_path / "other")
    with FakeApiServer(objects, logs) as srv:
        kc = _kubeconfig(tmp_path / "kc", srv.url, {"certificate-authority": str(other_ca)})
        proc = run_plugin(POD, "-n", "serving", "--kubeconfig", kc)
    assert proc.returncode == 3
    assert srv.url in proc.stderr and "certificate verify failed" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


def test_stderr_stays_one_line_without_library_warnings(tmp_path):
    objects, logs = load_case(HEALTHY)
    with FakeApiServer(objects, logs) as srv:
        insecure = _kubeconfig(tmp_path / "kc1", srv.url, {"insecure-skip-tls-verify": True}, {"token": srv.token})
        ok = run_plugin(POD, "-n", "serving", "--kubeconfig", insecure)
        failing_exec = _kubeconfig(tmp_path / "kc2", srv.url, {"insecure-skip-tls-verify": True}, {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": "false", "interactiveMode": "Never"}})
        denied = run_plugin(POD, "-n", "serving", "--kubeconfig", failing_exec)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    assert denied.returncode == 3 and denied.stderr.count("\n") == 1, denied.stderr
    assert "ERROR:root" not in denied.stderr and "Warning" not in denied.stderr
