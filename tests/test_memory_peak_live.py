"""An OOM kill's observed peak, live: the kernel's OOM line that node-problem-detector reports as an `OOMKilling`
event on the Node (namespace default) is read with one field-selected list only for an OOM-killed pod, sizes the
suggestion as it does from a bundle, and when refused is a gap of its own that leaves the pod's events readable."""
import os

from tests.conftest import ROOT
from tests.live import assert_read_only, run_json, serving

CASES = os.path.join(ROOT, "tests", "cases")
NO_LIMIT = os.path.join(CASES, "oom-killed", "fail-no-limit-npd-oomkilling-peak")
POD, NS = "qwen-14b-5d4c8b9f6d-wlx7t", "llm"
HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
SELECTOR = "involvedObject.kind=Node,involvedObject.name=gpu-node-11,reason=OOMKilling"


def _oom(doc):
    return next(f for f in doc["findings"] if f["id"] == "oom-killed")


def _node_event_reads(srv):
    return [r for r in srv.requests if r.path == "/api/v1/namespaces/default/events"]


def test_the_kernels_figure_sizes_the_suggestion_live_as_from_a_bundle(tmp_path):
    with serving(NO_LIMIT, tmp_path, namespace=NS) as (srv, kc):
        proc, doc = run_json(POD, "--kubeconfig", kc)
        reads = _node_event_reads(srv)
    assert_read_only(srv)
    assert [r.query for r in reads] == [{"fieldSelector": SELECTOR}]
    assert proc.returncode == 1 and doc["rootCause"] == "oom-killed", doc["summary"]
    finding = _oom(doc)
    assert "memory: 34Gi" in finding["snippet"] and "holding 27Gi when the node ran out" in finding["snippet"]
    assert "Out of memory: Killed process 2874 (python3)" in " ".join(e["text"] for e in finding["evidence"])
    assert not doc["gaps"], doc["gaps"]


def test_refused_node_events_are_their_own_gap_and_the_suggestion_says_how_to_measure(tmp_path):
    with serving(NO_LIMIT, tmp_path, namespace=NS) as (srv, kc):
        srv.forbid("events", namespace="default")
        proc, doc = run_json(POD, "--kubeconfig", kc)
    assert proc.returncode == 1 and doc["rootCause"] == "oom-killed", doc["summary"]
    assert [(g["source"], g["reason"]) for g in doc["gaps"]] == [("events", "forbidden")], doc["gaps"]
    assert doc["gaps"][0]["detail"].startswith("the OOMKilling events of node gpu-node-11 (namespace default): ")
    finding = _oom(doc)
    assert "<measured peak + 25%>" in finding["snippet"] and "34Gi" not in finding["snippet"]
    # the pod's own events were read: no check that needs them is unknown
    assert not [c["id"] for c in doc["checks"] if c["result"] == "unknown"]


def test_a_pod_that_was_not_oom_killed_reads_no_node_events(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        proc, _ = run_json("chat-6b7c9d8f4-m2kqz", "--kubeconfig", kc)
        assert proc.returncode == 0 and not _node_event_reads(srv)
