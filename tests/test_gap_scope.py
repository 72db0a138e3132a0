"""A gap is unknown only for what its read covered: a 403 on one namespace's NetworkPolicies (the peer's, read for a
waiting init container) leaves the pod's own namespace's policies, read fine, a fact; a DaemonSet list that was
namespace-scoped says which namespaces it covered, never "none in the cluster". Live against the suite's API server
(what is read, what 403 leaves unknown), offline from the bundle that live run writes, and from edited objects."""
import copy
import os

from kubectl_gpudoctor import verdict
from kubectl_gpudoctor.evidence import Evidence, Gap, Target
from kubectl_gpudoctor.offline import bundle, load as offline
from tests.apiserver import FakeApiServer, load_case
from tests.conftest import CASES
from tests.live import assert_read_only, run_json, run_plugin, serving

REDIS = os.path.join(CASES, "init-container-waiting", "fail-egress-denied-other-namespace")
REDIS_POD = "triton-ensemble-59c7d6f8b-k8d2w"   # namespace inference; it waits for redis-master in namespace cache
WAIT, POLICY = "init-container-waiting", "networkpolicy-blocks-traffic"


def finding(doc, rule_id):
    return next((f for f in doc["findings"] if f["id"] == rule_id), None)


def check(doc, rule_id):
    return next(c for c in doc["checks"] if c["id"] == rule_id)


def redis_objects(allow_cache: bool):
    """The case's objects; with allow_cache the pod's own default-deny-egress also lets it reach Redis in cache
    (what the case's fix adds), so only the peer namespace's policies could still drop the connection."""
    objects, logs = load_case(REDIS)
    objects = copy.deepcopy(objects)
    if allow_cache:
        policy = next(o for o in objects if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "default-deny-egress")
        policy["spec"]["egress"].append({
            "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "cache"}},
                    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "redis"}}}],
            "ports": [{"protocol": "TCP", "port": 6379}]})
    return objects, logs


def live(tmp_path, allow_cache=False, bundle=None):
    objects, logs = redis_objects(allow_cache)
    with FakeApiServer(objects, logs) as srv:
        srv.forbid("networkpolicies", namespace="cache")
        kc = srv.write_kubeconfig(str(tmp_path / "kubeconfig"), namespace="inference")
        _, doc = run_json(REDIS_POD, "--kubeconfig", kc)
        if bundle:
            proc = run_plugin("bundle", REDIS_POD, "-f", str(bundle), "--kubeconfig", kc)
            assert proc.returncode == 0, proc.stderr
    assert_read_only(srv)
    got = [r.path for r in srv.requests]
    assert "/apis/networking.k8s.io/v1/namespaces/cache/networkpolicies" in got
    assert "/apis/networking.k8s.io/v1/namespaces/inference/networkpolicies" in got
    return doc


def test_a_403_on_the_peer_namespace_policies_leaves_the_own_namespace_check_decided(tmp_path):
    """The own namespace's default-deny-egress was read: the job/DNS check runs on it (it lets DNS out: passed), and
    the init container's wait is explained by it, whatever the unread policies of namespace cache say."""
    doc = live(tmp_path)
    assert check(doc, POLICY)["result"] == "passed", check(doc, POLICY)
    f = finding(doc, WAIT)
    assert doc["rootCause"] == WAIT and "NetworkPolicy default-deny-egress isolates pod" in f["message"], f["message"]
    gap = next(g for g in doc["gaps"] if g["source"] == "networkpolicies")
    assert gap["reason"] == "forbidden" and gap.get("namespace") == "cache", gap
    assert [g for g in doc["gaps"] if g["source"] == "networkpolicies"] == [gap]   # one gap: cache's


def test_when_only_the_peer_policies_could_drop_it_the_wait_says_which_namespace_was_not_read(tmp_path):
    doc = live(tmp_path, allow_cache=True)
    f = finding(doc, WAIT)
    assert "not checked: forbidden (needs list networkpolicies in namespace cache)" in f["message"], f["message"]
    assert "no NetworkPolicy read drops" not in f["message"]
    assert check(doc, POLICY)["result"] == "passed"


def test_the_bundle_keeps_the_peer_namespace_gap_and_replays_it(tmp_path):
    out = tmp_path / "b.tgz"
    doc = live(tmp_path, allow_cache=True, bundle=out)
    _, replay = run_json(REDIS_POD, "--from", str(out))
    assert check(replay, POLICY)["result"] == "passed", check(replay, POLICY)
    assert [g for g in replay["gaps"] if g["source"] == "networkpolicies"] == \
        [g for g in doc["gaps"] if g["source"] == "networkpolicies"]
    assert "needs list networkpolicies in namespace cache" in finding(replay, WAIT)["message"]


def test_a_403_on_the_own_namespace_policies_is_unknown_for_both_checks(tmp_path):
    """The reverse: the own namespace's list refused, the peer's read. Both checks need the own namespace's."""
    with serving(REDIS, tmp_path, namespace="inference") as (srv, kc):
        srv.forbid("networkpolicies", namespace="inference")
        _, doc = run_json(REDIS_POD, "--kubeconfig", kc)
    want = "not checked: forbidden (needs list networkpolicies in namespace inference)"
    assert check(doc, POLICY) == {"id": POLICY, "result": "unknown", "reason": want}
    assert want in finding(doc, WAIT)["message"]


def test_a_scoped_gap_is_the_namespace_it_names_and_an_unscoped_one_every_namespace():
    ev = Evidence(Target("Pod", "p", "inference"), sources={"networkpolicies"})
    ev.gaps["networkpolicies#cache"] = Gap("networkpolicies", "forbidden", "", "list", namespace="cache")
    assert ev.gap_in("networkpolicies", "inference") is None
    assert ev.gap_in("networkpolicies", "cache").needs() == \
        "not checked: forbidden (needs list networkpolicies in namespace cache)"
    ev.gaps["networkpolicies"] = Gap("networkpolicies", "forbidden", "", "list")   # an older bundle's: no namespace
    assert ev.gap_in("networkpolicies", "inference") is ev.gaps["networkpolicies"]
    merged = Evidence(Target("Pod", "q", "inference")).merged([ev])
    assert set(merged.gaps) == {"networkpolicies", "networkpolicies#cache"}


# --- Multus attachments: the pod's own namespace listed, another namespace's read by name ---------------------------
NAD_CASE = os.path.join(CASES, "rdma-device-missing", "fail-nad-missing-comma-list")
NAD_POD, RDMA = "gpt-pretrain-1", "rdma-device-missing"
FOREIGN = "/apis/k8s.cni.cncf.io/v1/namespaces/nvidia-network-operator/network-attachment-definitions/sriov-rdma-net"


def nad_live(tmp_path, own_missing=True):
    """The case's pod also asks for nvidia-network-operator/sriov-rdma-net, whose namespace refuses the read;
    without own_missing, ib-net-b (the own namespace's missing attachment) exists after all."""
    objects, logs = load_case(NAD_CASE)
    objects = copy.deepcopy(objects)
    pod = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == NAD_POD)
    pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] += ", nvidia-network-operator/sriov-rdma-net@net3"
    if not own_missing:
        nad = copy.deepcopy(next(o for o in objects if o["kind"] == "NetworkAttachmentDefinition"))
        nad["metadata"]["name"], nad["metadata"]["uid"] = "ib-net-b", "5b0c3f1e-77a2-4d52-9c1e-2f6f0d4a8b21"
        objects.append(nad)
    with FakeApiServer(objects, logs) as srv:
        srv.forbid("network-attachment-definitions", namespace="nvidia-network-operator")
        kc = srv.write_kubeconfig(str(tmp_path / "kubeconfig"), namespace="training")
        _, doc = run_json(NAD_POD, "--kubeconfig", kc)
    assert_read_only(srv)
    assert FOREIGN in [r.path for r in srv.requests]
    return doc


def test_a_refused_attachment_elsewhere_leaves_the_own_namespace_missing_one_a_fact(tmp_path):
    doc = nad_live(tmp_path)
    assert doc["rootCause"] == RDMA, (doc["summary"], check(doc, RDMA))
    assert "training/ib-net-b" in finding(doc, RDMA)["message"] and "which does not exist" in finding(doc, RDMA)["message"]
    gap = next(g for g in doc["gaps"] if g["source"] == "network-attachment-definitions")
    assert gap["reason"] == "forbidden" and gap["namespace"] == "nvidia-network-operator", gap


def test_a_refused_attachment_elsewhere_is_unknown_and_never_absent(tmp_path):
    doc = nad_live(tmp_path, own_missing=False)
    assert check(doc, RDMA) == {"id": RDMA, "result": "unknown", "reason": "not checked: forbidden (needs get "
                                "network-attachment-definitions in namespace nvidia-network-operator)"}


def test_a_403_on_the_peer_service_pods_is_the_peer_namespace_gap_only(tmp_path):
    """The Service's pods in namespace cache refused: the checks that need the pods the diagnosis reads for the
    node and the pod's own namespace are not made unknown by it; the wait is still decided by the own policy."""
    with serving(REDIS, tmp_path, namespace="inference") as (srv, kc):
        srv.forbid("pods", namespace="cache")
        _, doc = run_json(REDIS_POD, "--kubeconfig", kc)
    sel = "app.kubernetes.io/component=master,app.kubernetes.io/instance=redis,app.kubernetes.io/name=redis"
    assert ("/api/v1/namespaces/cache/pods", sel) in [(r.path, r.query.get("labelSelector")) for r in srv.requests]
    assert [g.get("namespace") for g in doc["gaps"] if g["source"] == "pods"] == ["cache"], doc["gaps"]
    assert not [c for c in doc["checks"] if c["result"] == "unknown" and "pods" in c["reason"]], doc["checks"]
    assert "NetworkPolicy default-deny-egress isolates pod" in finding(doc, WAIT)["message"]


# --- DaemonSets: a namespace-by-namespace list (the cluster-wide one refused) saw only those namespaces ------------
DEPLOY_LABEL = os.path.join(CASES, "device-plugin-not-running", "fail-deploy-label-false")
NODE, PLUGIN = "gpu-a100-12", "device-plugin-not-running"


def plugin_live(tmp_path, ds_namespace, refuse_cluster_wide):
    """The case's node, with the device plugin's DaemonSet moved to `ds_namespace` (the standalone NVIDIA chart's
    `nvidia-device-plugin`), or removed (None)."""
    objects, logs = load_case(DEPLOY_LABEL)
    objects = copy.deepcopy(objects)
    ds = next(o for o in objects if o["kind"] == "DaemonSet")
    if ds_namespace is None:
        objects.remove(ds)
    else:
        ds["metadata"]["namespace"] = ds_namespace
    with FakeApiServer(objects, logs) as srv:
        if refuse_cluster_wide:
            srv.forbid("daemonsets", cluster_scope_only=True)
        kc = srv.write_kubeconfig(str(tmp_path / "kubeconfig"))
        _, doc = run_json("node", NODE, "--kubeconfig", kc)
    assert_read_only(srv)
    listed = sorted(r.path for r in srv.requests if r.path.endswith("/daemonsets") and r.status == 200)
    return doc, listed


def test_a_namespaced_daemonset_list_says_which_namespaces_it_saw(tmp_path):
    doc, listed = plugin_live(tmp_path, "nvidia-device-plugin", refuse_cluster_wide=True)
    assert listed[:2] == ["/apis/apps/v1/namespaces/gpu-operator/daemonsets",
                          "/apis/apps/v1/namespaces/kube-system/daemonsets"]
    msg = finding(doc, PLUGIN)["message"]
    assert "in the cluster" not in msg, msg
    assert ("no device-plugin DaemonSet in namespaces gpu-operator, kube-system (the cluster-wide list was refused; "
            "other namespaces not read)") in " ".join(msg.split()), msg


def test_a_bundle_keeps_which_namespaces_the_daemonsets_were_listed_in(tmp_path):
    """The case's evidence as the namespaced fallback leaves it (no DaemonSet in the namespaces listed), written as
    a bundle and read back: the same scoped sentence, not "none in the cluster"."""
    ev = offline.load(DEPLOY_LABEL, "Node", NODE)
    ev.objects = {k: [o for o in v if k != "DaemonSet"] for k, v in ev.objects.items()}
    ev.sources |= {"daemonsets#gpu-operator", "daemonsets#kube-system"}
    bundle.write(ev, str(tmp_path / "b"))
    for source in (ev, offline.load(str(tmp_path / "b"), "Node", NODE)):
        f = next(f for f in verdict.diagnose_node(source).findings if f.id == PLUGIN)
        assert "no device-plugin DaemonSet in namespaces gpu-operator, kube-system (the cluster-wide" in f.message


def test_the_cluster_wide_list_finds_it_elsewhere_and_an_empty_one_is_none_in_the_cluster(tmp_path):
    doc, listed = plugin_live(tmp_path, "nvidia-device-plugin", refuse_cluster_wide=False)
    assert listed == ["/apis/apps/v1/daemonsets"]
    assert "DaemonSet nvidia-device-plugin/nvidia-device-plugin-daemonset skips the node" in finding(doc, PLUGIN)["message"]
    doc, _ = plugin_live(tmp_path, None, refuse_cluster_wide=False)
    assert "no device-plugin DaemonSet exists in the cluster" in finding(doc, PLUGIN)["message"]


# --- insufficient-gpu's mixed case: free GPUs exist on nodes the pod's selector or a taint keeps it off ------------
FULL = os.path.join(CASES, "node-selector-mismatch", "pass-selected-node-full")
FULL_POD, GPU = "vllm-llama405b-0", "insufficient-gpu"


def full(change=None):
    """The case: the pod's nodeSelector picks gpu-h100-0 (8 of 8 used), gpu-a100-0 has 8 free."""
    ev = offline.load(FULL, "Pod", FULL_POD)
    ev.objects = copy.deepcopy(ev.objects)
    if change:
        change(ev)
    return next(f for f in verdict.diagnose_pod(ev).findings if f.id == GPU)


def _node(ev, name):
    return next(n for n in ev.objects["Node"] if n["metadata"]["name"] == name)


def test_the_fix_offers_the_label_value_of_the_node_with_free_gpus_on_the_object_the_user_edits():
    f = full()
    assert f.remediation.startswith('Let the pod use node gpu-a100-0 (8 nvidia.com/gpu free): set nodeSelector '
                                    'nvidia.com/gpu.product="NVIDIA-A100-SXM4-80GB" in the pod template of StatefulSet '
                                    'vllm-llama405b'), f.remediation
    assert "Where: StatefulSet vllm-llama405b, spec.template.spec " in f.remediation
    assert f.snippet.split("\n") == ["# StatefulSet vllm-llama405b, spec.template.spec", "nodeSelector:",
                                     '  nvidia.com/gpu.product: "NVIDIA-A100-SXM4-80GB"']
    assert "kubectl get pods -A --field-selector spec.nodeName=gpu-h100-0 -o wide   # who holds the GPUs" in f.next


def test_a_taint_on_the_free_node_is_tolerated_in_the_fix():
    def tainted(ev):
        pod = next(p for p in ev.objects["Pod"] if p["metadata"]["name"] == FULL_POD)
        pod["spec"].pop("nodeSelector")
        _node(ev, "gpu-a100-0")["spec"]["taints"] = [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    f = full(tainted)
    assert "tolerate dedicated=training:NoSchedule in the pod template of StatefulSet vllm-llama405b" in f.remediation
    assert "  value: \"training\"" in f.snippet and "- key: dedicated" in f.snippet, f.snippet


def test_a_free_node_kept_off_by_more_than_the_pods_spec_gets_no_relaxed_selector():
    def cordoned(ev):
        _node(ev, "gpu-a100-0")["spec"]["unschedulable"] = True
    f = full(cordoned)
    assert "Let the pod use" not in f.remediation and "nodeSelector:" not in (f.snippet or ""), f.remediation


def test_a_free_node_with_fewer_free_gpus_than_the_pod_asks_is_not_offered():
    def smaller(ev):
        st = _node(ev, "gpu-a100-0")["status"]
        st["capacity"]["nvidia.com/gpu"] = st["allocatable"]["nvidia.com/gpu"] = "4"   # the pod asks for 8
    f = full(smaller)
    assert "gpu-a100-0 with 4 nvidia.com/gpu free" in f.message, f.message
    assert "Let the pod use" not in f.remediation, f.remediation
