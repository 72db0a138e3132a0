"""NVIDIA's GPU Operator must-gather directory as --from input: written by the real script (tests/mustgather/build.py)
from a cluster the suite serves, it replays to that cluster's node verdict; what it does not hold stays unknown."""
import json
import os

from tests.conftest import CASES, ROOT
from tests.live import run_json, run_plugin

MUSTGATHER = os.path.join(ROOT, "tests", "mustgather", "driver-kernel-version")
SOURCE_CASE = os.path.join(CASES, "gpu-operator-component-failing", "fail-driver-kernel-version")


def _verdict(doc):
    return doc["rootCause"], doc["status"], sorted((f["id"], f["severity"]) for f in doc["findings"])


def test_replays_to_the_verdict_of_the_cluster_it_was_taken_from():
    _, gathered = run_json("node", "gpu-a100-07", "--from", MUSTGATHER)
    _, original = run_json("node", "gpu-a100-07", "--from", SOURCE_CASE)
    assert _verdict(gathered) == _verdict(original)
    cause = next(f for f in gathered["findings"] if f["id"] == gathered["rootCause"])
    assert "Could not resolve Linux kernel version" in cause["message"]   # from gpu_operand_pod_<pod>.log


def test_nodes_rebuilt_from_labels_and_describe():
    from kubectl_gpudoctor.offline.load import load
    ev = load(MUSTGATHER, "Node", "gpu-a100-07")
    node = ev.node
    assert node["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] == "true"
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    assert node["status"]["capacity"]["cpu"] == "128"
    assert ev.stack_only and ev.readable("pods/log") and not ev.readable("events")


def test_other_namespaces_pods_are_unknown_not_zero():
    """The script saves only the operator namespace's pods: GPU requests on the node are unknown, never 0."""
    _, doc = run_json("node", "gpu-a100-07", "--from", MUSTGATHER)
    assert all(r["requested"] is None for r in doc["resources"]), doc["resources"]
    assert doc["gpuPods"] == []
    inventory = next(f for f in doc["findings"] if f["id"] == "gpu-inventory")
    assert "GPU pods unknown" in inventory["message"]


def test_fleet_from_a_mustgather():
    proc = run_plugin("nodes", "--from", MUSTGATHER, "-o", "json")
    doc = json.loads(proc.stdout)
    assert doc["unavailable"][0]["cause"] == "gpu-operator-component-failing"
    assert doc["nodes"][0]["requested"] is None
