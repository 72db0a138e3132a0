"""deploy/x and scan: a workload's pods and a namespace's GPU pods, offline and live against the suite's server."""
import os

from tests.apiserver import FakeApiServer, load_case, load_cases
from tests.conftest import ROOT
from tests.live import assert_read_only, run_json, run_plugin

CASES = os.path.join(ROOT, "tests", "cases")
QUOTA = os.path.join(CASES, "pod-creation-rejected", "fail-replicaset-gpu-quota-exceeded")
STS = os.path.join(CASES, "pod-creation-rejected", "fail-statefulset-runtimeclass-admission")
OOM = os.path.join(CASES, "oom-killed", "fail-startup-peak")
HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
PENDING = os.path.join(ROOT, "examples", "pending-fragmented-gpus")


def test_workload_offline_json_document():
    proc, doc = run_json("deploy/chat", "--from", QUOTA)
    assert proc.returncode == 1
    assert doc["kind"] == "WorkloadDiagnosis" and doc["rootCause"] == "pod-creation-rejected"
    assert doc["target"] == {"kind": "Deployment", "namespace": "serving", "name": "chat", "node": None}
    assert doc["phase"] == "1/2 ready" and doc["items"] == []
    assert "requested requests.nvidia.com/gpu=1" in doc["findings"][0]["message"]


def test_workload_live_reads_only_the_workload_and_its_pods(tmp_path):
    objects, logs = load_cases(QUOTA, HEALTHY)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc, doc = run_json("deployment/chat", "--kubeconfig", kc)
        missing = run_plugin("sts/nope", "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1 and doc["rootCause"] == "pod-creation-rejected", proc.stderr
    assert missing.returncode == 2 and 'statefulsets.apps "nope" not found' in missing.stderr
    paths = {r.path for r in srv.requests}
    assert "/api/v1/pods" not in paths                      # pods listed by label selector in the namespace only
    pod_lists = [r for r in srv.requests if r.path == "/api/v1/namespaces/serving/pods"]
    assert pod_lists and all(r.query.get("labelSelector") == "app=chat" for r in pod_lists)


def test_workload_with_no_pods_is_explained_by_its_events(tmp_path):
    objects, logs = load_case(STS)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="research")
        proc = run_plugin("sts/train", "--kubeconfig", kc, "--color", "never")
    assert proc.returncode == 1, proc.stderr
    assert 'RuntimeClass nvidia-cdi does not exist' in proc.stdout


def test_workload_diagnoses_its_failing_pods(tmp_path):
    """A ReplicaSet whose pod crashes: the workload's root cause is its pods' (oom-killed), with the pod's report."""
    import shutil
    import yaml
    bundle = tmp_path / "b"
    shutil.copytree(OOM, bundle)
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "inference-7d9f8b6c5", "namespace": "serving", "uid": "0b3e7f5d-8c21-4e6f-a9d4-71c2e5b8f3a6",
                       "creationTimestamp": "2026-11-30T08:41:10Z", "labels": {"app.kubernetes.io/name": "inference"}},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": "inference", "pod-template-hash": "7d9f8b6c5"}}},
          "status": {"replicas": 1, "readyReplicas": 0, "availableReplicas": 0}}
    (bundle / "replicaset.yaml").write_text(yaml.safe_dump(rs))
    proc, doc = run_json("rs/inference-7d9f8b6c5", "--from", str(bundle))
    assert proc.returncode == 1
    assert doc["rootCause"] == "oom-killed" and doc["phase"] == "0/1 ready"
    assert [d["rootCause"] for d in doc["items"]] == ["oom-killed"]
    text = run_plugin("rs/inference-7d9f8b6c5", "--from", str(bundle), "--color", "never").stdout
    assert "── pod inference-7d9f8b6c5-x2x9q ──" in text and "[CRITICAL] Container killed" in text
    lines = text.splitlines()
    assert lines[1] == "Root cause: Container killed for exceeding its memory limit (OOMKilled) (oom-killed)"
    assert sum(line.startswith("Checks:") for line in lines) == 1 and lines.count("Next:") == 1


def test_scan_groups_unhealthy_gpu_pods_by_root_cause(tmp_path):
    objects, logs = load_cases(OOM, HEALTHY, PENDING)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc, doc = run_json("scan", "-A", "--kubeconfig", kc)
        ns_only = run_json("scan", "--kubeconfig", kc)[1]
        text = run_plugin("scan", "-A", "--kubeconfig", kc, "--color", "never")
    assert_read_only(srv)
    assert proc.returncode == 1, proc.stderr
    assert doc["kind"] == "ScanReport" and doc["scope"] == "all namespaces"
    assert doc["byRootCause"] == {"oom-killed": 1, "insufficient-gpu": 1}
    assert {d["target"]["name"] for d in doc["items"]} == {"inference-7d9f8b6c5-x2x9q", "llm-finetune-0"}
    assert ns_only["scope"] == "namespace serving" and [d["rootCause"] for d in ns_only["items"]] == ["oom-killed"]
    assert "1 pod: Not enough free GPUs on any node (insufficient-gpu)" in text.stdout
    assert "  Next: kubectl gpudoctor llm-finetune-0 -n ml" in text.stdout
    assert "By root cause:" in run_plugin("scan", "-A", "--from", PENDING, "-o", "wide").stdout


def test_scan_of_a_healthy_namespace_exits_0(tmp_path):
    objects, logs = load_case(HEALTHY)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc, doc = run_json("scan", "--kubeconfig", kc)
    assert proc.returncode == 0 and doc["items"] == [] and doc["gpuPods"] == 1


def test_scan_forbidden_is_exit_3(tmp_path):
    objects, logs = load_case(HEALTHY)
    with FakeApiServer(objects, logs) as srv:
        srv.forbid("pods", cluster_scope_only=True)
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc = run_plugin("scan", "-A", "--kubeconfig", kc)
    assert proc.returncode == 3 and "cannot list pods in all namespaces" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_pod_found_in_any_namespace_with_A(tmp_path):
    objects, logs = load_cases(OOM, HEALTHY)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="default")
        proc, doc = run_json("inference-7d9f8b6c5-x2x9q", "-A", "--kubeconfig", kc)
        missing = run_plugin("nope", "-A", "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1 and doc["target"]["namespace"] == "serving" and doc["rootCause"] == "oom-killed"
    assert missing.returncode == 2 and 'pods "nope" not found in any namespace' in missing.stderr
    searches = [r for r in srv.requests if r.path == "/api/v1/pods" and "metadata.name=" in r.query.get("fieldSelector", "")]
    assert len(searches) == 2
