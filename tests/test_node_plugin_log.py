"""`node <node>`: a device plugin that runs but advertises nothing is read (its log line quoted, as the pod view does),
and the fix names the node's own components."""
import copy
import os

from tests.apiserver import FakeApiServer, load_case
from tests.conftest import CASES
from tests.live import assert_read_only, run_json

MINIKUBE = os.path.join(CASES, "device-plugin-finds-no-gpu", "fail-toolkit-not-configured")
PLUGIN = "kube-system/nvdp-nvidia-device-plugin-c59de"
DAEMONSET = "DaemonSet kube-system/nvdp-nvidia-device-plugin"


def _finding(doc, rid):
    return next(f for f in doc["findings"] if f["id"] == rid)


def test_node_live_reads_and_quotes_the_running_plugins_log(tmp_path):
    objects, logs = load_case(MINIKUBE)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"))
        proc, doc = run_json("node", "minikube", "--kubeconfig", kc)
    assert_read_only(srv)
    assert any(r.path.endswith("/nvdp-nvidia-device-plugin-c59de/log") for r in srv.requests)
    assert proc.returncode == 1 and doc["rootCause"] == "device-plugin-finds-no-gpu", proc.stderr
    f = _finding(doc, "device-plugin-finds-no-gpu")
    assert PLUGIN in f["message"] and "could not load NVML library" in f["message"]
    assert any(e["source"] == "log" and "NVML" in e["text"] for e in f["evidence"])
    assert DAEMONSET in f["remediation"] and "minikube" in f["remediation"]


def test_gpu_node_with_a_running_plugin_quotes_it_and_names_it_in_the_fix(tmp_path):
    """A labelled GPU node: gpu-allocatable-zero fires, with the plugin's deciding line and the real pod names."""
    objects, logs = load_case(MINIKUBE)
    objects = copy.deepcopy(objects)
    node = next(o for o in objects if o["kind"] == "Node")
    node["metadata"]["labels"]["nvidia.com/gpu.present"] = "true"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"))
        proc, doc = run_json("node", "minikube", "--kubeconfig", kc)
    assert proc.returncode == 1 and doc["rootCause"] == "gpu-allocatable-zero", proc.stderr
    f = _finding(doc, "gpu-allocatable-zero")
    assert PLUGIN in f["message"] and "could not load NVML library" in f["message"]
    assert DAEMONSET in f["remediation"]
    assert "device-plugin-finds-no-gpu" not in [x["id"] for x in doc["findings"]]
