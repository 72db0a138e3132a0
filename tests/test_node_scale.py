"""The node view against a stand-in cluster of 2,000 nodes and 40,000 pods: a small, fixed set of GET requests
whatever the cluster's size — the node's own pods by field selector, never a list of every pod. Requests are
counted, not timed."""
from datetime import datetime, timedelta, timezone

import pytest

from tests.apiserver import FakeApiServer
from tests.live import assert_read_only, run_json

NODES, PODS = 2000, 40000
OPNS = "gpu-operator"
# GPU-operator DaemonSets on every GPU node (gpu-operator assets/state-*/0500_daemonset.yaml names).
DEPLOY = {"nvidia-driver-daemonset": "driver", "nvidia-container-toolkit-daemonset": "container-toolkit",
          "nvidia-device-plugin-daemonset": "device-plugin", "gpu-feature-discovery": "gpu-feature-discovery",
          "nvidia-dcgm-exporter": "dcgm-exporter", "nvidia-operator-validator": "operator-validator"}
OPERATOR = tuple(DEPLOY)
FLAPPING = "gpu-node-0421"    # its device plugin restarted a few minutes ago: one previous log is read
NO_PLUGIN = "gpu-node-1377"   # nvidia.com/gpu.deploy.device-plugin=false: the DaemonSet skips it
T = "2026-11-30T09:00:00Z"
# The live clock is the wall clock: the flapping plugin restarted 8 minutes before the test runs.
_NOW = datetime.now(timezone.utc).replace(microsecond=0)
RESTARTED = (_NOW - timedelta(minutes=8)).strftime("%Y-%m-%dT%H:%M:%SZ")
DIED = (_NOW - timedelta(minutes=8, seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node(i):
    name = f"gpu-node-{i:04d}" if i % 4 else f"cpu-node-{i:04d}"
    gpu = i % 4 != 0
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    if gpu:
        labels.update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                       "nvidia.com/gpu.count": "8", **{f"nvidia.com/gpu.deploy.{c}": "true" for c in DEPLOY.values()}})
    if name == NO_PLUGIN:
        labels["nvidia.com/gpu.deploy.device-plugin"] = "false"
    res = {"cpu": "128", "memory": "2Ti", "pods": "110", **({"nvidia.com/gpu": "8"} if gpu and name != NO_PLUGIN else {})}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"node-uid-{i}", "creationTimestamp": "2026-08-01T00:00:00Z", "labels": labels},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}] if gpu else []},
            "status": {"capacity": dict(res), "allocatable": dict(res),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastTransitionTime": "2026-08-01T00:01:00Z"}]}}


def _pod(ns, name, node, containers, *, owner=None, labels=None, restarted=False):
    statuses = []
    for c in containers:
        st = {"name": c["name"], "image": c["image"], "ready": True, "started": True, "restartCount": 0,
              "state": {"running": {"startedAt": T}}, "lastState": {}}
        if restarted:
            st.update(restartCount=3, state={"running": {"startedAt": RESTARTED}},
                      lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": T, "finishedAt": DIED}})
        statuses.append(st)
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "creationTimestamp": T, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": f"uid-{owner[1]}",
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": containers, "restartPolicy": "Always"},
            "status": {"phase": "Running", "startTime": T, "containerStatuses": statuses,
                       "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}}


def stand_in_cluster():
    nodes = [_node(i) for i in range(NODES)]
    pods, n = [], 0
    for node in nodes:
        name = node["metadata"]["name"]
        if not name.startswith("gpu-"):
            continue
        for ds in OPERATOR:
            if ds == "nvidia-device-plugin-daemonset" and name == NO_PLUGIN:
                continue
            ctr = {"name": ds.replace("-daemonset", "") + "-ctr", "image": "nvcr.io/nvidia/x:v1", "resources": {}}
            pods.append(_pod(OPNS, f"{ds}-{n:05d}", name, [ctr], owner=("DaemonSet", ds), labels={"app": ds},
                             restarted=(name == FLAPPING and ds == "nvidia-device-plugin-daemonset")))
            n += 1
    for i in range(PODS - len(pods)):
        node = nodes[i % NODES]["metadata"]["name"]
        gpus = {"nvidia.com/gpu": "1"} if node.startswith("gpu-") and (i // NODES) % 2 == 0 else {}
        ctr = {"name": "server", "image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": gpus, "requests": gpus}}
        pods.append(_pod(f"team-{i % 50:02d}", f"worker-{i:05d}", node, [ctr], owner=("ReplicaSet", f"worker-{i % 700}")))
    daemonsets = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                   "metadata": {"name": ds, "namespace": OPNS, "uid": f"uid-{ds}", "labels": {"app": ds}},
                   "spec": {"selector": {"matchLabels": {"app": ds}}, "template": {
                       "metadata": {"labels": {"app": ds}},
                       "spec": {"nodeSelector": {f"nvidia.com/gpu.deploy.{DEPLOY[ds]}": "true"},
                                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                                "containers": [{"name": "c", "image": "nvcr.io/nvidia/x:v1"}]}}},
                   "status": {"desiredNumberScheduled": 1500, "numberReady": 1499}} for ds in OPERATOR]
    assert len(nodes) == NODES and len(pods) == PODS
    return nodes + pods + daemonsets


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    logs = {}
    objects = stand_in_cluster()
    flapping = next(o for o in objects if o["kind"] == "Pod" and o["spec"]["nodeName"] == FLAPPING
                    and o["metadata"]["name"].startswith("nvidia-device-plugin-daemonset"))
    logs[(OPNS, flapping["metadata"]["name"], "nvidia-device-plugin-ctr", True)] = (
        "E1130 09:51:50.100000       1 main.go:149] error starting plugins: error creating plugin manager: "
        "unable to create plugin manager: nvml init failed: ERROR_UNKNOWN\n")
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path_factory.mktemp("scale") / "kubeconfig"))
        yield srv, kc, flapping["metadata"]["name"]


def _requests(srv):
    return sorted((r.method, r.path, tuple(sorted(r.query.items()))) for r in srv.requests)


def test_node_view_of_a_busy_gpu_node_is_a_fixed_handful_of_requests(cluster):
    srv, kc, plugin_pod = cluster
    srv.reset_requests()
    proc, doc = run_json("node", FLAPPING, "--kubeconfig", kc, "--tail", "50")
    assert_read_only(srv)
    assert proc.returncode == 0, proc.stderr
    assert doc["status"] == "warning" and doc["gaps"] == []
    flap = next(f for f in doc["findings"] if f["id"] == "device-plugin-not-running")
    assert flap["severity"] == "warning" and "nvml init failed: ERROR_UNKNOWN" in flap["message"]
    assert len(doc["gpuPods"]) > 0 and len(doc["operatorPods"]) == len(OPERATOR)
    selector = ("fieldSelector", f"spec.nodeName={FLAPPING}")
    expected = sorted([
        ("GET", f"/api/v1/nodes/{FLAPPING}", ()),
        ("GET", "/api/v1/pods", (selector,)),
        ("GET", "/api/v1/events", (("fieldSelector", f"involvedObject.kind=Node,involvedObject.name={FLAPPING}"),)),
        ("GET", "/apis/node.k8s.io/v1/runtimeclasses", (("limit", "500"),)),   # lists come in pages, as kubectl's
        ("GET", "/apis/nvidia.com/v1/clusterpolicies", (("limit", "500"),)),
        *[("GET", f"/apis/apps/v1/namespaces/{OPNS}/daemonsets/{ds}", ()) for ds in OPERATOR],
        ("GET", f"/api/v1/namespaces/{OPNS}/pods/{plugin_pod}/log",
         (("container", "nvidia-device-plugin-ctr"), ("limitBytes", "262144"), ("previous", "true"), ("tailLines", "50"))),
    ])
    # and the node's dcgm-exporter metrics, through the pod proxy (GPU health)
    metrics = [r.path for r in srv.requests if r.path.endswith("/proxy/metrics")]
    assert len(metrics) == 1 and metrics[0].startswith(f"/api/v1/namespaces/{OPNS}/pods/nvidia-dcgm-exporter-")
    assert [r for r in _requests(srv) if not r[1].endswith("/proxy/metrics")] == expected
    assert len(srv.requests) == 13


def test_node_without_its_device_plugin_lists_daemonsets_not_pods(cluster):
    srv, kc, _ = cluster
    srv.reset_requests()
    proc, doc = run_json("node", NO_PLUGIN, "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1 and doc["rootCause"] == "device-plugin-not-running"
    finding = next(f for f in doc["findings"] if f["id"] == "device-plugin-not-running")
    assert "nvidia.com/gpu.deploy.device-plugin=false" in finding["message"]
    paths = sorted(r.path for r in srv.requests if not r.path.endswith("/proxy/metrics"))   # + dcgm-exporter's
    # a GPU node that advertises no GPU may publish them through DRA: one discovery GET (404 here: no DRA)
    assert paths == sorted([f"/api/v1/nodes/{NO_PLUGIN}", "/api/v1/pods", "/api/v1/events",
                            "/apis/node.k8s.io/v1/runtimeclasses", "/apis/nvidia.com/v1/clusterpolicies",
                            "/apis/apps/v1/daemonsets", "/apis/resource.k8s.io"])
    pod_lists = [r for r in srv.requests if r.path == "/api/v1/pods"]
    assert [r.query for r in pod_lists] == [{"fieldSelector": f"spec.nodeName={NO_PLUGIN}"}]


def test_request_count_does_not_grow_with_the_cluster(cluster, tmp_path):
    """The same node in a cluster a tenth of the size costs exactly the same requests."""
    srv, kc, _ = cluster
    srv.reset_requests()
    run_json("node", NO_PLUGIN, "--kubeconfig", kc)
    big = _requests(srv)
    small_objects = [o for o in stand_in_cluster() if o["kind"] == "DaemonSet"
                     or (o["kind"] == "Node" and o["metadata"]["name"] in (NO_PLUGIN, "gpu-node-0001"))
                     or (o["kind"] == "Pod" and o["spec"]["nodeName"] in (NO_PLUGIN, "gpu-node-0001"))]
    with FakeApiServer(small_objects) as small:
        run_json("node", NO_PLUGIN, "--kubeconfig", small.write_kubeconfig(str(tmp_path / "kc")))
        assert _requests(small) == big
