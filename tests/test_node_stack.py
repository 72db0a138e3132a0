"""The GPU nodes' own stack for a Pending GPU pod, a pod the scheduler has not judged yet, non-GPU device plugins,
Intel GPU counts and DRA-published GPUs: unit tests on hand-built objects, and the live reads they need."""
import os
from datetime import datetime, timezone

import pytest

from kubectl_gpudoctor.data import gpu_operator as go
from kubectl_gpudoctor.gpu import stack as gpustack, nodeview
from kubectl_gpudoctor.kube import podstate
from kubectl_gpudoctor.evidence import Evidence, Gap, Target
from kubectl_gpudoctor.rules.node import resources as node_rules
from kubectl_gpudoctor.rules.registry import Unknown
from tests.casebook import CASES

NOW = datetime(2026, 3, 10, 14, 0, 0, tzinfo=timezone.utc)


def _pending(created="2026-03-10T13:59:57Z", cond=None, gates=None, gpus=1):
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ml", "uid": "u1", "creationTimestamp": created},
           "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
           "status": {"phase": "Pending", "conditions": [cond] if cond else []}}
    if gates:
        pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return pod


@pytest.mark.parametrize("pod,want", [
    (_pending(), "progressing"),                                                       # 3 s old, nobody spoke
    (_pending(created="2026-03-10T13:50:00Z"), "failing"),                             # 10 min and still nothing
    (_pending(cond={"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}), "failing"),
    (_pending(cond={"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}), "failing"),
    (_pending(gates=["kueue.x-k8s.io/admission"]), "failing"),
    (_pending(created=None), "failing"),                                               # no age: nothing says young
])
def test_health_of_an_unscheduled_pod_waits_for_the_scheduler(pod, want):
    assert podstate.health(pod, NOW) == want
    assert podstate.health(pod) == "failing"    # without the evidence clock: as before


@pytest.mark.parametrize("names,gpu", [
    (["kube-sriov-device-plugin-amd64", "ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.7.0"], False),
    (["rdma-shared-dp-ds", "nvcr.io/nvidia/cloud-native/k8s-rdma-shared-dev-plugin:v1.5.2"], False),
    (["aws-efa-k8s-device-plugin-daemonset", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6"], False),
    # Gaudi and Neuron plugins serve accelerators of the GPU vocabulary, judged by the node-stack rules (issue 21)
    (["habanalabs-device-plugin-daemonset"], True),
    (["neuron-device-plugin-daemonset", "790709498068.dkr.ecr.us-west-2.amazonaws.com/neuron-device-plugin:1.9.0.0"], True),
    (["tpu-device-plugin", "gke.gcr.io/tpu-device-plugin:v0.1"], False),
    (["nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"], True),
    (["nvdp-nvidia-device-plugin", "default"], True),         # `default` holds `efa` but not as a token
    (["amdgpu-device-plugin-daemonset", "rocm/k8s-device-plugin:1.25.2.8"], True),
])
def test_only_gpu_device_plugins_are_gpu_stack_components(names, gpu):
    pod = {"metadata": {"name": names[0] + "-x1", "ownerReferences": [{"kind": "DaemonSet", "name": names[0],
                                                                         "controller": True}]},
           "spec": {"containers": [{"name": "c", "image": names[-1]}]}}
    comp = gpustack.component_of(pod)
    assert (comp is not None and comp.device_plugin) is gpu


def test_intel_shares_are_not_gpu_counts():
    node = {"metadata": {"name": "n"}, "status": {"capacity": {"gpu.intel.com/i915": "8", "gpu.intel.com/millicores": "8000",
                                                              "gpu.intel.com/memory.max": "549755813888",
                                                              "gpu.intel.com/i915_monitoring": "1"},
                                                 "allocatable": {"gpu.intel.com/i915": "0", "gpu.intel.com/millicores": "8000",
                                                                 "gpu.intel.com/memory.max": "549755813888",
                                                                 "gpu.intel.com/i915_monitoring": "1"}}}
    assert nodeview.node_gpu_resources(node) == ["gpu.intel.com/i915"]
    assert nodeview.advertised(node, "intel") == {}     # millicores alone are no schedulable GPU


def _node(name, labels=None, alloc=None):
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"capacity": dict(alloc or {}), "allocatable": dict(alloc or {})}}


def _plugin(node, ready=True):
    return {"kind": "Pod", "metadata": {"name": f"nvdp-{node}", "namespace": "kube-system",
                                        "ownerReferences": [{"kind": "DaemonSet", "name": "nvdp-nvidia-device-plugin",
                                                             "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.16.1"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _ev(*objs):
    ev = Evidence(Target("Pod", "p", "ml"))
    for o in objs:
        ev.add(o)
    ev.sources = {"pods", "nodes", "daemonsets", "events", "pods/log"}
    ev.collected_at = NOW
    return ev


def test_stack_nodes_are_gpu_labelled_nodes_and_plugin_hosts_only_without_them():
    gpu = _node("gpu-1", {"nvidia.com/gpu.present": "true"})
    cpu = _node("cpu-1")
    ev = _ev(_pending(), gpu, cpu, _plugin("gpu-1"), _plugin("cpu-1"))
    assert [n["metadata"]["name"] for n in nodeview.stack_nodes(ev, ev.pod)] == ["gpu-1"]
    ev = _ev(_pending(), _node("minikube"), _node("cpu-2"), _plugin("minikube"))
    assert [n["metadata"]["name"] for n in nodeview.stack_nodes(ev, ev.pod)] == ["minikube"]


@pytest.mark.parametrize("labels,alloc,vendors", [
    ({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, {}, {"nvidia"}),
    ({"feature.node.kubernetes.io/pci-10de.present": "true"}, {"nvidia.com/gpu": "0"}, {"nvidia"}),   # NFD only
    ({"cloud.google.com/gke-accelerator": "nvidia-l4"}, {}, {"nvidia"}),
    ({"nvidia.com/gpu.present": "false", "kubernetes.io/os": "linux"}, {}, set()),       # GFD says no GPU
    ({"feature.node.kubernetes.io/pci-1002.present": "true", "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"},
     {"amd.com/gpu": "8"}, {"amd"}),
    ({"intel.feature.node.kubernetes.io/gpu": "true"}, {"gpu.intel.com/i915": "1"}, {"intel"}),
    ({"kubernetes.io/hostname": "minikube"}, {"nvidia.com/gpu": "1"}, {"nvidia"}),      # capacity, no GPU labels
    ({"kubernetes.io/hostname": "cpu-1"}, {"cpu": "64"}, set()),
    ({"nvidia.com/gpu.count": "8", "amd.com/gpu.product-name": "x"}, {}, {"nvidia", "amd"}),
])
def test_gpu_vendors_from_labels_or_capacity(labels, alloc, vendors):
    node = _node("n", labels, alloc)
    assert nodeview.gpu_vendors(node) == vendors
    by_label = {v for v, keys in go.GPU_NODE_LABELS.items()   # the definition: any of a vendor's labels, truthy
                if any(k in labels and str(labels[k]).strip().lower() not in go.FALSE_VALUES for k in keys)}
    assert nodeview.labelled_vendors(node) == by_label


def test_a_dra_node_with_unreadable_resourceslices_is_unknown_not_zero():
    node = _node("gb200", {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.device-plugin": "false"})
    dra = {"kind": "Pod", "metadata": {"name": "nvidia-dra-driver-gpu-kubelet-plugin-x", "namespace": "dra",
                                       "ownerReferences": [{"kind": "DaemonSet", "controller": True,
                                                            "name": "nvidia-dra-driver-gpu-kubelet-plugin"}]},
           "spec": {"nodeName": "gb200", "containers": [{"name": "gpus"}]}, "status": {"phase": "Running"}}
    ev = Evidence(Target("Node", "gb200"))
    ev.add(node)
    ev.add(dra)
    ev.sources = {"nodes", "pods"}
    ev.add_gap(Gap("resourceslices", "forbidden", "resourceslices is forbidden", "list"))
    ev.collected_at = NOW
    res = node_rules.gpu_allocatable_zero(ev)
    assert isinstance(res, Unknown) and "resourceslices" in res.reason


STACK_CASES = [os.path.join(CASES, *p) for p in (
    ("gpu-not-advertised", "fail-plugin-crashloop-nvml-not-loadable"),
    ("gpu-not-advertised", "fail-plugin-runs-but-sees-no-gpu"),
    ("gpu-not-advertised", "fail-daemonset-repelled-by-custom-taint"),
    ("insufficient-gpu", "fail-xid-unhealthy-gpu-fragment"))]


@pytest.mark.parametrize("case", STACK_CASES, ids=lambda p: "/".join(p.split(os.sep)[-2:]))
def test_live_reads_the_gpu_nodes_stack_with_filtered_bounded_requests(case, tmp_path):
    """Served over HTTP, the pending pod's diagnosis quotes the same node-stack lines as from disk, and every pod
    list is filtered (field or label selector) and every log read bounded."""
    from kubectl_gpudoctor import verdict
    from kubectl_gpudoctor.collect.kubeconfig import ConnOptions
    from kubectl_gpudoctor.collect.pod import collect_pod
    from tests.casebook import diagnose
    from tests.live import assert_read_only, serving
    from tests.test_live import _target, offline_evidence

    offline, target = diagnose(case), _target(case)
    with serving(case, tmp_path, namespace=target["namespace"]) as (srv, kc):
        ev = collect_pod(ConnOptions(kubeconfig=kc), target["name"])
    assert_read_only(srv)
    ev.collected_at = offline_evidence(case).collected_at
    live = verdict.diagnose_pod(ev)
    assert [(f.id, f.message) for f in live.findings] == [(f.id, f.message) for f in offline.findings]
    for r in srv.requests:
        if r.path.endswith("/pods") and r.path.startswith("/api/v1"):
            assert r.query.get("fieldSelector") or r.query.get("labelSelector"), r
        if r.path.endswith("/log"):
            assert r.query.get("tailLines") and r.query.get("limitBytes"), r
    assert len(srv.requests) <= 16


def _ds(selector=None, tolerations=None, desired=0):
    return {"kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "gpu-operator"},
            "spec": {"selector": {"matchLabels": {"app": "nvidia-device-plugin-daemonset"}},
                     "template": {"metadata": {"labels": {"app": "nvidia-device-plugin-daemonset"}},
                                  "spec": {"nodeSelector": selector or {}, "tolerations": tolerations or [],
                                           "containers": [{"name": "ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}}},
            "status": {"desiredNumberScheduled": desired}}


def _tainted(name, key, labels=None):
    n = _node(name, labels)
    n["spec"] = {"taints": [{"key": key, "effect": "NoSchedule"}]}
    return n


@pytest.mark.parametrize("objs,says", [
    # a site taint repels the plugin from the node it would run on (k8s-device-plugin#421)
    ([_ds(), _tainted("dgx-ws", "gpu")], "does not tolerate the node's taint gpu=:NoSchedule"),
    # GPU pool at zero: the operator's DaemonSet selects no CPU node, by design
    ([_ds(selector={"nvidia.com/gpu.deploy.device-plugin": "true"}), _node("cpu-1")], None),
    # only the control plane is tainted: every ordinary DaemonSet stays off it
    ([_ds(), _tainted("cp-1", "node-role.kubernetes.io/control-plane")], None),
])
def test_a_plugin_daemonset_placing_no_pod_is_a_cause_only_when_taints_repel_it(objs, says):
    from kubectl_gpudoctor.rules.scheduling._common import plugin_daemonset_cause
    cause = plugin_daemonset_cause(_ev(_pending(), *objs))
    assert (cause is None) if says is None else (says in cause[0])


def test_the_preloaded_patterns_are_all_the_stack_compiles():
    """A live diagnosis compiles the GPU stack's patterns in its preload thread (gpu/stack.py compiled()); no rule
    case, pod or node, then compiles one on the way to its verdict."""
    from tests.casebook import all_cases, diagnose
    gpustack.compiled()
    before = gpustack._rx.cache_info()
    cases = all_cases()
    for _, _, path in cases:
        diagnose(path)
    after = gpustack._rx.cache_info()
    assert len(cases) > 300 and after.hits > before.hits
    assert after.misses == before.misses, f"{after.misses - before.misses} pattern(s) compiled after compiled()"
