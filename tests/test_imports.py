"""Start-up stays light: --help, --version, rules and offline diagnosis never import the kubernetes client."""
import os
import subprocess
import sys

import pytest

from kubectl_gpudoctor import __version__
from tests.conftest import ROOT

PROBE = """
import sys
from kubectl_gpudoctor.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("KUBERNETES_IMPORTED=" + str(any(m == "kubernetes" or m.startswith("kubernetes.") for m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["rules"], ["pod", "--help"],
                                  ["--from", os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")]])
def test_no_kubernetes_import(args):
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT)
    assert "KUBERNETES_IMPORTED=False" in proc.stderr, proc.stderr


def test_live_path_avoids_the_typed_api_classes():
    """Raw GETs through ApiClient: the ~250 pydantic models behind CoreV1Api are never loaded."""
    code = ("import sys; from kubectl_gpudoctor.collect import api, kubeconfig, pod; import kubernetes.client.api_client;"
            "print(sum(1 for m in sys.modules if m.startswith('kubernetes.client.models.')),"
            " 'kubernetes.client.api.core_v1_api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout.split()
    assert out[1] == "False", out
    assert int(out[0]) < 50, out


def test_live_diagnosis_with_a_plain_kubeconfig_never_imports_kubernetes(tmp_path):
    """A token or client-certificate kubeconfig is read without the client library (exec plugins and in-cluster
    config still go through it: tests/test_kubeconfig.py)."""
    from tests.live import serving
    case = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
    with serving(case, tmp_path, namespace="serving") as (srv, kc):
        proc = subprocess.run([sys.executable, "-c", PROBE, "chat-6b7c9d8f4-m2kqz", "--kubeconfig", kc, "-o", "json"],
                              capture_output=True, text=True, cwd=ROOT)
    assert '"status": "healthy"' in proc.stdout, proc.stderr
    assert "KUBERNETES_IMPORTED=False" in proc.stderr, proc.stderr


def test_version_answers_before_click_loads():
    """The installed command's `--version` (what scripts and krew call most) loads neither click nor the CLI."""
    code = ("import sys; sys.argv[1:] = ['--version']\nimport kubectl_gpudoctor.launch as launch\n"
            "try:\n    launch.main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('click', 'kubectl_gpudoctor.cli', 'kubernetes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["kubectl-gpudoctor " + __version__, "[]"], out
