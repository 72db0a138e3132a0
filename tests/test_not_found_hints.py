"""Wrong input finds its way, against the suite's API server: a pod name that is not found gets the names it may
have meant (each hint one extra GET, only after the 404, a forbidden one simply no hint); rejected credentials and
a forbidden target say what to do. Exit codes stay the contract's: 2 not found, 3 unauthorized or forbidden."""
import pytest

from kubectl_gpudoctor.collect.suggest import closest, edit_distance
from tests.apiserver import FakeApiServer, load_cases
from tests.live import assert_read_only, run_json, run_plugin
from tests.reportkinds import HEALTHY, OOM, PENDING, QUOTA, STS

POD = "inference-7d9f8b6c5-x2x9q"     # in namespace serving (the OOM case)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    objects, logs = load_cases(OOM, HEALTHY, PENDING, QUOTA, STS)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path_factory.mktemp("kc") / "kubeconfig"), namespace="serving")
        yield srv, kc


def _error(srv, kc, *args, code=2):
    srv.reset_requests()
    proc = run_plugin(*args, "--kubeconfig", kc)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code and len(lines) == 1 and proc.stdout == "", proc.stderr
    assert_read_only(srv)
    return lines[0], srv.requests


def _hint_reads(requests):
    """The requests after the target's own GET (the failure path's)."""
    return requests[1:]


def test_a_typo_gets_the_close_name(cluster):
    srv, kc = cluster
    line, requests = _error(srv, kc, "inferense-7d9f8b6c5-x2x9q")
    assert line == ('error: pods "inferense-7d9f8b6c5-x2x9q" not found in namespace serving; '
                    f"did you mean {POD}")
    reads = _hint_reads(requests)
    assert requests[0].path == "/api/v1/namespaces/serving/pods/inferense-7d9f8b6c5-x2x9q"
    assert len({(r.path, tuple(sorted(r.query.items()))) for r in reads}) == len(reads) <= 6   # one GET per hint
    assert all("as=PartialObjectMetadata" in r.accept for r in reads)                    # names only, never specs
    listed = [r for r in reads if r.path == "/api/v1/namespaces/serving/pods"]
    assert len(listed) == 1 and listed[0].query.get("limit") == "500"


def test_a_generated_name_s_prefix_and_a_re_created_pod_find_the_pod(cluster):
    srv, kc = cluster
    assert _error(srv, kc, "inference")[0].endswith(f"; did you mean {POD}")
    assert _error(srv, kc, "inference-7d9f8b6c5-abcde")[0].endswith(f"; did you mean {POD}")   # a new suffix


def test_the_namespace_that_holds_the_name(cluster):
    srv, kc = cluster
    line, _ = _error(srv, kc, "llm-finetune-0")
    assert line.endswith("; a pod of that name is in namespace ml: use -n ml or -A")
    searched = [r for r in srv.requests if r.path == "/api/v1/pods"]
    assert [r.query.get("fieldSelector") for r in searched] == ["metadata.name=llm-finetune-0"]


def test_a_node_name_given_as_a_pod(cluster):
    srv, kc = cluster
    line, _ = _error(srv, kc, "ip-10-1-0-11.ec2.internal")
    assert line.endswith("; that is a node: kubectl gpudoctor node ip-10-1-0-11.ec2.internal")
    line, _ = _error(srv, kc, "ip-10-1-0-11.ec2.internal", "-A")    # -A: no namespace to compare in, still a node
    assert line == ('error: pods "ip-10-1-0-11.ec2.internal" not found in any namespace; '
                    "that is a node: kubectl gpudoctor node ip-10-1-0-11.ec2.internal")


def test_a_deployment_name_given_as_a_pod(cluster):
    srv, kc = cluster
    line, _ = _error(srv, kc, "chat")
    assert "; that is a Deployment: kubectl gpudoctor deploy/chat; did you mean chat-" in line
    assert run_plugin("deploy/chat", "--kubeconfig", kc).returncode == 1     # the hint's command works


def test_a_workload_typo_its_namespace_or_a_pod_of_that_name(cluster):
    srv, kc = cluster
    line, requests = _error(srv, kc, "deploy/chta")
    assert line == 'error: deployments.apps "chta" not found in namespace serving; did you mean deploy/chat'
    assert len(_hint_reads(requests)) == 3 and all("as=PartialObjectMetadata" in r.accept for r in requests[1:])
    assert _error(srv, kc, "sts/train")[0].endswith(
        "; a StatefulSet of that name is in namespace research: use -n research")
    assert _error(srv, kc, f"deploy/{POD}")[0].endswith(f"; that is a pod: kubectl gpudoctor {POD}")
    assert _error(srv, kc, "deploy/nope")[0] == 'error: deployments.apps "nope" not found in namespace serving'


def test_nothing_close_no_hint(cluster):
    srv, kc = cluster
    assert _error(srv, kc, "zzz")[0] == 'error: pods "zzz" not found in namespace serving'


def test_a_forbidden_hint_read_is_no_hint_and_no_failure(tmp_path):
    objects, logs = load_cases(OOM, PENDING)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        srv.forbid("pods", verb="list")
        srv.forbid("nodes")
        line, _ = _error(srv, kc, "ip-10-1-0-11.ec2.internal")
        assert line == 'error: pods "ip-10-1-0-11.ec2.internal" not found in namespace serving'
        line, _ = _error(srv, kc, "inferense-7d9f8b6c5-x2x9q")
        assert line == 'error: pods "inferense-7d9f8b6c5-x2x9q" not found in namespace serving'


def test_a_found_pod_reads_no_hint(cluster):
    srv, kc = cluster
    srv.reset_requests()
    proc, doc = run_json(POD, "--kubeconfig", kc)
    assert proc.returncode == 1 and doc["rootCause"] == "oom-killed"
    paths = {r.path for r in srv.requests}
    assert f"/api/v1/nodes/{POD}" not in paths and f"/apis/apps/v1/namespaces/serving/deployments/{POD}" not in paths


def test_rejected_credentials_say_how_to_refresh_them(cluster):
    srv, kc = cluster
    proc = run_plugin(POD, "--kubeconfig", kc, "--token", "expired")
    assert proc.returncode == 3
    assert proc.stderr == (f"error: credentials rejected by {srv.url} (Unauthorized): refresh them (your cloud "
                           "CLI's get-credentials / re-login) or pick another --context\n")


def test_a_forbidden_target_names_the_rbac_it_needs(tmp_path):
    objects, logs = load_cases(OOM)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        srv.forbid("pods", name=POD)
        line, _ = _error(srv, kc, POD, code=3)
        assert line.startswith(f'error: cannot read pods "{POD}" in namespace serving: forbidden: needs RBAC verb '
                               "get on pods in namespace serving (server said: ")
        srv.forbid("deployments")
        line, _ = _error(srv, kc, "deploy/chat", code=3)
        assert "needs RBAC verb get on deployments.apps in namespace serving" in line


def test_a_node_typo_a_short_hostname_or_a_pod_name_given_as_a_node(cluster):
    """`node NAME` not found: the close node names (one names-only list of the nodes), or the pod of that name."""
    srv, kc = cluster
    line, requests = _error(srv, kc, "node", "ip-10-1-0-11")          # the short hostname of an EC2 node
    assert line == ('error: nodes "ip-10-1-0-11" not found; did you mean node ip-10-1-0-11.ec2.internal')
    hint_lists = [r for r in requests if r.path == "/api/v1/nodes"]
    assert len(hint_lists) == 1 and hint_lists[0].query == {"limit": "5000"}
    assert all("as=PartialObjectMetadata" in r.accept for r in hint_lists)
    line, _ = _error(srv, kc, "node", "ip-10-1-0-12.ec2.internall")   # a typo among names sharing one stem
    assert "; did you mean node ip-10-1-0-12.ec2.internal, " in line, line      # the closest first
    line, _ = _error(srv, kc, "node", "gpu-node-1")
    assert line.endswith("; did you mean node gpu-node-01"), line
    line, _ = _error(srv, kc, "node", POD)
    assert line == f'error: nodes "{POD}" not found; that is a pod: kubectl gpudoctor {POD} -n serving'
    assert run_plugin(POD, "-n", "serving", "--kubeconfig", kc).returncode == 1     # the hint's command works
    assert _error(srv, kc, "node", "zzz")[0] == 'error: nodes "zzz" not found'


def test_a_forbidden_node_list_is_no_node_hint(tmp_path):
    objects, logs = load_cases(PENDING)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        srv.forbid("nodes", verb="list")
        assert _error(srv, kc, "node", "ip-10-1-0-11")[0] == 'error: nodes "ip-10-1-0-11" not found'


def test_closest_names():
    names = [POD, "llm-finetune-0", "chat-7f9c6d5b8-2wq4n", "notebook-ana-0", "eval-sweep-7-xk2lp"]
    assert closest("llm-finetun-0", names) == ["llm-finetune-0"]
    assert closest("notebok-ana-0", names) == ["notebook-ana-0"]
    assert closest("chat", names) == ["chat-7f9c6d5b8-2wq4n"]
    assert closest("llama", names) == []
    assert edit_distance("kitten", "sitting", 5) == 3 and edit_distance("a", "abcdef", 2) == 3


def test_a_refused_scan_or_search_says_what_it_needs(tmp_path):
    objects, logs = load_cases(HEALTHY)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        srv.forbid("pods", verb="list")
        line, _ = _error(srv, kc, "scan", code=3)
        assert line.startswith("error: cannot list pods in namespace serving: forbidden: needs RBAC verb list on pods "
                               "in namespace serving (server said: ")
        line, _ = _error(srv, kc, "scan", "-A", code=3)
        assert "cannot list pods in all namespaces: forbidden: needs RBAC verb list on pods (cluster-wide)" in line
        line, _ = _error(srv, kc, "anything", "-A", code=3)
        assert "cannot search pods in all namespaces: forbidden: needs RBAC verb list on pods (cluster-wide)" in line
        proc = run_plugin("scan", "--kubeconfig", kc, "--token", "expired")
        assert proc.returncode == 3 and proc.stderr.startswith(f"error: credentials rejected by {srv.url} ")
