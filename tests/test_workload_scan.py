"""scan sees workloads whose pods are missing or cannot be created, and failed Jobs; bundle deploy/x replays."""
import copy
import os

import yaml

from tests.apiserver import FakeApiServer, load_case, load_cases
from tests.conftest import ROOT
from tests.live import assert_read_only, run_json, run_plugin

CASES = os.path.join(ROOT, "tests", "cases")
QUOTA = os.path.join(CASES, "pod-creation-rejected", "fail-replicaset-gpu-quota-exceeded")
STS = os.path.join(CASES, "pod-creation-rejected", "fail-statefulset-runtimeclass-admission")
JOB = os.path.join(CASES, "job-failed", "fail-deadline-exceeded-pods-gone")
HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")


def _targets(doc):
    return {(i["kind"], i["target"]["kind"], i["target"]["namespace"], i["target"]["name"]) for i in doc["items"]}


def test_scan_live_reports_workloads_whose_pods_cannot_be_created(tmp_path):
    """0/2 ready because admission refuses the pods is not HEALTHY (the issue's first complaint)."""
    objects, logs = load_cases(STS, QUOTA, JOB, HEALTHY)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc, doc = run_json("scan", "-A", "--kubeconfig", kc)
        text = run_plugin("scan", "-A", "--kubeconfig", kc, "--color", "never")
    assert_read_only(srv)
    assert proc.returncode == 1, proc.stderr
    assert _targets(doc) >= {("WorkloadDiagnosis", "StatefulSet", "research", "train"),
                             ("WorkloadDiagnosis", "Deployment", "serving", "chat"),
                             ("WorkloadDiagnosis", "Job", "research", "finetune-llama")}
    # the quota refusal stays pod-creation-rejected; the StatefulSet's names a missing RuntimeClass (issue 21)
    assert doc["byRootCause"]["pod-creation-rejected"] == 1 and doc["byRootCause"]["runtimeclass-not-found"] == 1
    assert doc["byRootCause"]["job-failed"] == 1
    assert doc["status"] == "failing"
    assert "FAILING" in text.stdout and "statefulset/train" in text.stdout
    assert "kubectl gpudoctor statefulset/train -n research" in text.stdout


def test_scan_offline_reports_the_same_workloads(tmp_path):
    objects, _ = load_cases(STS, QUOTA, JOB, HEALTHY)
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    proc, doc = run_json("scan", "-A", "--from", str(path))
    assert proc.returncode == 1, proc.stderr
    assert ("WorkloadDiagnosis", "StatefulSet", "research", "train") in _targets(doc)
    assert ("WorkloadDiagnosis", "Job", "research", "finetune-llama") in _targets(doc)


def test_scan_leaves_out_settled_and_cpu_workloads(tmp_path):
    objects, logs = load_case(HEALTHY)
    cpu = copy.deepcopy([o for o in load_case(STS)[0] if o["kind"] == "StatefulSet"][0])
    cpu["metadata"].update(name="redis", uid="0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f")
    cpu["spec"]["template"]["spec"] = {"containers": [{"name": "redis", "image": "redis:7"}]}
    with FakeApiServer(objects + [cpu], logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc, doc = run_json("scan", "-A", "--kubeconfig", kc)
    assert proc.returncode == 0 and doc["items"] == [] and doc["status"] == "healthy", proc.stderr


def test_job_failed_with_no_pods_left(tmp_path):
    proc, doc = run_json("job/finetune-llama", "--from", JOB)
    assert proc.returncode == 1 and doc["rootCause"] == "job-failed"
    assert "Job was active longer than specified deadline" in doc["findings"][0]["message"]


def _cronjobload_cases():
    """A GPU CronJob whose Jobs the namespace quota refuses (cronjob-controller `Error creating job: …`)."""
    cj = {"apiVersion": "batch/v1", "kind": "CronJob",
          "metadata": {"name": "nightly-eval", "namespace": "serving", "uid": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f",
                       "creationTimestamp": "2026-11-01T00:00:00Z"},
          "spec": {"schedule": "0 2 * * *", "concurrencyPolicy": "Forbid", "suspend": False,
                   "jobTemplate": {"spec": {"backoffLimit": 1, "template": {"spec": {
                       "restartPolicy": "Never",
                       "containers": [{"name": "eval", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                       "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}},
          "status": {"lastScheduleTime": "2026-12-01T02:00:00Z"}}
    ev = {"apiVersion": "v1", "kind": "Event",
          "metadata": {"name": "nightly-eval.187d1a2b3c4d5e6f", "namespace": "serving",
                       "uid": "4d5e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f7a", "creationTimestamp": "2026-12-01T02:00:00Z"},
          "involvedObject": {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly-eval", "namespace": "serving",
                             "uid": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"},
          "reason": "FailedCreate",
          "message": 'Error creating job: jobs.batch "nightly-eval-29410200" is forbidden: exceeded quota: gpu-quota, '
                     "requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4",
          "source": {"component": "cronjob-controller"}, "firstTimestamp": "2026-12-01T02:00:00Z",
          "lastTimestamp": "2026-12-01T02:00:00Z", "count": 1, "type": "Warning"}
    return [cj, ev]


def test_cronjob_refs_and_scan(tmp_path):
    objects, logs = load_case(HEALTHY)
    with FakeApiServer(objects + _cronjobload_cases(), logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        cj = run_json("cj/nightly-eval", "--kubeconfig", kc)
        long_form = run_json("cronjob/nightly-eval", "--kubeconfig", kc)[1]
        scan = run_json("scan", "--kubeconfig", kc)[1]
    assert_read_only(srv)
    assert cj[0].returncode == 1, cj[0].stderr
    assert cj[1]["target"]["kind"] == "CronJob" and cj[1]["rootCause"] == "pod-creation-rejected"
    assert long_form["rootCause"] == "pod-creation-rejected"
    assert ("WorkloadDiagnosis", "CronJob", "serving", "nightly-eval") in _targets(scan)


def test_bundle_of_a_workload_replays_to_the_same_verdict(tmp_path):
    objects, logs = load_cases(QUOTA, STS, HEALTHY)
    out = tmp_path / "deploy.tgz"
    sts_out = tmp_path / "sts-dir"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        live = run_json("deploy/chat", "--kubeconfig", kc)[1]
        made = run_plugin("bundle", "deploy/chat", "-f", str(out), "--kubeconfig", kc)
        sts_live = run_json("sts/train", "-n", "research", "--kubeconfig", kc)[1]
        sts_made = run_plugin("bundle", "statefulset/train", "-n", "research", "-f", str(sts_out), "--kubeconfig", kc)
    assert_read_only(srv)
    assert made.returncode == 0 and sts_made.returncode == 0, made.stderr + sts_made.stderr
    replay = run_json("--from", str(out))[1]
    sts_replay = run_json("--from", str(sts_out))[1]
    for key in ("kind", "status", "rootCause", "phase", "summary", "target"):
        assert replay[key] == live[key], key
        assert sts_replay[key] == sts_live[key], key
    assert replay["gaps"] == [] and sts_replay["gaps"] == []
