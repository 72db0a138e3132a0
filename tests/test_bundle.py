"""bundle: collects a pod's evidence to share, never a secret value, and reads back to the same verdict."""
import base64
import json
import os
import tarfile

from tests.apiserver import FakeApiServer, load_case
from tests.conftest import ROOT
from tests.live import assert_read_only, run_json, run_plugin

HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
SECRET_VALUE = "hf_s3cr3tT0kenValue"


def _with_secret_data():
    objects, logs = load_case(HEALTHY)
    for obj in objects:
        if obj["kind"] == "Secret":
            obj["data"] = {"token": base64.b64encode(SECRET_VALUE.encode()).decode()}
            obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(
                {"apiVersion": "v1", "kind": "Secret", "stringData": {"token": SECRET_VALUE}})}
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("chat-"):
            obj["spec"]["containers"][0]["env"].append({"name": "WANDB_API_KEY", "value": "wandb-literal-key"})
    return objects, logs


def test_bundle_never_contains_secret_values(tmp_path):
    objects, logs = _with_secret_data()
    out = tmp_path / "b.tgz"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc = run_plugin("bundle", "chat-6b7c9d8f4-m2kqz", "-f", str(out), "--kubeconfig", kc)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "wrote" in proc.stderr
    assert_read_only(srv)
    secret_reads = [r for r in srv.requests if "/secrets/" in r.path]
    assert secret_reads and all("PartialObjectMetadata" in r.accept for r in secret_reads)
    with tarfile.open(out) as tar:
        names = tar.getnames()
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert any(n.endswith("/bundle.yaml") for n in names) and any(n.endswith("/objects.yaml") for n in names)
    assert SECRET_VALUE.encode() not in blob
    assert base64.b64encode(SECRET_VALUE.encode()) not in blob
    assert b"wandb-literal-key" not in blob            # a literal env value with a secret-looking name
    assert b"hf-token" in blob                         # the Secret is there by name: a reference can be checked


def test_bundle_reads_back_to_the_live_verdict(tmp_path):
    objects, logs = load_case(HEALTHY)
    out = tmp_path / "dir-bundle"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        live = run_json("chat-6b7c9d8f4-m2kqz", "--kubeconfig", kc)[1]
        assert run_plugin("bundle", "chat-6b7c9d8f4-m2kqz", "-f", str(out), "--kubeconfig", kc).returncode == 0
    offline = run_json("--from", str(out))[1]
    for key in ("status", "rootCause", "phase", "summary", "target"):
        assert offline[key] == live[key], key
    import yaml
    meta = yaml.safe_load((out / "bundle.yaml").read_text())
    assert offline["collectedAt"] == meta["collectedAt"]      # the bundle's clock, not the reader's
