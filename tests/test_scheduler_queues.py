"""Batch-scheduler queues read live (issue 21): the queue CRs are optional-API lists — found, absent (the CRD is not
installed: 404) or a gap (403 is not absence) — and scheduler-queue-invalid decides from them."""
import copy
import os

from tests.apiserver import FakeApiServer, load_case
from tests.conftest import ROOT
from tests.live import assert_read_only, run_json

CASES = os.path.join(ROOT, "tests", "cases", "scheduler-queue-invalid")
KAI_MISSING = os.path.join(CASES, "fail-kai-queue-does-not-exist")
VOLCANO_CLOSED = os.path.join(CASES, "fail-volcano-queue-closed")


def _check(doc, rule_id):
    return next(c for c in doc["checks"] if c["id"] == rule_id)


def _without_words(objects):
    """The KAI pod without the scheduler's own words: the queue list alone must decide."""
    out = copy.deepcopy(objects)
    for o in out:
        if o.get("kind") == "Pod":
            o["status"]["conditions"] = [c for c in o["status"]["conditions"] if c["type"] != "PodScheduled"]
    return out


def test_kai_queue_list_decides_and_is_read_only(tmp_path):
    objects, logs = load_case(KAI_MISSING)
    with FakeApiServer(_without_words(objects), logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="ml-team")
        proc, doc = run_json("llm-ft-7b9c5d6f8-m2x4q", "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1, proc.stderr
    assert doc["rootCause"] == "scheduler-queue-invalid", doc["summary"]
    assert any(r.path.startswith("/apis/scheduling.run.ai/v2/queues") for r in srv.requests)


def test_forbidden_queue_list_is_a_gap_not_absence(tmp_path):
    objects, logs = load_case(KAI_MISSING)
    with FakeApiServer(_without_words(objects), logs) as srv:
        srv.forbid("queues")
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="ml-team")
        _, doc = run_json("llm-ft-7b9c5d6f8-m2x4q", "--kubeconfig", kc)
    check = _check(doc, "scheduler-queue-invalid")
    assert check["result"] == "unknown" and "forbidden" in check["reason"], check
    assert doc["rootCause"] != "scheduler-queue-invalid"


def test_volcano_closed_queue_live(tmp_path):
    objects, logs = load_case(VOLCANO_CLOSED)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="render")
        _, doc = run_json("sd-batch-0", "--kubeconfig", kc)
    assert doc["rootCause"] == "scheduler-queue-invalid", doc["summary"]
