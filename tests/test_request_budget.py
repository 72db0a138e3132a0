"""What a live diagnosis costs the API server, counted not timed: at most 12 GETs in at most 3 sequential round trips
for a pod in any phase (the pod, then everything the pod names, then what those answers name), and on a cluster of
2,000 nodes and 40,000 pods a Pending GPU pod costs the same handful — never a list of every pod.

The server adds a fixed delay to every answer only so that the requests of one parallel round all arrive before any is
answered; `depth` then tells which round trip a request belongs to. Nothing here measures time."""
import os

import pytest

from tests.apiserver import FakeApiServer
from tests.casebook import CASES, expectations
from tests.conftest import ROOT
from tests.live import assert_read_only, run_json, serving
from tests.test_node_scale import FLAPPING, NO_PLUGIN

# 12, plus the one dcgm-exporter metrics read (pod proxy) of a node view or of a GPU pod in trouble.
MAX_GETS, MAX_ROUND_TRIPS = 13, 3
# The Pending GPU pod on 2,000 nodes: the pod, its events, its Job, Koordinator reservations, the nodes (one list),
# the pods of 3 GPU nodes and the DaemonSets (one GPU node advertises none); no NetworkPolicies before it has a node.
BIG_PENDING_GETS = 9
SPACED = 0.2   # seconds added to every answer (see the module docstring)

# The heaviest cases of each phase (by requests) in the suite: what a diagnosis there reads.
HEAVIEST = [
    ("crash", "oom-killed/fail-kill-after-18-days-ready-12-days-warning"),   # owner chain, PVC, Secret, two logs
    ("scheduling", "unbound-pvc/fail-local-volume-none-available"),           # storage, nodes, GPU nodes' pods
    ("scheduling", "volume-zone-conflict/fail-ebs-volume-in-cpu-zone"),
    ("scheduling", "untolerated-taint/fail-multi-signal-spot-taint-and-full"),
    ("creation", "nvidia-container-cli-error/fail-driver-not-loaded-runc11"),
    ("creation", "missing-config-reference/fail-configmap-missing-key"),
    ("init", "init-container-failing/fail-oom-weights-download"),
    ("eviction", "evicted/fail-node-memory-vllm"),
    ("network", "networkpolicy-blocks-traffic/pass-healthy-isolated-serving"),
    # The owner chain to the object a fix edits: an InferenceService named by the pod's label rides the first round
    # (11 GETs); a TrainJob above its JobSet above its Job is the second round's one more GET (11 GETs, 3 trips).
    ("crash", "oom-killed/fail-owner-kserve-inferenceservice"),
    ("crash", "oom-killed/fail-owner-trainjob-jobset"),
    # A GPU pod whose own log shows a driver/library error: the log of another workload's GPU pod failing on the same
    # node is read once both are known (collect/node.py sibling_log_requests), the follow-up round's one more GET.
    ("crash", os.path.join(ROOT, "tests", "realworld", "failing",
                           "r4-sib-welkin-operator-upgrade-two-workloads-insufficient")),
]
# No node carries GPU labels, so where the device plugin runs is found by following its DaemonSet: nodes, then the
# DaemonSets, then the plugin's pods by the DaemonSet's selector, then its log — a chain no parallel round shortens.
NO_GPU_LABELS = "gpu-not-advertised/fail-plugin-runs-but-sees-no-gpu"
# A Pending GPU pod whose GPU nodes' own stack is broken: the log of the broken component is read once the nodes'
# pods are known (bounded: collect/scheduling.py MAX_STACK_LOGS).
BROKEN_STACK = "gpu-not-advertised/fail-plugin-crashloop-nvml-not-loadable"


def _target(path):
    import yaml
    with open(os.path.join(path, "bundle.yaml")) as f:
        return yaml.safe_load(f)["target"]


def _budget(srv):
    """(GETs, sequential round trips, listing), a big list's further pages aside: kubectl reads a list of more
    than 500 objects in pages of 500 (limit + continue), each page one more GET and one more round trip after
    the one before; a page continuation is not a new source."""
    pages = [r for r in srv.requests if "continue" in r.query]
    gets = len(srv.requests) - len(pages)
    trips = max(r.depth for r in srv.requests) - len({r.depth for r in pages})
    listing = "\n".join(f"  {r.depth} {r.path} {r.query}" for r in sorted(srv.requests, key=lambda r: r.depth))
    return gets, trips, listing


@pytest.mark.parametrize("case,trips", [pytest.param(c, MAX_ROUND_TRIPS, id=f"{phase}:{c}") for phase, c in HEAVIEST]
                         + [pytest.param(BROKEN_STACK, MAX_ROUND_TRIPS + 1, id=f"scheduling:{BROKEN_STACK}"),
                            pytest.param(NO_GPU_LABELS, MAX_ROUND_TRIPS + 2, id=f"scheduling:{NO_GPU_LABELS}")])
def test_pod_diagnosis_request_budget(case, trips, tmp_path):
    path = os.path.join(CASES, case)
    target = _target(path)
    with serving(path, tmp_path, namespace=target["namespace"], latency=SPACED) as (srv, kc):
        proc, doc = run_json(target["name"], "--kubeconfig", kc)
    assert_read_only(srv)
    assert doc["rootCause"] == expectations(path).get("rootCause", doc["rootCause"]), doc["summary"]
    gets, seen, listing = _budget(srv)
    assert gets <= MAX_GETS, f"{gets} GETs:\n{listing}"
    assert seen <= trips, f"{seen} sequential round trips:\n{listing}"


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    from tests.bigcluster import PENDING, big_cluster
    with FakeApiServer(big_cluster()) as srv:
        yield srv, srv.write_kubeconfig(str(tmp_path_factory.mktemp("big") / "kubeconfig"), namespace=PENDING[0])


def test_pending_gpu_pod_on_a_big_cluster_reads_a_bounded_handful(big):
    """2,000 nodes, 40,000 pods: the pod's verdict is the scheduler's (insufficient-gpu), from at most 9 GETs in 3
    round trips; nodes are listed once; no pod list is unfiltered or cluster-wide without a selector."""
    from tests.bigcluster import PENDING
    srv, kc = big
    srv.reset_requests()
    srv.latency = SPACED
    try:
        proc, doc = run_json(PENDING[1], "--kubeconfig", kc)
    finally:
        srv.latency = 0.0
    assert_read_only(srv)
    assert proc.returncode == 1 and doc["rootCause"] == "insufficient-gpu", doc["summary"]
    gets, trips, listing = _budget(srv)
    assert gets <= BIG_PENDING_GETS, f"{gets} GETs:\n{listing}"
    assert trips <= MAX_ROUND_TRIPS, f"{trips} sequential round trips:\n{listing}"
    assert not [r for r in srv.requests if r.path.endswith("/networkpolicies")], listing
    node_lists = [r for r in srv.requests if r.path == "/api/v1/nodes" and "continue" not in r.query]
    assert len(node_lists) == 1 and node_lists[0].query.get("limit") == "5000", listing
    node_pages = [r for r in srv.requests if r.path == "/api/v1/nodes" and "continue" in r.query]
    assert not node_pages, listing   # 2,000 nodes: one page (a supported cluster has at most 5,000)
    for r in srv.requests:
        if r.path.endswith("/pods"):
            assert r.query.get("fieldSelector") or r.query.get("labelSelector"), f"unfiltered pod list: {r}"
    # The report stays readable: the GPU node table shows the rows that matter, not 1,499 rows of unknown usage.
    from kubectl_gpudoctor.rules.scheduling.capacity import SHOWN_ROWS
    finding = next(f for f in doc["findings"] if f["id"] == "insufficient-gpu")
    listed = {r.query["fieldSelector"].split("=", 1)[1] for r in srv.requests
              if r.path == "/api/v1/pods" and r.query.get("fieldSelector", "").startswith("spec.nodeName=")}
    assert len(finding["table"]) == SHOWN_ROWS, len(finding["table"])
    known = {r["node"] for r in finding["table"] if r["free"] is not None}
    assert known and known <= listed, (known, listed)
    assert f"The table shows {SHOWN_ROWS} of its 1," in finding["message"], finding["message"]


@pytest.mark.parametrize("node,code,status", [(FLAPPING, 0, "warning"), (NO_PLUGIN, 1, "failing")],
                         ids=["flapping-plugin", "no-plugin-no-gpu-advertised"])
def test_node_view_on_a_big_cluster_is_two_round_trips(big, node, code, status):
    """The node and everything that needs only its name in one round trip, then what its pods name (their
    DaemonSets, a log tail): the node's own pods by field selector, never every pod. A GPU node that advertises no
    GPU asks whether DRA is served in that second round too, beside the DaemonSet list."""
    srv, kc = big
    srv.reset_requests()
    srv.latency = SPACED
    try:
        proc, doc = run_json("node", node, "--kubeconfig", kc)
    finally:
        srv.latency = 0.0
    assert_read_only(srv)
    assert proc.returncode == code and doc["status"] == status, proc.stderr
    gets, trips, listing = _budget(srv)
    assert gets <= MAX_GETS and trips <= 2, f"{gets} GETs, {trips} round trips:\n{listing}"


def test_scan_lists_pods_in_pages(tmp_path):
    """scan -A reads pods page by page (limit + continue), never one unbounded list."""
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    with serving(case, tmp_path) as (srv, kc):
        proc, doc = run_json("scan", "-A", "--kubeconfig", kc)
    assert_read_only(srv)
    assert proc.returncode == 1 and doc["kind"] == "ScanReport"
    cluster_lists = [r for r in srv.requests if r.path == "/api/v1/pods" and "spec.nodeName=" not in
                     r.query.get("fieldSelector", "")]
    assert cluster_lists and all(r.query.get("limit") for r in cluster_lists), cluster_lists


def test_the_second_round_goes_out_on_connections_opened_during_the_first(tmp_path):
    """A new connection costs two round trips (TCP, then TLS) before its request leaves: the pod diagnosis opens
    its second round's connections while the pod itself is being read, so none is opened after the first answer."""
    from tests.live import run_json, serving
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    from kubectl_gpudoctor.collect.pod import SPARE_CONNECTIONS
    with serving(case, tmp_path, namespace="serving") as (srv, kc):
        # The pod's answer waits until the spare connections are in (or 30 s: then the test fails on `opened`),
        # so the order is checked, not whether the handshakes beat a fixed delay on a loaded machine.
        srv.hold("pods", name="inference-7d9f8b6c5-x2x9q", connections=1 + SPARE_CONNECTIONS)
        proc, doc = run_json("inference-7d9f8b6c5-x2x9q", "--kubeconfig", kc)
        later = sum(1 for r in srv.requests if r.path != "/api/v1/namespaces/serving/pods/inference-7d9f8b6c5-x2x9q")
        opened = list(srv.connections)
    assert doc["rootCause"] == "oom-killed", proc.stderr
    assert later >= 8, srv.requests
    assert len(opened) == 1 + SPARE_CONNECTIONS and all(d == 1 for d in opened), \
        f"connections opened per round trip: {opened}"


@pytest.mark.parametrize("all_namespaces", [False, True])
def test_the_pods_request_leaves_before_the_rest_of_the_work_starts(tmp_path, monkeypatch, all_namespaces):
    """The first answer is the first wait: the pod's GET is sent on the first connection before the spare
    connections' handshakes and the rules' loading (runner's `waiting`) compete with it for the interpreter."""
    from kubectl_gpudoctor.collect import http11, pod as collect
    from kubectl_gpudoctor.collect.kubeconfig import ConnOptions
    from kubectl_gpudoctor.collect.transport import Transport
    events = []
    connect, exchange, spares = Transport._connect, http11.Connection.exchange, Transport.open_spares

    def sending(self, data, sent=None):
        events.append(data.split(b"\r\n", 1)[0].decode())
        return exchange(self, data, lambda: (events.append("sent"), sent and sent()))
    monkeypatch.setattr(Transport, "_connect", lambda self, *a: (events.append("connect"), connect(self, *a))[1])
    monkeypatch.setattr(http11.Connection, "exchange", sending)
    monkeypatch.setattr(Transport, "open_spares", lambda self, n: (events.append(f"spares {n}"), spares(self, n)))
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    with serving(case, tmp_path, namespace="serving", latency=0.05) as (srv, kc):
        opts = ConnOptions(kubeconfig=kc, all_namespaces=all_namespaces)
        ev = collect.collect_pod(opts, "inference-7d9f8b6c5-x2x9q", waiting=lambda: events.append("waiting"))
    assert ev.pod["metadata"]["name"] == "inference-7d9f8b6c5-x2x9q"
    first = ("GET /api/v1/pods?fieldSelector=metadata.name%3Dinference-7d9f8b6c5-x2x9q HTTP/1.1" if all_namespaces
             else "GET /api/v1/namespaces/serving/pods/inference-7d9f8b6c5-x2x9q HTTP/1.1")
    assert events[:4] == ["connect", first, "sent", f"spares {collect.SPARE_CONNECTIONS}"], events[:8]
    gets = [i for i, e in enumerate(events) if e.startswith("GET ")]
    assert events.count("waiting") == 1 and events.index("waiting") < gets[1], events
    assert events.count(f"spares {collect.SPARE_CONNECTIONS}") == 1, events
