"""Saved inputs for every kind of report the tests render (pod per phase, node, workload, scan, rules): the cases'
bundles, plus a ReplicaSet over a crashing pod and a scan of several cases built from them."""
import copy
import os
import shutil

import yaml

from tests.apiserver import load_cases
from tests.conftest import CASES, ROOT

OOM = os.path.join(CASES, "oom-killed", "fail-startup-peak")
PENDING = os.path.join(ROOT, "examples", "pending-fragmented-gpus")
HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
QUOTA = os.path.join(CASES, "pod-creation-rejected", "fail-replicaset-gpu-quota-exceeded")
STS = os.path.join(CASES, "pod-creation-rejected", "fail-statefulset-runtimeclass-admission")
JOB = os.path.join(CASES, "job-failed", "fail-deadline-exceeded-pods-gone")

# name -> (arguments after `kubectl gpudoctor`); "{tmp}" is a directory the test provides.
REPORTS = {
    "pod-scheduling": ["--from", PENDING],
    "pod-creation": ["--from", os.path.join(CASES, "image-pull-failed", "fail-ngc-private-unauthorized")],
    "pod-init": ["--from", os.path.join(CASES, "init-container-failing", "fail-oom-weights-download")],
    "pod-crash": ["--from", OOM],
    "pod-eviction": ["--from", os.path.join(CASES, "evicted", "fail-node-memory-vllm")],
    "pod-network": ["--from", os.path.join(CASES, "nccl-failure", "fail-socket-connect-networkpolicy")],
    "pod-healthy": ["--from", HEALTHY],
    "node": ["--from", os.path.join(CASES, "device-plugin-not-running", "fail-nvml-library-not-found")],
    "workload-refused": ["deploy/chat", "--from", QUOTA],
    "workload-pods": ["rs/inference-7d9f8b6c5", "--from", "{tmp}/rs"],
    "scan": ["scan", "-A", "--from", "{tmp}/scan.yaml"],
    "rules": ["rules"],
    "rule": ["rules", "insufficient-gpu"],
    "rule-yaml-snippet": ["rules", "oom-killed"],
}

REPLICASET = {
    "apiVersion": "apps/v1", "kind": "ReplicaSet",
    "metadata": {"name": "inference-7d9f8b6c5", "namespace": "serving", "uid": "0b3e7f5d-8c21-4e6f-a9d4-71c2e5b8f3a6",
                 "creationTimestamp": "2026-11-30T08:41:10Z", "labels": {"app.kubernetes.io/name": "inference"}},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": "inference",
                                                         "pod-template-hash": "7d9f8b6c5"}}},
    "status": {"replicas": 1, "readyReplicas": 0, "availableReplicas": 0}}


def replicaset_bundle(directory) -> str:
    """The OOM case with the ReplicaSet that owns its pod: `rs/inference-7d9f8b6c5` diagnoses a crashing pod."""
    shutil.copytree(OOM, directory)
    with open(os.path.join(directory, "replicaset.yaml"), "w") as f:
        f.write(yaml.safe_dump(REPLICASET))
    return str(directory)


def scan_list(path, pending_copies: int = 8) -> str:
    """One `kubectl get -o yaml` List of several cases' objects, with `pending_copies` pods stuck Pending the same
    way (so that one root cause holds more pods than a block lists)."""
    objects, _ = load_cases(STS, QUOTA, JOB, HEALTHY, OOM, PENDING)
    pending = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == "llm-finetune-0")
    for i in range(1, pending_copies):
        pod = copy.deepcopy(pending)
        pod["metadata"]["name"] = f"llm-finetune-{i}"
        pod["metadata"]["uid"] = pod["metadata"]["uid"][:-2] + f"{i:02d}"
        objects.append(pod)
    with open(path, "w") as f:
        f.write(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def prepare(tmp) -> None:
    """Writes the inputs REPORTS names under {tmp}."""
    replicaset_bundle(os.path.join(tmp, "rs"))
    scan_list(os.path.join(tmp, "scan.yaml"))


def arguments(name: str, tmp) -> list:
    return [a.replace("{tmp}", str(tmp)) for a in REPORTS[name]]
