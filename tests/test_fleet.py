"""`kubectl gpudoctor nodes`: the fleet's rows, free GPUs and unavailable nodes, live (bounded, paged, GET only) and
from saved input; `--health` reads each GPU node's dcgm-exporter."""
import json
import os

import pytest

from tests.apiserver import FakeApiServer
from tests.conftest import CASES
from tests.live import assert_read_only, run_json, run_plugin, serving
from tests.test_node_scale import NO_PLUGIN, stand_in_cluster

XID79 = os.path.join(CASES, "gpu-xid-critical", "fail-xid-79-fallen-off-bus")
SUBSET = {f"gpu-node-{i:04d}" if i % 4 else f"cpu-node-{i:04d}" for i in range(1370, 1382)}   # 9 GPU, 3 CPU


@pytest.fixture(scope="module")
def small_fleet():
    """A dozen nodes of the 2,000-node stand-in, their pods and the operator's DaemonSets."""
    objs = []
    for o in stand_in_cluster():
        where = o["metadata"]["name"] if o["kind"] == "Node" else (o.get("spec") or {}).get("nodeName")
        if o["kind"] == "DaemonSet" or where in SUBSET:
            objs.append(o)
    return objs


def test_live_fleet_rows_free_and_causes(small_fleet, tmp_path):
    with FakeApiServer(small_fleet) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"))
        proc, doc = run_json("nodes", "--kubeconfig", kc)
        text = run_plugin("nodes", "--kubeconfig", kc, "--color", "never")
    assert_read_only(srv)
    assert doc["kind"] == "FleetReport" and doc["gpuNodes"] == 9 and proc.returncode == 1, proc.stderr
    assert {r["node"] for r in doc["nodes"]} == {n for n in SUBSET if n.startswith("gpu-")}
    pod_lists = [r for r in srv.requests if r.path == "/api/v1/pods"]
    assert pod_lists and all(r.query.get("limit") and "status.phase!=Succeeded" in r.query["fieldSelector"]
                             for r in pod_lists)
    assert not [r for r in srv.requests if "/proxy/" in r.path]   # DCGM only with --health
    causes = {n: g["cause"] for g in doc["unavailable"] for n in g["nodes"]}
    assert causes.get(NO_PLUGIN) == "device-plugin-not-running", doc["unavailable"]
    row = next(r for r in doc["nodes"] if r["node"] == "gpu-node-1371")
    assert row["free"] == row["allocatable"] - row["requested"]
    (gpus,) = [g for g in doc["free"] if g["resource"] == "nvidia.com/gpu"]
    assert gpus["free"] == sum(max(0, r["free"]) for r in doc["nodes"] if r["resource"] == "nvidia.com/gpu")
    assert text.stdout.startswith("FAILING  9 GPU node(s)")
    assert max(len(line) for line in text.stdout.splitlines()) <= 80, text.stdout


def test_fleet_from_a_bundle_with_health():
    proc = run_plugin("nodes", "--from", XID79, "-o", "json")
    doc = json.loads(proc.stdout)
    assert doc["unavailable"] == [{"cause": "gpu-xid-critical", "title": "A GPU reported a critical Xid error",
                                   "nodes": ["gpu-h100-15"]}]
    assert doc["health"][0]["rule"] == "gpu-xid-critical" and proc.returncode == 1


def test_live_health_reads_each_exporter_once(tmp_path):
    with serving(XID79, tmp_path) as (srv, kc):
        _, plain = run_json("nodes", "--kubeconfig", kc)
        srv.reset_requests()
        _, health = run_json("nodes", "--health", "--kubeconfig", kc)
    assert plain["health"] == [] and plain["unavailable"] == []
    assert [h["rule"] for h in health["health"]] == ["gpu-xid-critical"]
    assert len([r for r in srv.requests if r.path.endswith("/proxy/metrics")]) == 1


def test_nodes_with_a_name_is_the_node_view():
    proc = run_plugin("nodes", "gpu-h100-15", "--from", XID79)
    assert proc.stdout.startswith("FAILING  Node gpu-h100-15"), proc.stdout + proc.stderr


def test_fleet_document_matches_the_schema():
    import jsonschema
    from tests.conftest import ROOT
    with open(os.path.join(ROOT, "docs", "gpudoctor-v1.schema.json")) as f:
        schema = json.load(f)
    doc = json.loads(run_plugin("nodes", "--from", XID79, "-o", "json").stdout)
    jsonschema.validate(doc, schema)
    assert doc["kind"] == "FleetReport"
