"""dcgm-exporter metrics: parsed into per-GPU records (MIG, missing pod labels, counters, bad text), and read live
through the API server's pod proxy (one GET per node, 403 as a gap, no exporter as unknown)."""
import os

import pytest

from kubectl_gpudoctor.gpu import dcgm
from tests.conftest import CASES
from tests.dcgmtext import UUIDS, exposition
from tests.live import assert_read_only, run_json, serving

XID79 = os.path.join(CASES, "gpu-xid-critical", "fail-xid-79-fallen-off-bus")
HEALTHY = os.path.join(CASES, "gpu-xid-critical", "pass-healthy-gpus")
ECC_POD = os.path.join(CASES, "gpu-failed-under-pod", "fail-ecc-error-xid-48-same-gpu")
HEALTH_RULES = ("gpu-xid-critical", "gpu-memory-errors", "gpu-throttled")


def test_parse_one_record_per_gpu_with_its_pod_and_last_xid():
    text = exposition("n1", [{"index": 0, "pod": ("ml", "a", "c"), "fb_used": 1000},
                             {"index": 1, "xid": 79}])
    gpus = dcgm.parse(text)
    assert [g["index"] for g in gpus] == ["0", "1"] and gpus[1]["uuid"] == UUIDS[1]
    assert gpus[0]["pods"] == [("ml", "a", "c", None)] and gpus[1]["pods"] == []
    assert gpus[1]["lastXid"] == 79 and gpus[1]["lastXidMessage"] == "GPU has fallen off the bus"
    assert dcgm.critical_xids(gpus[1]) == [79] and dcgm.critical_xids(gpus[0]) == []
    assert dcgm.memory(gpus[0]) == (1000, 81559)


def test_counter_families_are_read_by_their_own_name():
    """prometheus_client names a counter's samples NAME_total; the records key on dcgm-exporter's names."""
    g = dcgm.parse(exposition("n1", [{"index": 0, "dbe": 3, "uncorrectable_rows": 2}]))[0]
    assert g["dbeVolatile"] == 3 and g["uncorrectableRows"] == 2


def test_windowed_xid_count_says_how_recent():
    text = ('DCGM_EXP_XID_ERRORS_COUNT{gpu="2",UUID="GPU-x",device="nvidia2",modelName="NVIDIA A100-SXM4-80GB",'
            'Hostname="n1",xid="94",window_size_in_ms="300000"} 3\n')
    g = dcgm.parse(text)[0]
    assert dcgm.critical_xids(g) == [94] and dcgm.xid_age(g, 94) == "3 time(s) in the last 5 min"
    g["xidCounts"].clear()
    g["lastXid"] = 94
    assert "may be hours or days old" in dcgm.xid_age(g, 94)


def test_mig_instances_fold_into_their_gpu():
    lab = 'gpu="0",UUID="GPU-m",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="n1"'
    text = "".join(
        f'DCGM_FI_DEV_FB_USED{{{lab},GPU_I_PROFILE="3g.20gb",GPU_I_ID="{i}",namespace="ml",pod="p{i}",container="c"}} '
        f'{used}\nDCGM_FI_DEV_FB_FREE{{{lab},GPU_I_PROFILE="3g.20gb",GPU_I_ID="{i}",namespace="ml",pod="p{i}",'
        f'container="c"}} {19968 - used}\n' for i, used in ((1, 100), (2, 19000)))
    (g,) = dcgm.parse(text)
    assert g["migInstances"] == [("3g.20gb", "1"), ("3g.20gb", "2")]
    assert [p[1] for p in g["pods"]] == ["p1", "p2"] and g["pods"][1][3] == "3g.20gb"
    assert dcgm.memory(g) == (19100, 39936)


def test_time_sliced_or_old_exporter_without_pod_labels():
    (g,) = dcgm.parse(exposition("n1", [{"index": 0, "pod": ("ml", "a", "c")}], pod_labels=False))
    assert g["pods"] == [] and g["podLabels"] is False


def test_throttle_reasons_ignore_idle_and_clock_settings():
    g = dcgm.parse(exposition("n1", [{"index": 0, "reasons": 0x1 | 0x2}]))[0]
    assert g["throttleReasons"] == []
    g = dcgm.parse(exposition("n1", [{"index": 0, "reasons": 0x4 | 0x40}]))[0]
    assert g["throttleReasons"] == ["hw_thermal"]   # a software power cap is the configured limit, not a fault


@pytest.mark.parametrize("text", ["<html>502 Bad Gateway</html>", 'DCGM_FI_DEV_GPU_TEMP{gpu="0" 41\n'])
def test_text_that_is_not_metrics_is_an_error(text):
    with pytest.raises(dcgm.MetricsError):
        dcgm.parse(text)


def _proxy_reads(srv):
    return [r for r in srv.requests if r.path.endswith("/proxy/metrics")]


def test_live_xid_79_read_through_the_pod_proxy(tmp_path):
    with serving(XID79, tmp_path) as (srv, kc):
        proc, doc = run_json("node", "gpu-h100-15", "--kubeconfig", kc)
    assert_read_only(srv)
    reads = _proxy_reads(srv)
    assert [r.path for r in reads] == ["/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-2zdxk:9400/proxy/metrics"]
    assert doc["rootCause"] == "gpu-xid-critical" and proc.returncode == 1, proc.stderr
    assert doc["gaps"] == []
    row = next(r for r in doc["gpuHealth"] if r["gpu"] == "3")
    assert row["xid"] == "79" and row["pod"] == "trainer-llm-1"


def test_live_healthy_gpus(tmp_path):
    with serving(HEALTHY, tmp_path) as (srv, kc):
        proc, doc = run_json("node", "gpu-h100-15", "--kubeconfig", kc)
    checks = {c["id"]: c["result"] for c in doc["checks"]}
    assert proc.returncode == 0 and doc["status"] == "healthy"
    assert all(checks[r] == "passed" for r in HEALTH_RULES), checks
    assert len(doc["gpuHealth"]) == 8


def test_live_proxy_forbidden_is_a_gap_not_health(tmp_path):
    with serving(XID79, tmp_path) as (srv, kc):
        srv.forbid("pods", subresource="proxy")
        proc, doc = run_json("node", "gpu-h100-15", "--kubeconfig", kc)
    checks = {c["id"]: c for c in doc["checks"]}
    assert doc["status"] == "healthy" and "gpu-xid-critical" not in [f["id"] for f in doc["findings"]]
    assert checks["gpu-xid-critical"]["result"] == "unknown"
    assert "forbidden (needs get pods/proxy)" in checks["gpu-xid-critical"]["reason"]
    assert [g["source"] for g in doc["gaps"]] == ["pods/proxy"]


def test_live_exporter_not_answering_is_a_gap(tmp_path):
    with serving(XID79, tmp_path) as (srv, kc):
        srv.metrics[("gpu-operator", "nvidia-dcgm-exporter-2zdxk")] = None   # 503: nothing listens on :9400
        _, doc = run_json("node", "gpu-h100-15", "--kubeconfig", kc)
    assert doc["gaps"][0]["source"] == "pods/proxy" and "connection refused" in doc["gaps"][0]["detail"]
    assert {c["id"]: c["result"] for c in doc["checks"]}["gpu-throttled"] == "unknown"


def test_live_no_exporter_on_the_node_is_unknown_without_a_request(tmp_path):
    with serving(XID79, tmp_path) as (srv, kc):
        srv.remove("Pod", "gpu-operator", "nvidia-dcgm-exporter-2zdxk")
        _, doc = run_json("node", "gpu-h100-15", "--kubeconfig", kc)
    assert _proxy_reads(srv) == []
    check = next(c for c in doc["checks"] if c["id"] == "gpu-xid-critical")
    assert check["result"] == "unknown" and "no dcgm-exporter pod runs on node gpu-h100-15" in check["reason"]


def test_live_pod_view_names_the_failed_gpu(tmp_path):
    with serving(ECC_POD, tmp_path) as (srv, kc):
        proc, doc = run_json("trainer-llm-1", "-n", "training", "--kubeconfig", kc)
    assert_read_only(srv)
    assert len(_proxy_reads(srv)) == 1
    assert doc["rootCause"] == "gpu-failed-under-pod", [f["id"] for f in doc["findings"]]
    cause = next(f for f in doc["findings"] if f["id"] == "gpu-failed-under-pod")
    assert "GPU 5 GPU-19d4b7e3" in cause["message"]


def test_bundle_keeps_the_metrics(tmp_path):
    from kubectl_gpudoctor.offline import bundle, load
    ev = load.load(XID79, kind="Node")
    out = tmp_path / "b"
    bundle.write(ev, str(out))
    again = load.load(str(out), kind="Node")
    assert again.metrics == ev.metrics and again.readable("pods/proxy")


def test_gpu_health_table_fits_80_columns():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "kubectl_gpudoctor", "node", "--from", XID79, "--color", "never"],
                          capture_output=True, text=True, env=dict(os.environ, COLUMNS="80"))
    table = proc.stdout.split("GPU health:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(table) == 9 and max(len(line) for line in table) <= 80, table
