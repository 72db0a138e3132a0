"""Unit tests for the scheduling helpers: FailedScheduling parsing, selector operators, pod affinity, blockers."""
import pytest

from kubectl_gpudoctor.kube import affinity, placement, schedmsg
from kubectl_gpudoctor.evidence import Evidence, Target


@pytest.mark.parametrize("message,total,reasons,free_text", [
    ("0/12 nodes are available: 8 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector. "
     "preemption: 0/12 nodes are available: 12 No preemption victims found for incoming pod.",
     12, [(8, "Insufficient nvidia.com/gpu"), (4, "node(s) didn't match Pod's node affinity/selector")], ""),
    ("0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, "
     "2 Insufficient nvidia.com/gpu.",
     3, [(1, "node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate"),
         (2, "Insufficient nvidia.com/gpu")], ""),
    ("0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules. no new claims to deallocate, "
     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
     1, [(1, "node(s) didn't satisfy existing pods anti-affinity rules")], ""),
    ("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: "
     "3 Preemption is not helpful for scheduling..", 3, [], "pod has unbound immediate PersistentVolumeClaims"),
    ("No nodes are available that match all of the following predicates:: Insufficient nvidia.com/gpu (3), "
     "PodToleratesNodeTaints (1).", 3, [(3, "Insufficient nvidia.com/gpu"), (1, "PodToleratesNodeTaints")], ""),
])
def test_parse_real_forms(message, total, reasons, free_text):
    parsed = schedmsg.parse(message)
    assert parsed.total == total
    assert parsed.reasons == reasons
    assert parsed.free_text == free_text


def test_parse_rejects_non_summaries_and_reads_families():
    assert schedmsg.parse('running PreBind plugin "VolumeBinding": binding volumes: timed out waiting for the condition') is None
    p = schedmsg.parse("0/5 nodes are available: 2 node(s) had untolerated taint(s), 3 Insufficient nvidia.com/gpu.")
    assert p.covers_all("taint", "insufficient") and not p.covers_all("taint")
    assert schedmsg.taints_in("node(s) had untolerated taint {dedicated: gpu-training}") == [("dedicated", "gpu-training")]
    assert schedmsg.insufficient_resources(p) == [(3, "nvidia.com/gpu")]


@pytest.mark.parametrize("op,values,labels,want", [
    ("In", ["a", "b"], {"k": "b"}, True), ("In", ["a"], {}, False),
    ("NotIn", ["a"], {}, True), ("NotIn", ["a"], {"k": "a"}, False),
    ("Exists", [], {"k": ""}, True), ("DoesNotExist", [], {"k": "x"}, False),
    ("Gt", ["40000"], {"k": "81920"}, True), ("Gt", ["40000"], {"k": "15360"}, False),
    ("Lt", ["4"], {"k": "1"}, True), ("Lt", ["4"], {"k": "abc"}, False), ("Gt", ["1"], {}, False),
])
def test_node_selector_operators(op, values, labels, want):
    assert affinity.expression_matches(labels, {"key": "k", "operator": op, "values": values}) is want


def _node(name, labels=None, alloc=None, taints=None):
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": alloc or {}, "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name, ns="ml", labels=None, gpus=1, node=None, **spec):
    s = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    s.update(spec)
    if node:
        s["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": name, "labels": labels or {}},
            "spec": s, "status": {"phase": "Running" if node else "Pending"}}


def test_selector_failures_name_the_label_and_or_terms():
    pod = _pod("p", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}]}}}, nodeSelector={"zone": "a"})
    fails = affinity.selector_failures(pod, _node("n", {"gpu": "a100", "zone": "b"}))
    assert fails[0] == "nodeSelector zone=a (node has zone=b)"
    assert "gpu In [h100] (node has gpu=a100) OR pool Exists (node has no pool label)" in fails[1]
    assert affinity.selector_failures(pod, _node("n", {"gpu": "a100", "zone": "a", "pool": "x"})) == []


def test_selector_query_round_trips_operators():
    sel = {"matchLabels": {"app": "db"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["a", "b"]}, {"key": "x", "operator": "DoesNotExist"}]}
    assert affinity.selector_query(sel) == "app=db,tier in (a,b),!x"


def _ev(objs, pod_nodes=None):
    ev = Evidence(target=Target("Pod", "p", "ml"))
    for o in objs:
        ev.add(o)
    ev.sources = {"nodes", "pods", "persistentvolumeclaims", "persistentvolumes"}
    ev.pod_nodes = pod_nodes
    return ev


def test_pod_affinity_first_pod_may_match_itself():
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    pod = _pod("p", labels={"app": "web"}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    node = _node("g", {"kubernetes.io/hostname": "g"}, {"nvidia.com/gpu": "1"})
    assert placement.affinity_failure(_ev([pod, node]), pod, node) == ""
    other = _pod("q", labels={"app": "cache"}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    assert "nowhere" in placement.affinity_failure(_ev([other, node]), other, node)


def test_pod_affinity_unknown_when_peers_not_listed():
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    pod = _pod("p", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    node = _node("g", {"kubernetes.io/hostname": "g"}, {"nvidia.com/gpu": "1"})
    ev = _ev([pod, node], pod_nodes={"g"})
    assert placement.affinity_failure(ev, pod, node) is None
    ev.sources.add(affinity.peer_source("ml", "app=db"))
    assert placement.affinity_failure(ev, pod, node).startswith("podAffinity")


def test_blockers_relax_a_predicate_that_excludes_everything():
    pod = _pod("p", nodeSelector={"gpu": "h100"})
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    nodes = [_node("a", {"gpu": "a100"}, {"nvidia.com/gpu": "8"}, taint), _node("b", {"gpu": "a100"}, {"nvidia.com/gpu": "8"}, taint)]
    views = placement.analyse(_ev([pod] + nodes), pod)
    assert placement.blocks(views, "selector") == "blocks"
    assert placement.blocks(views, "taint") == "blocks"   # fixing the selector alone would not be enough


def test_blockers_each_wins_only_where_it_decides():
    pod = _pod("p", nodeSelector={"gpu": "a100"})
    nodes = [_node("a", {"gpu": "a100"}, {"nvidia.com/gpu": "8"}, [{"key": "t", "effect": "NoSchedule"}]),
             _node("b", {"gpu": "l4"}, {"nvidia.com/gpu": "8"})]
    views = placement.analyse(_ev([pod] + nodes), pod)
    assert placement.blocks(views, "selector") is None      # a GPU node matches
    assert placement.blocks(views, "taint") == "blocks"     # the node it picks is tainted


def _chosen(ev):
    from kubectl_gpudoctor.collect.pod import gpu_node_pod_requests
    return [r.query["fieldSelector"].split("=", 1)[1] for r in gpu_node_pod_requests(ev)]


def _gpu_node(name, gpus, pool="gpu", taints=None, present=True):
    labels = {"kubernetes.io/hostname": name, "pool": pool, **({"nvidia.com/gpu.present": "true"} if present else {})}
    return _node(name, labels, {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": str(gpus)}, taints)


UNTOLERATED = [{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}]


@pytest.mark.parametrize("nodes,want", [
    # a GPU node advertising nothing first (its own stack may be why), then admitted nodes, most GPUs first
    ([_gpu_node("a-tainted", 8, taints=UNTOLERATED), _gpu_node("b", 4), _gpu_node("c-elsewhere", 8, pool="cpu"),
      _gpu_node("d", 8), _gpu_node("e", 2), _gpu_node("silent", 0)], ["silent", "d", "b"]),
    # fewer admitted nodes than lists: the blocked ones follow, most GPUs first, then by name
    ([_gpu_node("a-tainted", 8, taints=UNTOLERATED), _gpu_node("b", 2), _gpu_node("c-elsewhere", 4, pool="cpu"),
      _gpu_node("z-tainted", 8, taints=UNTOLERATED)], ["b", "a-tainted", "z-tainted"]),
    ([_gpu_node("a-tainted", 8, taints=UNTOLERATED), _gpu_node("c-elsewhere", 4, pool="cpu")],
     ["a-tainted", "c-elsewhere"]),
])
def test_an_unscheduled_gpu_pod_lists_the_pods_of_the_nodes_it_may_use_first(nodes, want):
    """The pods of at most 3 GPU nodes are listed: a GPU node that advertises none, then those the pod's selector and
    taints admit (most GPUs first), then blocked ones: the same as ordering every node by (blocked, -GPUs, name)."""
    from kubectl_gpudoctor.kube.objects import allocatable
    pod = _pod("p", gpus=8, nodeSelector={"pool": "gpu"})
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    ev = _ev([pod] + nodes, pod_nodes=set())
    assert _chosen(ev) == want
    ranked = sorted((n for n in nodes if allocatable(n, "nvidia.com/gpu") > 0), key=lambda n: (
        bool(affinity.selector_failures(pod, n) or placement.blocking_taints(pod, n)),
        -allocatable(n, "nvidia.com/gpu"), n["metadata"]["name"]))
    silent = [n["metadata"]["name"] for n in nodes if allocatable(n, "nvidia.com/gpu") == 0][:1]
    assert want == (silent + [n["metadata"]["name"] for n in ranked])[:3]


def test_node_weighing_runs_while_the_last_requests_are_in_flight():
    """Api.run hands the wait to pure work on what is held: the answers arrive only after it ran, and its errors
    stay out of the collection (the verdict redoes that work and reports them)."""
    import json
    import threading
    from kubectl_gpudoctor.collect.api import Api, Request

    weighed = threading.Event()

    class Client:
        server = "https://127.0.0.1:6443"

        def get(self, path, query=None, accept="application/json", meanwhile=None):
            assert weighed.wait(5), "the answer was awaited before the meanwhile work ran"
            return 200, json.dumps({"kind": "PodList", "items": [_pod("q", node="g")]}).encode()

    ev = _ev([_pod("p", gpus=8), _node("g", {"pool": "gpu"}, {"nvidia.com/gpu": "8"})])
    api = Api(Client(), 5)
    reqs = [Request("pods", "list", "/api/v1/pods", {"fieldSelector": "spec.nodeName=g"}, "Pod")]
    api.run(reqs, ev, meanwhile=lambda: (placement.node_fit(ev, ev.pod), weighed.set()))
    assert [p["metadata"]["name"] for p in ev.all("Pod")] == ["p", "q"]
    assert [n["metadata"]["name"] for n, *_ in placement.node_fit(ev, ev.pod)] == ["g"]
    weighed.clear()

    def broken():
        weighed.set()
        raise KeyError("spec")
    api.run([Request("pods", "list", "/api/v1/pods", {"fieldSelector": "spec.nodeName=h"}, "Pod")], ev, meanwhile=broken)
    assert not ev.gaps


@pytest.mark.parametrize("case", ["untolerated-taint/fail-multi-signal-spot-taint-and-full",
                                  "node-selector-mismatch/fail-affinity-terms-spot-only-pool",
                                  "insufficient-gpu/fail-xid-unhealthy-gpu-fragment"])
def test_every_scheduling_rule_reads_the_shared_node_views_without_changing_them(case):
    """placement.analyse hands every rule the same remembered views (copying them cost ~10 ms per diagnosis on
    2,000 nodes): a whole verdict leaves them as a fresh analysis finds them."""
    import os
    from kubectl_gpudoctor import verdict
    from kubectl_gpudoctor.offline.load import load
    from tests.conftest import ROOT
    path = os.path.join(ROOT, "tests", "cases", case)
    ev = load(path, "Pod", None, None, 80)
    verdict.diagnose_pod(ev, ())
    held = [v for key, views in ev.memo.items() if key[0] == "analyse" for v in views]
    assert held, "the verdict analysed the nodes"
    fresh = placement._analyse(ev, ev.pod)
    assert [(v.name, v.fails, v.unknown) for v in held] == [(v.name, v.fails, v.unknown) for v in fresh]
