"""Kubeconfig handling as kubectl does it: precedence, KUBECONFIG lists, overrides, exec plugins, never rewritten."""
import hashlib
import os
import stat
import sys

import yaml

from tests.conftest import ROOT
from tests.live import assert_read_only, clean_env, run_json, run_plugin, serving

HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
POD = "chat-6b7c9d8f4-m2kqz"


def _config(server_url, ca, token, name, namespace=None, current=True):
    ctx = {"cluster": name, "user": name}
    if namespace:
        ctx["namespace"] = namespace
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": name, "cluster": {"server": server_url, "certificate-authority": ca}}],
           "contexts": [{"name": name, "context": ctx}], "users": [{"name": name, "user": {"token": token}}]}
    if current:
        doc["current-context"] = name
    return doc


def _write(path, doc):
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _digest(path):
    st = os.stat(path)
    return hashlib.sha256(open(path, "rb").read()).hexdigest(), st.st_mtime_ns


def test_kubeconfig_list_first_file_wins(tmp_path):
    with serving(HEALTHY, tmp_path) as (srv, _):
        good = _write(tmp_path / "a.yaml", _config(srv.url, srv.ca_file, srv.token, "good", "serving"))
        bad = _write(tmp_path / "b.yaml", _config("https://127.0.0.1:9", srv.ca_file, "x", "bad", "other"))
        before = [_digest(good), _digest(bad)]
        env = clean_env(KUBECONFIG=os.pathsep.join([str(tmp_path / "missing.yaml"), good, bad]))
        proc, doc = run_json(POD, env=env)
        assert proc.returncode == 0, proc.stderr
        assert doc["target"]["namespace"] == "serving"      # the first file's context and its namespace
        assert [_digest(good), _digest(bad)] == before      # never rewritten
    assert_read_only(srv)


def test_current_context_from_a_later_file_when_the_first_sets_none(tmp_path):
    with serving(HEALTHY, tmp_path) as (srv, _):
        first = _write(tmp_path / "a.yaml", _config(srv.url, srv.ca_file, srv.token, "good", "serving", current=False))
        second = _write(tmp_path / "b.yaml", {"apiVersion": "v1", "kind": "Config", "current-context": "good"})
        proc, doc = run_json(POD, env=clean_env(KUBECONFIG=os.pathsep.join([first, second])))
        assert proc.returncode == 0, proc.stderr


def test_namespace_flag_beats_the_context(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="default") as (srv, kc):
        proc = run_plugin(POD, "--kubeconfig", kc)
        assert proc.returncode == 2 and 'not found in namespace default' in proc.stderr
        proc, doc = run_json(POD, "--kubeconfig", kc, "-n", "serving")
        assert proc.returncode == 0 and doc["target"]["namespace"] == "serving"


def test_context_cluster_and_user_flags(tmp_path):
    with serving(HEALTHY, tmp_path) as (srv, _):
        doc = _config("https://127.0.0.1:9", srv.ca_file, "wrong", "broken", "serving")
        good = _config(srv.url, srv.ca_file, srv.token, "good", "serving", current=False)
        for key in ("clusters", "contexts", "users"):
            doc[key] += good[key]
        kc = _write(tmp_path / "kc.yaml", doc)
        assert run_plugin(POD, "--kubeconfig", kc).returncode == 3            # current context: unreachable
        assert run_json(POD, "--kubeconfig", kc, "--context", "good")[0].returncode == 0
        # the broken context, repaired by naming the good cluster and user explicitly
        assert run_json(POD, "--kubeconfig", kc, "--cluster", "good", "--user", "good")[0].returncode == 0
        unauthorized = run_plugin(POD, "--kubeconfig", kc, "--context", "good", "--user", "broken")
        assert unauthorized.returncode == 3 and "Unauthorized" in unauthorized.stderr
        missing = run_plugin(POD, "--kubeconfig", kc, "--user", "nobody")
        assert missing.returncode == 2 and 'auth info "nobody" does not exist' in missing.stderr   # kubectl's words


def exec_plugin_kubeconfig(srv, tmp_path) -> str:
    """A kubeconfig whose user is an exec credential plugin (a script printing an ExecCredential with the
    server's token), namespace serving."""
    script = tmp_path / "get-token"
    script.write_text(f"#!{sys.executable}\nimport json\nprint(json.dumps({{'apiVersion': "
                      f"'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential', "
                      f"'status': {{'token': '{srv.token}'}}}}))\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    doc = _config(srv.url, srv.ca_file, "unused", "exec", "serving")
    doc["users"] = [{"name": "exec", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                        "command": str(script), "interactiveMode": "Never"}}}]
    return _write(tmp_path / "kc.yaml", doc)


def test_exec_credential_plugin(tmp_path):
    """Clusters that authenticate through an exec plugin (EKS, GKE, AKS) work as with kubectl."""
    with serving(HEALTHY, tmp_path) as (srv, _):
        proc, out = run_json(POD, "--kubeconfig", exec_plugin_kubeconfig(srv, tmp_path))
        assert proc.returncode == 0, proc.stderr
        assert out["status"] == "healthy"


def test_inline_client_certificate_leaves_no_key_on_disk(tmp_path):
    """client-certificate-data / client-key-data (kind, kubeadm admin.conf) load into TLS from a private temp file
    that is removed at once; certificate-authority-data works like the file form."""
    import base64
    from tests.apiserver import _make_cert
    (tmp_path / "client").mkdir()
    cert, key = _make_cert(tmp_path / "client")   # any valid pair: the server does not ask for one
    b64 = lambda p: base64.b64encode(p.read_bytes()).decode()
    with serving(HEALTHY, tmp_path) as (srv, _):
        doc = _config(srv.url, srv.ca_file, srv.token, "inline", "serving")
        cluster = doc["clusters"][0]["cluster"]
        cluster["certificate-authority-data"] = b64(type(tmp_path)(cluster.pop("certificate-authority")))
        doc["users"][0]["user"].update({"client-certificate-data": b64(cert), "client-key-data": b64(key)})
        kc = _write(tmp_path / "kc.yaml", doc)
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        proc, out = run_json(POD, "--kubeconfig", kc, env=clean_env(TMPDIR=str(scratch)))
    assert proc.returncode == 0, proc.stderr
    assert out["status"] == "healthy"
    assert list(scratch.iterdir()) == []
