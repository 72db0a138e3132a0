"""`kubectl gpudoctor node`: the NodeDiagnosis document and tables from saved files (click's runner) and from
the suite's API server (the installed plugin as a subprocess): verdicts, exit codes, gaps, read-only requests."""
import json
import os

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpudoctor import cli
from tests.conftest import CASES
from tests.live import assert_read_only, run_json, run_plugin, serving

HEALTHY = os.path.join(CASES, "gpu-inventory", "fail-healthy-h100-node")
DRIVER = os.path.join(CASES, "gpu-operator-component-failing", "fail-driver-kernel-version")
DEPLOY_LABEL = os.path.join(CASES, "device-plugin-not-running", "fail-deploy-label-false")
NVML = os.path.join(CASES, "device-plugin-not-running", "fail-nvml-library-not-found")
CORDONED = os.path.join(CASES, "node-cordoned", "fail-manual-cordon")
CPU = os.path.join(CASES, "gpu-inventory", "pass-cpu-node")
TABLES = ("resources", "gpu", "gpuPods", "operatorPods", "taints", "conditions")
NODE_RULES = ("gpu-allocatable-zero", "gpus-unhealthy", "device-plugin-not-running", "gpu-operator-component-failing",
              "mig-config-failed", "node-cordoned", "gpu-inventory")


def node_name(case):
    with open(os.path.join(case, "bundle.yaml")) as f:
        return yaml.safe_load(f)["target"]["name"]


def invoke(*args):
    result = CliRunner().invoke(cli.main_group, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# --- offline, in-process -------------------------------------------------------------------------------------

def test_healthy_node_json_document():
    code, out, err = invoke("node", "--from", HEALTHY, "-o", "json")
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert doc["apiVersion"] == "gpudoctor/v1" and doc["kind"] == "NodeDiagnosis"
    assert doc["target"] == {"kind": "Node", "namespace": None, "name": "gpu-h100-01", "node": "gpu-h100-01"}
    assert doc["status"] == "healthy" and doc["rootCause"] is None and doc["phase"] == "Ready"
    assert set(doc) >= {"findings", "checks", "gaps", "nextCommands", "collectedAt", *TABLES}
    assert {c["id"] for c in doc["checks"]} >= set(NODE_RULES)
    gpu = next(r for r in doc["resources"] if r["resource"] == "nvidia.com/gpu")
    assert gpu == {"resource": "nvidia.com/gpu", "capacity": 8, "allocatable": 8, "requested": 5, "free": 3}
    assert doc["gpu"] == [{"product": "NVIDIA-H100-80GB-HBM3", "count": "8", "memory": "81559 MiB", "driver": "550.127.05",
                           "cuda": "12.4", "migStrategy": "single", "migConfig": "all-disabled", "migConfigState": "success"}]
    # Running pods hold GPUs; the Completed Job pod holds none.
    assert {(p["pod"], p["gpus"]) for p in doc["gpuPods"]} == {("llama-405b-0", 4), ("embed-6c7d8e9f5-w2k4p", 1)}
    assert {p["component"] for p in doc["operatorPods"]} >= {"driver", "toolkit", "device-plugin", "gfd",
                                                              "dcgm-exporter", "validator", "cuda-validator"}
    assert doc["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule", "timeAdded": None}]
    assert [c["type"] for c in doc["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]


def test_yaml_is_the_same_document():
    _, out_json, _ = invoke("node", "--from", DRIVER, "-o", "json")
    _, out_yaml, _ = invoke("node", "--from", DRIVER, "-o", "yaml")
    assert yaml.safe_load(out_yaml) == json.loads(out_json)


@pytest.mark.parametrize("case,code,status,cause", [
    (DRIVER, 1, "failing", "gpu-operator-component-failing"),
    (DEPLOY_LABEL, 1, "failing", "device-plugin-not-running"),
    (CORDONED, 0, "warning", None),
    (CPU, 0, "healthy", None),
])
def test_verdict_and_exit_code(case, code, status, cause):
    got, out, _ = invoke("node", node_name(case), "--from", case, "-o", "json")
    doc = json.loads(out)
    assert (got, doc["status"], doc["rootCause"]) == (code, status, cause), doc["summary"]


def test_text_report_has_the_tables():
    code, out, _ = invoke("node", "--from", HEALTHY, "--color", "never")
    assert code == 0 and out.startswith("HEALTHY  Node gpu-h100-01  (Ready)")
    for heading in ("Resources:", "GPU:", "GPU pods:", "Operator pods:", "Taints:", "Conditions:"):
        assert heading in out, heading
    rows = out.split("Resources:\n")[1].split("\n\n")[0].splitlines()
    assert rows[0].split() == ["RESOURCE", "CAPACITY", "ALLOCATABLE", "REQUESTED", "FREE"]
    assert rows[1].split() == ["nvidia.com/gpu", "8", "8", "5", "3"]
    assert "[INFO] GPU inventory of the node (gpu-inventory)" in out
    assert "\x1b[" not in out


def test_text_report_of_a_broken_node_names_the_first_link_and_next_commands():
    code, out, _ = invoke("node", "--from", DRIVER, "--color", "never")
    assert code == 1
    assert out.splitlines()[1] == "Root cause: A GPU operator component on the node is failing (gpu-operator-component-failing)"
    assert "Could not resolve Linux kernel version" in out
    assert "kubectl logs -n gpu-operator nvidia-driver-daemonset-b4r9q -c nvidia-driver-ctr --previous --tail=80" in out
    assert "kubectl describe node gpu-a100-07" in out


def test_ignore_drops_a_node_rule():
    _, out, _ = invoke("node", "--from", DRIVER, "-o", "json", "--ignore", "gpu-operator-component-failing")
    doc = json.loads(out)
    assert doc["rootCause"] == "device-plugin-not-running"
    assert next(c for c in doc["checks"] if c["id"] == "gpu-operator-component-failing")["result"] == "not-applicable"


def test_unknown_node_in_the_input_is_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["node", "no-such-node", "--from", DRIVER])
    _, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert err.strip() == 'error: node "no-such-node" not found in the --from input'


# --- live, the installed plugin against the suite's API server ------------------------------------------------

def test_live_healthy_node(tmp_path):
    with serving(HEALTHY, tmp_path) as (srv, kc):
        proc, doc = run_json("node", "gpu-h100-01", "--kubeconfig", kc)
        text = run_plugin("node", "gpu-h100-01", "--kubeconfig", kc, "--color", "never")
    assert_read_only(srv)
    assert proc.returncode == 0 and text.returncode == 0, proc.stderr
    assert doc["kind"] == "NodeDiagnosis" and doc["status"] == "healthy" and doc["gaps"] == []
    assert doc["gpuPods"] and doc["operatorPods"]
    assert text.stdout.startswith("HEALTHY  Node gpu-h100-01") and "Operator pods:" in text.stdout
    assert proc.stderr == ""


@pytest.mark.parametrize("case", [DRIVER, DEPLOY_LABEL, NVML, CORDONED,
                                  os.path.join(CASES, "gpus-unhealthy", "fail-xid-79-fallen-off-bus"),
                                  os.path.join(CASES, "mig-config-failed", "fail-gpu-in-use"),
                                  os.path.join(CASES, "device-plugin-not-running", "fail-untolerated-taint"),
                                  os.path.join(CASES, "gpu-inventory", "fail-dra-gpus-held-by-claims"),
                                  os.path.join(CASES, "gpu-allocatable-zero", "fail-dra-driver-publishes-no-slice")],
                         ids=lambda p: "/".join(p.split(os.sep)[-2:]))
def test_live_matches_offline(case, tmp_path):
    """Served over HTTP, a node case gets the same verdict as read from disk: the collector reads what the
    node rules need (pods on the node, DaemonSets, logs)."""
    _, out, _ = invoke("node", "--from", case, "-o", "json")
    offline = json.loads(out)
    with serving(case, tmp_path) as (srv, kc):
        proc, live = run_json("node", node_name(case), "--kubeconfig", kc)
    assert_read_only(srv)
    fired = lambda d: sorted((f["id"], f["severity"]) for f in d["findings"])
    assert (live["rootCause"], live["status"], fired(live)) == (offline["rootCause"], offline["status"], fired(offline))
    assert [f["message"] for f in live["findings"]] == [f["message"] for f in offline["findings"]]


def test_live_pods_forbidden_cluster_wide_still_answers(tmp_path):
    """A tenant without node-level rights: the node is readable, pods across namespaces are not."""
    with serving(DRIVER, tmp_path) as (srv, kc):
        srv.forbid("pods", cluster_scope_only=True)
        proc, doc = run_json("node", "gpu-a100-07", "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1, proc.stderr
    gaps = [g for g in doc["gaps"] if g["source"] == "pods"]
    assert gaps and gaps[0]["reason"] == "forbidden" and "cannot list resource" in gaps[0]["detail"]
    checks = {c["id"]: c for c in doc["checks"]}
    for rid in ("device-plugin-not-running", "gpu-operator-component-failing"):
        assert checks[rid]["result"] == "unknown" and "forbidden" in checks[rid]["reason"], checks[rid]
    # what the node object alone tells still answers
    assert doc["rootCause"] == "gpu-allocatable-zero"
    assert checks["gpus-unhealthy"]["result"] == "passed" and checks["mig-config-failed"]["result"] == "passed"
    assert doc["gpuPods"] == [] and doc["operatorPods"] == []
    gpu = next(r for r in doc["resources"] if r["resource"] == "nvidia.com/gpu")
    assert gpu["requested"] is None and gpu["free"] is None
    text = None
    with serving(DRIVER, tmp_path) as (srv, kc):
        srv.forbid("pods", cluster_scope_only=True)
        text = run_plugin("node", "gpu-a100-07", "--kubeconfig", kc, "--color", "never")
    assert "Could not read:" in text.stdout and "pods: forbidden" in text.stdout
    assert "unknown        device-plugin-not-running" in text.stdout


def test_live_events_fall_back_to_the_default_namespace(tmp_path):
    with serving(CORDONED, tmp_path) as (srv, kc):
        srv.forbid("events", cluster_scope_only=True)
        proc, doc = run_json("node", "gpu-a100-09", "--kubeconfig", kc)
    paths = [r.path for r in srv.requests]
    assert "/api/v1/events" in paths and "/api/v1/namespaces/default/events" in paths
    assert not [g for g in doc["gaps"] if g["source"] == "events"], doc["gaps"]
    cordon = next(f for f in doc["findings"] if f["id"] == "node-cordoned")
    assert any("NodeNotSchedulable" in e["text"] for e in cordon["evidence"])


def test_live_without_gpu_operator_crd_is_not_a_gap(tmp_path):
    with serving(NVML, tmp_path) as (srv, kc):
        proc, doc = run_json("node", "gpu-a10-04", "--kubeconfig", kc)
    assert any(r.path == "/apis/nvidia.com/v1/clusterpolicies" and r.status == 404 for r in srv.requests)
    assert doc["gaps"] == [] and doc["rootCause"] == "device-plugin-not-running"


def test_live_unknown_node_exits_2(tmp_path):
    with serving(HEALTHY, tmp_path) as (srv, kc):
        proc = run_plugin("node", "gpu-nope", "--kubeconfig", kc)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == 'error: nodes "gpu-nope" not found'


def test_live_forbidden_node_exits_3(tmp_path):
    with serving(HEALTHY, tmp_path) as (srv, kc):
        srv.forbid("nodes", name="gpu-h100-01")
        proc = run_plugin("node", "gpu-h100-01", "--kubeconfig", kc)
    assert proc.returncode == 3 and proc.stdout == ""
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "forbidden" in line and "Traceback" not in proc.stderr


def test_live_daemonsets_forbidden_says_why_unknown(tmp_path):
    with serving(DEPLOY_LABEL, tmp_path) as (srv, kc):
        srv.forbid("daemonsets")
        proc, doc = run_json("node", "gpu-a100-12", "--kubeconfig", kc)
    assert doc["rootCause"] == "device-plugin-not-running"
    finding = next(f for f in doc["findings"] if f["id"] == "device-plugin-not-running")
    assert "forbidden" in finding["message"] and "list daemonsets" in finding["message"]
    assert any(g["source"] == "daemonsets" and g["reason"] == "forbidden" for g in doc["gaps"])


# --- round trips: the server answers each request SPACED late, so a request's depth is its round trip ------------

SPACED = 0.2
DRA_CLAIMS = os.path.join(CASES, "gpu-inventory", "fail-dra-gpus-held-by-claims")


def _rounds(srv):
    return {(r.path, r.status): r.depth for r in srv.requests}


@pytest.mark.parametrize("refused", [None, "events"])
def test_live_node_without_advertised_gpus_is_two_round_trips(refused, tmp_path):
    """The node, its pods, events, RuntimeClasses, ClusterPolicies; then, from those answers, DRA discovery, the
    DaemonSet list (no device plugin pod) and, when cluster-wide events are refused, the default namespace's: all
    in one second round. The verdict is the offline one."""
    _, out, _ = invoke("node", "--from", DEPLOY_LABEL, "-o", "json")
    offline = json.loads(out)
    with serving(DEPLOY_LABEL, tmp_path, latency=SPACED) as (srv, kc):
        if refused:
            srv.forbid(refused, cluster_scope_only=True)
        proc, doc = run_json("node", "gpu-a100-12", "--kubeconfig", kc)
    assert_read_only(srv)
    assert (doc["rootCause"], doc["status"], doc["gaps"]) == (offline["rootCause"], offline["status"], [])
    rounds = _rounds(srv)
    assert rounds[("/apis/resource.k8s.io", 404)] == rounds[("/apis/apps/v1/daemonsets", 200)] == 2, rounds
    if refused:
        assert rounds[("/api/v1/events", 403)] == 1 and rounds[("/api/v1/namespaces/default/events", 200)] == 2
    assert max(rounds.values()) == 2, rounds


def test_live_refused_daemonset_list_is_read_per_namespace_in_a_third_round(tmp_path):
    with serving(DEPLOY_LABEL, tmp_path, latency=SPACED) as (srv, kc):
        srv.forbid("daemonsets", cluster_scope_only=True)
        proc, doc = run_json("node", "gpu-a100-12", "--kubeconfig", kc)
    assert_read_only(srv)
    assert doc["rootCause"] == "device-plugin-not-running" and doc["gaps"] == []
    rounds = _rounds(srv)
    assert rounds[("/apis/apps/v1/daemonsets", 403)] == 2, rounds
    assert rounds[("/apis/apps/v1/namespaces/gpu-operator/daemonsets", 200)] == 3, rounds
    assert max(rounds.values()) == 3, rounds


def test_live_dra_node_reads_its_slices_once_discovery_names_the_version(tmp_path):
    """A node whose GPUs a DRA driver publishes: the served version (discovery, second round) names the paths of
    its ResourceSlices and its pods' claims (third round)."""
    with serving(DRA_CLAIMS, tmp_path, latency=SPACED) as (srv, kc):
        proc, doc = run_json("node", "gb200-rack1-tray04", "--kubeconfig", kc)
    assert_read_only(srv)
    inventory = next(f for f in doc["findings"] if f["id"] == "gpu-inventory")
    assert doc["gaps"] == [] and "4 device(s) in ResourceSlices, 2 allocated" in inventory["message"]
    rounds = _rounds(srv)
    assert rounds[("/apis/resource.k8s.io", 200)] == 2, rounds
    assert rounds[("/apis/resource.k8s.io/v1beta1/resourceslices", 200)] == 3, rounds
    assert max(rounds.values()) == 3, rounds
