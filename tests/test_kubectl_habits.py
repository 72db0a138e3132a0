"""The flag and target forms kubectl users type: -n=ns, -o=json, `deploy NAME`, po/x, help, rules <id>, --as, --token,
--server, --insecure-skip-tls-verify, --certificate-authority, --from -; unsupported kinds are a usage error."""
import os
import subprocess

import pytest
import yaml

from tests.conftest import ROOT
from tests.live import assert_read_only, clean_env, plugin_path, run_json, run_plugin, serving

CASES = os.path.join(ROOT, "tests", "cases")
OOM = os.path.join(CASES, "oom-killed", "fail-startup-peak")
QUOTA = os.path.join(CASES, "pod-creation-rejected", "fail-replicaset-gpu-quota-exceeded")
STS = os.path.join(CASES, "pod-creation-rejected", "fail-statefulset-runtimeclass-admission")
POD = "inference-7d9f8b6c5-x2x9q"


@pytest.mark.parametrize("args", [("-n=serving",), ("--namespace=serving",), ("-nserving",), ("-n", "serving")])
def test_namespace_flag_forms(args):
    proc, doc = run_json(POD, *args, "--from", OOM)
    assert proc.returncode == 1, proc.stderr
    assert doc["target"]["namespace"] == "serving" and doc["rootCause"] == "oom-killed"


@pytest.mark.parametrize("args", [("-o=json",), ("-ojson",), ("--output=json",), ("-o", "json")])
def test_output_flag_forms(args):
    proc = run_plugin(POD, "--from", OOM, *args)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.lstrip().startswith("{")


@pytest.mark.parametrize("args", [("po/" + POD,), ("pod/" + POD,), ("pods/" + POD,), ("po", POD), ("pods", POD)])
def test_pod_reference_forms(args):
    proc, doc = run_json(*args, "--from", OOM)
    assert proc.returncode == 1, proc.stderr
    assert doc["kind"] == "PodDiagnosis" and doc["target"]["name"] == POD


@pytest.mark.parametrize("args", [("deploy", "chat"), ("deployment", "chat"), ("deploy/chat",), ("deployments.apps/chat",)])
def test_workload_reference_forms(args):
    proc, doc = run_json(*args, "--from", QUOTA)
    assert proc.returncode == 1, proc.stderr
    assert doc["kind"] == "WorkloadDiagnosis" and doc["target"]["name"] == "chat"


@pytest.mark.parametrize("ref", ["statefulset/train", "sts/train", "statefulsets/train"])
def test_statefulset_forms(ref):
    proc, doc = run_json(ref, "--from", STS)
    assert proc.returncode == 1 and doc["target"]["kind"] == "StatefulSet", proc.stderr


def test_node_reference_forms():
    node = os.path.join(CASES, "gpu-allocatable-zero", "fail-gke-driver-not-installed")
    name = [o for o in yaml.safe_load_all(open(os.path.join(node, "objects.yaml"))) if o and o["kind"] == "Node"][0]
    for args in (("node/" + name["metadata"]["name"],), ("no", name["metadata"]["name"])):
        proc, doc = run_json(*args, "--from", node)
        assert doc["kind"] == "NodeDiagnosis", (args, proc.stderr)


@pytest.mark.parametrize("ref", ["svc/x", "service/web", "configmap/x", "ing/x"])
def test_unsupported_kinds_are_a_usage_error(ref):
    proc = run_plugin(ref, "--from", OOM)
    assert proc.returncode == 2
    assert "not found" not in proc.stderr
    assert "cannot diagnose" in proc.stderr and "deploy" in proc.stderr and "cronjob" in proc.stderr


def test_help_forms():
    top = run_plugin("help")
    assert top.returncode == 0 and "Usage:" in top.stdout and "scan" in top.stdout
    sub = run_plugin("help", "scan")
    assert sub.returncode == 0 and "Every unhealthy GPU pod" in sub.stdout
    for cmd in ("scan", "node", "bundle", "rules", "pod"):
        proc = run_plugin(cmd, "--help")
        assert proc.returncode == 0 and "Usage:" in proc.stdout, cmd


def test_rules_explains_one_rule():
    proc = run_plugin("rules", "oom-killed")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "oom-killed" in out and "Fires when:" in out and "Fix:" in out and "limits:" in out  # the example
    assert "https://github.com/gpudoctor/kubectl-gpudoctor/blob/v" in out
    missing = run_plugin("rules", "no-such-rule")
    assert missing.returncode == 2 and "no-such-rule" in missing.stderr


def test_from_stdin():
    with open(os.path.join(OOM, "objects.yaml"), "rb") as f:
        data = f.read()
    proc = subprocess.run([plugin_path(), "--from", "-", "-o", "json"], input=data, capture_output=True,
                          env=clean_env(), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert b'"rootCause": "oom-killed"' in proc.stdout


def test_impersonation_headers_and_still_read_only(tmp_path):
    with serving(OOM, tmp_path, namespace="serving") as (srv, kc):
        proc, doc = run_json(POD, "--kubeconfig", kc, "--as", "jane", "--as-group", "ml-team", "--as-group=oncall")
        lonely = run_plugin(POD, "--kubeconfig", kc, "--as-group", "ml-team")
    assert proc.returncode == 1 and doc["rootCause"] == "oom-killed", proc.stderr
    assert_read_only(srv)
    assert srv.requests and all(r.impersonate_user == "jane" for r in srv.requests)
    assert all(sorted(r.impersonate_groups) == ["ml-team", "oncall"] for r in srv.requests)
    # kubectl: "requesting uid, groups or user-extra for tester without impersonating a user"
    assert lonely.returncode == 2 and "without impersonating a user" in lonely.stderr


def test_server_token_and_tls_flags_without_a_kubeconfig(tmp_path):
    with serving(OOM, tmp_path, namespace="serving") as (srv, _kc):
        env = clean_env(HOME=str(tmp_path))   # no ~/.kube/config, no KUBECONFIG
        base = (POD, "-n", "serving", "--server", srv.url, "--token", srv.token)
        with_ca = run_json(*base, "--certificate-authority", srv.ca_file, env=env)
        insecure = run_json(*base, "--insecure-skip-tls-verify", env=env)
        unverified = run_plugin(*base, env=env)
        both = run_plugin(*base, "--insecure-skip-tls-verify", "--certificate-authority", srv.ca_file, env=env)
        bad_token = run_plugin(POD, "-n", "serving", "--server", srv.url, "--token", "wrong",
                               "--insecure-skip-tls-verify", env=env)
    assert with_ca[0].returncode == 1 and with_ca[1]["rootCause"] == "oom-killed", with_ca[0].stderr
    assert insecure[0].returncode == 1 and insecure[1]["rootCause"] == "oom-killed", insecure[0].stderr
    assert unverified.returncode == 3            # self-signed server, no CA given: TLS fails as with kubectl
    assert both.returncode == 2 and "specifying a root certificates file with the insecure flag is not allowed" in both.stderr
    assert bad_token.returncode == 3


def test_token_overrides_the_kubeconfig_user(tmp_path):
    with serving(OOM, tmp_path, namespace="serving") as (srv, kc):
        doc = yaml.safe_load(open(kc))
        doc["users"][0]["user"]["token"] = "stale"
        open(kc, "w").write(yaml.safe_dump(doc))
        stale = run_plugin(POD, "--kubeconfig", kc)
        fresh = run_json(POD, "--kubeconfig", kc, "--token", srv.token)[0]
    assert stale.returncode == 3 and fresh.returncode == 1, fresh.stderr
