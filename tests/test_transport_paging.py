"""Lists in pages of 500 (limit + continue), as kubectl reads them, against the suite's API server and scripted
servers: one GET for a small list, every page of a big one joined, a failing page a gap, never a partial list."""
import json

from kubectl_gpudoctor.collect.api import NODE_PAGE, PAGE, Api, Request
from kubectl_gpudoctor.collect.pod import pod_requests
from kubectl_gpudoctor.collect.transport import Credentials, Transport
from kubectl_gpudoctor.evidence import Evidence, Target
from tests.apiserver import FakeApiServer
from tests.test_http11 import Scripted, ok


def node(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"gpu-node-{i:04d}", "labels": {"nvidia.com/gpu.present": "true"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


def api_for(srv) -> Api:
    creds = Credentials(server=srv.url, authorization=f"Bearer {srv.token}", ca_file=srv.ca_file)
    return Api(Transport(creds, 10, env={}), 10)


def test_a_small_list_is_one_get_with_kubectls_limit():
    with FakeApiServer([node(i) for i in range(3)]) as srv:
        resp = api_for(srv).list("/api/v1/nodes")
        assert [r.query for r in srv.requests] == [{"limit": str(PAGE)}]
    assert resp.reason == "ok" and len(resp.body["items"]) == 3


def test_a_big_list_is_read_page_by_page_and_joined():
    with FakeApiServer([node(i) for i in range(1234)]) as srv:
        resp = api_for(srv).list("/api/v1/nodes")
        queries = [r.query for r in srv.requests]
    assert len(queries) == 3 and all(q["limit"] == "500" for q in queries)
    assert "continue" not in queries[0] and all(q.get("continue") for q in queries[1:])
    names = [n["metadata"]["name"] for n in resp.body["items"]]
    assert names == [f"gpu-node-{i:04d}" for i in range(1234)]
    assert "continue" not in resp.body["metadata"] and "remainingItemCount" not in resp.body["metadata"]


def test_lists_in_a_parallel_round_are_paged_and_field_selected_ones_are_not():
    with FakeApiServer([node(i) for i in range(600)]) as srv:
        ev = Evidence(target=Target("Pod", "p", "ml"))
        api_for(srv).run([Request("nodes", "list", "/api/v1/nodes", kind="Node"),
                          Request("pods", "list", "/api/v1/pods", {"fieldSelector": "spec.nodeName=gpu-node-0001"},
                                  "Pod")], ev)
        by_path = {}
        for r in srv.requests:
            by_path.setdefault(r.path, []).append(r.query)
    assert len(by_path["/api/v1/nodes"]) == 2
    assert by_path["/api/v1/pods"] == [{"fieldSelector": "spec.nodeName=gpu-node-0001"}]
    assert len(ev.all("Node")) == 600 and ev.readable("nodes")


def test_a_pending_pods_node_list_is_one_page_for_any_supported_cluster_size():
    """Kubernetes supports clusters of up to 5,000 nodes: a Pending pod's node list asks for that many at once (3
    sequential round trips fewer on 2,000 nodes), while a scheduled pod's own node is one GET."""
    pending = {"metadata": {"name": "trainer-0", "namespace": "ml", "uid": "u1"}, "spec": {"containers": []},
               "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                               "reason": "Unschedulable"}]}}
    lists = [r for r in pod_requests(pending, 100) if r.path == "/api/v1/nodes"]
    assert [r.page for r in lists] == [NODE_PAGE] and NODE_PAGE == 5000
    scheduled = dict(pending, spec={"nodeName": "gpu-node-0001", "containers": []}, status={"phase": "Pending"})
    assert not [r for r in pod_requests(scheduled, 100) if r.path == "/api/v1/nodes"]
    with FakeApiServer([node(i) for i in range(1234)]) as srv:
        ev = Evidence(target=Target("Pod", "p", "ml"))
        api_for(srv).run(lists, ev)
        assert [r.query for r in srv.requests] == [{"limit": "5000"}]
    assert len(ev.all("Node")) == 1234


def test_a_list_bigger_than_its_page_is_still_paged():
    with FakeApiServer([node(i) for i in range(7)]) as srv:
        resp = api_for(srv).list("/api/v1/nodes", page=3)
        assert [r.query.get("limit") for r in srv.requests] == ["3", "3", "3"]
    assert [n["metadata"]["name"] for n in resp.body["items"]] == [f"gpu-node-{i:04d}" for i in range(7)]


def page(items, token=None) -> bytes:
    meta = {"resourceVersion": "1", **({"continue": token} if token else {})}
    return ok(json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": items}).encode())


GONE = (b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"The provided continue parameter is too '
        b'old to display a consistent list result. You can start a new list without the continue parameter.",'
        b'"reason":"Expired","code":410}')


def test_an_expired_continue_token_makes_the_list_a_gap_not_a_partial_list():
    srv = Scripted([page([{"metadata": {"name": "a"}}], token="tok1"),
                    b"HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(GONE)
                    + GONE])
    resp = Api(srv.transport(), 5).list("/api/v1/nodes")
    assert resp.status == 410 and resp.reason == "error" and "too old" in resp.message
    assert "continue=tok1" in srv.requests[1].split("\r\n")[0]


def test_a_page_without_items_is_an_error():
    srv = Scripted([page([{"metadata": {"name": "a"}}], token="tok1"), ok(b'{"kind":"Status","metadata":{}}')])
    resp = Api(srv.transport(), 5).list("/api/v1/nodes")
    assert resp.reason == "error" and "without items" in resp.message
