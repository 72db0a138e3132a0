"""Kubeconfig choices read in-process (no server, no subprocess: fast enough to run against every mutant of
collect/kubeconfig.py): which file wins, which context, cluster and user, what the flags override, which
credentials go where. Each kubeconfig is shaped like `kubectl config view --raw` output."""
import base64
import os

import pytest
import yaml

from kubectl_gpudoctor.collect import kubeconfig
from kubectl_gpudoctor.collect.kubeconfig import ConnOptions, KubeconfigError

CA = "/etc/ssl/certs/ca-certificates.crt"   # any readable PEM bundle: the trust store is loaded, never used
TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6Ik1lVzZkT3gifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2ln"

pytestmark = pytest.mark.skipif(not os.path.isfile(CA), reason="needs a system CA bundle")


def _doc(name, server, namespace=None, current=True, user=None, cluster=None):
    ctx = {"cluster": name, "user": name}
    if namespace:
        ctx["namespace"] = namespace
    doc = {"apiVersion": "v1", "kind": "Config", "preferences": {},
           "clusters": [{"name": name, "cluster": dict({"server": server, "certificate-authority": CA},
                                                       **(cluster or {}))}],
           "contexts": [{"name": name, "context": ctx}],
           "users": [{"name": name, "user": user if user is not None else {"token": f"{TOKEN}-{name}"}}]}
    if current:
        doc["current-context"] = name
    return doc


def _write(tmp_path, fname, doc):
    path = tmp_path / fname
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No KUBECONFIG, no in-cluster service host, a home without ~/.kube/config."""
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                 "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return monkeypatch


def _connect(**opts):
    return kubeconfig.connect(ConnOptions(**opts))


def _auth(conn):
    return dict(conn.client.headers).get("Authorization")


# --- which files, in which order ------------------------------------------------------------------------------

def test_the_kubeconfig_flag_beats_the_environment_list(env, tmp_path):
    flag = _write(tmp_path, "flag.yaml", _doc("flag", "https://10.0.0.1:6443"))
    listed = _write(tmp_path, "listed.yaml", _doc("listed", "https://10.0.0.2:6443"))
    env.setenv("KUBECONFIG", listed)
    assert kubeconfig.kubeconfig_paths(ConnOptions(kubeconfig=flag)) == [flag]
    conn = _connect(kubeconfig=flag)
    assert conn.context == "flag" and conn.client.host == "10.0.0.1"


def test_a_missing_kubeconfig_flag_is_refused_in_kubectls_words(env, tmp_path):
    with pytest.raises(KubeconfigError, match=r"stat .*nope\.yaml: no such file or directory"):
        kubeconfig.kubeconfig_paths(ConnOptions(kubeconfig=str(tmp_path / "nope.yaml")))


def test_the_environment_list_skips_missing_empty_and_repeated_entries_in_order(env, tmp_path):
    a = _write(tmp_path, "a.yaml", _doc("a", "https://10.0.0.1:6443"))
    b = _write(tmp_path, "b.yaml", _doc("b", "https://10.0.0.2:6443"))
    listed = os.pathsep.join([str(tmp_path / "missing.yaml"), "", b, a, b, str(tmp_path)])   # a directory too
    assert kubeconfig.kubeconfig_paths(ConnOptions(), env={"KUBECONFIG": listed}) == [b, a]
    env.setenv("KUBECONFIG", listed)
    assert _connect().context == "b"   # b comes first: its current-context wins


def test_home_kube_config_is_read_only_without_a_list(env, tmp_path):
    assert kubeconfig.kubeconfig_paths(ConnOptions(), env={}) == []
    kube = tmp_path / "home" / ".kube"
    kube.mkdir()
    home = _write(kube, "config", _doc("home", "https://10.0.0.3:6443"))
    assert kubeconfig.kubeconfig_paths(ConnOptions(), env={}) == [home]
    other = _write(tmp_path, "other.yaml", _doc("other", "https://10.0.0.4:6443"))
    assert kubeconfig.kubeconfig_paths(ConnOptions(), env={"KUBECONFIG": other}) == [other]
    assert _connect().context == "home"


def test_no_kubeconfig_and_no_cluster_is_said(env):
    with pytest.raises(kubeconfig.NoConfiguration, match="no kubeconfig found"):
        _connect()


# --- merging: the first file that names an entry wins it whole -------------------------------------------------

def test_the_first_file_wins_a_cluster_whole_and_the_first_current_context(env, tmp_path):
    first = _doc("prod", "https://10.0.0.1:6443", namespace="serving")
    second = _doc("prod", "https://10.0.0.9:6443", namespace="other",
                  cluster={"tls-server-name": "api.other.example", "proxy-url": "http://proxy:3128"})
    second["current-context"] = "elsewhere"
    second["contexts"].append({"name": "elsewhere", "context": {"cluster": "prod", "user": "prod"}})
    kc = os.pathsep.join([_write(tmp_path, "1.yaml", first), _write(tmp_path, "2.yaml", second)])
    env.setenv("KUBECONFIG", kc)
    conn = _connect()
    assert conn.context == "prod" and conn.namespace == "serving"
    assert conn.client.host == "10.0.0.1" and conn.client.creds.tls_server_name is None   # not merged key by key
    assert conn.client.creds.proxy_url is None
    assert _auth(conn) == f"Bearer {TOKEN}-prod"


def test_current_context_from_a_later_file_when_the_first_sets_none(env, tmp_path):
    first = _doc("prod", "https://10.0.0.1:6443", namespace="serving", current=False)
    second = {"apiVersion": "v1", "kind": "Config", "current-context": "prod"}
    env.setenv("KUBECONFIG", os.pathsep.join([_write(tmp_path, "1.yaml", first), _write(tmp_path, "2.yaml", second)]))
    assert _connect().context == "prod"


def test_an_entry_without_a_name_and_an_empty_list_item_are_read(env, tmp_path):
    doc = _doc("prod", "https://10.0.0.1:6443")
    doc["users"].append(None)
    doc["clusters"].insert(0, {"cluster": {"server": "https://10.9.9.9:6443"}})
    assert _connect(kubeconfig=_write(tmp_path, "kc.yaml", doc)).client.host == "10.0.0.1"


# --- the context, cluster and user chosen ---------------------------------------------------------------------

def _two(tmp_path):
    doc = _doc("prod", "https://10.0.0.1:6443", namespace="serving")
    dev = _doc("dev", "https://10.0.0.2:6443", namespace="dev", current=False)
    for key in ("clusters", "contexts", "users"):
        doc[key] += dev[key]
    return _write(tmp_path, "kc.yaml", doc)


def test_the_context_flag_beats_current_context(env, tmp_path):
    conn = _connect(kubeconfig=_two(tmp_path), context="dev")
    assert (conn.context, conn.namespace, conn.client.host) == ("dev", "dev", "10.0.0.2")
    assert _auth(conn) == f"Bearer {TOKEN}-dev"


def test_cluster_and_user_flags_beat_the_contexts(env, tmp_path):
    kc = _two(tmp_path)
    conn = _connect(kubeconfig=kc, cluster="dev")
    assert conn.client.host == "10.0.0.2" and _auth(conn) == f"Bearer {TOKEN}-prod"
    conn = _connect(kubeconfig=kc, user="dev")
    assert conn.client.host == "10.0.0.1" and _auth(conn) == f"Bearer {TOKEN}-dev"


def test_the_namespace_flag_beats_the_context_and_default_is_the_last_resort(env, tmp_path):
    kc = _two(tmp_path)
    assert _connect(kubeconfig=kc, namespace="team-a").namespace == "team-a"
    doc = _doc("bare", "https://10.0.0.1:6443")
    assert _connect(kubeconfig=_write(tmp_path, "bare.yaml", doc)).namespace == "default"


@pytest.mark.parametrize("opts,words", [
    ({"context": "staging"}, "context was not found for specified context: staging"),
    ({"user": "nobody"}, 'auth info "nobody" does not exist'),
    ({"cluster": "nowhere"}, 'no server found for cluster "nowhere"'),
    ({"cluster": "nowhere", "server": "https://10.0.0.7:6443"}, 'cluster "nowhere" does not exist'),
])
def test_names_kubectl_cannot_find_are_refused(env, tmp_path, opts, words):
    with pytest.raises(KubeconfigError) as err:
        _connect(kubeconfig=_two(tmp_path), **opts)
    assert str(err.value) == words


def test_a_context_naming_a_missing_cluster_or_user(env, tmp_path):
    doc = _doc("prod", "https://10.0.0.1:6443")
    doc["contexts"][0]["context"] = {"cluster": "gone", "user": "prod"}
    kc = _write(tmp_path, "kc.yaml", doc)
    with pytest.raises(KubeconfigError, match='cluster "gone" was not found for context "prod"'):
        _connect(kubeconfig=kc)
    conn = _connect(kubeconfig=kc, server="https://10.0.0.5:6443")   # a --server stands in for it
    assert conn.client.host == "10.0.0.5" and _auth(conn) == f"Bearer {TOKEN}-prod"
    doc["contexts"][0]["context"] = {"cluster": "prod", "user": "gone"}
    kc = _write(tmp_path, "kc.yaml", doc)
    with pytest.raises(KubeconfigError, match='user "gone" was not found for context "prod"'):
        _connect(kubeconfig=kc)
    conn = _connect(kubeconfig=kc, token="flag-token")   # a user flag stands in for it
    assert _auth(conn) == "Bearer flag-token"


def test_no_current_context_is_refused_unless_a_server_is_given(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443", current=False))
    with pytest.raises(KubeconfigError, match="no context chosen"):
        _connect(kubeconfig=kc)
    conn = _connect(kubeconfig=kc, server="https://10.0.0.6:6443", token="t0k")
    assert conn.context == "(flags)" and conn.client.host == "10.0.0.6" and _auth(conn) == "Bearer t0k"
    assert conn.namespace == "default"


def test_server_flag_alone_needs_no_kubeconfig(env):
    conn = _connect(server="https://10.0.0.8:6443", token="t0k", insecure=True)
    assert conn.context == "(flags)" and conn.client.port == 6443 and _auth(conn) == "Bearer t0k"


# --- the flags over the kubeconfig: trust, server name, credentials --------------------------------------------

def test_insecure_flag_replaces_the_kubeconfigs_trust(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443"))
    conn = _connect(kubeconfig=kc)
    assert conn.client.creds.insecure is False and conn.client.creds.ca_file == CA
    conn = _connect(kubeconfig=kc, insecure=True)
    assert conn.client.creds.insecure is True and conn.client.creds.ca_file is None and conn.client.creds.ca_data is None


def test_kubeconfig_insecure_skip_tls_verify_is_read_and_a_ca_flag_replaces_it(env, tmp_path):
    doc = _doc("prod", "https://10.0.0.1:6443")
    doc["clusters"][0]["cluster"] = {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True}
    kc = _write(tmp_path, "kc.yaml", doc)
    assert _connect(kubeconfig=kc).client.creds.insecure is True
    conn = _connect(kubeconfig=kc, ca_file=CA)
    assert conn.client.creds.insecure is False and conn.client.creds.ca_file == CA


def test_ca_flag_replaces_inline_certificate_authority_data(env, tmp_path):
    pem = open(CA, "rb").read().split(b"-----END CERTIFICATE-----")[0] + b"-----END CERTIFICATE-----\n"
    doc = _doc("prod", "https://10.0.0.1:6443")
    doc["clusters"][0]["cluster"] = {"server": "https://10.0.0.1:6443",
                                     "certificate-authority-data": base64.b64encode(pem).decode()}
    kc = _write(tmp_path, "kc.yaml", doc)
    creds = _connect(kubeconfig=kc).client.creds
    assert creds.ca_data == pem and creds.ca_file is None
    creds = _connect(kubeconfig=kc, ca_file=CA).client.creds
    assert creds.ca_data is None and creds.ca_file == CA


def test_server_flag_drops_the_kubeconfigs_tls_server_name_and_the_flag_sets_one(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443",
                                          cluster={"tls-server-name": "api.prod.example"}))
    assert _connect(kubeconfig=kc).client.creds.tls_server_name == "api.prod.example"
    assert _connect(kubeconfig=kc, server="https://10.0.0.2:6443").client.creds.tls_server_name is None
    assert _connect(kubeconfig=kc, tls_server_name="api.flag.example").client.creds.tls_server_name == \
        "api.flag.example"
    creds = _connect(kubeconfig=kc, disable_compression=True).client.creds
    assert creds.disable_compression is True and creds.tls_server_name == "api.prod.example"


def test_user_flags_override_the_kubeconfig_user(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443"))
    assert _auth(_connect(kubeconfig=kc, token="flag-token")) == "Bearer flag-token"
    conn = _connect(kubeconfig=kc, as_user="jane", as_groups=("ml-team", "viewers"), as_uid="1234")
    assert conn.client.creds.headers == {"Impersonate-User": ["jane"], "Impersonate-Uid": ["1234"],
                                         "Impersonate-Group": ["ml-team", "viewers"]}
    assert _auth(conn) == f"Bearer {TOKEN}-prod"


def test_basic_auth_from_the_kubeconfig_and_from_flags(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443",
                                          user={"username": "admin", "password": "s3cr3t"}))
    assert _auth(_connect(kubeconfig=kc)) == "Basic " + base64.b64encode(b"admin:s3cr3t").decode()
    assert _auth(_connect(kubeconfig=kc, password="0ther")) == "Basic " + base64.b64encode(b"admin:0ther").decode()
    only_user = _write(tmp_path, "u.yaml", _doc("prod", "https://10.0.0.1:6443", user={"username": "admin"}))
    assert _auth(_connect(kubeconfig=only_user)) == "Basic " + base64.b64encode(b"admin:").decode()


def test_credentials_go_only_to_a_tls_server(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "http://10.0.0.1:8080", user={
        "token": TOKEN, "client-certificate": CA, "client-key": CA, "as": "jane"}))
    conn = _connect(kubeconfig=kc)
    creds = conn.client.creds
    assert creds.authorization is None and creds.cert_file is None and creds.key_file is None
    assert _auth(conn) is None and creds.headers == {"Impersonate-User": ["jane"]}   # who, still said
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "HTTPS://10.0.0.1:6443", user={"token": TOKEN}))
    assert _auth(_connect(kubeconfig=kc)) == f"Bearer {TOKEN}"   # the scheme's case does not matter


def test_token_file_is_resolved_against_the_kubeconfigs_directory(env, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "token").write_text("from-file\n")
    doc = _doc("prod", "https://10.0.0.1:6443/", user={"tokenFile": "token", "token": "fallback"})
    kc = _write(tmp_path / "sub", "kc.yaml", doc)
    conn = _connect(kubeconfig=kc)
    assert _auth(conn) == "Bearer from-file" and conn.client.creds.server == "https://10.0.0.1:6443"


def test_the_server_is_printed_without_its_password(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://admin:hunter2@10.0.0.1:6443"))
    conn = _connect(kubeconfig=kc)
    assert "hunter2" not in conn.server and conn.server == "https://admin:xxxxx@10.0.0.1:6443"


# --- header values: nothing that could smuggle a header in -------------------------------------------------------

@pytest.mark.parametrize("token", [TOKEN + "\r\nX-Injected: 1", TOKEN + "\n", "\x00" + TOKEN, TOKEN + "\x1f",
                                   TOKEN + "\x7f"])
def test_a_control_character_in_a_token_fails_before_connecting_in_kubectls_words(env, tmp_path, token):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443", user={"token": token}))
    with pytest.raises(KubeconfigError) as err:
        _connect(kubeconfig=kc)
    assert str(err.value) == ('Unable to connect to the server: net/http: invalid header field value for '
                              '"Authorization"')


def test_a_control_character_in_an_impersonated_group_names_its_header(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443"))
    with pytest.raises(KubeconfigError, match='for "Impersonate-Group"'):
        _connect(kubeconfig=kc, as_user="jane", as_groups=("ml\nteam",))


def test_tab_space_and_unicode_in_header_values_pass(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443", user={"token": "a\tb c"}))
    assert _auth(_connect(kubeconfig=kc)) == "Bearer a\tb c"
    conn = _connect(kubeconfig=kc, as_user="jöhn ~!")
    assert conn.client.creds.headers["Impersonate-User"] == ["jöhn ~!"]


def test_impersonation_headers_one_line_per_group_and_extra_value(env, tmp_path):
    user = {"token": TOKEN, "as": "jane", "as-groups": ["ml-team", None],
            "as-user-extra": {"reason": ["on call", None], "acme.com/scopes": ["view"]}}
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443", user=user))
    assert _connect(kubeconfig=kc).client.creds.headers == {
        "Impersonate-User": ["jane"], "Impersonate-Group": ["ml-team", ""],
        "Impersonate-Extra-reason": ["on call", ""], "Impersonate-Extra-acme.com%2Fscopes": ["view"]}
    assert kubeconfig.impersonation({"as-groups": ["x"]}) == {}   # nobody impersonated: nothing sent


def test_a_token_file_that_does_not_read(env, tmp_path):
    missing = str(tmp_path / "gone")
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443", user={"tokenFile": missing,
                                                                               "token": "fallback"}))
    assert _auth(_connect(kubeconfig=kc)) == "Bearer fallback"
    (tmp_path / "empty").write_text("\n")
    assert kubeconfig._bearer({"tokenFile": str(tmp_path / "empty"), "token": "fallback"}) == "Bearer fallback"
    with pytest.raises(KubeconfigError, match='read empty token from file'):
        kubeconfig._bearer({"tokenFile": str(tmp_path / "empty")})
    with pytest.raises(KubeconfigError, match=f"open {missing}: no such file or directory"):
        kubeconfig._bearer({"tokenFile": missing})
    assert kubeconfig._bearer({}) is None


def test_client_certificate_data_wins_over_its_file_and_goes_to_tls_only(env, tmp_path):
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    user = {"client-certificate-data": base64.b64encode(pem).decode(), "client-key": "key.pem"}
    assert kubeconfig._file_or_data(user, "client-certificate") == (None, pem)
    assert kubeconfig._file_or_data(user, "client-key") == ("key.pem", None)
    assert kubeconfig._file_or_data({}, "client-key") == (None, None)


def test_a_path_holding_a_nul_byte_is_an_invalid_kubeconfig(env, tmp_path):
    doc = _doc("prod", "https://10.0.0.1:6443")
    doc["clusters"][0]["cluster"] = {"server": "https://10.0.0.1:6443", "certificate-authority": "ca\x00.pem"}
    with pytest.raises(KubeconfigError, match="^invalid kubeconfig: "):
        _connect(kubeconfig=_write(tmp_path, "kc.yaml", doc))


def test_an_auth_providers_paths_are_read_against_the_users_own_file(env, tmp_path, monkeypatch):
    """client-go resolves each entry's relative paths against the file it came from: the user's auth-provider
    (an oidc idp-certificate-authority: ca.pem) against the user's file, not the cluster's."""
    from kubectl_gpudoctor.collect import authprovider
    seen = []
    monkeypatch.setattr(authprovider, "token", lambda provider, cluster, base: seen.append(base) or "Bearer oidc")
    (tmp_path / "users").mkdir()
    (tmp_path / "clusters").mkdir()
    oidc = {"auth-provider": {"name": "oidc", "config": {"client-id": "kubectl", "id-token": TOKEN,
                                                           "idp-issuer-url": "https://dex.example.com",
                                                           "idp-certificate-authority": "ca.pem"}}}
    users = _write(tmp_path / "users", "kc.yaml", {"apiVersion": "v1", "kind": "Config", "users": [
        {"name": "prod", "user": oidc}]})
    clusters = _write(tmp_path / "clusters", "kc.yaml", _doc("prod", "https://10.0.0.1:6443", user={}))
    env.setenv("KUBECONFIG", os.pathsep.join([users, clusters]))
    assert _auth(_connect()) == "Bearer oidc" and seen == [str(tmp_path / "users")]
    seen.clear()
    env.setenv("KUBECONFIG", clusters)
    doc = _doc("prod", "https://10.0.0.1:6443")
    del doc["users"], doc["contexts"][0]["context"]["user"]
    _write(tmp_path / "clusters", "kc.yaml", doc)
    assert _connect(token="t0k") and seen == []


def test_a_certificate_authority_that_is_no_pem_is_an_invalid_kubeconfig(env, tmp_path):
    (tmp_path / "ca.crt").write_text("apiVersion: v1\nkind: Config\n")   # the kubeconfig itself, by mistake
    doc = _doc("prod", "https://10.0.0.1:6443")
    doc["clusters"][0]["cluster"]["certificate-authority"] = str(tmp_path / "ca.crt")
    with pytest.raises(KubeconfigError, match="^invalid kubeconfig: "):
        _connect(kubeconfig=_write(tmp_path, "kc.yaml", doc))


def test_a_clusters_proxy_url_is_read(env, tmp_path):
    kc = _write(tmp_path, "kc.yaml", _doc("prod", "https://10.0.0.1:6443", cluster={"proxy-url": "http://proxy:3128"}))
    assert _connect(kubeconfig=kc).client.creds.proxy_url == "http://proxy:3128"


@pytest.mark.parametrize("flag", ["password", "client_certificate", "client_key"])
def test_any_user_flag_stands_in_for_a_user_the_context_names_but_no_file_has(env, tmp_path, flag):
    doc = _doc("prod", "https://10.0.0.1:6443")
    doc["contexts"][0]["context"] = {"cluster": "prod", "user": "gone"}
    kc = _write(tmp_path, "kc.yaml", doc)
    try:
        conn = _connect(kubeconfig=kc, **{flag: CA if flag.startswith("client") else "s3cr3t"})
    except (KubeconfigError, kubeconfig.Refused) as exc:
        assert "was not found" not in str(exc), exc   # refused for what the flag lacks, not for the user
    else:
        if flag == "password":
            assert _auth(conn) == "Basic " + base64.b64encode(b":s3cr3t").decode()
        else:
            assert conn.client.creds.cert_file == CA or conn.client.creds.key_file == CA


def test_an_empty_kubeconfig_file_outside_a_cluster_asks_for_a_context(env, tmp_path):
    """kubectl with an empty KUBECONFIG file says the configuration is incomplete, not that there is none."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    env.setenv("KUBECONFIG", str(empty))
    with pytest.raises(KubeconfigError, match="no context chosen"):
        _connect()
