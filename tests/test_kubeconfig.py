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


# ---------------------------------------------------------------------------------------------------------------
# client-go's reading of a kubeconfig, each case checked against the real kubectl (skipped where it is missing):
# the plugin refuses what kubectl refuses, in kubectl's words, and reads what kubectl reads as kubectl reads it.

import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import textwrap  # noqa: E402

import pytest  # noqa: E402

from kubectl_gpudoctor.collect import kubeconfig  # noqa: E402
from kubectl_gpudoctor.collect.kubeconfig import ConnOptions, CredentialError, KubeconfigError  # noqa: E402


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kubeconfig_text(server: str, cluster: str = "", user: str = "    token: kubeconfig-token",
                    context: str = "", current: str = "ml-prod") -> str:
    """A kubeconfig as `kubectl config set-cluster/set-credentials/set-context` writes it, with extra lines
    (already indented) in the cluster, user and context stanzas."""
    return textwrap.dedent("""\
        apiVersion: v1
        clusters:
        - cluster:
            server: {server}
        {cluster}  name: ml-prod
        contexts:
        - context:
            cluster: ml-prod
            namespace: serving
            user: ml-admin
        {context}  name: ml-prod
        current-context: {current}
        kind: Config
        preferences: {{}}
        users:
        - name: ml-admin
          user:
        {user}
        """).format(server=server, cluster=cluster + "\n" if cluster else "", user=user,
                    context=context + "\n" if context else "", current=current)


@pytest.fixture
def kc(tmp_path):
    """write(cluster=…, user=…) -> path of a kubeconfig whose server is a closed port on loopback."""
    server = f"https://127.0.0.1:{_closed_port()}"

    def write(name="config", replace=("", ""), **parts):
        path = tmp_path / name
        path.write_text(kubeconfig_text(server, **parts).replace(*replace))
        return str(path)
    write.server = server
    return write


class _NoKubectl(str):
    """What a test is told when kubectl is not installed: its kubectl half passes, the plugin's half still runs."""

    def __contains__(self, _words) -> bool:
        return True


def kubectl(tmp_path, *args) -> str:
    """The real kubectl's stderr for `kubectl get pod x ARGS` (its cache under tmp_path, no terminal)."""
    found = shutil.which("kubectl")
    if not found:
        return _NoKubectl()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    proc = subprocess.run([found, "get", "pod", "x", "--request-timeout", "2s", *args], capture_output=True,
                          text=True, env=env, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode != 0
    return proc.stderr


def kubectl_accepts(tmp_path, *args) -> bool:
    """kubectl went on to connect (the server is a closed port): it accepted the kubeconfig and flags."""
    return "connection refused" in kubectl(tmp_path, *args)


def plugin_refusal(path, **flags) -> str:
    with pytest.raises(KubeconfigError) as exc:
        kubeconfig.connect(ConnOptions(kubeconfig=path, **flags))
    return str(exc.value)


def plugin_creds(path, **flags):
    return kubeconfig.connect(ConnOptions(kubeconfig=path, **flags)).client.creds


CA = "/etc/hostname"   # any readable file: the checks below never get to TLS
REFUSED = {
    # booleans are YAML booleans (a quoted "false" used to turn verification off)
    "insecure as a string": (dict(cluster='    insecure-skip-tls-verify: "false"'),
                             "cannot unmarshal string into Go struct field Cluster.clusters.cluster."
                             "insecure-skip-tls-verify of type bool"),
    "insecure as a number": (dict(cluster="    insecure-skip-tls-verify: 1"),
                             "cannot unmarshal number into Go struct field Cluster.clusters.cluster."
                             "insecure-skip-tls-verify of type bool"),
    "numeric token": (dict(user="    token: 8675309"),
                      "cannot unmarshal number into Go struct field AuthInfo.users.user.token of type string"),
    "hex token": (dict(user="    token: 0x1F"), "cannot unmarshal number into Go struct field AuthInfo.users.user.token"),
    "token yes": (dict(user="    token: yes"), "cannot unmarshal bool into Go struct field AuthInfo.users.user.token"),
    "current-context y": (dict(current="y"), "cannot unmarshal bool into Go struct field Config.current-context"),
    "as-groups a string": (dict(user="    as: jane\n    as-groups: ml-team"),
                           "cannot unmarshal string into Go struct field AuthInfo.users.user.as-groups of type []string"),
    "user a list": (dict(user="    - token"), "cannot unmarshal array into Go struct field NamedAuthInfo.users.user"),
    "CA data not base64": (dict(cluster='    certificate-authority-data: "not base64!"'),
                           "illegal base64 data at input byte 3"),
    "wrong kind": (dict(replace=("kind: Config", "kind: Pod")), 'no kind "Pod" is registered for version "v1"'),
    "another apiVersion": (dict(replace=("apiVersion: v1", "apiVersion: v2")),
                           'no kind "Config" is registered for version "v2"'),
    "insecure with a CA": (dict(cluster=f"    certificate-authority: {CA}\n    insecure-skip-tls-verify: true"),
                           "specifying a root certificates file with the insecure flag is not allowed"),
    "CA file and data": (dict(cluster=f"    certificate-authority: {CA}\n    certificate-authority-data: aGVsbG8="),
                         "certificate-authority-data and certificate-authority are both specified for ml-prod"),
    "CA file missing": (dict(cluster="    certificate-authority: /nonexistent/ca.crt"),
                        "unable to read certificate-authority /nonexistent/ca.crt for ml-prod due to open "
                        "/nonexistent/ca.crt: no such file or directory"),
    "token and basic auth": (dict(user="    password: hunter2\n    token: abc\n    username: admin"),
                             "more than one authentication method found for ml-admin; found [token basicAuth]"),
    "cert without key": (dict(user=f"    client-certificate: {CA}"),
                         "client-key-data or client-key must be specified for ml-admin"),
    "client cert file and data": (dict(user=f"    client-certificate: {CA}\n    client-certificate-data: aGVsbG8=\n"
                                             f"    client-key: {CA}"),
                                  "client-cert-data and client-cert are both specified for ml-admin"),
    "client key file and data": (dict(user=f"    client-certificate: {CA}\n    client-key: {CA}\n"
                                            "    client-key-data: aGVsbG8="),
                                 "client-key-data and client-key are both specified for ml-admin"),
    "exec env without a name": (
        dict(user="    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"
                  "      env:\n      - value: x\n      interactiveMode: Never"),
        "env variable name must be specified for ml-admin to use exec authentication plugin"),
    "exec and auth-provider": (
        dict(user="    auth-provider:\n      name: oidc\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                  "      command: aws\n      interactiveMode: Never"),
        "authProvider cannot be provided in combination with an exec plugin for ml-admin"),
    "unknown auth provider": (dict(user="    auth-provider:\n      name: keystone"),
                              'no Auth Provider found for name "keystone"'),
    "exec v1 without interactiveMode": (
        dict(user="    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws"),
        "interactiveMode must be specified for ml-admin to use exec authentication plugin"),
    "exec bad interactiveMode": (
        dict(user="    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"
                  "      interactiveMode: Sometimes"),
        'invalid interactiveMode for ml-admin: "Sometimes"'),
    "exec without command": (
        dict(user="    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1"),
        "command must be specified for ml-admin to use exec authentication plugin"),
    "exec apiVersion v2": (
        dict(user="    exec:\n      apiVersion: client.authentication.k8s.io/v2\n      command: aws\n"
                  "      interactiveMode: Never"),
        'exec plugin: invalid apiVersion "client.authentication.k8s.io/v2"'),
    "gcp auth provider": (dict(user="    auth-provider:\n      name: gcp"), "The gcp auth plugin has been removed."),
    "azure auth provider": (dict(user="    auth-provider:\n      name: azure"), "The azure auth plugin has been removed."),
    "groups without as": (dict(user="    as-groups:\n    - ml-team\n    token: abc"),
                          "requesting uid, groups or user-extra for ml-admin without impersonating a user"),
    "proxy-url ftp": (dict(cluster="    proxy-url: ftp://proxy.corp:21"),
                      'invalid \'proxy-url\' "ftp://proxy.corp:21" for cluster "ml-prod": unsupported scheme "ftp"'),
    "proxy-url without a scheme": (dict(cluster="    proxy-url: proxy.corp:3128"),
                                   'unsupported scheme "proxy.corp", must be http, https, or socks5'),
    "a token with a line break": (dict(user='    token: "abc\\r\\nX-Evil: 1"'),
                                  'net/http: invalid header field value for "Authorization"'),
    "an impersonated user with a line break": (dict(user='    as: "jane\\nroot"\n    token: abc'),
                                               'net/http: invalid header field value for "Impersonate-User"'),
    "tokenFile missing": (dict(user="    tokenFile: /nonexistent/token"),
                          "open /nonexistent/token: no such file or directory"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_kubectl_refuses_is_refused_in_its_words(case, kc, tmp_path):
    parts, words = REFUSED[case]
    path = kc(**parts)
    assert words in kubectl(tmp_path, "--kubeconfig", path)
    assert words in plugin_refusal(path)


FLAG_REFUSED = {
    "--token over basic auth": (dict(user="    password: hunter2\n    username: admin"), ["--token", "t"],
                                dict(token="t"), "more than one authentication method found for ml-admin"),
    "--username over a token": ({}, ["--username", "u"], dict(username="u"),
                                "more than one authentication method found for ml-admin"),
    "--as-group alone": ({}, ["--as-group", "g"], dict(as_groups=("g",)), "without impersonating a user"),
    "--as-uid alone": ({}, ["--as-uid", "1"], dict(as_uid="1"), "without impersonating a user"),
    "--insecure and --certificate-authority": (
        {}, ["--insecure-skip-tls-verify", "--certificate-authority", CA], dict(insecure=True, ca_file=CA),
        "specifying a root certificates file with the insecure flag is not allowed"),
    "--client-certificate without a key": ({}, ["--client-certificate", CA], dict(client_certificate=CA),
                                           "client-key-data or client-key must be specified for ml-admin"),
    "--context missing": ({}, ["--context", "nope"], dict(context="nope"),
                          "context was not found for specified context: nope"),
    "--user missing": ({}, ["--user", "nope"], dict(user="nope"), 'auth info "nope" does not exist'),
    "--cluster missing": ({}, ["--cluster", "nope"], dict(cluster="nope"), 'no server found for cluster "nope"'),
}


@pytest.mark.parametrize("case", sorted(FLAG_REFUSED))
def test_flags_kubectl_refuses_over_a_kubeconfig_are_refused(case, kc, tmp_path):
    parts, argv, flags, words = FLAG_REFUSED[case]
    path = kc(**parts)
    assert words in kubectl(tmp_path, "--kubeconfig", path, *argv)
    assert words in plugin_refusal(path, **flags)


ACCEPTED = {
    "insecure yes": dict(cluster="    insecure-skip-tls-verify: yes"),
    "insecure y": dict(cluster="    insecure-skip-tls-verify: y"),
    "insecure true": dict(cluster="    insecure-skip-tls-verify: true"),
    "a token that looks like a date": dict(user="    token: 2001-12-14"),
    "a token that looks like a time": dict(user="    token: 1:20"),
    "a quoted numeric token": dict(user='    token: "8675309"'),
    "unknown fields": dict(cluster="    server-name: x", user="    token: abc\n    Token: 5"),
    "exec v1beta1 without interactiveMode": dict(
        user="    token: abc\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws"),
    "a namespace kubectl never checks": dict(context="    namespace: Not_A_Label"),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_what_kubectl_reads_is_read(case, kc, tmp_path):
    path = kc(**ACCEPTED[case])
    assert kubectl_accepts(tmp_path, "--kubeconfig", path)
    plugin_creds(path)


def test_yaml_scalars_mean_what_they_mean_to_client_go(kc):
    assert plugin_creds(kc(cluster="    insecure-skip-tls-verify: y")).insecure is True
    assert plugin_creds(kc(cluster="    insecure-skip-tls-verify: off")).insecure is False
    assert plugin_creds(kc(user="    token: 2001-12-14")).authorization == "Bearer 2001-12-14"
    assert plugin_creds(kc(user="    token: 1:20")).authorization == "Bearer 1:20"
    assert plugin_creds(kc(user="    token: null")).authorization is None


def test_token_file_wins_over_token_and_token_is_the_fallback(kc, tmp_path):
    """client-go reads tokenFile at each request even when token is also set; the token is used only when the file
    cannot be read or is empty. A tokenFile alone must read (kubectl: `open …: no such file`)."""
    (tmp_path / "sa-token").write_text("from-the-file\n")
    (tmp_path / "empty").write_text("")
    both = kc("both", user="    token: inline\n    tokenFile: sa-token")   # relative: to the kubeconfig's directory
    assert plugin_creds(both).authorization == "Bearer from-the-file"
    assert plugin_creds(kc("k-gone", user="    token: inline\n    tokenFile: gone")).authorization == "Bearer inline"
    assert plugin_creds(kc("e1", user="    token: inline\n    tokenFile: empty")).authorization == "Bearer inline"
    assert 'read empty token from file' in plugin_refusal(kc("e2", user="    tokenFile: empty"))
    # --token does not beat a kubeconfig tokenFile either (client-go merges the flag into the same user)
    assert plugin_creds(both, token="flag").authorization == "Bearer from-the-file"


def test_token_file_beats_token_with_kubectl_and_the_plugin(tmp_path):
    """The same, end to end: the file holds the server's token, `token:` a wrong one; both clients read."""
    with serving(HEALTHY, tmp_path) as (srv, _):
        (tmp_path / "sa-token").write_text(srv.token + "\n")
        doc = _config(srv.url, srv.ca_file, "wrong-token", "prod", "serving")
        doc["users"][0]["user"]["tokenFile"] = "sa-token"
        kc = _write(tmp_path / "kc.yaml", doc)
        found = shutil.which("kubectl")
        if found:
            proc = subprocess.run([found, "get", "pod", POD, "-n", "serving", "--kubeconfig", kc, "-o", "name"],
                                  capture_output=True, text=True, env={"PATH": os.environ["PATH"],
                                                                       "HOME": str(tmp_path)}, timeout=60)
            assert proc.returncode == 0 and POD in proc.stdout, proc.stderr
        proc, doc = run_json(POD, "--kubeconfig", kc)
        assert proc.returncode == 0, proc.stderr


def test_kubeconfig_impersonation_and_flags_over_it(kc):
    """`as`, `as-uid`, `as-groups`, `as-user-extra` become client-go's Impersonate-* headers (one line per group
    and per extra value); --as and --as-group replace theirs, the uid and extras stay, as with kubectl."""
    path = kc(user="    as: jane\n    as-groups:\n    - ml-team\n    - oncall\n    as-uid: \"1001\"\n"
                   "    as-user-extra:\n      reason:\n      - debugging oom\n      scopes.example.com/x%*:\n"
                   "      - view\n      - edit\n    token: abc")
    headers = plugin_creds(path).headers
    assert headers == {"Impersonate-User": ["jane"], "Impersonate-Uid": ["1001"],
                       "Impersonate-Group": ["ml-team", "oncall"], "Impersonate-Extra-reason": ["debugging oom"],
                       "Impersonate-Extra-scopes.example.com%2Fx%25*": ["view", "edit"]}
    flagged = plugin_creds(path, as_user="bob", as_groups=("sre",)).headers
    assert flagged["Impersonate-User"] == ["bob"] and flagged["Impersonate-Group"] == ["sre"]
    assert flagged["Impersonate-Uid"] == ["1001"] and flagged["Impersonate-Extra-reason"] == ["debugging oom"]
    assert plugin_creds(path, as_uid="7").headers["Impersonate-Uid"] == ["7"]
    # a kubeconfig `as` lets --as-group stand alone
    assert plugin_creds(path, as_groups=("sre",)).headers["Impersonate-User"] == ["jane"]


def test_kubeconfig_impersonation_reaches_the_server(tmp_path):
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        doc = yaml.safe_load(open(kc))
        doc["users"][0]["user"].update({"as": "jane", "as-groups": ["ml-team", "oncall"]})
        _write(tmp_path / "kubeconfig", doc)
        proc, _ = run_json(POD, "--kubeconfig", kc)
    assert proc.returncode == 0, proc.stderr
    assert srv.requests and all(r.impersonate_user == "jane" for r in srv.requests)
    assert all(r.impersonate_groups == ("ml-team", "oncall") for r in srv.requests)


def _pem_pair(tmp_path):
    from tests.apiserver import _make_cert
    (tmp_path / "pki").mkdir(exist_ok=True)
    return tuple(str(p) for p in _make_cert(tmp_path / "pki"))


def test_connection_flags_over_the_kubeconfig(kc, tmp_path):
    path = kc(cluster="    tls-server-name: api.internal\n    disable-compression: true",
              user="    token: abc")
    creds = plugin_creds(path)
    assert creds.tls_server_name == "api.internal" and creds.disable_compression is True
    assert plugin_creds(path, tls_server_name="other.internal").tls_server_name == "other.internal"
    # client-go: a --server drops the kubeconfig's tls-server-name (unless --tls-server-name is given too)
    assert plugin_creds(path, server="https://10.0.0.1:6443").tls_server_name is None
    assert plugin_creds(kc(), disable_compression=True).disable_compression is True
    crt, key = _pem_pair(tmp_path)
    cert = plugin_creds(kc(user="    {}"), client_certificate=crt, client_key=key)
    assert (cert.cert_file, cert.key_file, cert.authorization) == (crt, key, None)
    assert plugin_creds(kc(user="    {}"), username="admin").authorization == "Basic YWRtaW46"   # kubectl: "admin:"
    assert kubectl_accepts(tmp_path, "--kubeconfig", kc(user="    {}"), "--username", "admin")


def test_relative_paths_are_the_files_own_and_tilde_is_not_expanded(kc, tmp_path):
    crt, _ = _pem_pair(tmp_path)
    relative = os.path.relpath(crt, tmp_path)
    assert plugin_creds(kc(cluster=f"    certificate-authority: {relative}")).ca_file == crt
    tilde = kc(cluster="    certificate-authority: ~/ca.crt")
    words = f"unable to read certificate-authority {tmp_path}/~/ca.crt"
    assert words in kubectl(tmp_path, "--kubeconfig", tilde)
    assert words in plugin_refusal(tilde)


def test_kubeconfig_list_merge(kc, tmp_path, monkeypatch):
    """KUBECONFIG: the first file naming an entry wins it whole (even fields only the later one sets); a file that
    does not decode refuses the whole list, as kubectl; missing files are skipped."""
    first = kc("a", user="    token: first")
    second = tmp_path / "b"
    second.write_text(kubeconfig_text("https://127.0.0.1:9", user="    as: jane\n    token: second"))
    broken = tmp_path / "c"
    broken.write_text("apiVersion: v1\nclusters: [\n")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "missing"), first, str(second)]))
    creds = plugin_creds(None)
    assert creds.server == kc.server and creds.authorization == "Bearer first" and creds.headers == {}
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, str(broken)]))
    assert f'error loading config file "{broken}": yaml: line' in plugin_refusal(None)


def test_duplicate_names_in_one_file_refuse_it(tmp_path):
    path = tmp_path / "config"
    path.write_text(kubeconfig_text("https://127.0.0.1:9") + "- name: ml-admin\n  user:\n    token: again\n")
    words = 'error converting *[]NamedAuthInfo into *map[string]*api.AuthInfo: duplicate name "ml-admin" in list'
    assert words in kubectl(tmp_path, "--kubeconfig", str(path))
    assert words in plugin_refusal(str(path))


def test_a_context_naming_a_missing_cluster_or_user_is_refused_at_once(kc, tmp_path):
    """kubectl falls back to http://localhost:8080 (missing cluster) or prompts for a password (missing user):
    both dead ends; the plugin says which name is missing instead."""
    path = kc(context="    cluster: gone")
    assert "localhost:8080" in kubectl(tmp_path, "--kubeconfig", path)
    assert 'cluster "gone" was not found for context "ml-prod"' in plugin_refusal(path)
    assert 'user "gone" was not found for context "ml-prod"' in plugin_refusal(kc(context="    user: gone"))


def _exec_user(command: str, hint: str = "") -> str:
    lines = ["    exec:", "      apiVersion: client.authentication.k8s.io/v1", f"      command: {command}",
             "      interactiveMode: Never"]
    if hint:
        lines.append(f"      installHint: {hint}")
    return "\n".join(lines)


def test_a_failing_exec_plugin_is_one_line_with_its_own_words_and_nothing_is_sent(tmp_path):
    script = tmp_path / "acme-auth"
    script.write_text("#!/bin/sh\necho 'error: refresh token expired; run: acme login' >&2\nexit 1\n")
    script.chmod(0o755)
    with serving(HEALTHY, tmp_path) as (srv, _):
        failing = tmp_path / "failing"
        failing.write_text(kubeconfig_text(srv.url, cluster=f"    certificate-authority: {srv.ca_file}",
                                           user=_exec_user(str(script))))
        missing = tmp_path / "missing"
        missing.write_text(kubeconfig_text(srv.url, cluster=f"    certificate-authority: {srv.ca_file}",
                                           user=_exec_user("acme-auth-not-installed",
                                                           "\"acme-auth is required: see https://acme.example/cli\"")))
        one = run_plugin(POD, "--kubeconfig", str(failing))
        two = run_plugin(POD, "--kubeconfig", str(missing))
        assert srv.requests == []    # never unauthenticated
        assert "acme-auth is required" in kubectl(tmp_path, "--kubeconfig", str(missing))
    assert one.returncode == 3 and one.stderr.count("\n") == 1, one.stderr
    assert f"exec: executable {script} failed with exit code 1: error: refresh token expired; run: acme login" \
        in one.stderr
    assert two.returncode == 3 and two.stderr.count("\n") == 1, two.stderr
    assert "executable acme-auth-not-installed not found" in two.stderr
    assert "acme-auth is required: see https://acme.example/cli" in two.stderr


def test_a_token_set_with_an_exec_plugin_is_used_and_the_plugin_not_run(kc, tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / "get-token"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    script.chmod(0o755)
    creds = plugin_creds(kc(user=_exec_user(str(script)) + "\n    token: abc"))
    assert creds.authorization == "Bearer abc" and not marker.exists()


def test_an_expired_oidc_token_with_an_unreachable_issuer_is_one_line(kc):
    issuer = f"https://127.0.0.1:{_closed_port()}/dex"
    path = kc(user="    auth-provider:\n      name: oidc\n      config:\n        client-id: kubectl\n"
                   f"        idp-issuer-url: {issuer}\n"
                   "        id-token: eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjEwMDAwMDAwMDB9.c2ln\n"
                   "        refresh-token: r1")
    with pytest.raises(CredentialError) as exc:
        kubeconfig.connect(ConnOptions(kubeconfig=path))
    text = str(exc.value)
    assert "\n" not in text and f"cannot reach {issuer}/.well-known/openid-configuration" in text


def test_in_cluster_service_account_with_impersonation_flags(tmp_path, monkeypatch):
    """Inside a pod with no kubeconfig: the service account's token and CA; --as is honoured there too (never
    silently dropped), and --as-group without a user is refused as everywhere."""
    import kubernetes.config.incluster_config as incluster
    crt, _ = _pem_pair(tmp_path)
    (tmp_path / "token").write_text("sa-token")
    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", crt)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("POD_NAMESPACE", "ml")
    conn = kubeconfig.connect(ConnOptions(as_user="jane", as_groups=("sre",)))
    creds = conn.client.creds
    assert (creds.server, creds.authorization, creds.ca_file) == ("https://10.96.0.1:443", "Bearer sa-token", crt)
    assert creds.headers == {"Impersonate-User": ["jane"], "Impersonate-Group": ["sre"]}
    assert conn.namespace == "ml" and conn.context == "in-cluster"
    with pytest.raises(KubeconfigError, match="without impersonating a user"):
        kubeconfig.connect(ConnOptions(as_groups=("sre",)))


def test_a_refused_proxy_url_keeps_its_password_out_of_the_message(kc, tmp_path):
    """kubectl refuses it too, and prints the password; the plugin prints it as Go's URL.Redacted does."""
    path = kc(cluster="    proxy-url: ftp://squid:S3CRET@proxy.corp:21")
    assert 'unsupported scheme "ftp", must be http, https, or socks5' in kubectl(tmp_path, "--kubeconfig", path)
    said = plugin_refusal(path)
    assert '"ftp://squid:xxxxx@proxy.corp:21" for cluster "ml-prod": unsupported scheme "ftp"' in said
    assert "S3CRET" not in said


def test_only_the_first_yaml_document_counts(kc, tmp_path):
    """go-yaml reads the first document of a stream (a second one, even a broken one, is never looked at)."""
    path = kc()
    with open(path, "a") as f:
        f.write("---\napiVersion: v1\nclusters: [\n")
    assert kubectl_accepts(tmp_path, "--kubeconfig", path)
    assert plugin_creds(path).authorization == "Bearer kubeconfig-token"


def test_an_exec_plugin_answering_another_version_is_refused_in_kubectls_words(kc, tmp_path):
    script = tmp_path / "old-plugin"
    script.write_text("#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                      "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"x\"}}'\n")
    script.chmod(0o755)
    path = kc(user=_exec_user(str(script)))
    words = ("exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin returned "
             "version client.authentication.k8s.io/v1beta1")
    assert words in kubectl(tmp_path, "--kubeconfig", path)
    with pytest.raises(CredentialError, match=words):
        kubeconfig.connect(ConnOptions(kubeconfig=path))


def test_kubeconfig_paths_are_taken_as_given(kc, tmp_path, monkeypatch):
    """A missing --kubeconfig is an error, a directory cannot be read; KUBECONFIG's `~` is not expanded by client-go
    (a shell expands it before kubectl runs), so such an entry is skipped like any missing one."""
    words = f"stat {tmp_path}/nope: no such file or directory"
    assert words in kubectl(tmp_path, "--kubeconfig", str(tmp_path / "nope"))
    assert words in plugin_refusal(str(tmp_path / "nope"))
    assert f'error loading config file "{tmp_path}": read {tmp_path}: is a directory' in plugin_refusal(str(tmp_path))
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(open(kc()).read())
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KUBECONFIG", "~/.kube/config")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert kubeconfig.kubeconfig_paths(ConnOptions()) == []
