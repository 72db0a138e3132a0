"""A live API server answering realistic but hostile content: whole Secrets despite the metadata-only Accept,
malformed side objects, a custom resource nested 2,000 deep, NaN, a target answered `{}`, names shaped like keys.
A report always comes (or one line), every dropped object is a gap, and nothing of a Secret's data leaks."""
import base64
import json
import os
import tarfile

import yaml

from tests.apiserver import FakeApiServer, load_case
from tests.conftest import ROOT
from tests.live import clean_env, run_plugin

HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
POD = "chat-6b7c9d8f4-m2kqz"
OOM = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
OOM_POD = "inference-7d9f8b6c5-x2x9q"
DRA = os.path.join(ROOT, "tests", "cases", "dra-claim-unallocated", "fail-all-devices-allocated")
NODE_CASE = os.path.join(ROOT, "tests", "cases", "device-plugin-not-running", "fail-nvml-library-not-found")
GUARD = 120   # a hang guard for the subprocess, not a timing assertion

SECRET_PLAIN = "s3cr3t-Pl41n-V4lue-f0r-data"
SECRET_STRING = "str1ngD4ta-L1teral-V4lue"
SECRET_APPLIED = "l4st-Appl13d-V4lue"


def _whole_secrets(objects):
    for obj in objects:
        if obj["kind"] == "Secret":
            obj["data"] = {"token": base64.b64encode(SECRET_PLAIN.encode()).decode()}
            obj["stringData"] = {"token2": SECRET_STRING}
            obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(
                {"apiVersion": "v1", "kind": "Secret", "stringData": {"token": SECRET_APPLIED}})}
    assert any(o["kind"] == "Secret" for o in objects)
    return objects


def _leaks(text: str):
    values = (SECRET_PLAIN, SECRET_STRING, SECRET_APPLIED, base64.b64encode(SECRET_PLAIN.encode()).decode())
    return [v for v in values if v in text]


def test_a_server_ignoring_the_metadata_accept_leaks_nothing_of_a_secret(tmp_path):
    objects, logs = load_case(HEALTHY)
    with FakeApiServer(_whole_secrets(objects), logs) as srv:
        srv.ignore_metadata_accept = True
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        outputs = []
        for args in (["-v"], ["-o", "json", "-v"], ["-o", "yaml"], ["scan", "-n", "serving", "-v"]):
            proc = run_plugin(POD, *args, "--kubeconfig", kc) if args[0] != "scan" else run_plugin(
                *args, "--kubeconfig", kc)
            assert proc.returncode in (0, 1), proc.stderr
            outputs.append(proc.stdout + proc.stderr)
        debug = run_plugin(POD, "-v", "--kubeconfig", kc, env=clean_env(GPUDOCTOR_DEBUG="1"))
        outputs.append(debug.stdout + debug.stderr)
        proc = run_plugin("bundle", POD, "-f", str(tmp_path / "b.tgz"), "--kubeconfig", kc)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout + proc.stderr)
        served = [r for r in srv.requests if "/secrets" in r.path]
    assert served, "the case reads a Secret: the test must exercise the fallback"
    with tarfile.open(tmp_path / "b.tgz") as tar:
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()).decode()
    assert "hf-token" in blob   # the Secret is there by name
    assert "stringData" not in blob and "\ndata:" not in blob
    for text in outputs + [blob]:
        assert not _leaks(text), _leaks(text)


WORKLOAD_KINDS = [("v1", "Pod"), ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"),
                  ("batch/v1", "Job"), ("batch/v1", "CronJob"), ("apps/v1", "ReplicaSet")]


def test_last_applied_configuration_is_blanked_on_every_workload_kind(tmp_path):
    """kubectl apply keeps the applied manifest, literal env values included, in an annotation: a bundle must not."""
    import shutil
    case = tmp_path / "case"
    shutil.copytree(HEALTHY, case)
    docs = [d for d in yaml.safe_load_all((case / "objects.yaml").read_text()) if d]
    literals = {}
    for api_version, kind in WORKLOAD_KINDS:
        literal = f"l1teral-{kind.lower()}-Passw0rd"
        literals[kind] = literal
        applied = json.dumps({"apiVersion": api_version, "kind": kind, "spec": {"template": {"spec": {
            "containers": [{"name": "c", "env": [{"name": "DB_PASSWORD", "value": literal}]}]}}}})
        if kind == "Pod":
            pod = next(d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"] == POD)
            pod["metadata"].setdefault("annotations", {})[
                "kubectl.kubernetes.io/last-applied-configuration"] = applied
            continue
        docs.append({"apiVersion": api_version, "kind": kind, "metadata": {
            "name": f"w-{kind.lower()}", "namespace": "serving", "uid": f"uid-{kind.lower()}",
            "creationTimestamp": "2026-12-01T09:00:00Z",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied}}, "spec": {}})
    (case / "objects.yaml").write_text(yaml.safe_dump_all(docs))
    out = tmp_path / "out"
    proc = run_plugin("bundle", POD, "--from", str(case), "-f", str(out))
    assert proc.returncode == 0, proc.stderr
    written = list(yaml.safe_load_all((out / "objects.yaml").read_text()))
    kinds = {d["kind"] for d in written if d}
    assert {k for _, k in WORKLOAD_KINDS} <= kinds, kinds
    text = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    for kind, literal in literals.items():
        assert literal not in text, kind


def _oom_server(tmp_path, mutate=None):
    objects, logs = load_case(OOM)
    if mutate:
        mutate(objects)
    srv = FakeApiServer(objects, logs).start()
    return srv, srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")


def _json_run(*args):
    proc = run_plugin(*args, "-o", "json", timeout=GUARD)
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-400:])
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def test_malformed_side_objects_live_are_skipped_with_gaps_and_the_verdict_stands(tmp_path):
    def mutate(objects):
        event = next(o for o in objects if o["kind"] == "Event")
        bad = json.loads(json.dumps(event))
        bad["metadata"]["name"] = event["metadata"]["name"] + "-bad"
        bad["lastTimestamp"] = "0001-01-01T00:00:00Z"   # Go's zero time: date arithmetic on it overflows
        objects.append(bad)
    srv, kc = _oom_server(tmp_path, mutate)
    try:
        doc = _json_run(OOM_POD, "--kubeconfig", kc)
    finally:
        srv.stop()
    assert doc["rootCause"] == "oom-killed"
    gap = next(g for g in doc["gaps"] if g["reason"] == "malformed")
    assert gap == {"source": "events", "reason": "malformed",
                   "detail": "1 object skipped: lastTimestamp is the string '0001-01-01T00:00:00Z', "
                             "not a time such as 2026-12-02T08:30:00Z"}, gap


def test_a_target_with_nan_and_absurd_numbers_live_gets_a_verdict_and_a_gap(tmp_path):
    """NaN and 1e+100 in the target pod (a JSON server may write them): no hang on back-off arithmetic."""
    objects, logs = load_case(OOM)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        pod = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == OOM_POD)
        body = json.loads(json.dumps(pod))
        body["status"]["containerStatuses"][0]["restartCount"] = 1e100
        body["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = float("nan")
        srv.raw_bodies[f"/api/v1/namespaces/serving/pods/{OOM_POD}"] = json.dumps(body).encode()
        doc = _json_run(OOM_POD, "--kubeconfig", kc)
    gap = next(g for g in doc["gaps"] if g["reason"] == "malformed")
    assert gap["source"] == "pods" and "restartCount is the number 1e+100" in gap["detail"], gap
    assert "resources.limits.nvidia.com/gpu is NaN" in gap["detail"], gap
    assert doc["target"]["name"] == OOM_POD


def test_a_target_found_by_all_namespaces_passes_the_same_shape_checks(tmp_path):
    """-A finds the pod in a list: the same absurd number costs the same field and gap, never a traceback."""
    objects, logs = load_case(OOM)
    pod = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == OOM_POD)
    pod["status"]["containerStatuses"][0]["restartCount"] = 1e100
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="default")
        doc = _json_run(OOM_POD, "-A", "--kubeconfig", kc)
        assert any(r.path == "/api/v1/pods" and "metadata.name=" in r.query.get("fieldSelector", "")
                   for r in srv.requests)
    gap = next(g for g in doc["gaps"] if g["reason"] == "malformed")
    assert gap["source"] == "pods" and "restartCount is the number 1e+100" in gap["detail"], gap
    assert doc["target"] == {**doc["target"], "name": OOM_POD, "namespace": "serving"}
    assert doc["rootCause"] == "oom-killed", doc["summary"]


def test_a_pod_found_by_all_namespaces_without_a_namespace_is_one_line(tmp_path):
    """A list answer whose pod carries no namespace cannot be diagnosed (every further read is namespaced)."""
    objects, logs = load_case(OOM)
    pod = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == OOM_POD)
    body = json.loads(json.dumps(pod))
    del body["metadata"]["namespace"]
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="default")
        srv.raw_bodies["/api/v1/pods"] = json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {},
                                                     "items": [body]}).encode()
        proc = run_plugin(OOM_POD, "-A", "--kubeconfig", kc, timeout=GUARD)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert proc.stderr.strip().splitlines() == [
        f'error: cannot search pods in all namespaces: the API server answered pod "{OOM_POD}" without a namespace']


def test_a_target_answered_with_an_empty_object_is_one_line(tmp_path):
    srv, kc = _oom_server(tmp_path)
    try:
        srv.raw_bodies[f"/api/v1/namespaces/serving/pods/{OOM_POD}"] = b"{}"
        proc = run_plugin(OOM_POD, "--kubeconfig", kc, timeout=GUARD)
    finally:
        srv.stop()
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and "internal" not in proc.stderr
    assert "metadata is missing" in proc.stderr or "metadata" in proc.stderr


def test_a_custom_resource_nested_2000_deep_costs_its_list_not_the_node_verdict(tmp_path):
    objects, logs = load_case(NODE_CASE)
    node = next(o for o in objects if o["kind"] == "Node")["metadata"]["name"]
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"))
        baseline = _json_run("node", node, "--kubeconfig", kc)
        paths = {r.path for r in srv.requests if r.path.endswith("/clusterpolicies")}
        assert paths, "a node diagnosis reads ClusterPolicies"
        deep = '{"a":' * 2000 + "1" + "}" * 2000
        for path in paths:
            srv.raw_bodies[path] = ('{"kind":"ClusterPolicyList","apiVersion":"nvidia.com/v1","metadata":{},'
                                    '"items":[{"metadata":{"name":"cluster-policy"},"spec":' + deep + "}]}").encode()
        doc = _json_run("node", node, "--kubeconfig", kc)
    assert doc["rootCause"] == baseline["rootCause"]
    assert any(g["source"] == "clusterpolicies" for g in doc["gaps"]), doc["gaps"]


def test_a_dra_pod_bundled_live_reads_back_to_the_same_verdict(tmp_path):
    """The discovery answer for resource.k8s.io is written into the bundle and read back (it has no metadata)."""
    objects, logs = load_case(DRA)
    pod = next(o for o in objects if o["kind"] == "Pod" and (o["spec"].get("resourceClaims")))
    name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
    out = tmp_path / "b.tgz"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace=ns)
        proc = run_plugin("bundle", name, "-f", str(out), "--kubeconfig", kc, timeout=GUARD)
        assert proc.returncode == 0, proc.stderr
    with tarfile.open(out) as tar:
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()).decode()
    assert "kind: APIGroup" in blob
    offline = _json_run("--from", str(out))
    assert offline["target"]["name"] == name and offline["rootCause"] == "dra-claim-unallocated", offline["summary"]


def test_names_shaped_like_keys_print_as_they_are_and_bundles_read_back(tmp_path):
    """A scikit-learn service `sk-proj-…` in a namespace `sk-ant-api03-…`: names are never masked."""
    objects, logs = load_case(OOM)
    name, ns = "sk-proj-llama-inference-7d9f8b6c5-x2x9q", "sk-ant-api03-telecom-ml-serving"
    for obj in objects:
        meta = obj["metadata"]
        if meta.get("namespace") == "serving":
            meta["namespace"] = ns
        if meta.get("name") == OOM_POD:
            meta["name"] = name
        if obj["kind"] == "Event" and obj["involvedObject"].get("name") == OOM_POD:
            obj["involvedObject"].update(name=name, namespace=ns)
    logs = {(ns, name if p == OOM_POD else p, c, prev): t for (_, p, c, prev), t in logs.items()}
    out = tmp_path / "b.tgz"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace=ns)
        text = run_plugin(name, "--kubeconfig", kc, timeout=GUARD)
        doc = _json_run(name, "--kubeconfig", kc)
        assert run_plugin("bundle", name, "-f", str(out), "--kubeconfig", kc, timeout=GUARD).returncode == 0
    assert text.returncode == 1 and "<redacted" not in text.stdout, text.stdout
    assert f"Pod {ns}/{name}" in text.stdout.splitlines()[0]
    assert doc["target"]["name"] == name and doc["target"]["namespace"] == ns
    assert any(name in c for c in doc["nextCommands"])
    replay = _json_run("--from", str(out))
    assert replay["target"] == doc["target"] and replay["rootCause"] == doc["rootCause"] == "oom-killed"


def _whole_secret():
    return _whole_secrets([{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                            "metadata": {"name": "hf-token", "namespace": "serving", "uid": "u1"}}])[0]


def test_each_secret_layer_alone_keeps_the_data_out():
    """Two layers, each tested alone: what a server returns whole is stripped when stored (collect/api.py), and
    a whole Secret in evidence (from any path) is stripped when a bundle is written (offline/bundle.py)."""
    from kubectl_gpudoctor.collect.api import Request, Response, store
    from kubectl_gpudoctor.evidence import Evidence, Target
    from kubectl_gpudoctor.offline import bundle
    ev = Evidence(target=Target("Pod", POD, "serving"))
    store(ev, Request("secrets", "get", "/api/v1/namespaces/serving/secrets/hf-token", kind="Secret"),
          Response(200, _whole_secret(), "ok"))
    held = ev.all("Secret")
    assert len(held) == 1 and not _leaks(json.dumps(held)), held
    assert "data" not in held[0] and "stringData" not in held[0]
    raw = Evidence(target=Target("Pod", POD, "serving"), objects={"Secret": [_whole_secret()]})
    files = bundle.files(raw)
    assert "hf-token" in files["objects.yaml"] and not _leaks("".join(files.values())), files["objects.yaml"]
