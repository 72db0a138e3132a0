"""Runs the installed plugin (and the real kubectl) as subprocesses against the suite's API server."""
import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager

from tests.apiserver import FakeApiServer, load_case, load_metrics

BIN_DIR = os.path.dirname(sys.executable)


def plugin_path() -> str:
    candidate = os.path.join(BIN_DIR, "kubectl-gpudoctor")
    found = candidate if os.path.exists(candidate) else shutil.which("kubectl-gpudoctor")
    assert found, "kubectl-gpudoctor is not installed (pip install -e .)"
    return found


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR", "FORCE_COLOR", "GPUDOCTOR_STRICT")}
    env["PATH"] = BIN_DIR + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


def run_plugin(*args, env=None, timeout=60):
    return subprocess.run([plugin_path(), *args], capture_output=True, text=True, env=env or clean_env(), timeout=timeout)


def run_json(*args, env=None):
    proc = run_plugin(*args, "-o", "json", env=env)
    assert proc.stdout.strip(), f"no output; exit {proc.returncode}; stderr: {proc.stderr}"
    return proc, json.loads(proc.stdout)


@contextmanager
def serving(case_dir, tmp_path, namespace=None, **server_kwargs):
    """The case's objects and logs behind TLS + token; yields (server, kubeconfig path)."""
    objects, logs = load_case(case_dir)
    with FakeApiServer(objects, logs, **server_kwargs) as srv:
        srv.metrics.update(load_metrics(case_dir))
        kc = srv.write_kubeconfig(str(tmp_path / "kubeconfig"), namespace=namespace or "default")
        yield srv, kc


def assert_read_only(srv):
    """Every request a GET, and never an unfiltered list of every pod in the cluster."""
    assert srv.requests, "the plugin made no request"
    for r in srv.requests:
        assert r.method == "GET", r
        if r.path == "/api/v1/pods":
            assert r.query.get("fieldSelector"), f"unfiltered cluster-wide pod list: {r}"
        if "/secrets" in r.path:
            assert "as=PartialObjectMetadata" in r.accept, f"a Secret was read in full: {r}"
