"""Tests of the fake kube-apiserver over real TLS: REST semantics, error wording, fault injection, and real kubectl."""
from __future__ import annotations

import http.client
import json
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
import yaml

from tests.apiserver import FakeApiServer, load_case

TOKEN = "t0ken"
META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def pod(name, ns="ml", node="gpu-node-1", phase="Running", containers=("main",), inits=(), labels=None,
        statuses=None):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": labels or {},
                     "creationTimestamp": "2025-01-10T08:00:00Z", "resourceVersion": "1001"},
        "spec": {"nodeName": node, "restartPolicy": "Always",
                 "initContainers": [{"name": c, "image": "busybox:1.36"} for c in inits],
                 "containers": [{"name": c, "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}} for c in containers]},
        "status": {"phase": phase, "containerStatuses": statuses if statuses is not None else [
            {"name": c, "ready": True, "restartCount": 0, "state": {"running": {"startedAt": "2025-01-10T08:00:05Z"}}}
            for c in containers]},
    }


def node(name, gpus=0):
    labels = {"kubernetes.io/hostname": name, **({"nvidia.com/gpu.present": "true"} if gpus else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": str(gpus)},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def event(name, involved, reason, type_="Warning", ns="ml"):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": "Pod", "name": involved, "namespace": ns, "uid": f"uid-{involved}"},
            "reason": reason, "type": type_, "message": f"{reason} for {involved}", "count": 3,
            "source": {"component": "kubelet", "host": "gpu-node-1"}}


TRAINER = pod("trainer-0", containers=("trainer", "sidecar"), inits=("fetch-weights",),
              labels={"app": "trainer", "tier": "gpu"}, statuses=[
                  {"name": "trainer", "ready": False, "restartCount": 4,
                   "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                   "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                                "containerID": "containerd://abc"}}},
                  {"name": "sidecar", "ready": True, "restartCount": 0, "state": {"running": {}}}])
OBJECTS = [
    TRAINER,
    pod("web-0", node="cpu-node-1", containers=("server",), labels={"app": "web"}),
    pod("creating-0", containers=("worker",), labels={"app": "trainer", "tier": "batch"}, phase="Pending",
        statuses=[{"name": "worker", "ready": False, "restartCount": 0,
                   "state": {"waiting": {"reason": "ContainerCreating"}}}]),
    pod("pending-0", node=None, phase="Pending", statuses=[]),
    pod("infer-0", ns="serving", labels={"app": "infer"}),
    node("gpu-node-1", gpus=8), node("cpu-node-1"),
    event("trainer-0.1", "trainer-0", "BackOff"), event("creating-0.1", "creating-0", "FailedCreatePodSandBox"),
    event("web-0.1", "web-0", "Scheduled", type_="Normal"),
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": "ml"},
     "type": "Opaque", "data": {"token": "c2VjcmV0"}},
    {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"},
    {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
     "spec": {"driver": {"enabled": True}}, "status": {"state": "ready"}},
    {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
     "metadata": {"name": "ib-net", "namespace": "ml"}, "spec": {"config": "{}"}},
]
LOGS = {
    ("ml", "trainer-0", "trainer", True): "loading model\nallocating 80GiB\nKilled\n",
    ("ml", "trainer-0", "sidecar", False): "sidecar up\n",
    ("ml", "trainer-0", "fetch-weights", False): "fetched 3 shards\n",
    ("ml", "web-0", "server", False): "line 1\nline 2\nline 3\nline 4\n",
}


@pytest.fixture
def srv():
    with FakeApiServer(OBJECTS, LOGS, token=TOKEN) as server:
        yield server


def call(srv, path, token=TOKEN, accept="application/json", method="GET", **query):
    """One request over TLS verified against the server's CA; returns (status, content type, body)."""
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=10,
                                       context=ssl.create_default_context(cafile=srv.ca_file))
    headers = {"Accept": accept, "User-Agent": "pytest-client"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path + (f"?{urlencode(query)}" if query else ""), headers=headers)
    resp = conn.getresponse()
    raw, ctype = resp.read(), resp.getheader("Content-Type")
    conn.close()
    return resp.status, ctype, json.loads(raw) if ctype == "application/json" else raw.decode()


def names(body):
    return [i["metadata"]["name"] for i in body["items"]]


# -- transport and authentication ------------------------------------------------------------

def test_tls_certificate_verifies_for_ip_and_localhost(srv):
    assert srv.url == f"https://127.0.0.1:{srv.port}"
    ctx = ssl.create_default_context(cafile=srv.ca_file)
    for host in ("127.0.0.1", "localhost"):
        conn = http.client.HTTPSConnection(host, srv.port, context=ctx, timeout=5)
        conn.request("GET", "/version", headers={"Authorization": f"Bearer {TOKEN}"})
        assert json.loads(conn.getresponse().read())["gitVersion"].startswith("v1.")
        conn.close()


def test_untrusted_client_fails_the_handshake(srv):
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ssl.create_default_context(), timeout=5)
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.request("GET", "/version")
    assert call(srv, "/version")[0] == 200  # the server survives the rejected handshake


@pytest.mark.parametrize("token", [None, "wrong"])
def test_missing_or_wrong_token_is_401(srv, token):
    status, ctype, body = call(srv, "/api/v1/namespaces/ml/pods", token=token)
    assert (status, ctype) == (401, "application/json")
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_writes_are_405_and_recorded(srv, method):
    status, _, body = call(srv, "/api/v1/namespaces/ml/pods/web-0", method=method)
    assert status == 405 and body["reason"] == "MethodNotAllowed" and body["kind"] == "Status"
    assert srv.requests[-1].method == method and srv.requests[-1].status == 405


def test_keep_alive_serves_several_requests_on_one_connection(srv):
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=5,
                                       context=ssl.create_default_context(cafile=srv.ca_file))
    for path in ("/api/v1/nodes", "/api/v1/namespaces/ml/pods/web-0", "/api/v1/namespaces/ml/pods/nope"):
        conn.request("GET", path, headers={"Authorization": f"Bearer {TOKEN}"})
        resp = conn.getresponse()
        assert json.loads(resp.read())["kind"] in ("NodeList", "Pod", "Status")
    conn.close()


# -- get / list / 404 -------------------------------------------------------------------------

def test_get_returns_the_object_with_type_meta(srv):
    status, ctype, body = call(srv, "/api/v1/namespaces/ml/pods/web-0")
    assert (status, ctype) == (200, "application/json")
    assert body["kind"] == "Pod" and body["apiVersion"] == "v1" and body["spec"]["nodeName"] == "cpu-node-1"
    assert call(srv, "/api/v1/nodes/gpu-node-1")[2]["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_list_is_typed_and_items_have_no_type_meta(srv):
    status, _, body = call(srv, "/api/v1/namespaces/ml/pods")
    assert status == 200 and body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"] == {"resourceVersion": "12345"}
    assert names(body) == ["creating-0", "pending-0", "trainer-0", "web-0"]
    assert all("kind" not in i and "apiVersion" not in i for i in body["items"])


def test_all_namespaces_and_cluster_scoped_lists(srv):
    assert names(call(srv, "/api/v1/pods")[2]) == ["creating-0", "pending-0", "trainer-0", "web-0", "infer-0"]
    assert names(call(srv, "/api/v1/nodes")[2]) == ["cpu-node-1", "gpu-node-1"]
    # a namespace used by objects exists even if the case lists no Namespace
    assert names(call(srv, "/api/v1/namespaces")[2]) == ["ml", "serving"]
    assert call(srv, "/api/v1/namespaces/ml")[2]["status"]["phase"] == "Active"


def test_known_kinds_list_empty_even_without_objects(srv):
    for path in ("/api/v1/namespaces/x/events", "/apis/apps/v1/daemonsets", "/apis/batch/v1/namespaces/ml/jobs",
                 "/apis/storage.k8s.io/v1/storageclasses", "/api/v1/persistentvolumes"):
        status, _, body = call(srv, path)
        assert status == 200 and body["items"] == [], path
    assert call(srv, "/apis/apps/v1/daemonsets")[2]["kind"] == "DaemonSetList"


def test_missing_object_is_404_in_apiserver_wording(srv):
    status, _, body = call(srv, "/api/v1/namespaces/ml/pods/web-9")
    assert status == 404
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'pods "web-9" not found', "reason": "NotFound",
                    "details": {"name": "web-9", "kind": "pods"}, "code": 404}
    body = call(srv, "/apis/node.k8s.io/v1/runtimeclasses/nvidia-cdi")[2]
    assert body["message"] == 'runtimeclasses.node.k8s.io "nvidia-cdi" not found'
    assert body["details"] == {"name": "nvidia-cdi", "group": "node.k8s.io", "kind": "runtimeclasses"}


@pytest.mark.parametrize("path", ["/apis/nvidia.com/v1alpha1/nvidiadrivers", "/apis/example.com/v1/widgets",
                                  "/api/v1/widgets", "/api/v1/namespaces/ml/nodes", "/api/v1/pods/web-0",
                                  "/api/v1/namespaces/ml/pods/web-0/exec", "/not/an/api"])
def test_unknown_resource_is_generic_404(srv, path):
    status, _, body = call(srv, path)
    assert status == 404 and body["reason"] == "NotFound"
    assert body["message"] == "the server could not find the requested resource"


def test_crds_are_served_from_their_objects(srv):
    body = call(srv, "/apis/nvidia.com/v1/clusterpolicies")[2]
    assert body["kind"] == "ClusterPolicyList" and body["apiVersion"] == "nvidia.com/v1"
    assert names(body) == ["cluster-policy"]
    assert call(srv, "/apis/nvidia.com/v1/clusterpolicies/cluster-policy")[2]["status"]["state"] == "ready"
    # Multus' CRD names its plural explicitly (network-attachment-definitions); it is served there, as in a cluster.
    assert call(srv, "/apis/k8s.cni.cncf.io/v1/namespaces/ml/networkattachmentdefinitions")[0] == 404
    body = call(srv, "/apis/k8s.cni.cncf.io/v1/namespaces/ml/network-attachment-definitions")[2]
    assert names(body) == ["ib-net"]
    assert call(srv, "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions")[2]["items"][0]["metadata"][
        "namespace"] == "ml"


def test_add_and_remove_change_what_is_served(srv):
    srv.add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "gpu-claim", "namespace": "ml"}, "spec": {}})
    srv.add({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"}})
    assert names(call(srv, "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims")[2]) == ["gpu-claim"]
    assert call(srv, "/apis/resource.k8s.io/v1/deviceclasses/gpu.nvidia.com")[0] == 200
    assert srv.remove("Pod", "ml", "web-0") is True
    assert call(srv, "/api/v1/namespaces/ml/pods/web-0")[0] == 404
    assert srv.remove("Pod", "ml", "web-0") is False


# -- selectors and pagination -------------------------------------------------------------------

@pytest.mark.parametrize("selector,expected", [
    ("spec.nodeName=gpu-node-1", ["creating-0", "trainer-0", "infer-0"]),
    ("spec.nodeName==gpu-node-1,metadata.namespace=ml", ["creating-0", "trainer-0"]),
    ("status.phase!=Running", ["creating-0", "pending-0"]),
    ("metadata.name=web-0", ["web-0"]),
    ("spec.nodeName=", ["pending-0"]),  # how "unscheduled pods" are asked for
])
def test_pod_field_selectors(srv, selector, expected):
    assert names(call(srv, "/api/v1/pods", fieldSelector=selector)[2]) == expected


def test_node_field_selector_follows_pods_that_move_or_go(srv):
    """One node's pods come from an index (as the apiserver's watch cache keeps them): a pod added again on another
    node, or removed, is served where it now is and nowhere else."""
    moved = pod("web-0", node="gpu-node-1", containers=("server",), labels={"app": "web"})
    srv.add(moved)
    assert "web-0" in names(call(srv, "/api/v1/pods", fieldSelector="spec.nodeName=gpu-node-1")[2])
    assert names(call(srv, "/api/v1/pods", fieldSelector="spec.nodeName=cpu-node-1")[2]) == []
    srv.remove("Pod", "ml", "trainer-0")
    assert names(call(srv, "/api/v1/namespaces/ml/pods", fieldSelector="spec.nodeName=gpu-node-1")[2]) == [
        "creating-0", "web-0"]
    assert names(call(srv, "/api/v1/pods", fieldSelector="spec.nodeName=gpu-node-1,status.phase!=Pending")[2]) == [
        "web-0", "infer-0"]


def test_event_field_selectors(srv):
    path = "/api/v1/namespaces/ml/events"
    assert names(call(srv, path, fieldSelector="involvedObject.name=trainer-0,involvedObject.kind=Pod")[2]) == [
        "trainer-0.1"]
    assert names(call(srv, path, fieldSelector="involvedObject.uid=uid-creating-0")[2]) == ["creating-0.1"]
    assert names(call(srv, path, fieldSelector="type=Warning")[2]) == ["creating-0.1", "trainer-0.1"]
    assert names(call(srv, path, fieldSelector="reason=Scheduled,type=Normal")[2]) == ["web-0.1"]
    assert names(call(srv, path, fieldSelector="source=kubelet,involvedObject.namespace=ml")[2]) == [
        "creating-0.1", "trainer-0.1", "web-0.1"]


def test_unsupported_field_label_is_400_like_the_apiserver(srv):
    status, _, body = call(srv, "/api/v1/pods", fieldSelector="status.containerStatuses.ready=false")
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == "field label not supported: status.containerStatuses.ready"
    assert call(srv, "/api/v1/nodes", fieldSelector="spec.unschedulable=false")[0] == 200


@pytest.mark.parametrize("selector,expected", [
    ("app=trainer", ["creating-0", "trainer-0"]),
    ("app==trainer,tier=gpu", ["trainer-0"]),
    ("app!=trainer", ["pending-0", "web-0", "infer-0"]),  # != also matches pods without the label
    ("app in (web, infer)", ["web-0", "infer-0"]),
    ("app notin (trainer,web)", ["pending-0", "infer-0"]),
    ("tier", ["creating-0", "trainer-0"]),
    ("!tier,app", ["web-0", "infer-0"]),
    ("tier in (gpu,batch),app=trainer", ["creating-0", "trainer-0"]),
])
def test_label_selectors(srv, selector, expected):
    assert names(call(srv, "/api/v1/pods", labelSelector=selector)[2]) == expected


def test_label_selector_on_nodes_and_bad_syntax(srv):
    assert names(call(srv, "/api/v1/nodes", labelSelector="nvidia.com/gpu.present=true")[2]) == ["gpu-node-1"]
    status, _, body = call(srv, "/api/v1/pods", labelSelector="app in trainer")
    assert status == 400 and body["reason"] == "BadRequest"


def test_limit_and_continue_paginate(srv):
    seen, token, pages = [], None, 0
    while True:
        query = {"limit": "2", **({"continue": token} if token else {})}
        body = call(srv, "/api/v1/pods", **query)[2]
        seen += names(body)
        pages += 1
        token = body["metadata"].get("continue")
        if not token:
            assert "remainingItemCount" not in body["metadata"]
            break
        assert body["metadata"]["remainingItemCount"] == 5 - len(seen)
    assert pages == 3 and seen == names(call(srv, "/api/v1/pods")[2])


def test_pagination_with_selector_and_bad_token(srv):
    body = call(srv, "/api/v1/pods", limit="1", labelSelector="app=trainer")[2]
    assert names(body) == ["creating-0"] and body["metadata"]["continue"]
    assert "remainingItemCount" not in body["metadata"]  # the apiserver cannot count through a selector
    token = body["metadata"]["continue"]
    body = call(srv, "/api/v1/pods", limit="1", labelSelector="app=trainer", **{"continue": token})[2]
    assert names(body) == ["trainer-0"] and "continue" not in body["metadata"]
    status, _, body = call(srv, "/api/v1/pods", limit="1", **{"continue": "garbage"})
    assert status == 400 and body["reason"] == "BadRequest"


def test_watch_is_refused(srv):
    assert call(srv, "/api/v1/namespaces/ml/pods", watch="true")[0] == 400


# -- PartialObjectMetadata ----------------------------------------------------------------------

def test_partial_object_metadata_get_and_list(srv):
    status, _, body = call(srv, "/api/v1/namespaces/ml/secrets/hf-token", accept=META + ",application/json")
    assert status == 200
    assert body == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"name": "hf-token", "namespace": "ml"}}
    body = call(srv, "/api/v1/namespaces/ml/secrets", accept=META)[2]
    assert body["kind"] == "PartialObjectMetadataList" and body["apiVersion"] == "meta.k8s.io/v1"
    assert body["items"] == [{"metadata": {"name": "hf-token", "namespace": "ml"}}]
    assert "data" in call(srv, "/api/v1/namespaces/ml/secrets/hf-token")[2]  # plain JSON otherwise


def test_accept_is_recorded_so_secret_access_can_be_audited(srv):
    call(srv, "/api/v1/namespaces/ml/secrets/hf-token", accept=META)
    call(srv, "/api/v1/namespaces/ml/pods")
    secret_reads = [r for r in srv.requests if "/secrets" in r.path]
    assert secret_reads and all("as=PartialObjectMetadata" in r.accept for r in secret_reads)
    call(srv, "/api/v1/namespaces/ml/secrets/hf-token")
    assert not all("as=PartialObjectMetadata" in r.accept for r in srv.requests if "/secrets" in r.path)


# -- pods/log ----------------------------------------------------------------------------------

LOG = "/api/v1/namespaces/ml/pods/{}/log"


def test_log_of_single_container_pod_needs_no_container(srv):
    status, ctype, body = call(srv, LOG.format("web-0"))
    assert (status, ctype, body) == (200, "text/plain", "line 1\nline 2\nline 3\nline 4\n")
    # timestamps=true: each line prefixed with an RFC 3339 time, as the kubelet writes them (must-gather asks for it)
    stamped = call(srv, LOG.format("web-0"), container="server", timestamps="true")[2].splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["line 1", "line 2", "line 3", "line 4"]
    assert all(line.split(" ", 1)[0].endswith("Z") and line[4] == "-" for line in stamped)


def test_log_tail_lines_and_limit_bytes(srv):
    assert call(srv, LOG.format("web-0"), tailLines="2")[2] == "line 3\nline 4\n"
    assert call(srv, LOG.format("web-0"), tailLines="0")[2] == ""
    assert call(srv, LOG.format("web-0"), tailLines="100")[2].count("\n") == 4
    assert call(srv, LOG.format("web-0"), limitBytes="9")[2] == "line 1\nli"
    assert call(srv, LOG.format("web-0"), tailLines="1", limitBytes="4")[2] == "line"


def test_log_previous_and_init_container(srv):
    body = call(srv, LOG.format("trainer-0"), container="trainer", previous="true")[2]
    assert body == "loading model\nallocating 80GiB\nKilled\n"
    assert call(srv, LOG.format("trainer-0"), container="fetch-weights")[2] == "fetched 3 shards\n"
    # a container in CrashLoopBackOff: the current log is the last run's, as the kubelet serves it
    assert call(srv, LOG.format("trainer-0"), container="trainer")[2].endswith("Killed\n")


@pytest.mark.parametrize("pod_name,query,message", [
    ("trainer-0", {}, "a container name must be specified for pod trainer-0, choose one of: [trainer sidecar]"
                      " or one of the init containers: [fetch-weights]"),
    ("trainer-0", {"container": "nope"}, "container nope is not valid for pod trainer-0"),
    ("trainer-0", {"container": "sidecar", "previous": "true"},
     'previous terminated container "sidecar" in pod "trainer-0" not found'),
    ("creating-0", {"container": "worker"},
     'container "worker" in pod "creating-0" is waiting to start: ContainerCreating'),
    ("web-0", {"tailLines": "x"}, "tailLines: Invalid value: 'x': must be an integer"),
])
def test_log_errors_are_400_in_apiserver_wording(srv, pod_name, query, message):
    status, ctype, body = call(srv, LOG.format(pod_name), **query)
    assert (status, ctype) == (400, "application/json")
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": message, "reason": "BadRequest", "code": 400}


def test_log_of_missing_pod_and_of_unscheduled_pod(srv):
    status, _, body = call(srv, LOG.format("ghost"))
    assert status == 404 and body["message"] == 'pods "ghost" not found'
    assert call(srv, LOG.format("pending-0"))[:3:2] == (200, "")  # no node yet: an empty stream


def test_log_waiting_reason_for_image_pull(srv):
    srv.add(pod("pull-0", statuses=[{"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]))
    body = call(srv, LOG.format("pull-0"))[2]
    assert body["message"] == 'container "main" in pod "pull-0" is waiting to start: trying and failing to pull image'


# -- fault injection -----------------------------------------------------------------------------

def test_forbid_resource_everywhere(srv):
    srv.forbid("nodes")
    status, _, body = call(srv, "/api/v1/nodes")
    assert status == 403
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'nodes is forbidden: User "system:serviceaccount:ml:gpudoctor" cannot list resource '
                               '"nodes" in API group "" at the cluster scope',
                    "reason": "Forbidden", "details": {"kind": "nodes"}, "code": 403}
    body = call(srv, "/api/v1/nodes/gpu-node-1")[2]
    assert body["message"] == ('nodes "gpu-node-1" is forbidden: User "system:serviceaccount:ml:gpudoctor" cannot get '
                               'resource "nodes" in API group "" at the cluster scope')
    assert body["details"] == {"name": "gpu-node-1", "kind": "nodes"}
    assert call(srv, "/api/v1/namespaces/ml/pods")[0] == 200


def test_forbid_namespaced_list_and_group_wording(srv):
    srv.forbid("pods", namespace="ml", verb="list")
    body = call(srv, "/api/v1/namespaces/ml/pods")[2]
    assert body["message"] == ('pods is forbidden: User "system:serviceaccount:ml:gpudoctor" cannot list resource '
                               '"pods" in API group "" in the namespace "ml"')
    assert call(srv, "/api/v1/namespaces/ml/pods/web-0")[0] == 200  # get still allowed
    srv.forbid("runtimeclasses")
    body = call(srv, "/apis/node.k8s.io/v1/runtimeclasses/nvidia")[2]
    assert body["message"].startswith('runtimeclasses.node.k8s.io "nvidia" is forbidden: User')
    assert body["message"].endswith(
        'cannot get resource "runtimeclasses" in API group "node.k8s.io" at the cluster scope')
    assert body["details"] == {"name": "nvidia", "group": "node.k8s.io", "kind": "runtimeclasses"}


def test_forbid_log_subresource_only(srv):
    srv.forbid("pods", subresource="log")
    status, _, body = call(srv, LOG.format("web-0"))
    assert status == 403 and body["message"] == (
        'pods "web-0" is forbidden: User "system:serviceaccount:ml:gpudoctor" cannot get resource "pods/log" '
        'in API group "" in the namespace "ml"')
    assert call(srv, "/api/v1/namespaces/ml/pods/web-0")[0] == 200


def test_forbid_cluster_scope_only_keeps_namespaced_access(srv):
    srv.forbid("pods", namespace=None, cluster_scope_only=True)
    assert call(srv, "/api/v1/pods")[0] == 403
    assert call(srv, "/api/v1/pods", fieldSelector="spec.nodeName=gpu-node-1")[0] == 403
    assert call(srv, "/api/v1/namespaces/ml/pods")[0] == 200


def test_forbid_single_object(srv):
    srv.forbid("secrets", namespace="ml", name="hf-token")
    assert call(srv, "/api/v1/namespaces/ml/secrets/hf-token", accept=META)[0] == 403
    assert call(srv, "/api/v1/namespaces/ml/secrets", accept=META)[0] == 200


def test_forbid_applies_even_to_resources_not_installed(srv):
    srv.forbid("nvidiadrivers")  # authorization runs before routing, so 403 hides whether the CRD exists
    assert call(srv, "/apis/nvidia.com/v1alpha1/nvidiadrivers")[0] == 403


@pytest.mark.parametrize("code,reason", [(500, "InternalError"), (503, "ServiceUnavailable"),
                                         (429, "TooManyRequests"), (401, "Unauthorized"), (404, "NotFound")])
def test_fail_injects_status(srv, code, reason):
    srv.fail("events", status=code)
    status, _, body = call(srv, "/api/v1/namespaces/ml/events")
    assert (status, body["code"], body["reason"], body["kind"]) == (code, code, reason, "Status")
    assert call(srv, "/api/v1/namespaces/ml/pods")[0] == 200


def test_fail_narrowed_and_cleared(srv):
    srv.fail("pods", status=404, namespace="ml", name="web-0")
    body = call(srv, "/api/v1/namespaces/ml/pods/web-0")[2]
    assert body["message"] == 'pods "web-0" not found'
    srv.fail("nodes", status=500, message="etcdserver: request timed out")
    assert call(srv, "/api/v1/nodes")[2]["message"] == "etcdserver: request timed out"
    srv.clear_faults()
    assert call(srv, "/api/v1/namespaces/ml/pods/web-0")[0] == 200


def test_delay_slows_only_matching_requests(srv):
    srv.delay("runtimeclasses", seconds=0.6)
    t0 = time.monotonic()
    assert call(srv, "/apis/node.k8s.io/v1/runtimeclasses/nvidia")[0] == 200
    assert time.monotonic() - t0 >= 0.6   # a lower bound holds under any load; "the others are fast" is below


def test_a_held_request_blocks_only_itself(srv):
    """Ordering, not timing: while a runtimeclasses request is held unanswered, other requests are answered."""
    gate = srv.hold("runtimeclasses")
    answers = []
    slow = threading.Thread(target=lambda: answers.append(call(srv, "/apis/node.k8s.io/v1/runtimeclasses")[0]))
    slow.start()
    assert gate.arrived.acquire(timeout=10), "the held request never reached the server"
    assert call(srv, "/api/v1/nodes")[0] == 200
    assert call(srv, "/apis/node.k8s.io/v1/runtimeclasses/nvidia", token="bad")[0] == 401   # auth runs first
    assert answers == []   # still held: nothing the other requests did released it
    gate.set()
    slow.join(10)
    assert answers == [200]


def test_a_hold_can_wait_for_connections(srv):
    gate = srv.hold("nodes", connections=len(srv.connections) + 2)
    assert not gate.is_set()
    for _ in range(2):
        assert call(srv, "/api/v1/namespaces/ml/pods/web-0")[0] == 200   # one connection each
    assert gate.is_set()


def test_delay_lets_a_client_time_out(srv):
    gate = srv.hold("nodes")   # never answered while the client waits: the timeout is the only way out
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=0.5,
                                       context=ssl.create_default_context(cafile=srv.ca_file))
    try:
        with pytest.raises(TimeoutError):
            conn.request("GET", "/api/v1/nodes", headers={"Authorization": f"Bearer {TOKEN}"})
            conn.getresponse()
    finally:
        gate.set()
        conn.close()


# -- request recording ---------------------------------------------------------------------------

def test_requests_are_recorded_with_query_accept_agent_and_status(srv):
    call(srv, "/api/v1/pods", fieldSelector="spec.nodeName=gpu-node-1", limit="50")
    call(srv, "/api/v1/namespaces/ml/pods/nope", token="bad")
    first, second = srv.requests[-2:]
    assert first[:6] == ("GET", "/api/v1/pods", {"fieldSelector": "spec.nodeName=gpu-node-1", "limit": "50"},
                         "application/json", "pytest-client", 200)
    assert (first.impersonate_user, first.impersonate_groups) == (None, ())
    assert second.depth == first.depth + 1   # asked after the first was answered: the next round trip
    assert (second.path, second.status) == ("/api/v1/namespaces/ml/pods/nope", 401)
    srv.reset_requests()
    assert srv.requests == []


def test_recording_is_thread_safe(srv):
    threads = [threading.Thread(target=call, args=(srv, "/api/v1/nodes")) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(srv.requests) == 20 and {r.status for r in srv.requests} == {200}


# -- discovery -----------------------------------------------------------------------------------

def test_discovery_documents(srv):
    assert call(srv, "/api")[2]["versions"] == ["v1"]
    groups = {g["name"]: g for g in call(srv, "/apis")[2]["groups"]}
    assert {"apps", "batch", "node.k8s.io", "nvidia.com", "k8s.cni.cncf.io"} <= set(groups)
    assert groups["nvidia.com"]["preferredVersion"] == {"groupVersion": "nvidia.com/v1", "version": "v1"}
    core = {r["name"]: r for r in call(srv, "/api/v1")[2]["resources"]}
    assert core["pods"] == {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
                            "verbs": ["get", "list"], "shortNames": ["po"]}
    assert core["nodes"]["namespaced"] is False and "pods/log" in core
    node_k8s = call(srv, "/apis/node.k8s.io/v1")[2]
    assert node_k8s["groupVersion"] == "node.k8s.io/v1" and node_k8s["resources"][0]["kind"] == "RuntimeClass"
    assert call(srv, "/apis/nvidia.com/v1alpha1")[0] == 404
    assert call(srv, "/openapi/v2")[0] == 404


def test_preferred_version_follows_kubernetes_priority(srv):
    for version in ("v1beta1", "v1alpha3", "v1"):
        srv.add({"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceSlice", "metadata": {"name": version}})
    group = call(srv, "/apis/resource.k8s.io")[2]
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1", "v1alpha3"]


# -- load_case and CLI ----------------------------------------------------------------------------

def test_load_case_reads_objects_lists_and_logs(tmp_path):
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "List", "items": [node("gpu-node-1", 8)]},
        {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [
            {k: v for k, v in pod("a").items() if k not in ("apiVersion", "kind")}]},
    ]) + "---\napiVersion: v1\nkind: Event\n"
         "metadata: {name: e1, namespace: ml, creationTimestamp: 2025-01-10T08:00:00Z}\n")
    (tmp_path / "more.json").write_text(json.dumps(OBJECTS[-1]))
    (tmp_path / "expect.yaml").write_text("rootCause: oom-killed\nstatus: fail\n")
    (tmp_path / "bundle.yaml").write_text("collectedAt: 2025-01-10T09:00:00Z\n")
    (tmp_path / "logs/ml/a").mkdir(parents=True)
    (tmp_path / "logs/ml/a/main.log").write_text("now\n")
    (tmp_path / "logs/ml/a/main.previous.log").write_text("before\n")
    objects, logs = load_case(tmp_path)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("NetworkAttachmentDefinition", "ib-net"), ("Node", "gpu-node-1"), ("Pod", "a"), ("Event", "e1")]
    assert objects[3]["metadata"]["creationTimestamp"] == "2025-01-10T08:00:00Z"  # stays a string
    assert logs == {("ml", "a", "main", False): "now\n", ("ml", "a", "main", True): "before\n"}
    with FakeApiServer(objects, logs) as srv:
        assert call(srv, "/api/v1/namespaces/ml/pods/a/log", previous="true")[2] == "before\n"


def test_load_case_skips_the_bundle_and_expect_documents(tmp_path):
    (tmp_path / "bundle.yaml").write_text("apiVersion: gpudoctor/v1\nkind: Bundle\ncollectedAt: '2025-01-10'\n")
    (tmp_path / "expect.yaml").write_text("apiVersion: gpudoctor/v1\nkind: Expectation\nrootCause: oom-killed\n")
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump(node("n1")))
    assert [o["metadata"]["name"] for o in load_case(tmp_path)[0]] == ["n1"]


def test_cli_serves_a_case_until_interrupted(tmp_path):
    case = tmp_path / "case"
    (case / "logs" / "ml" / "web-0").mkdir(parents=True)
    (case / "objects.yaml").write_text(yaml.safe_dump_all([pod("web-0", containers=("server",)), node("n1", 8)]))
    (case / "logs" / "ml" / "web-0" / "server.log").write_text("hello\n")
    command = [sys.executable, "-m", "tests.apiserver", str(case), "--kubeconfig", str(tmp_path / "kc.yaml")]
    proc = subprocess.Popen(command, cwd=Path(__file__).resolve().parents[1], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        kubeconfig = proc.stdout.readline().strip()
        assert kubeconfig == str(tmp_path / "kc.yaml"), proc.stderr.read() if proc.poll() is not None else ""
        config = yaml.safe_load(Path(kubeconfig).read_text())
        cluster = config["clusters"][0]["cluster"]
        assert config["contexts"][0]["context"]["namespace"] == "ml"
        port = int(cluster["server"].rsplit(":", 1)[1])
        server = SimpleNamespace(port=port, ca_file=cluster["certificate-authority"])
        assert call(server, "/api/v1/namespaces/ml/pods/web-0/log")[2] == "hello\n"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
    assert proc.returncode == 0


def test_write_kubeconfig(srv, tmp_path):
    path = srv.write_kubeconfig(tmp_path / "sub" / "kc.yaml", namespace="serving", context="ctx", user="me")
    config = yaml.safe_load(Path(path).read_text())
    assert config["current-context"] == "ctx"
    assert config["clusters"][0]["cluster"] == {"server": srv.url, "certificate-authority": srv.ca_file}
    assert config["users"][0] == {"name": "me", "user": {"token": TOKEN}}
    assert config["contexts"][0]["context"] == {"cluster": "ctx", "user": "me", "namespace": "serving"}


def test_kubernetes_python_client_talks_to_it(srv, tmp_path):
    from kubernetes import config
    api = config.new_client_from_config(srv.write_kubeconfig(tmp_path / "kc.yaml", namespace="ml"))
    method, url, headers, body, _ = api.param_serialize(
        "GET", "/api/v1/namespaces/{namespace}/pods", path_params={"namespace": "ml"},
        query_params=[("fieldSelector", "spec.nodeName=gpu-node-1")],
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers, _request_timeout=5)
    assert resp.status == 200 and names(json.loads(resp.read())) == ["creating-0", "trainer-0"]
    assert srv.requests[-1].query == {"fieldSelector": "spec.nodeName=gpu-node-1"}


# -- the real kubectl ------------------------------------------------------------------------------

kubectl_missing = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


@pytest.fixture
def kubectl(srv, tmp_path):
    kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig.yaml", namespace="ml")

    def run(*args):
        command = ["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "cache"), *args]
        env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}  # no user kubeconfig, no shared discovery cache
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    return run


@kubectl_missing
def test_kubectl_get_pods_json(kubectl, srv):
    result = kubectl("get", "pods", "-n", "ml", "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [i["metadata"]["name"] for i in doc["items"]] == ["creating-0", "pending-0", "trainer-0", "web-0"]
    assert doc["items"][0]["kind"] == "Pod"
    # kubectl first asked for aggregated discovery and fell back to the plain documents
    assert any(r.path == "/api" and "apidiscovery.k8s.io" in r.accept and r.status == 200 for r in srv.requests)
    assert any(r.path == "/api/v1" and r.status == 200 for r in srv.requests)


@kubectl_missing
def test_kubectl_get_nodes_names(kubectl):
    result = kubectl("get", "nodes", "-o", "name")
    assert (result.returncode, result.stdout) == (0, "node/cpu-node-1\nnode/gpu-node-1\n"), result.stderr


@kubectl_missing
def test_kubectl_get_pod_yaml(kubectl):
    result = kubectl("get", "pod", "trainer-0", "-n", "ml", "-o", "yaml")
    assert result.returncode == 0, result.stderr
    doc = yaml.safe_load(result.stdout)
    assert doc["kind"] == "Pod" and doc["metadata"]["name"] == "trainer-0"
    assert doc["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] == "OOMKilled"


@kubectl_missing
def test_kubectl_logs_previous(kubectl):
    result = kubectl("logs", "trainer-0", "-n", "ml", "-c", "trainer", "--previous")
    assert (result.returncode, result.stdout) == (0, "loading model\nallocating 80GiB\nKilled\n"), result.stderr
    result = kubectl("logs", "web-0", "-n", "ml", "--tail", "1")
    assert (result.returncode, result.stdout) == (0, "line 4\n"), result.stderr


@kubectl_missing
def test_kubectl_logs_error_is_relayed(kubectl):
    result = kubectl("logs", "creating-0", "-n", "ml")
    assert result.returncode != 0
    assert 'container "worker" in pod "creating-0" is waiting to start: ContainerCreating' in result.stderr


@kubectl_missing
def test_kubectl_get_runtimeclass_and_crd(kubectl):
    result = kubectl("get", "runtimeclass")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0].split()[0] == "NAME" and "nvidia" in result.stdout
    result = kubectl("get", "clusterpolicies.nvidia.com", "-o", "name")
    assert (result.returncode, result.stdout) == (0, "clusterpolicy.nvidia.com/cluster-policy\n"), result.stderr


@kubectl_missing
def test_kubectl_get_missing_pod(kubectl):
    result = kubectl("get", "pod", "missing", "-n", "ml")
    assert result.returncode != 0
    assert 'Error from server (NotFound): pods "missing" not found' in result.stderr


@kubectl_missing
def test_kubectl_forbidden_and_unknown_resource(kubectl, srv):
    srv.forbid("nodes")
    result = kubectl("get", "nodes")
    assert result.returncode != 0
    assert ('Error from server (Forbidden): nodes is forbidden: User "system:serviceaccount:ml:gpudoctor" '
            'cannot list resource "nodes" in API group "" at the cluster scope') in result.stderr
    result = kubectl("get", "nvidiadrivers")
    assert result.returncode != 0 and 'the server doesn\'t have a resource type "nvidiadrivers"' in result.stderr
