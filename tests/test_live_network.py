"""The eviction and network checks over the real REST paths: what the collector reads, and 403/404 as gap/absence."""
import os

from tests.apiserver import FakeApiServer, load_case
from tests.conftest import CASES
from tests.live import assert_read_only, run_json, serving


def case(rule_id, scenario):
    return os.path.join(CASES, rule_id, scenario)


def finding(doc, rule_id):
    return next((f for f in doc["findings"] if f["id"] == rule_id), None)


def check(doc, rule_id):
    return next(c for c in doc["checks"] if c["id"] == rule_id)


def paths(srv):
    return [r.path for r in srv.requests]


def test_policy_blocking_nccl_live(tmp_path):
    with serving(case("networkpolicy-blocks-traffic", "fail-nccl-timeout-default-deny-egress"), tmp_path,
                 namespace="research") as (srv, kc):
        proc, doc = run_json("llama-ft-master-0", "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1, proc.stderr
    assert doc["rootCause"] == "nccl-failure"
    f = finding(doc, "networkpolicy-blocks-traffic")
    assert f and f["severity"] == "critical" and "default-deny-egress" in f["message"]
    assert "/apis/networking.k8s.io/v1/namespaces/research/networkpolicies" in paths(srv)
    # allow-dns chooses kube-system by namespaceSelector: the two namespaces' labels are read, nothing more
    assert {p for p in paths(srv) if p.startswith("/api/v1/namespaces/") and p.count("/") == 4} == \
        {"/api/v1/namespaces/research", "/api/v1/namespaces/kube-system"}


def test_forbidden_policies_are_unknown_not_absent_live(tmp_path):
    with serving(case("networkpolicy-blocks-traffic", "fail-nccl-timeout-default-deny-egress"), tmp_path,
                 namespace="research") as (srv, kc):
        srv.forbid("networkpolicies")
        _, doc = run_json("llama-ft-master-0", "--kubeconfig", kc)
    c = check(doc, "networkpolicy-blocks-traffic")
    assert c["result"] == "unknown" and "forbidden" in c["reason"], c
    assert any(g["source"] == "networkpolicies" and g["reason"] == "forbidden" for g in doc["gaps"])


def test_forbidden_namespace_labels_leave_the_policy_undecided_live(tmp_path):
    with serving(case("networkpolicy-blocks-traffic", "pass-namespace-labels-forbidden"), tmp_path,
                 namespace="research") as (srv, kc):
        srv.forbid("namespaces")
        _, doc = run_json("llama-ft-worker-0", "--kubeconfig", kc)
    assert finding(doc, "networkpolicy-blocks-traffic") is None
    c = check(doc, "networkpolicy-blocks-traffic")
    assert c["result"] == "unknown" and "namespaces" in c["reason"], c


def test_multus_crd_not_installed_means_no_attachment_live(tmp_path):
    objects, logs = load_case(case("rdma-device-missing", "fail-nad-missing-comma-list"))
    objects = [o for o in objects if o["kind"] != "NetworkAttachmentDefinition"]
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kubeconfig"), namespace="training")
        proc, doc = run_json("gpt-pretrain-1", "--kubeconfig", kc)
    assert_read_only(srv)
    assert doc["rootCause"] == "rdma-device-missing", doc["summary"]
    assert "k8s.cni.cncf.io API is not installed" in finding(doc, "rdma-device-missing")["message"]


def test_attachment_in_another_namespace_is_read_by_name_live(tmp_path):
    with serving(case("rdma-device-missing", "fail-nad-missing-json-other-namespace"), tmp_path,
                 namespace="ml-team") as (srv, kc):
        _, doc = run_json("vlm-train-0", "--kubeconfig", kc)
    wanted = "/apis/k8s.cni.cncf.io/v1/namespaces/nvidia-network-operator/network-attachment-definitions/sriov-rdma-net"
    assert wanted in paths(srv)
    assert doc["rootCause"] == "rdma-device-missing"


def test_evicted_pod_live(tmp_path):
    with serving(case("evicted", "fail-node-memory-vllm"), tmp_path, namespace="serving") as (srv, kc):
        proc, doc = run_json("chat-llama-5c6d7f8b9-qv2lx", "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1 and doc["rootCause"] == "evicted", doc["summary"]
    assert not finding(doc, "killed-by-signal")
