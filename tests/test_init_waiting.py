"""init-container-waiting: which init container waits, for how long against its history, for which peer (parsed from
real wait wording), and why the peer does not answer: Service absent, no ready endpoints, a NetworkPolicy of the pod or
of the PEER's pods. Offline on the cases, and live against the suite's API server (what is read, 403 and 404)."""
import copy
import os

import pytest

from kubectl_gpudoctor import verdict
from kubectl_gpudoctor.evidence import Evidence, Gap, Target
from kubectl_gpudoctor.kube import initwait
from kubectl_gpudoctor.offline import load as offline
from tests.apiserver import FakeApiServer, load_case
from tests.conftest import CASES
from tests.live import assert_read_only, run_json, run_plugin, serving

CASE = os.path.join(CASES, "init-container-waiting")
PG = os.path.join(CASE, "fail-peer-ingress-denied")
MYDB = os.path.join(CASE, "fail-mydb-service-absent")
REDIS = os.path.join(CASE, "fail-egress-denied-other-namespace")
PG_POD, MYDB_POD, REDIS_POD = "rag-api-6c8d9f7b4d-h5k2p", "embedder-7d9f8c6b5-q2x7m", "triton-ensemble-59c7d6f8b-k8d2w"
RULE = "init-container-waiting"


def finding(diag_or_doc, rule_id=RULE):
    found = diag_or_doc["findings"] if isinstance(diag_or_doc, dict) else diag_or_doc.findings
    for f in found:
        fid = f["id"] if isinstance(f, dict) else f.id
        if fid == rule_id:
            return f
    return None


def load(path):
    return offline.load(path, "Pod")


def edited(path, change):
    """The case's evidence with its objects changed by `change(ev)` (which edits ev.objects in place)."""
    ev = load(path)
    ev.objects = copy.deepcopy(ev.objects)
    change(ev)
    return verdict.diagnose_pod(ev)


def obj(ev, kind, name):
    return next(o for o in ev.objects[kind] if o["metadata"]["name"] == name)


# --- what the log and the command say ------------------------------------------------------------------------------

@pytest.mark.parametrize("line, host, port", [
    # vishnubob/wait-for-it
    ("wait-for-it.sh: waiting 15 seconds for redis:6379", "redis", 6379),
    ("wait-for-it.sh: timeout occurred after waiting 15 seconds for db.data.svc.cluster.local:5432",
     "db.data.svc.cluster.local", 5432),
    # pg_isready (openclarity/openclarity#26)
    ("postgres:5432 - no response", "postgres", 5432),
    # jwilder/dockerize
    ("2026/12/03 10:01:02 Problem with dial: dial tcp 10.96.0.12:5432: connect: connection refused. Sleeping 1s",
     "10.96.0.12", 5432),
    # ray health-check inside KubeRay's wait-gcs-ready (vllm-project/aibrix#915)
    ("[2025-03-27 23:40:57,068 E 282 282] gcs_rpc_client.h:179: Failed to connect to GCS at address "
     "deepseek-r1-5cdb9559b5-mtfnv-head-svc.default.svc.cluster.local:6379 within 5 seconds.",
     "deepseek-r1-5cdb9559b5-mtfnv-head-svc.default.svc.cluster.local", 6379),
    # Go clients retrying
    ("dial tcp 10.96.0.12:5432: connect: connection refused", "10.96.0.12", 5432),
    # busybox nc / nslookup
    ("nc: bad address 'openpitrix-db.openpitrix-system.svc'", "openpitrix-db.openpitrix-system.svc", None),
    ("nslookup: can't resolve 'mydb.ml.svc.cluster.local'", "mydb.ml.svc.cluster.local", None),
    # botocore's EndpointConnectionError, a model download from an in-cluster MinIO retrying
    ('botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: '
     '"http://minio-service.kubeflow:9000/mlpipeline?list-type=2&prefix=models%2F&encoding-type=url"',
     "minio-service.kubeflow", 9000),
    ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
     "with url: /api/models/meta-llama/Llama-3.1-8B-Instruct (Caused by NewConnectionError('<urllib3.connection."
     "HTTPSConnection object at 0x7f2c1b8e2d10>: Failed to establish a new connection: [Errno 101] Network is "
     "unreachable'))", "huggingface.co", 443),
])
def test_wait_lines_name_the_peer(line, host, port):
    lines = initwait.wait_lines(line + "\n" + line + "\n")
    assert len(lines) == 2
    peers = initwait.peers(lines, "", "ml")
    assert peers and peers[0].host == host and peers[0].port == port


def test_lines_that_are_no_wait_are_not_counted():
    text = "Starting download of model weights\n100%|██████████| 4.2G/4.2G\nwaiting for 3 shards to finish\n"
    assert initwait.wait_lines(text) == []
    # a `waiting for <kind of service>` line is a wait, but names no host: the command must
    lines = initwait.wait_lines("waiting for database\nwaiting for database\n")
    assert len(lines) == 2 and initwait.peers(lines, "", "ml") == []


def test_the_command_names_the_peer_with_env_and_own_namespace_filled_in():
    c = {"command": ["sh", "-c", 'until nc -z -w 2 "$DB_HOST" $(DB_PORT); do echo waiting for database; sleep 2; done'],
         "env": [{"name": "DB_HOST", "value": "pg.data.svc"}, {"name": "DB_PORT", "value": "5433"}]}
    peers = initwait.peers([], initwait.command_text(c, "ml").replace('"', ""), "ml")
    assert (peers[0].service, peers[0].namespace, peers[0].port) == ("pg", "data", 5433)
    docs = {"command": ["sh", "-c", "until nslookup myservice.$(cat /var/run/secrets/kubernetes.io/serviceaccount/"
                                    "namespace).svc.cluster.local; do echo waiting for myservice; sleep 2; done"]}
    p = initwait.peers([], initwait.command_text(docs, "shop"), "shop")[0]
    assert (p.service, p.namespace) == ("myservice", "shop")
    # the training operator's old PyTorchJob worker init container
    pt = {"command": ["sh", "-c", "until nslookup pytorch-dist-mnist-master-0; do echo waiting for master; sleep 2; done"]}
    p = initwait.peers(initwait.wait_lines("waiting for master\nwaiting for master\n"), initwait.command_text(pt, "kf"), "kf")
    assert [(q.service, q.namespace) for q in p] == [("pytorch-dist-mnist-master-0", "kf")]
    ray = {"args": ["ray health-check --address raycluster-head-svc.bt.svc.cluster.local:6379 > /dev/null 2>&1"]}
    p = initwait.peers([], initwait.command_text(ray, "bt"), "bt")[0]
    assert (p.service, p.namespace, p.port) == ("raycluster-head-svc", "bt", 6379)


@pytest.mark.parametrize("host, want", [
    ("mydb", ("mydb", "ml", None)), ("mydb.data", ("mydb", "data", None)),
    ("mydb.data.svc.cluster.local", ("mydb", "data", None)), ("mydb.data.svc.corp.internal", ("mydb", "data", None)),
    ("postgres-0.postgres.data.svc.cluster.local", ("postgres", "data", None)),
    ("10.96.0.12", (None, None, "10.96.0.12")), ("huggingface.co", (None, None, None)),
])
def test_hosts_resolve_as_the_pods_resolver_reads_them(host, want):
    p = initwait.resolve(host, None, "ml", "log", "")
    assert (p.service, p.namespace, p.ip) == want


def test_a_clusterip_names_its_service():
    ev = Evidence(Target("Pod", "x", "ml"))
    ev.add({"kind": "Service", "metadata": {"name": "pg", "namespace": "ml"}, "spec": {"clusterIP": "10.96.0.12"}})
    assert initwait.service_for(ev, initwait.resolve("10.96.0.12", 5432, "ml", "log", ""), "ml")["metadata"]["name"] == "pg"
    assert initwait.service_for(ev, initwait.resolve("10.96.0.13", 5432, "ml", "log", ""), "ml") is None


@pytest.mark.parametrize("running, history, stuck", [
    (299, None, False), (301, None, True),           # nothing to compare: 5 minutes
    (119, 4, False), (121, 4, True),                 # a sibling took 4 s: at least 2 minutes
    (700, 240, False), (730, 240, True),             # a sibling took 4 minutes: 3x that
])
def test_stuck_is_far_longer_than_its_history(running, history, stuck):
    w = initwait.Waiting({"name": "w"}, {}, 1, 1, running, history, lines=[(1, "waiting for db")] * 2)
    assert initwait.is_stuck(w) is stuck
    w.lines = [(1, "waiting for db")]
    assert not initwait.is_stuck(w)   # one line is a start, not a repeated wait


# --- why the peer does not answer ----------------------------------------------------------------------------------

def test_the_policy_that_blocks_selects_the_peer_not_the_pod():
    """The same policy, moved from the database's pods to the waiting pod, no longer explains the wait (ingress to
    the waiting pod is not what its init container needs), and without it the check says the wait's own test fails."""
    d = verdict.diagnose_pod(load(PG))
    assert d.root_cause == RULE and "pgvector-allow-backup" in finding(d).message
    moved = edited(PG, lambda ev: obj(ev, "NetworkPolicy", "pgvector-allow-backup")["spec"].update(
        podSelector={"matchLabels": {"app": "rag-api"}}))
    f = finding(moved)
    assert "pgvector-allow-backup" not in f.message and "no NetworkPolicy read drops traffic from this pod to its pods" in f.message
    gone = edited(PG, lambda ev: ev.objects.pop("NetworkPolicy"))
    assert "the wait's own check keeps failing" in finding(gone).message


def test_a_policy_allowing_the_pod_lets_it_through():
    def allow(ev):
        pol = obj(ev, "NetworkPolicy", "pgvector-allow-backup")
        pol["spec"]["ingress"].append({"from": [{"podSelector": {"matchLabels": {"app": "rag-api"}}}],
                                       "ports": [{"protocol": "TCP", "port": 5432}]})
    assert "pgvector-allow-backup" not in finding(edited(PG, allow)).message
    # the same rule on another port does not: traffic reaches the pod's port 5432 (the Service's targetPort)
    def other_port(ev):
        pol = obj(ev, "NetworkPolicy", "pgvector-allow-backup")
        pol["spec"]["ingress"].append({"from": [{"podSelector": {"matchLabels": {"app": "rag-api"}}}],
                                       "ports": [{"protocol": "TCP", "port": 6432}]})
    assert "pgvector-allow-backup" in finding(edited(PG, other_port)).message


def test_no_ready_endpoints_names_the_peers_owner():
    def down(ev):
        db = obj(ev, "Pod", "pgvector-0")
        db["status"]["phase"] = "Pending"
        db["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                       "message": "0/6 nodes are available: pod has unbound immediate "
                                                  "PersistentVolumeClaims."}]
        db["status"].pop("podIP")
        obj(ev, "EndpointSlice", ev.objects["EndpointSlice"][0]["metadata"]["name"])["endpoints"] = None
    f = finding(edited(PG, down))
    assert "Service pgvector in namespace rag has no ready endpoints" in f.message
    assert "pgvector-0 Pending (Unschedulable)" in f.message
    assert "StatefulSet pgvector" in f.remediation


def test_forbidden_policies_are_a_gap_not_a_pass():
    ev = load(PG)
    ev.add_gap(Gap("networkpolicies", "forbidden", "", "list"))
    f = finding(verdict.diagnose_pod(ev))
    assert "not checked: forbidden (needs list networkpolicies)" in f.message
    assert "the wait's own check" not in f.message


def test_a_service_that_does_not_exist_is_said_and_the_fix_names_the_deployment():
    d = verdict.diagnose_pod(load(MYDB))
    f = finding(d)
    assert d.root_cause == RULE and "Service mydb does not exist in namespace ml" in f.message
    assert "Deployment embedder" in f.remediation and "initContainers[name=init-mydb]" in f.remediation
    # an unreadable Service is not an absent one
    ev = load(MYDB)
    ev.sources.discard("services")
    ev.add_gap(Gap("services", "forbidden", "", "get"))
    f = finding(verdict.diagnose_pod(ev))
    assert "does not exist" not in f.message and "not checked: forbidden (needs get services)" in f.message


def test_an_init_container_that_finished_is_not_waiting():
    def finished(ev):
        p = obj(ev, "Pod", MYDB_POD)
        cs = p["status"]["initContainerStatuses"][0]
        cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": "2026-12-03T10:00:05Z",
                                      "finishedAt": "2026-12-03T10:00:41Z"}}
        next(c for c in p["status"]["conditions"] if c["type"] == "Initialized").update(status="True")
    assert finding(edited(MYDB, finished)) is None


# --- live: what is read, and 403/404 -----------------------------------------------------------------------------------

def paths(srv):
    return [(r.path, r.query.get("labelSelector")) for r in srv.requests]


def test_live_reads_the_peer_service_its_slices_and_pods(tmp_path):
    with serving(PG, tmp_path, namespace="rag") as (srv, kc):
        proc, doc = run_json(PG_POD, "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1 and doc["rootCause"] == RULE, doc["summary"]
    got = paths(srv)
    assert ("/api/v1/namespaces/rag/services/pgvector", None) in got
    assert ("/apis/discovery.k8s.io/v1/namespaces/rag/endpointslices", "kubernetes.io/service-name in (pgvector)") in got
    assert ("/api/v1/namespaces/rag/pods", "app.kubernetes.io/instance=pgvector,app.kubernetes.io/name=pgvector") in got
    assert "pgvector-allow-backup" in finding(doc)["message"]


def test_live_forbidden_networkpolicies_are_a_gap(tmp_path):
    with serving(PG, tmp_path, namespace="rag") as (srv, kc):
        srv.forbid("networkpolicies")
        _, doc = run_json(PG_POD, "--kubeconfig", kc)
    assert doc["rootCause"] == RULE
    assert "not checked: forbidden (needs list networkpolicies in namespace rag)" in finding(doc)["message"]
    assert any(g["source"] == "networkpolicies" and g["reason"] == "forbidden" for g in doc["gaps"])


def test_live_missing_service_is_absent_and_peer_namespace_policies_are_read(tmp_path):
    with serving(MYDB, tmp_path, namespace="ml") as (srv, kc):
        _, doc = run_json(MYDB_POD, "--kubeconfig", kc)
    assert "Service mydb does not exist in namespace ml" in finding(doc)["message"]
    with serving(REDIS, tmp_path, namespace="inference") as (srv, kc):
        _, doc = run_json(REDIS_POD, "--kubeconfig", kc)
    assert_read_only(srv)
    got = [p for p, _ in paths(srv)]
    assert "/api/v1/namespaces/cache/services/redis-master" in got
    assert "/apis/networking.k8s.io/v1/namespaces/cache/networkpolicies" in got
    assert "default-deny-egress" in finding(doc)["message"]


def test_search_path_noise_of_nslookup_names_the_service_the_command_waits_for():
    """busybox nslookup prints the search-path names it tried (chatwoot/charts#200): they are the same Service, and
    the command's host comes before a host the log names without a port."""
    text = ("** server can't find chatwoot-chatwoot-redis-master.cluster.local: NXDOMAIN\n"
            "** server can't find chatwoot-chatwoot-redis-master.svc.cluster.local: NXDOMAIN\n"
            "waiting for chatwoot-chatwoot-redis-master\n")
    lines = initwait.wait_lines(text * 3)
    assert len(lines) == 9
    peers = initwait.peers(lines, "until nslookup chatwoot-chatwoot-redis-master ; do echo waiting; done", "chatwoot")
    assert [(p.service, p.namespace) for p in peers] == [("chatwoot-chatwoot-redis-master", "chatwoot")]
    assert peers[0].where == "command"


def test_live_bundle_replays_the_peer_objects_and_the_gap(tmp_path):
    """`bundle` saves the Service, its EndpointSlices and pods and the 403 on networkpolicies; --from reads the same."""
    out = tmp_path / "b.tgz"
    with serving(PG, tmp_path, namespace="rag") as (srv, kc):
        srv.forbid("networkpolicies")
        proc = run_plugin("bundle", PG_POD, "-f", str(out), "--kubeconfig", kc)
        assert proc.returncode == 0, proc.stderr
        _, live = run_json(PG_POD, "--kubeconfig", kc)
    _, replay = run_json(PG_POD, "--from", str(out))
    assert replay["rootCause"] == live["rootCause"] == RULE
    # the same verdict on the peer (the first sentence holds the wait's age, which the wall clock moves on)
    assert finding(replay)["message"].split(". ", 1)[1] == finding(live)["message"].split(". ", 1)[1]
    assert "not checked: forbidden (needs list networkpolicies in namespace rag)" in finding(replay)["message"]
    assert any(g["source"] == "networkpolicies" and g["reason"] == "forbidden" for g in replay["gaps"])


STRICT = os.path.join(CASES, "init-container-failing", "fail-wait-for-it-strict-egress-denied")


def test_a_wait_that_gives_up_is_failing_with_the_peer_it_dialed(tmp_path):
    """wait-for-it --strict exits after its timeout: init-container-failing, with the same peer check (offline and
    live, where the collector reads the peer for a failed run too)."""
    d = verdict.diagnose_pod(load(STRICT))
    f = finding(d, "init-container-failing")
    assert d.root_cause == "init-container-failing" and "It waited for redis-master.cache.svc.cluster.local:6379" in f.message
    assert "default-deny-egress" in f.remediation and "kubernetes.io/metadata.name: cache" in f.snippet
    # a failure the peer does not explain keeps its own cause and fix
    cnf = verdict.diagnose_pod(load(os.path.join(CASES, "init-container-failing", "fail-wait-for-db-command-not-found")))
    assert "It waited for" not in finding(cnf, "init-container-failing").message
    with serving(STRICT, tmp_path, namespace="inference") as (srv, kc):
        _, doc = run_json(REDIS_POD, "--kubeconfig", kc)
    assert_read_only(srv)
    assert "/api/v1/namespaces/cache/services/redis-master" in [p for p, _ in paths(srv)]
    assert "default-deny-egress" in finding(doc, "init-container-failing")["message"]


def test_live_siblings_on_other_nodes_are_the_history_and_an_ip_names_its_service(tmp_path):
    """The sibling pod runs on another node (not in the node's pod list): the collector lists the controller's pods by
    label to compare; the wait dials the Service's clusterIP (Go's `dial tcp IP:PORT`), which the namespace's
    Service list resolves to pgvector."""
    objects, logs = load_case(PG)
    for o in objects:
        if o["kind"] == "Pod" and o["metadata"]["name"] == "rag-api-6c8d9f7b4d-9wzrt":
            o["spec"]["nodeName"] = "gpu-l40s-2"
        if o["kind"] == "Pod" and o["metadata"]["name"] == PG_POD:
            o["spec"]["initContainers"][0]["command"] = ["/usr/local/bin/wait-tcp", "--target", "10.96.118.40:5432"]
    key = next(k for k in logs if k[1] == PG_POD)
    logs[key] = "dial tcp 10.96.118.40:5432: connect: connection timed out\n" * 30
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kubeconfig"), namespace="rag")
        _, doc = run_json(PG_POD, "--kubeconfig", kc)
    assert_read_only(srv)
    got = paths(srv)
    assert ("/api/v1/namespaces/rag/pods", "app=rag-api,pod-template-hash=6c8d9f7b4d") in got
    assert all(r.query.get("limit") == "50" for r in srv.requests if r.path == "/api/v1/namespaces/rag/pods")
    assert ("/api/v1/namespaces/rag/services", None) in got
    f = finding(doc)
    assert "waiting for 10.96.118.40:5432" in f["message"] and "sibling pod rag-api-6c8d9f7b4d-9wzrt finished it in 4s" \
        in f["message"] and "pgvector-allow-backup" in f["message"], f["message"]


def test_an_unreadable_log_of_a_long_wait_is_unknown_unless_the_command_is_a_wait_loop():
    def unreadable(ev):
        ev.logs.clear()
        ev.add_gap(Gap("pods/log", "forbidden", "", "get"))
    ev = load(MYDB)
    unreadable(ev)
    f = finding(verdict.diagnose_pod(ev))
    assert "its command is a wait loop" in f.message and "Service mydb does not exist" in f.message
    ev = load(MYDB)
    unreadable(ev)
    obj(ev, "Pod", MYDB_POD)["spec"]["initContainers"][0]["command"] = ["/app/wait-deps", "--config", "/etc/deps.yaml"]
    d = verdict.diagnose_pod(ev)
    c = next(c for c in d.checks if c.id == RULE)
    assert c.result == "unknown" and "needs get pods/log" in c.reason


def test_a_peer_still_starting_makes_the_wait_a_warning():
    def creating(ev):
        db = obj(ev, "Pod", "pgvector-0")
        db["status"]["phase"] = "Pending"
        db["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"},
                                      {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]
        db["status"]["containerStatuses"][0].update(ready=False, started=False,
                                                    state={"waiting": {"reason": "ContainerCreating"}})
        ev.objects["EndpointSlice"][0]["endpoints"] = None
    f = finding(edited(PG, creating))
    assert f.severity == "warning" and "pgvector-0 ContainerCreating" in f.message and "still starting" in f.message


def test_a_peer_known_only_by_its_service_selector_leaves_other_labels_undecided():
    """When the Service's pods were not read, a policy on labels outside its selector cannot be decided: the finding
    says which labels it depends on instead of claiming the connection is allowed."""
    from kubectl_gpudoctor.kube import netpolicy
    stub = {"metadata": {"namespace": "rag", "labels": {"app.kubernetes.io/name": "pgvector"}}}
    peer = netpolicy.pod_peer(stub, None, 5432, labels_only={"app.kubernetes.io/name": "pgvector"})
    assert netpolicy.match({"matchLabels": {"tier": "db"}}, peer.labels, peer.unknown_keys) is None
    assert netpolicy.match({"matchLabels": {"app.kubernetes.io/name": "pgvector"}}, peer.labels, peer.unknown_keys)

    def unread(ev):
        ev.objects["Pod"] = [p for p in ev.objects["Pod"] if p["metadata"]["name"] != "pgvector-0"]
        ev.add_gap(Gap("pods", "forbidden", "", "list"))
        obj(ev, "Pod", PG_POD)  # the target stays
        ev.objects["NetworkPolicy"] = [{
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "app-egress", "namespace": "rag"},
            "spec": {"podSelector": {"matchLabels": {"app": "rag-api"}}, "policyTypes": ["Egress"],
                     "egress": [{"to": [{"podSelector": {"matchLabels": {"tier": "db"}}}]},
                                {"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                                 "ports": [{"protocol": "UDP", "port": 53}]}]}}]
    f = finding(edited(PG, unread))
    assert "depends on the labels of Service pgvector's pods" in f.message and "needs list pods" in f.message


def test_of_two_peers_the_one_whose_state_explains_the_wait_is_named():
    def two(ev):
        c = obj(ev, "Pod", PG_POD)["spec"]["initContainers"][0]
        c["command"] = ["sh", "-c", "until nc -z -w 2 pgcache 6432 && nc -z -w 2 pgvector 5432; do echo waiting for "
                                    "pgvector; sleep 2; done"]
        ev.objects.pop("NetworkPolicy")
    f = finding(edited(PG, two))
    assert "Service pgcache does not exist in namespace rag" in f.message, f.message


def test_an_externalname_service_is_checked_as_the_host_it_names():
    def alias(ev):
        svc = obj(ev, "Service", "pgvector")
        svc["spec"] = {"type": "ExternalName", "externalName": "pg.prod.example.net", "ports": svc["spec"]["ports"]}
        ev.objects.pop("NetworkPolicy")
    f = finding(edited(PG, alias))
    assert "Service pgvector is an ExternalName alias of pg.prod.example.net" in f.message
    assert "no ready endpoints" not in f.message


def test_a_model_download_retrying_an_outside_host_under_default_deny_egress():
    def hf(ev):
        c = obj(ev, "Pod", REDIS_POD)["spec"]["initContainers"][0]
        c["command"] = ["python", "-m", "download_model", "--repo", "meta-llama/Llama-3.1-8B-Instruct"]
        key = next(k for k in ev.logs if k[1] == REDIS_POD)
        ev.logs[key] = ("WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
                        "status=None)) after connection broken by 'NewConnectionError(\\'<urllib3.connection.HTTPSConnection "
                        "object at 0x7f2c1b8e2d10>: Failed to establish a new connection: [Errno 110] Connection timed "
                        "out\\')': /api/models/meta-llama/Llama-3.1-8B-Instruct\n"
                        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max "
                        "retries exceeded with url: /api/models/meta-llama/Llama-3.1-8B-Instruct\n") * 20
    f = finding(edited(REDIS, hf))
    assert "huggingface.co:443" in f.message and "NetworkPolicy default-deny-egress isolates pod" in f.message, f.message
    # with egress to anywhere (0.0.0.0/0) allowed, the policy is not what stops it
    def open_egress(ev):
        hf(ev)
        obj(ev, "NetworkPolicy", "default-deny-egress")["spec"]["egress"].append({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]})
    f = finding(edited(REDIS, open_egress))
    assert "no NetworkPolicy read denies egress to it" in f.message


def test_a_native_sidecar_is_not_the_init_container_that_waits():
    pod = {"spec": {"initContainers": [{"name": "istio-proxy", "restartPolicy": "Always"}, {"name": "wait-db"}]},
           "status": {"conditions": [{"type": "Initialized", "status": "False"}], "initContainerStatuses": [
               {"name": "istio-proxy", "started": True, "state": {"running": {"startedAt": "2026-12-03T10:00:00Z"}}},
               {"name": "wait-db", "state": {"running": {"startedAt": "2026-12-03T10:00:05Z"}}}]}}
    c, _, order, total = initwait.running_init(pod)
    assert (c["name"], order, total) == ("wait-db", 2, 2)
    pod["status"]["initContainerStatuses"][1]["state"] = {"terminated": {"exitCode": 0}}
    pod["status"]["conditions"][0]["status"] = "True"
    assert initwait.running_init(pod) is None   # initialized: the sidecar running alongside is not waiting


# --- a Service whose targetPort is not where its pods listen (tests/realworld/failing/r5-init-nc-wrong-targetport) --

QDRANT = os.path.join(os.path.dirname(__file__), "realworld", "failing", "r5-init-nc-wrong-targetport")


def _qdrant_pod(ports=(6333, 6334), probe=None):
    """qdrant-0 as `kubectl get pod -o yaml` shows it behind the EndpointSlice (Ready; qdrant's HTTP 6333, gRPC 6334)."""
    c = {"name": "qdrant", "image": "qdrant/qdrant:v1.12.4",
         "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in zip(("http", "grpc", "p2p"), ports)]}
    if probe:
        c["readinessProbe"] = {"tcpSocket": {"port": probe}, "periodSeconds": 10}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "qdrant-0", "namespace": "search", "labels": {"app": "qdrant"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "qdrant",
                                              "uid": "5b1d0c4e-0f0e-4d7c-9a43-2f4c1a9e7d10", "controller": True}]},
            "spec": {"containers": [c], "nodeName": "gpu-node-b"},
            "status": {"phase": "Running", "podIP": "10.244.1.55",
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "qdrant", "ready": True, "restartCount": 0,
                                              "state": {"running": {"startedAt": "2026-11-18T15:01:00Z"}}}]}}


def _with(pod=None, **svc_changes):
    def change(ev):
        if pod is not None:
            ev.objects.setdefault("Pod", []).append(pod)
        svc = obj(ev, "Service", "qdrant")
        for key, value in svc_changes.items():
            if key == "labels":
                svc["metadata"]["labels"].update(value)
            elif key == "ownerReferences":
                svc["metadata"][key] = value
            elif key == "targetPort":
                svc["spec"]["ports"][0]["targetPort"] = value
            else:
                svc["spec"][key] = value
    return edited(QDRANT, change)


def test_a_targetport_no_container_declares_is_the_services_fix_not_the_clients():
    d = _with(_qdrant_pod())
    f = finding(d)
    assert d.root_cause == RULE
    assert "no container of its pods declares port 6335 (they declare 6333, 6334)" in f.message, f.message
    assert "Set Service qdrant's spec.ports[name=grpc].targetPort (now 6335) to 6334" in f.remediation, f.remediation
    assert "Init container wait-qdrant of Deployment reranker dials Service port 6334, which is right" in f.remediation
    assert "nc -z" not in f.remediation and "6335; echo" not in f.remediation, f.remediation
    assert f.snippet == ("kubectl patch service qdrant -n search --type=json -p "
                         "'[{\"op\":\"replace\",\"path\":\"/spec/ports/0/targetPort\",\"value\":6334}]'"), f.snippet


def test_pods_not_read_leave_the_targetport_unconfirmed_never_nothing_listens():
    f = finding(verdict.diagnose_pod(load(QDRANT)))
    assert "its pods are not among the objects read" in f.message and "nothing listens" not in f.message, f.message
    assert "to the port the pods listen on (check them: `kubectl get pod qdrant-0 -n search" in f.remediation
    assert f.snippet == "", f.snippet


def test_a_targetport_the_pods_serve_or_a_port_without_mapping_keeps_the_clients_check():
    """Something answers on the targetPort (declared, or a Ready pod's readinessProbe connects to it), the Service
    maps the port to itself, or a headless Service (no kube-proxy mapping): the targetPort is not the suspect."""
    for d in (_with(_qdrant_pod(ports=(6333, 6335))), _with(_qdrant_pod(ports=(), probe=6335)),
              _with(targetPort=6334), _with(clusterIP="None", clusterIPs=["None"])):
        f = finding(d)
        assert "the wait's own check keeps failing" in f.message and "targetPort" not in f.remediation, f.message
        # the check to run by hand dials the Service's port, as the client does, never the targetPort
        assert "nc -z -w 2 qdrant 6334; echo exit=$?" in f.remediation, f.remediation


def test_a_helm_managed_service_is_fixed_in_its_release_not_by_a_patch():
    f = finding(_with(_qdrant_pod(), labels={"app.kubernetes.io/managed-by": "Helm",
                                             "app.kubernetes.io/instance": "qdrant"}))
    assert "Service qdrant belongs to Helm release qdrant (label app.kubernetes.io/managed-by=Helm on Service " \
           "qdrant)" in f.remediation, f.remediation
    assert "kubectl edit service" not in f.remediation and f.snippet == "", f.snippet


def test_a_service_an_operator_owns_is_fixed_in_its_owner():
    owner = [{"apiVersion": "qdrant.io/v1", "kind": "QdrantCluster", "name": "qdrant", "uid": "0c9e", "controller": True}]
    f = finding(_with(_qdrant_pod(), ownerReferences=owner))
    assert "Service qdrant belongs to QdrantCluster qdrant (its owner reference): set the port there" in f.remediation
    assert "kubectl edit service" not in f.remediation and f.snippet == "", (f.remediation, f.snippet)
