"""The transport's security invariants against real sockets on loopback: a server URL that is not http(s):// is
refused before any connection (kubectl v1.32 reads those as plain HTTP and sends no credentials), plain http://
carries no credentials, the scheme's case does not matter, a password in a server URL is never printed, and an
encrypted client key fails at once instead of waiting at OpenSSL's passphrase prompt."""
import socket
import subprocess
import sys

import pytest

from kubectl_gpudoctor.collect.transport import Credentials, Refused, Transport, Unreachable, endpoint, mask_url
from tests.conftest import ROOT
from tests.test_http11 import Scripted, ok


class Listener:
    """A port that records whether anything connected to it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def connected(self) -> bool:
        try:
            self.sock.accept()[0].close()
            return True
        except BlockingIOError:
            return False


@pytest.mark.parametrize("server", ["", "127.0.0.1:{port}", "localhost:{port}", "//127.0.0.1:{port}",
                                    "not a url", "ftp://127.0.0.1:{port}", "https://", "https:///api",
                                    "https://a b:{port}"])
def test_a_server_that_is_not_an_http_url_is_refused_before_any_connection(server):
    lst = Listener()
    creds = Credentials(server=server.format(port=lst.port), authorization="Bearer S3CRET-TOKEN")
    with pytest.raises(Refused) as caught:
        Transport(creds, timeout=2, env={}).get("/api/v1/pods")
    assert "S3CRET-TOKEN" not in str(caught.value) and "\n" not in str(caught.value)
    assert not lst.connected(), "a connection was opened for a refused server"


def test_plain_http_gets_no_credentials_but_keeps_impersonation():
    """kubectl v1.32 against an http:// server: no Authorization (token or basic), Impersonate-User still sent."""
    srv = Scripted([ok(b"{}")])
    t = srv.transport(authorization="Bearer S3CRET-TOKEN", headers={"Impersonate-User": ["bob"]})
    assert t.get("/api/v1/pods") == (200, b"{}")
    head = srv.requests[0].split("\r\n")
    assert "Impersonate-User: bob" in head
    assert not any("S3CRET" in h or h.lower().startswith("authorization") for h in head), head


@pytest.mark.parametrize("scheme", ["https", "HTTPS", "Https"])
def test_https_in_any_case_is_tls_with_the_credentials(scheme):
    srv = Scripted([ok(b'{"kind":"Pod"}')], tls=True)
    creds = Credentials(server=f"{scheme}://127.0.0.1:{srv.port}", authorization="Bearer tok", ca_file=srv.ca_file)
    assert Transport(creds, timeout=5, env={}).get("/api/v1/pods") == (200, b'{"kind":"Pod"}')
    assert "Authorization: Bearer tok" in srv.requests[0].split("\r\n")


def test_the_server_is_verified_before_a_credential_goes_out():
    srv = Scripted([ok(b"{}")], tls=True)
    creds = Credentials(server=f"https://127.0.0.1:{srv.port}", authorization="Bearer tok")   # no CA: untrusted
    with pytest.raises(Unreachable, match="certificate verify failed"):
        Transport(creds, timeout=5, env={}).get("/api/v1/pods")
    assert srv.requests == []


@pytest.mark.parametrize("url, shown", [
    ("https://admin:S3CRET@10.0.0.1:6443", "https://admin:xxxxx@10.0.0.1:6443"),
    ("https://admin:S3CRET@api.example/prefix", "https://admin:xxxxx@api.example/prefix"),
    ("https://admin@api.example", "https://admin@api.example"),          # no password: nothing to hide
    ("https://api.example:6443", "https://api.example:6443"),
    ("http://u:p%40ss@proxy:3128", "http://u:xxxxx@proxy:3128"),
])
def test_mask_url(url, shown):
    assert mask_url(url) == shown


def test_a_password_in_the_server_url_is_masked_in_errors():
    lst = Listener()
    lst.sock.close()   # nothing listens: connection refused
    t = Transport(Credentials(server=f"https://admin:S3CRET@127.0.0.1:{lst.port}"), timeout=2, env={})
    with pytest.raises(Unreachable) as caught:
        t.get("/api/v1/pods")
    assert "S3CRET" not in str(caught.value) and "admin:xxxxx@" in str(caught.value)
    assert "S3CRET" not in t.server


def test_upper_case_scheme_and_prefix_are_read_like_kubectl():
    assert endpoint("HTTPS://api.example:6443/k8s/") == ("https", "api.example", 6443, "/k8s")
    assert endpoint("http://10.0.0.1") == ("http", "10.0.0.1", 80, "")


ENCRYPTED_KEY = """
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "user")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256()))
open(sys.argv[1] + "/c.pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(sys.argv[1] + "/k.pem", "wb").write(key.private_bytes(serialization.Encoding.PEM,
    serialization.PrivateFormat.{fmt}, serialization.BestAvailableEncryption(b"passphrase")))
from kubectl_gpudoctor.collect.transport import Credentials, Refused, Transport
try:
    Transport(Credentials(server="https://127.0.0.1:1", cert_file=sys.argv[1] + "/c.pem",
                          key_file=sys.argv[1] + "/k.pem"), timeout=2, env={{}})
except Refused as exc:
    print("REFUSED", exc)
"""


@pytest.mark.parametrize("fmt", ["PKCS8", "TraditionalOpenSSL"])
def test_an_encrypted_client_key_fails_at_once_without_a_prompt(tmp_path, fmt):
    """OpenSSL would read a passphrase from the terminal; with stdin open and silent, a prompt would hang here
    (the timeout is the test's guard, not its measure)."""
    proc = subprocess.run([sys.executable, "-c", ENCRYPTED_KEY.format(fmt=fmt), str(tmp_path)], cwd=ROOT,
                          stdin=subprocess.PIPE, capture_output=True, text=True, timeout=60)
    assert "REFUSED" in proc.stdout and "failed to parse private key" in proc.stdout, proc.stdout + proc.stderr
    assert "passphrase" in proc.stdout.lower() and "Enter PEM pass phrase" not in proc.stderr


def test_the_kubeconfig_path_turns_a_refused_server_into_a_one_line_exit_2_error(tmp_path):
    """kubeconfig.connect builds the Transport; its Refused reaches the command layer as is (a usage error, exit 2)."""
    from kubectl_gpudoctor.collect.kubeconfig import ConnOptions, connect
    from kubectl_gpudoctor.runner import classify
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters:\n- name: c\n  cluster:\n"
                  "    server: 127.0.0.1:6443\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
                  "users:\n- name: u\n  user:\n    token: S3CRET-TOKEN\n")
    with pytest.raises(Refused) as caught:
        connect(ConnOptions(kubeconfig=str(kc)))
    assert "https://" in str(caught.value) and "S3CRET" not in str(caught.value)
    assert classify(caught.value)[0] == 2


@pytest.mark.parametrize("creds", [{"authorization": "Bearer abc\r\nImpersonate-User: admin"},
                                   {"headers": {"Impersonate-User": ["bob\nImpersonate-Group: system:masters"]}}])
def test_a_line_break_in_a_header_value_is_refused_before_any_connection(creds):
    lst = Listener()
    with pytest.raises(Refused, match="line break") as caught:
        Transport(Credentials(server=f"https://127.0.0.1:{lst.port}", **creds), timeout=2, env={})
    assert "abc" not in str(caught.value) and not lst.connected()
