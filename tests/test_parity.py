"""The kubectl parity suite: for each kubeconfig / environment / flag / server-behaviour variant, the real
`kubectl get pod` and the plugin, with the same kubeconfig and environment against one fake API server (and
loopback proxies), must agree: both work as the same identity through the same proxy, or both fail — the plugin
with one line on stderr and exit 2 or 3, never a traceback, never a credential where kubectl sent none.
See docs/testing.md ("Parity suite") for how to add a variant."""
from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import namedtuple

import pytest
import yaml

from tests.apiserver import FakeApiServer, load_case
from tests.conftest import ROOT
from tests.live import BIN_DIR, plugin_path
from tests.proxies import ConnectProxy, DeadAddress, HttpsConnectProxy, Socks5Proxy

# Variants where the plugin on main disagrees with kubectl (issue 17's fixes land on other branches). Strict:
# once a fix merges, its variant XPASSes and fails the run, so that its line here is deleted.
KNOWN_DISAGREEMENTS = {
    # security invariants (issue 17 point 1)
    "server-userinfo-password": "kubectl sends the URL's user-info as basic auth and fails; the plugin works",
    # client-go validation refusals and kubeconfig semantics (issue 17 point 2)
    "no-credentials": "a user without credentials: kubectl prompts on stdin (EOF) and sends nothing; "
                      "the plugin sends an unauthenticated request",
}

HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
POD, NS = "chat-6b7c9d8f4-m2kqz", "serving"
FAKE_NAME = "api.gpu.example"      # in the server's certificate; only the suite's proxies can resolve it
OTHER_NAME = "api.other.example"   # the only name in the "other" listener's certificate
SECRET = "S3CRET-pw-9f2"          # a password that must never be printed
# Bearer tokens and basic-auth users the server knows, and who they are.
TOKENS = {"file-t0ken": "alice", "12345": "numeric-user", "exec-t0ken": ("exec-user", ("exec-group",)),
          "override-t0ken": "flag-user"}
BASIC = {("bob", "b0b-pw"): ("bob", ("basic-users",))}


def _jwt(exp: int) -> str:
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")  # noqa: E731
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part({'iss': 'https://127.0.0.1:1', 'sub': 'o', 'aud': 'k', 'exp': exp})}.c2ln"


OIDC_VALID = _jwt(4102444800)    # expires in 2100
OIDC_EXPIRED = _jwt(1600000000)  # expired in 2020
TOKENS[OIDC_VALID] = "oidc-user"


def loopback_alias() -> str | None:
    """A host name this machine resolves to 127.0.0.1 that is not `localhost` (often its own hostname): Go sends
    requests for it through HTTPS_PROXY (only the literal `localhost` and loopback IPs bypass env proxies), and a
    direct connection reaches the server too, so a proxy that is wrongly bypassed or wrongly used shows."""
    for name in (socket.gethostname(), "localhost.localdomain"):
        try:
            if name and name != "localhost" and {a[4][0] for a in socket.getaddrinfo(name, 443, socket.AF_INET)} == {
                    "127.0.0.1"}:
                return name
        except OSError:
            continue
    return None


ALIAS = loopback_alias()
needs_alias = pytest.mark.skipif(ALIAS is None, reason="no host name resolves to 127.0.0.1 besides localhost")


def kubectl_path() -> str | None:
    """GPUDOCTOR_KUBECTL if set (another kubectl version to compare with), else kubectl on PATH."""
    if os.environ.get("GPUDOCTOR_KUBECTL"):
        return os.environ["GPUDOCTOR_KUBECTL"]
    found = shutil.which("kubectl")
    if not found:
        return None
    # gcloud's kubectl is a dispatcher that asks the server's /version first and runs kubectl.<minor>: use the
    # real binary it would run, so that every request recorded is kubectl's own.
    real = os.path.join(os.path.dirname(os.path.realpath(found)), "kubectl.1.32")
    return real if os.path.exists(real) else found


KUBECTL = kubectl_path()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")


# -- the world every variant runs in: one server, its listeners, the proxies ----------------------------------------

class World:
    def __init__(self, tmp):
        self.tmp = tmp
        objects, logs = load_case(HEALTHY)
        self.srv = FakeApiServer(objects, logs, tokens=TOKENS, basic=BASIC, client_ca=True,
                                 cert_names=(FAKE_NAME, "::1", *([ALIAS] if ALIAS else []))).start()
        self.plain_url = self.srv.add_listener("plain", tls=False)
        self.other_url = self.srv.add_listener("other", cert_names=(OTHER_NAME,))
        self.other_ca = self.srv.listener_ca["other"]
        hosts = {FAKE_NAME: "127.0.0.1", OTHER_NAME: "127.0.0.1", "::1": "127.0.0.1", ALIAS: "127.0.0.1"}
        self.proxies = {
            "connect": ConnectProxy(hosts=hosts, name="connect").start(),
            "connect-auth": ConnectProxy(hosts=hosts, auth=("puser", "pp@ss"), name="connect-auth").start(),
            "https": HttpsConnectProxy(self.srv.ca_file, self.srv.key_file, hosts=hosts, name="https").start(),
            "socks": Socks5Proxy(hosts=hosts, name="socks").start(),
            "socks-auth": Socks5Proxy(hosts=hosts, auth=("suser", "sp4ss"), name="socks-auth").start(),
        }
        self.dead = DeadAddress().start()
        self.cert, self.key = self.srv.issue_client_cert("carol", ("ml-team",))
        self.enc_cert, self.enc_key = self.srv.issue_client_cert("dave", ("ml-team",), passphrase="hunter2")
        self.home = tmp / "home"
        self.home.mkdir()
        self.exec_ok = self._script("exec_ok.py", 'import json\nprint(json.dumps({"apiVersion": '
                                    '"client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
                                    '"status": {"token": "exec-t0ken"}}))\n')
        self.exec_ok_v1 = self._script("exec_ok_v1.py", 'import json\nprint(json.dumps({"apiVersion": '
                                       '"client.authentication.k8s.io/v1", "kind": "ExecCredential", '
                                       '"status": {"token": "exec-t0ken"}}))\n')
        self.exec_fail = self._script("exec_fail.py", 'import sys\nprint("error: SSO session expired; run '
                                      'sso-login", file=sys.stderr)\nsys.exit(1)\n')
        (tmp / "token").write_text("file-t0ken\n")
        self.token_file = str(tmp / "token")
        self._n = 0

    def _script(self, name, text):
        path = self.tmp / name
        path.write_text(text)
        return str(path)

    def stop(self):
        for p in self.proxies.values():
            p.stop()
        self.dead.stop()
        self.srv.stop()

    @property
    def port(self):
        return self.srv.port

    def url(self, host="127.0.0.1", scheme="https"):
        return f"{scheme}://{host}:{self.port}"

    def proxy(self, name, *cred):
        return self.proxies[name].url(*cred)

    def cluster(self, **over):
        c = {"server": self.srv.url, "certificate-authority": self.srv.ca_file}
        c.update(over)
        return {k: v for k, v in c.items() if v is not DROP}

    def user(self, **over):
        u = {"token": self.srv.token}
        u.update(over)
        return {k: v for k, v in u.items() if v is not DROP}

    def config(self, cluster=None, user=None, context=None, current="main", extra=None):
        ctx = {"cluster": "main", "user": "main", "namespace": "default"}
        ctx.update(context or {})
        cluster = self.cluster() if cluster is None else cluster
        user = self.user() if user is None else user
        doc = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "main", "cluster": cluster}],
               "contexts": [{"name": "main", "context": ctx}], "users": [{"name": "main", "user": user}]}
        if current is not None:
            doc["current-context"] = current
        for key, items in (extra or {}).items():
            doc[key] += items
        return doc

    def write(self, doc) -> str:
        self._n += 1
        path = self.tmp / f"kc-{self._n}.yaml"
        path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
        return str(path)

    def env(self, extra) -> dict:
        env = {"HOME": str(self.home), "PATH": BIN_DIR + os.pathsep + "/usr/bin:/bin", "LANG": "C.UTF-8"}
        env.update(extra)
        return env

    def reset(self):
        self.srv.reset_requests()
        self.srv.clear_faults()
        for p in self.proxies.values():
            p.reset()


DROP = object()   # a cluster/user key to leave out


class Files(list):
    """Kubeconfig documents for KUBECONFIG (a path list); None stands for a file that does not exist."""


# name; kubeconfig: w -> document | raw YAML | Files | None (no kubeconfig at all); env: w -> dict; args: w -> extra
# arguments for both commands; setup: w -> None (faults on the server); secrets: text neither may print;
# timeout: seconds per command; says: text the plugin's error must hold when both fail (what kubectl's message
# tells the user that matters, e.g. an exec plugin's installHint); marks: pytest marks (e.g. needs_alias).
Variant = namedtuple("Variant", "name kubeconfig env args setup secrets timeout says marks",
                     defaults=(None, None, None, (), 30, (), ()))


def V(name, kubeconfig=lambda w: w.config(), env=None, args=None, setup=None, secrets=(), timeout=30, says=(),
      marks=()):
    return Variant(name, kubeconfig, env, args, setup, secrets, timeout, says, marks)


def C(name, env=None, args=None, setup=None, secrets=(), timeout=30, user=None, context=None, says=(), marks=(),
      **cluster):
    """A variant whose kubeconfig differs from the default in its cluster (keywords, `_` for `-`) and/or user."""
    cl = {k.replace("_", "-"): v for k, v in cluster.items()}
    return V(name, lambda w: w.config(w.cluster(**{k: (v(w) if callable(v) else v) for k, v in cl.items()}),
                                      user(w) if user else None, context),
             env, args, setup, secrets, timeout, says, marks)


def U(name, user, **kw):
    """A variant whose kubeconfig differs from the default in its user only (user: w -> user dict)."""
    return V(name, lambda w: w.config(user=user(w)), **kw)


def _b64(path):
    return base64.b64encode(open(path, "rb").read()).decode()


def _exec(command, api="client.authentication.k8s.io/v1beta1", **extra):
    return lambda w: {"exec": {"apiVersion": api, "command": sys.executable, "args": [getattr(w, command)],
                               **extra}}


NO_TOKEN = {"token": DROP}

VARIANTS = [
    # -- server shapes -------------------------------------------------------------------------------------------
    V("baseline"),
    C("server-empty", server=""),
    C("server-not-a-url", server="not a url"),
    # kubectl reads host:port without a scheme as http:// (even with a CA) and sends no credentials: aimed at the
    # TLS port it retries EOFs for 10-30 s, so the variant aims at the plain listener, which records credentials.
    C("server-host-port-without-scheme", server=lambda w: w.plain_url.partition("://")[2]),
    C("server-plain-http", server=lambda w: w.plain_url),
    C("server-plain-http-via-proxy-url", server=lambda w: w.plain_url, proxy_url=lambda w: w.proxy("connect")),
    V("basic-auth-over-plain-http", lambda w: w.config(w.cluster(server=w.plain_url),
                                                       w.user(token=DROP, username="bob", password="b0b-pw")),
      secrets=("b0b-pw",)),
    C("server-upper-case-scheme", server=lambda w: w.url(scheme="HTTPS")),
    C("server-trailing-slash", server=lambda w: w.url() + "/"),
    C("server-path-prefix", server=lambda w: w.url() + "/k8s/clusters/c-1"),
    C("server-localhost", server=lambda w: w.url("localhost")),
    C("server-ipv6-literal-direct", server=lambda w: w.url("[::1]")),
    C("server-ipv6-literal-via-proxy-url", server=lambda w: w.url("[::1]"), proxy_url=lambda w: w.proxy("connect")),
    C("server-userinfo-password", server=lambda w: w.url(f"admin:{SECRET}@127.0.0.1"), secrets=(SECRET,)),
    C("server-userinfo-password-unreachable", server=lambda w: f"https://admin:{SECRET}@127.0.0.1:{w.dead.port}",
      secrets=(SECRET,)),
    C("server-name-not-resolvable", server=lambda w: w.url(FAKE_NAME)),
    # -- TLS -----------------------------------------------------------------------------------------------------
    C("tls-ca-data", certificate_authority=DROP, certificate_authority_data=lambda w: _b64(w.srv.ca_file)),
    C("tls-ca-file-and-ca-data", certificate_authority_data=lambda w: _b64(w.srv.ca_file)),
    C("tls-insecure-true", certificate_authority=DROP, insecure_skip_tls_verify=True),
    C("tls-insecure-string-false", certificate_authority=DROP, insecure_skip_tls_verify="false"),
    C("tls-insecure-string-no", certificate_authority=DROP, insecure_skip_tls_verify="no"),
    C("tls-insecure-string-false-with-ca", insecure_skip_tls_verify="false"),
    C("tls-insecure-false-bool", insecure_skip_tls_verify=False),
    C("tls-insecure-and-ca", insecure_skip_tls_verify=True),
    C("tls-wrong-ca", certificate_authority=lambda w: w.other_ca),
    C("tls-no-ca-system-roots", certificate_authority=DROP),
    C("tls-ca-file-missing", certificate_authority=lambda w: str(w.tmp / "nope.crt")),
    C("tls-cert-for-another-name", server=lambda w: w.other_url, certificate_authority=lambda w: w.other_ca),
    C("tls-server-name-matches-other-cert", server=lambda w: w.other_url, certificate_authority=lambda w: w.other_ca,
      tls_server_name=OTHER_NAME),
    C("tls-server-name-wrong-for-cert", tls_server_name=OTHER_NAME),
    C("tls-server-name-localhost", tls_server_name="localhost"),
    C("tls-insecure-ignores-another-name", server=lambda w: w.other_url, certificate_authority=DROP,
      insecure_skip_tls_verify=True),
    C("tls-server-name-flag", server=lambda w: w.other_url, certificate_authority=lambda w: w.other_ca,
      args=lambda w: ["--tls-server-name", OTHER_NAME]),
    C("tls-server-name-flag-wrong-name", args=lambda w: ["--tls-server-name", OTHER_NAME]),
    C("tls-flag-insecure-over-kubeconfig-ca", args=lambda w: ["--insecure-skip-tls-verify"]),
    C("tls-flag-wrong-certificate-authority", args=lambda w: ["--certificate-authority", w.other_ca]),
    # -- client certificates ---------------------------------------------------------------------------------------
    U("cert-file", lambda w: w.user(**NO_TOKEN, **{"client-certificate": w.cert, "client-key": w.key})),
    U("cert-data", lambda w: w.user(**NO_TOKEN, **{"client-certificate-data": _b64(w.cert),
                                                   "client-key-data": _b64(w.key)})),
    U("cert-and-token", lambda w: w.user(**{"client-certificate": w.cert, "client-key": w.key})),
    U("cert-encrypted-key", lambda w: w.user(**NO_TOKEN, **{"client-certificate": w.enc_cert,
                                                            "client-key": w.enc_key}), timeout=20),
    U("cert-without-key", lambda w: w.user(**NO_TOKEN, **{"client-certificate": w.cert})),
    U("cert-file-missing", lambda w: w.user(**NO_TOKEN, **{"client-certificate": str(w.tmp / "no.crt"),
                                                           "client-key": w.key})),
    U("cert-from-unknown-ca", lambda w: w.user(**NO_TOKEN, **{"client-certificate": w.other_ca,
                                                              "client-key": w.srv.key_file})),
    V("cert-over-plain-http", lambda w: w.config(w.cluster(server=w.plain_url),
                                                 w.user(**NO_TOKEN, **{"client-certificate": w.cert,
                                                                       "client-key": w.key}))),
    # -- tokens, basic auth, exec plugins, auth providers ---------------------------------------------------------
    U("token-file", lambda w: w.user(token=DROP, tokenFile=w.token_file)),
    U("token-and-token-file", lambda w: w.user(tokenFile=w.token_file)),
    U("token-file-missing", lambda w: w.user(token=DROP, tokenFile=str(w.tmp / "no-token"))),
    U("token-numeric", lambda w: w.user(token=12345)),
    U("token-unknown", lambda w: w.user(token="not-a-known-token")),
    U("no-credentials", lambda w: {}),
    U("basic-auth", lambda w: w.user(token=DROP, username="bob", password="b0b-pw")),
    U("basic-auth-wrong-password", lambda w: w.user(token=DROP, username="bob", password=SECRET), secrets=(SECRET,)),
    U("token-and-basic-auth", lambda w: w.user(username="bob", password="b0b-pw")),
    U("exec-plugin-ok", lambda w: {**_exec("exec_ok")(w)}),
    U("exec-plugin-v1-interactive-never", lambda w: _exec("exec_ok_v1", "client.authentication.k8s.io/v1",
                                                         interactiveMode="Never")(w)),
    U("exec-plugin-v1-without-interactive-mode", lambda w: _exec("exec_ok_v1", "client.authentication.k8s.io/v1")(w)),
    U("exec-plugin-fails", lambda w: _exec("exec_fail", installHint="install sso-login")(w),
      says=("SSO session expired",)),
    U("exec-plugin-not-found-with-install-hint", lambda w: {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "gpudoctor-test-missing-helper",
        "installHint": "brew install gpudoctor-test-helper"}}, says=("brew install gpudoctor-test-helper",)),
    U("exec-plugin-missing-absolute-path", lambda w: {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                               "command": "/nonexistent/aws-iam-authenticator"}}),
    U("exec-plugin-and-token", lambda w: {"token": w.srv.token, **_exec("exec_ok")(w)}),
    U("auth-provider-gcp-removed", lambda w: {"auth-provider": {"name": "gcp", "config": {"access-token": "x"}}}),
    U("auth-provider-azure-removed", lambda w: {"auth-provider": {"name": "azure", "config": {}}}),
    U("auth-provider-oidc-valid", lambda w: {"auth-provider": {"name": "oidc", "config": {
        "client-id": "k", "id-token": OIDC_VALID, "idp-issuer-url": f"https://127.0.0.1:{w.dead.port}"}}}),
    U("auth-provider-oidc-expired", lambda w: {"auth-provider": {"name": "oidc", "config": {
        "client-id": "k", "id-token": OIDC_EXPIRED, "refresh-token": "r",
        "idp-issuer-url": f"https://127.0.0.1:{w.dead.port}"}}}),
    # -- impersonation ---------------------------------------------------------------------------------------------
    U("impersonate-as", lambda w: w.user(**{"as": "jane"})),
    U("impersonate-as-groups", lambda w: w.user(**{"as": "jane", "as-groups": ["ml-admins", "viewers"]})),
    U("impersonate-as-uid", lambda w: w.user(**{"as": "jane", "as-uid": "u-42"})),
    U("impersonate-as-user-extra", lambda w: w.user(**{"as": "jane", "as-user-extra": {"scopes": ["view"]}})),
    U("impersonate-as-groups-without-as", lambda w: w.user(**{"as-groups": ["ml-admins"]})),
    V("impersonate-flag-as", args=lambda w: ["--as", "jim"]),
    V("impersonate-flag-as-groups", args=lambda w: ["--as", "jim", "--as-group", "a", "--as-group", "b"]),
    V("impersonate-flag-as-uid", args=lambda w: ["--as", "jim", "--as-uid", "u-7"]),
    V("impersonate-flag-as-group-without-as", args=lambda w: ["--as-group", "a"]),
    U("impersonate-flag-as-over-kubeconfig", lambda w: w.user(**{"as": "jane", "as-groups": ["g"]}),
      args=lambda w: ["--as", "jim"]),
    # -- proxies -----------------------------------------------------------------------------------------------------
    C("proxy-url-http", proxy_url=lambda w: w.proxy("connect")),
    C("proxy-url-http-credentials", proxy_url=lambda w: w.proxy("connect-auth", "puser", "pp@ss")),
    C("proxy-url-http-missing-credentials", proxy_url=lambda w: w.proxy("connect-auth")),
    C("proxy-url-https", proxy_url=lambda w: w.proxy("https")),
    C("proxy-url-socks5", proxy_url=lambda w: w.proxy("socks")),
    C("proxy-url-socks5-credentials", proxy_url=lambda w: w.proxy("socks-auth", "suser", "sp4ss")),
    C("proxy-url-socks5-missing-credentials", proxy_url=lambda w: w.proxy("socks-auth")),
    C("proxy-url-dead", proxy_url=lambda w: w.dead.url()),
    C("proxy-url-unsupported-scheme", proxy_url=lambda w: f"ftp://127.0.0.1:{w.dead.port}"),
    C("proxy-url-to-a-name-only-the-proxy-knows", server=lambda w: w.url(FAKE_NAME),
      proxy_url=lambda w: w.proxy("connect")),
    C("proxy-url-beats-https-proxy-env", proxy_url=lambda w: w.proxy("connect"),
      env=lambda w: {"HTTPS_PROXY": w.dead.url()}),
    V("env-https-proxy-loopback-server", env=lambda w: {"HTTPS_PROXY": w.proxy("connect")}),
    V("env-https-proxy-dead-loopback-server", env=lambda w: {"HTTPS_PROXY": w.dead.url()}),
    C("env-https-proxy", server=lambda w: w.url(FAKE_NAME), env=lambda w: {"HTTPS_PROXY": w.proxy("connect")}),
    C("env-https-proxy-lower-case", server=lambda w: w.url(FAKE_NAME), env=lambda w: {"https_proxy": w.proxy("connect")}),
    C("env-https-proxy-upper-case-wins", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "https_proxy": w.dead.url()}),
    C("env-https-proxy-dead", server=lambda w: w.url(FAKE_NAME), env=lambda w: {"HTTPS_PROXY": w.dead.url()}),
    C("env-https-proxy-credentials", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect-auth", "puser", "pp@ss")}),
    C("env-https-proxy-is-https", server=lambda w: w.url(FAKE_NAME), env=lambda w: {"HTTPS_PROXY": w.proxy("https")}),
    C("env-https-proxy-socks5", server=lambda w: w.url(FAKE_NAME), env=lambda w: {"HTTPS_PROXY": w.proxy("socks")}),
    C("env-http-proxy-only", server=lambda w: w.url(FAKE_NAME), env=lambda w: {"HTTP_PROXY": w.proxy("connect")}),
    C("env-no-proxy-exact-name", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": FAKE_NAME}),
    C("env-no-proxy-domain-suffix", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": ".gpu.example"}),
    C("env-no-proxy-domain-without-dot", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": "gpu.example"}),
    C("env-no-proxy-other-domain", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": "corp.example,.svc"}),
    C("env-no-proxy-star", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": "*"}),
    C("env-no-proxy-name-and-port", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": f"{FAKE_NAME}:{w.port}"}),
    C("env-no-proxy-name-other-port", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": f"{FAKE_NAME}:1"}),
    C("env-no-proxy-cidr-for-a-name", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": "10.0.0.0/8"}),
    V("env-no-proxy-loopback-cidr", env=lambda w: {"HTTPS_PROXY": w.dead.url(), "NO_PROXY": "127.0.0.0/8"}),
    C("env-no-proxy-lower-case", server=lambda w: w.url(FAKE_NAME),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "no_proxy": FAKE_NAME}),
    C("env-https-proxy-localhost-server", server=lambda w: w.url("localhost"),
      env=lambda w: {"HTTPS_PROXY": w.dead.url()}),
    # The server by a name that resolves to 127.0.0.1 but is not loopback to Go's proxy rules: direct works too.
    C("alias-direct", server=lambda w: w.url(ALIAS), marks=(needs_alias,)),
    C("alias-env-https-proxy", server=lambda w: w.url(ALIAS), env=lambda w: {"HTTPS_PROXY": w.proxy("connect")},
      marks=(needs_alias,)),
    C("alias-env-https-proxy-dead", server=lambda w: w.url(ALIAS), env=lambda w: {"HTTPS_PROXY": w.dead.url()},
      marks=(needs_alias,)),
    C("alias-env-https-proxy-socks5", server=lambda w: w.url(ALIAS), env=lambda w: {"https_proxy": w.proxy("socks")},
      marks=(needs_alias,)),
    C("alias-env-http-proxy-dead-not-used-for-https", server=lambda w: w.url(ALIAS),
      env=lambda w: {"HTTP_PROXY": w.dead.url()}, marks=(needs_alias,)),
    C("alias-env-no-proxy-bypasses-dead-proxy", server=lambda w: w.url(ALIAS),
      env=lambda w: {"HTTPS_PROXY": w.dead.url(), "NO_PROXY": f"example.com,{ALIAS}"}, marks=(needs_alias,)),
    C("alias-env-no-proxy-star", server=lambda w: w.url(ALIAS),
      env=lambda w: {"HTTPS_PROXY": w.dead.url(), "NO_PROXY": "*"}, marks=(needs_alias,)),
    C("alias-env-no-proxy-with-port", server=lambda w: w.url(ALIAS),
      env=lambda w: {"HTTPS_PROXY": w.dead.url(), "no_proxy": f"{ALIAS}:{w.port}"}, marks=(needs_alias,)),
    V("alias-plain-http-via-env-http-proxy", lambda w: w.config(w.cluster(server=w.plain_url.replace("127.0.0.1", ALIAS))),
      env=lambda w: {"HTTP_PROXY": w.proxy("connect")}, marks=(needs_alias,)),
    C("alias-env-no-proxy-cidr-does-not-match-a-name", server=lambda w: w.url(ALIAS),
      env=lambda w: {"HTTPS_PROXY": w.proxy("connect"), "NO_PROXY": "127.0.0.0/8"}, marks=(needs_alias,)),
    # -- merges: KUBECONFIG lists, contexts ------------------------------------------------------------------------
    V("merge-first-file-wins", lambda w: Files([w.config(), w.config(w.cluster(server=w.dead.url("https")),
                                                                     w.user(token="bad"))])),
    V("merge-first-file-broken-wins", lambda w: Files([w.config(w.cluster(server=w.dead.url("https"))),
                                                       w.config()])),
    V("merge-missing-files-skipped", lambda w: Files([None, w.config(), None])),
    V("merge-current-context-from-second-file", lambda w: Files([w.config(current=None),
                                                                 {"apiVersion": "v1", "kind": "Config",
                                                                  "current-context": "main"}])),
    V("merge-user-from-second-file", lambda w: Files([
        {**w.config(), "users": []}, {"apiVersion": "v1", "kind": "Config", "users": [
            {"name": "main", "user": {"token": "file-t0ken"}}]}])),
    V("merge-all-files-missing", lambda w: Files([None, None])),
    V("kubeconfig-flag-missing-file", lambda w: None, args=lambda w: ["--kubeconfig", str(w.tmp / "missing.yaml")]),
    V("current-context-missing", lambda w: w.config(current="nowhere")),
    V("context-names-missing-cluster", lambda w: w.config(context={"cluster": "gone"})),
    V("context-names-missing-user", lambda w: w.config(context={"user": "gone"})),
    # -- kubectl's global flags --------------------------------------------------------------------------------------
    V("flag-server-token-ca-without-kubeconfig", lambda w: None,
      args=lambda w: ["--server", w.srv.url, "--token", w.srv.token, "--certificate-authority", w.srv.ca_file]),
    V("flag-token-over-kubeconfig", args=lambda w: ["--token", "override-t0ken"]),
    V("flag-server-over-kubeconfig", lambda w: w.config(w.cluster(server=w.dead.url("https"))),
      args=lambda w: ["--server", w.srv.url]),
    V("flag-server-plain-http", args=lambda w: ["--server", w.plain_url]),
    V("flag-context", lambda w: w.config(current="broken", extra={
        "contexts": [{"name": "broken", "context": {"cluster": "main", "user": "nobody"}}]}),
      args=lambda w: ["--context", "main"]),
    V("flag-cluster-and-user", lambda w: w.config(current="broken", extra={
        "clusters": [{"name": "dead", "cluster": {"server": w.dead.url("https")}}],
        "users": [{"name": "bad", "user": {"token": "bad"}}],
        "contexts": [{"name": "broken", "context": {"cluster": "dead", "user": "bad"}}]}),
      args=lambda w: ["--cluster", "main", "--user", "main"]),
    V("flag-user-missing", args=lambda w: ["--user", "nobody"]),
    V("flag-client-certificate-and-key", lambda w: w.config(user={}),
      args=lambda w: ["--client-certificate", w.cert, "--client-key", w.key]),
    V("flag-username-password", lambda w: w.config(user={}), args=lambda w: ["--username", "bob", "--password", "b0b-pw"],
      secrets=("b0b-pw",)),
    V("flag-disable-compression", args=lambda w: ["--disable-compression"]),
    V("flag-cache-dir", args=lambda w: ["--cache-dir", str(w.tmp / "cache")]),
    V("flag-verbosity-6", args=lambda w: ["-v=6"]),
    V("flag-request-timeout", args=lambda w: ["--request-timeout", "20s"]),
    # -- server behaviour ----------------------------------------------------------------------------------------------
    V("server-429-retry-after-then-ok", setup=lambda w: w.srv.fail("pods", 429, name=POD, retry_after=1, times=1)),
    V("server-503-retry-after-then-ok", setup=lambda w: w.srv.fail("pods", 503, name=POD, retry_after=1, times=1)),
    V("server-500-on-the-pod", setup=lambda w: w.srv.fail("pods", 500, name=POD)),
    V("server-403-on-the-pod", setup=lambda w: w.srv.forbid("pods", name=POD)),
    V("server-slow-body-beyond-request-timeout", args=lambda w: ["--request-timeout", "2s"],
      setup=lambda w: w.srv.drip("pods", 0.5, name=POD), timeout=7),
    V("server-gzip-body", setup=lambda w: w.srv.encode("pods", "gzip")),
    V("server-corrupt-gzip-body", setup=lambda w: w.srv.encode("pods", "corrupt-gzip", name=POD)),
    V("server-gzip-body-unasked", setup=lambda w: w.srv.encode("pods", "gzip-always", name=POD)),
    V("server-gzip-with-disable-compression", lambda w: w.config(w.cluster(**{"disable-compression": True})),
      setup=lambda w: w.srv.encode("pods", "corrupt-gzip", name=POD)),
]
# kubeconfig-only differences that hold as plain YAML text (quoted or odd scalars a dict cannot express).
VARIANTS += [
    V("yaml-insecure-quoted-true", lambda w: yaml.safe_dump(w.config(w.cluster(**{"certificate-authority": DROP})))
      .replace("server:", "insecure-skip-tls-verify: 'true'\n    server:")),
    V("yaml-flow-style-kubeconfig", lambda w: json.dumps(w.config())),
]


# -- running both and comparing -----------------------------------------------------------------------------------

Outcome = namedtuple("Outcome", "rc stdout stderr ok who via creds plain_creds seconds requests")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("parity"))
    yield w
    w.stop()


def _materialize(w, v: Variant):
    """(extra args, extra env) that make the variant's kubeconfig the one both commands read."""
    doc = v.kubeconfig(w)
    if doc is None:
        return [], {}
    if isinstance(doc, Files):
        paths = [w.write(d) if d is not None else str(w.tmp / f"missing-{i}.yaml") for i, d in enumerate(doc)]
        return [], {"KUBECONFIG": os.pathsep.join(paths)}
    return ["--kubeconfig", w.write(doc)], {}


def _run(w, v: Variant, command: list, env: dict) -> Outcome:
    w.reset()
    if v.setup:
        v.setup(w)
    start = time.monotonic()
    try:
        # a new session: no controlling terminal, so nothing can stop at a passphrase prompt on /dev/tty
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=v.timeout,
                              stdin=subprocess.DEVNULL, start_new_session=True)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", str(e.stdout or ""), str(e.stderr or "")
    seconds = time.monotonic() - start
    time.sleep(0.05)  # let the server record a request whose client already gave up
    requests = list(w.srv.requests)
    who = sorted({(r.user, r.groups, r.impersonate_user, r.impersonate_groups, r.impersonate_uid,
                   r.impersonate_extra, r.listener) for r in requests if r.user})
    via = sorted({(name, rec.user) for name, p in w.proxies.items() for rec in p.records if rec.ok})
    creds = sorted({c for r in requests for c in r.credentials})
    plain = sorted({c for r in requests if r.listener == "plain" for c in r.credentials})
    proxy_leak = [rec for p in w.proxies.values() for rec in p.records if rec.authorization]
    if proxy_leak:
        plain.append("authorization-to-proxy")
    return Outcome(rc, out, err, None, who, via, creds, plain, seconds, len(requests))


def run_kubectl(w, v):
    args, env = _materialize(w, v)
    extra = list(v.args(w)) if v.args else []
    o = _run(w, v, [KUBECTL, *args, "get", "pod", POD, "-n", NS, "-o", "name", *extra], w.env({**env, **(v.env(w) if v.env else {})}))
    return o._replace(ok=o.rc == 0 and o.stdout.strip() == f"pod/{POD}")


def run_gpudoctor(w, v):
    args, env = _materialize(w, v)
    extra = list(v.args(w)) if v.args else []
    o = _run(w, v, [plugin_path(), POD, "-n", NS, "-o", "json", *args, *extra],
             w.env({**env, **(v.env(w) if v.env else {})}))
    try:
        doc = json.loads(o.stdout) if o.rc in (0, 1) else None
    except ValueError:
        doc = None
    return o._replace(ok=bool(doc) and doc.get("kind") == "PodDiagnosis"
                      and (doc.get("target") or {}).get("name") == POD)


def _describe(o: Outcome) -> str:
    return (f"rc={o.rc} ok={o.ok} who={o.who} via={o.via} creds={o.creds} requests={o.requests} {o.seconds:.1f}s\n"
            f"    stderr: {o.stderr.strip()[:600]}")


def _log(v: Variant, k: Outcome, p: Outcome) -> None:
    """With GPUDOCTOR_PARITY_LOG=<file>, one JSON line per variant: what each command did (for reviewing)."""
    path = os.environ.get("GPUDOCTOR_PARITY_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"variant": v.name, **{name: {**o._asdict(), "stdout": o.stdout[:200]}
                                                      for name, o in (("kubectl", k), ("gpudoctor", p))}}) + "\n")


def assert_agree(v: Variant, k: Outcome, p: Outcome) -> None:
    story = f"\nkubectl:    {_describe(k)}\ngpudoctor:  {_describe(p)}"
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, story
    assert not p.plain_creds, f"credential sent in the clear: {p.plain_creds}{story}"
    if not k.creds:
        assert not p.creds, f"credential sent where kubectl sent none: {p.creds}{story}"
    if not k.requests:  # kubectl refused before any request reached the server: so must the plugin
        assert not p.requests, f"the plugin reached the server, kubectl never did{story}"
    for secret in v.secrets:
        assert secret not in p.stdout + p.stderr, f"{secret!r} printed{story}"
    if k.ok:
        assert p.ok, f"kubectl works, the plugin does not{story}"
        assert (p.who, p.via) == (k.who, k.via), f"a different identity or route{story}"
    else:
        assert not p.ok, f"kubectl fails, the plugin works{story}"
        assert p.rc in (2, 3), f"exit code{story}"
        # lines kubectl printed too came from a child both ran (an exec plugin's own stderr)
        own = [line for line in p.stderr.strip().splitlines() if line not in k.stderr.splitlines()]
        assert p.stderr.strip() and len(own) <= 1, f"not one line{story}"
        for text in v.says:
            assert text in p.stderr, f"the error does not say {text!r}{story}"


def _param(v: Variant):
    reason = KNOWN_DISAGREEMENTS.get(v.name)
    marks = [*v.marks, *([pytest.mark.xfail(strict=True, reason=f"issue 17: {reason}")] if reason else [])]
    return pytest.param(v, id=v.name, marks=marks)


def test_variant_names_are_unique_and_known_disagreements_exist():
    names = [v.name for v in VARIANTS]
    assert len(names) == len(set(names)) and len(names) >= 90
    assert set(KNOWN_DISAGREEMENTS) <= set(names), set(KNOWN_DISAGREEMENTS) - set(names)


@pytest.mark.parametrize("variant", [_param(v) for v in VARIANTS])
def test_parity(world, variant):
    k = run_kubectl(world, variant)
    p = run_gpudoctor(world, variant)
    _log(variant, k, p)
    assert_agree(variant, k, p)


# -- the harness itself: proxies, identity recording and the agreement rules must be able to fail -------------------

def _outcome(**kw):
    base = dict(rc=0, stdout="", stderr="", ok=True, who=[("alice", ("system:authenticated",), None, (), None, (),
                                                           "https")], via=[], creds=["bearer"], plain_creds=[],
                seconds=0.1, requests=1)
    return Outcome(**{**base, **kw})


@pytest.mark.parametrize("plugin, why", [
    (dict(plain_creds=["bearer"]), "in the clear"),
    (dict(who=[("bob", ("system:authenticated",), None, (), None, (), "https")]), "different identity"),
    (dict(via=[("connect", None)]), "different identity or route"),
    (dict(ok=False, rc=3, stderr="error: x\n"), "kubectl works"),
    (dict(stderr="Traceback (most recent call last):"), "Traceback"),
])
def test_agreement_rules_catch_a_disagreement_when_kubectl_works(plugin, why):
    with pytest.raises(AssertionError, match=why):
        assert_agree(V("x"), _outcome(), _outcome(**plugin))


@pytest.mark.parametrize("plugin, why", [
    (dict(), "kubectl fails, the plugin works"),
    (dict(ok=False, rc=1, stderr="error: x"), "exit code"),
    (dict(ok=False, rc=3, stderr="error: x\nerror: y"), "not one line"),
    (dict(ok=False, rc=3, stderr="error: x", creds=["bearer"], requests=1), "credential sent where kubectl"),
    (dict(ok=False, rc=3, stderr="error: x", creds=[], requests=1), "reached the server"),
    (dict(ok=False, rc=3, stderr=f"error: https://a:{SECRET}@h"), "printed"),
    (dict(ok=False, rc=3, stderr="error: internal error: KeyError"), "internal error"),
])
def test_agreement_rules_catch_a_disagreement_when_kubectl_fails(plugin, why):
    kubectl = _outcome(ok=False, rc=1, stderr="error: refused\n", who=[], creds=[], requests=0)
    with pytest.raises(AssertionError, match=why):
        assert_agree(V("x", secrets=(SECRET,)), kubectl, _outcome(**{"who": [], "creds": [], "requests": 0, **plugin}))
    assert_agree(V("x"), kubectl, _outcome(ok=False, rc=2, stderr="error: refused\n", who=[], creds=[], requests=0))


def test_connect_proxy_requires_its_credentials_and_records_them(world):
    import http.client
    import ssl
    proxy = world.proxies["connect-auth"]
    ctx = ssl.create_default_context(cafile=world.srv.ca_file)
    for cred, expect in ((None, OSError), (("puser", "pp@ss"), None)):
        world.reset()
        conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=ctx, timeout=10)
        headers = {"Proxy-Authorization": "Basic " + base64.b64encode(":".join(cred).encode()).decode()} if cred else {}
        conn.set_tunnel("127.0.0.1", world.port, headers=headers)
        if expect:
            with pytest.raises(expect, match="407"):
                conn.request("GET", "/version")
        else:
            conn.request("GET", f"/api/v1/namespaces/{NS}/pods/{POD}", headers={"Authorization": "Bearer file-t0ken"})
            assert conn.getresponse().status == 200
            assert world.srv.requests[-1].user == "alice" and world.srv.requests[-1].credentials == ("bearer",)
        conn.close()
        assert [(r.target, r.user, r.ok) for r in proxy.records] == [
            (f"127.0.0.1:{world.port}", cred[0] if cred else None, bool(cred))]


def test_socks5_proxy_speaks_rfc1928_and_1929(world):
    proxy = world.proxies["socks-auth"]
    world.reset()
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s:
        s.sendall(b"\x05\x01\x00")               # only "no authentication" offered: refused
        assert s.recv(2) == b"\x05\xff"
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s:
        s.sendall(b"\x05\x01\x02")
        assert s.recv(2) == b"\x05\x02"
        s.sendall(b"\x01\x05suser\x05sp4ss")
        assert s.recv(2) == b"\x01\x00"
        name = FAKE_NAME.encode()
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + world.port.to_bytes(2, "big"))
        assert s.recv(10)[:2] == b"\x05\x00"
    assert proxy.records[-1].target == f"{FAKE_NAME}:{world.port}" and proxy.records[-1].ok


def test_server_records_client_certificate_and_impersonation(world):
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile=world.srv.ca_file)
    ctx.load_cert_chain(world.cert, world.key)
    world.reset()
    req = urllib.request.Request(f"{world.srv.url}/api/v1/namespaces/{NS}/pods/{POD}", headers={
        "Impersonate-User": "jane", "Impersonate-Group": "g1", "Impersonate-Uid": "u-1",
        "Impersonate-Extra-Scopes": "view"})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        assert resp.status == 200
    r = world.srv.requests[-1]
    assert (r.user, r.groups, r.credentials, r.impersonate_user, r.impersonate_groups, r.impersonate_uid,
            r.impersonate_extra) == ("carol", ("ml-team", "system:authenticated"), ("cert",), "jane", ("g1",),
                                     "u-1", (("scopes", "view"),))
