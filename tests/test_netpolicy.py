"""NetworkPolicy evaluation against one pod, and Multus annotation parsing (pure functions)."""
import pytest

from kubectl_gpudoctor.kube import multus, netpolicy as np


def pod(labels=None, ns="ml", ip="10.244.1.5", env=None, command=None, ports=None, annotations=None):
    c = {"name": "c", "env": env or [], "command": command or ["python", "serve.py"], "ports": ports or []}
    return {"metadata": {"name": "p", "namespace": ns, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"containers": [c]}, "status": {"podIP": ip}}


def policy(name, spec, ns="ml"):
    return {"kind": "NetworkPolicy", "metadata": {"name": name, "namespace": ns}, "spec": spec}


POD = pod({"training.kubeflow.org/job-name": "pt", "training.kubeflow.org/replica-type": "worker"})
NS = {"metadata": {"name": "ml", "labels": {"kubernetes.io/metadata.name": "ml", "team": "research"}}}


def verdict(policies, direction="Egress", peer=None, target=POD):
    return np.evaluate(target, policies, direction, peer or np.job_peer(target, NS))


def test_no_policy_selecting_the_pod_allows_everything():
    other = policy("web-only", {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress", "Egress"]})
    v = verdict([other])
    assert not v.isolated and v.result == "allowed"


def test_default_deny_all_is_denied_and_named():
    deny = policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
    for direction in ("Ingress", "Egress"):
        v = verdict([deny], direction)
        assert v.result == "denied" and v.default_deny == ["default-deny"]
    assert verdict([deny], peer=np.dns_peer(None)).result == "denied"


def test_policy_types_default_to_ingress_plus_egress_when_egress_rules_exist():
    assert np.policy_types(policy("a", {"podSelector": {}})) == ["Ingress"]
    assert np.policy_types(policy("b", {"podSelector": {}, "egress": [{}]})) == ["Ingress", "Egress"]
    # ingress-only policy: egress stays open
    assert verdict([policy("a", {"podSelector": {}})], "Egress").result == "allowed"


@pytest.mark.parametrize("rule", [
    {"to": [{"podSelector": {}}]},                                                      # any pod in the namespace
    {"to": [{"podSelector": {"matchLabels": {"training.kubeflow.org/job-name": "pt"}}}]},
    {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ml"}}}]},
    {"to": [{"namespaceSelector": {"matchLabels": {"team": "research"}}}]},
    {},                                                                                 # every destination
    {"to": [{"ipBlock": {"cidr": "10.244.0.0/16"}}]},
    {"to": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 1024, "endPort": 65535}]},
])
def test_intra_namespace_egress_allowed(rule):
    deny = policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
    allow = policy("allow", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [rule]})
    assert verdict([deny, allow]).result == "allowed"


def test_only_some_ports_is_partial_for_nccl():
    allow = policy("store-only", {"podSelector": {}, "policyTypes": ["Egress"],
                                  "egress": [{"to": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 29500}]}]})
    v = verdict([allow])
    assert v.result == "partial" and v.ports == ["29500/TCP"] and v.blocked


def test_other_namespace_only_is_denied():
    allow = policy("to-storage", {"podSelector": {}, "policyTypes": ["Egress"],
                                  "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "storage"}}}]}]})
    assert verdict([allow]).result == "denied"


def test_namespace_labels_not_read_make_it_unknown():
    allow = policy("by-team", {"podSelector": {}, "policyTypes": ["Egress"],
                               "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"team": "research"}}}]}]})
    assert np.evaluate(POD, [allow], "Egress", np.job_peer(POD, None)).result == "unknown"
    # ...but the automatic kubernetes.io/metadata.name label is always known
    by_name = policy("by-name", {"podSelector": {}, "policyTypes": ["Egress"],
                                 "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ml"}}}]}]})
    assert np.evaluate(POD, [by_name], "Egress", np.job_peer(POD, None)).result == "allowed"


def test_per_pod_labels_make_a_peer_selector_undecided_not_denied():
    masters = policy("to-master", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [
        {"podSelector": {"matchLabels": {"training.kubeflow.org/replica-type": "master"}}}]}]})
    assert verdict([masters]).result == "unknown"


def test_match_expressions():
    sel = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]},
                                {"key": "tier", "operator": "DoesNotExist"}]}
    assert np.match(sel, {"app": "a"}) is True
    assert np.match(sel, {"app": "c"}) is False
    assert np.match(sel, {"app": "a", "tier": "x"}) is False
    assert np.match({"matchLabels": {"x": "1"}}, {}, np.ALL) is None


def test_dns_allowed_by_port_only_rule_and_by_named_port():
    ports_only = policy("dns", {"podSelector": {}, "policyTypes": ["Egress"],
                                "egress": [{"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]})
    assert verdict([ports_only], peer=np.dns_peer(None)).result == "allowed"
    named = policy("dns", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
         "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}], "ports": [{"protocol": "UDP", "port": "dns"}]}]})
    assert verdict([named], peer=np.dns_peer(None)).result == "allowed"
    tcp_only = policy("dns", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 53}]}]})
    assert verdict([tcp_only], peer=np.dns_peer(None)).result == "denied"


def test_ingress_from_peers():
    from_ingress_ns = policy("from-ingress", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]}]})
    assert verdict([from_ingress_ns], "Ingress").result == "denied"
    same_ns = policy("same-ns", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {}}]}]})
    assert verdict([from_ingress_ns, same_ns], "Ingress").result == "allowed"


def test_distributed_detection():
    assert np.is_distributed(POD)
    assert np.is_distributed(pod(command=["torchrun", "--nnodes=2", "train.py"]))
    assert np.is_distributed(pod(env=[{"name": "MASTER_ADDR", "value": "job-master-0"}]))
    assert not np.is_distributed(pod(env=[{"name": "MASTER_ADDR", "value": "localhost"}]))
    assert not np.is_distributed(pod({"app": "vllm"}, command=["vllm", "serve", "--tensor-parallel-size", "4"]))
    assert not np.is_distributed(pod(command=["torchrun", "--standalone", "--nproc_per_node=8", "train.py"]))
    assert not np.is_distributed(pod(command=["torchrun", "--nnodes=1", "--nproc_per_node=8", "train.py"]))
    assert np.is_distributed(pod(env=[{"name": "PET_NNODES", "value": "2:4"}]))
    assert np.is_distributed(pod(command=["deepspeed", "--hostfile", "/etc/mpi/hostfile", "train.py"]))


def test_snippet_is_valid_yaml_with_the_group_label():
    import yaml
    doc = yaml.safe_load(np.allow_snippet(POD, ingress=True, egress=True, dns=True))
    assert doc["spec"]["podSelector"] == {"matchLabels": {"training.kubeflow.org/job-name": "pt"}}
    assert doc["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert doc["spec"]["egress"][1]["ports"][0] == {"protocol": "UDP", "port": 53}


@pytest.mark.parametrize("value,expected", [
    ("sriov-a", [("ml", "sriov-a", "")]),
    ("sriov-a, infra/ib-b@net2", [("ml", "sriov-a", ""), ("infra", "ib-b", "net2")]),
    ('[{"name": "ib-a", "interface": "net1"}, {"name": "ib-b", "namespace": "infra"}]',
     [("ml", "ib-a", "net1"), ("infra", "ib-b", "")]),
    ("[not json", []),
    ("", []),
])
def test_multus_annotation_forms(value, expected):
    p = pod(annotations={multus.NETWORKS: value})
    assert [(a.namespace, a.name, a.interface) for a in multus.requested(p)] == expected
