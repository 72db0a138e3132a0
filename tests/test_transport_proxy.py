"""Proxies as kubectl uses them (client-go over Go's net/http): proxy-url with http and socks5 schemes and
credentials, HTTPS_PROXY/HTTP_PROXY/NO_PROXY with golang.org/x/net/http/httpproxy's rules, a dead proxy failing
(never bypassed), through minimal CONNECT and SOCKS5 proxies on loopback that send every tunnel to one server."""
import base64
import socket
import struct
import subprocess
import sys
import threading

import pytest

from kubectl_gpudoctor.collect import proxy
from kubectl_gpudoctor.collect.transport import Credentials, Refused, Transport, Unreachable
from tests.conftest import ROOT
from tests.test_http11 import Scripted, ok


def _pipe(a, b):
    def one(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
    threading.Thread(target=one, args=(a, b), daemon=True).start()
    threading.Thread(target=one, args=(b, a), daemon=True).start()


class _Proxy:
    def __init__(self, upstream_port: int, tls=None):
        self.upstream, self.seen, self.tls = upstream_port, [], tls
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            conn, _ = self.sock.accept()
            if self.tls is not None:   # an https:// proxy
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except OSError:
                    continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()


class ConnectProxy(_Proxy):
    """An HTTP proxy: CONNECT tunnels and absolute-form requests, all to the upstream port; records each head."""

    def _one(self, conn):
        head = b""
        while b"\r\n\r\n" not in head:
            data = conn.recv(65536)
            if not data:
                return
            head += data
        head, rest = head.split(b"\r\n\r\n", 1)
        self.seen.append(head.decode())
        up = socket.create_connection(("127.0.0.1", self.upstream))
        if head.startswith(b"CONNECT "):
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up.sendall(head + b"\r\n\r\n" + rest)
        _pipe(conn, up)


class Socks5Proxy(_Proxy):
    """RFC 1928/1929: no authentication or username/password; records (user, host, port) of each CONNECT."""

    def __init__(self, upstream_port: int, auth=None):
        self.auth = auth
        super().__init__(upstream_port)

    def _one(self, conn):
        if not self._handshake(conn):
            conn.close()

    def _handshake(self, conn) -> bool:
        def exactly(n):
            data = b""
            while len(data) < n:
                part = conn.recv(n - len(data))
                if not part:
                    raise OSError("closed")
                data += part
            return data
        try:
            _, n = exactly(2)
            methods = exactly(n)
            user = None
            if self.auth:
                if 2 not in methods:
                    conn.sendall(b"\x05\xff")
                    return False
                conn.sendall(b"\x05\x02")
                _, ulen = exactly(2)
                user = exactly(ulen).decode()
                password = exactly(exactly(1)[0]).decode()
                good = (user, password) == self.auth
                conn.sendall(b"\x01" + (b"\x00" if good else b"\x01"))
                if not good:
                    return False
            else:
                conn.sendall(b"\x05\x00")
            _, cmd, _, atyp = exactly(4)
            host = exactly(exactly(1)[0]).decode() if atyp == 3 else socket.inet_ntoa(exactly(4))
            port = struct.unpack(">H", exactly(2))[0]
            self.seen.append((user, host, port))
            up = socket.create_connection(("127.0.0.1", self.upstream))
            conn.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", port))
            _pipe(conn, up)
            return True
        except OSError:
            return False


# The API server by a name only the proxy can reach; its certificate names localhost (tls-server-name).
REMOTE = "https://api.internal.example:6443"


def remote(srv, **kw) -> Credentials:
    return Credentials(server=REMOTE, authorization="Bearer tok", ca_file=srv.ca_file, tls_server_name="localhost",
                       **kw)


def test_https_proxy_from_the_environment_tunnels_with_connect():
    srv = Scripted([ok(b'{"via":"proxy"}'), ok(b"{}")], tls=True)
    px = ConnectProxy(srv.port)
    t = Transport(remote(srv), timeout=5, env={"HTTPS_PROXY": f"127.0.0.1:{px.port}"})   # no scheme: http://
    assert t.get("/api/v1/pods") == (200, b'{"via":"proxy"}')
    assert t.get("/api/v1/nodes") == (200, b"{}")
    assert px.seen[0].startswith("CONNECT api.internal.example:6443 HTTP/1.")
    assert "Authorization: Bearer tok" in srv.requests[0].split("\r\n"), "the token goes inside the tunnel's TLS"
    assert not any("Bearer" in s for s in px.seen), "the proxy never sees the token"


def test_proxy_url_with_credentials_sends_proxy_authorization():
    srv = Scripted([ok(b"{}")], tls=True)
    px = ConnectProxy(srv.port)
    t = Transport(remote(srv, proxy_url=f"http://alice:pa%40ss@127.0.0.1:{px.port}"), timeout=5, env={})
    assert t.get("/api/v1/pods") == (200, b"{}")
    want = "Proxy-Authorization: Basic " + base64.b64encode(b"alice:pa@ss").decode()
    assert want in px.seen[0].split("\r\n")
    assert not any(h.startswith("Proxy-Authorization") for h in srv.requests[0].split("\r\n"))


def test_plain_http_through_a_proxy_is_an_absolute_form_get_without_credentials():
    srv = Scripted([ok(b"{}")])
    px = ConnectProxy(srv.port)
    t = Transport(Credentials(server="http://api.internal.example:8080", authorization="Bearer tok"), timeout=5,
                  env={"HTTP_PROXY": f"http://127.0.0.1:{px.port}"})
    assert t.get("/api/v1/pods") == (200, b"{}")
    assert px.seen[0].startswith("GET http://api.internal.example:8080/api/v1/pods HTTP/1.1")
    assert "Bearer" not in px.seen[0]


@pytest.mark.parametrize("auth", [None, ("bob", "s3cret")])
def test_socks5_proxy_url(auth):
    srv = Scripted([ok(b'{"via":"socks"}')], tls=True)
    px = Socks5Proxy(srv.port, auth)
    userinfo = f"{auth[0]}:{auth[1]}@" if auth else ""
    t = Transport(remote(srv, proxy_url=f"socks5://{userinfo}127.0.0.1:{px.port}"), timeout=5, env={})
    assert t.get("/api/v1/pods") == (200, b'{"via":"socks"}')
    # the proxy resolves the name, as Go's SOCKS5 dialer asks it to
    assert px.seen == [(auth[0] if auth else None, "api.internal.example", 6443)]
    assert "Authorization: Bearer tok" in srv.requests[0].split("\r\n")


def test_socks5_with_wrong_credentials_is_unreachable():
    srv = Scripted([ok(b"{}")], tls=True)
    px = Socks5Proxy(srv.port, ("bob", "right"))
    t = Transport(remote(srv, proxy_url=f"socks5://bob:wrong@127.0.0.1:{px.port}"), timeout=5, env={})
    with pytest.raises(Unreachable) as caught:
        t.get("/api/v1/pods")
    assert "wrong" not in str(caught.value) and srv.requests == []


def dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("how", ["env", "proxy-url", "socks5"])
def test_a_dead_proxy_fails_and_is_never_bypassed(how):
    srv = Scripted([ok(b"{}")], tls=True)
    port = dead_port()
    creds = Credentials(server=f"https://localhost:{srv.port}", authorization="Bearer tok", ca_file=srv.ca_file)
    env = {}
    if how == "env":
        creds.server = f"https://api.internal.example:{srv.port}"
        creds.tls_server_name = "localhost"
        env = {"HTTPS_PROXY": f"http://127.0.0.1:{port}"}
    else:   # proxy-url applies even to a loopback server (client-go sets http.ProxyURL)
        creds.proxy_url = f"{'socks5' if how == 'socks5' else 'http'}://u:S3CRET@127.0.0.1:{port}"
    with pytest.raises(Unreachable) as caught:
        Transport(creds, timeout=3, env=env).get("/api/v1/pods")
    assert "S3CRET" not in str(caught.value)
    assert srv.connections == 0


def test_environment_proxies_skip_loopback_and_no_proxy():
    srv = Scripted([ok(b'{"direct":1}')], tls=True)
    port = dead_port()   # a proxy that would fail: a direct connection is the only way to succeed
    creds = Credentials(server=f"https://127.0.0.1:{srv.port}", authorization="Bearer tok", ca_file=srv.ca_file)
    assert Transport(creds, timeout=3, env={"HTTPS_PROXY": f"http://127.0.0.1:{port}"}).get("/x")[0] == 200
    srv2 = Scripted([ok(b"{}")], tls=True)
    creds = Credentials(server=f"https://localhost:{srv2.port}", ca_file=srv2.ca_file)
    t = Transport(creds, timeout=3, env={"https_proxy": f"http://127.0.0.1:{port}", "NO_PROXY": "example.com"})
    assert t.get("/x")[0] == 200 and t.library is None


def test_an_unsupported_proxy_url_scheme_is_refused():
    with pytest.raises(Refused, match='unsupported scheme "ftp", must be http, https, or socks5'):
        Transport(Credentials(server="https://10.0.0.1", proxy_url="ftp://u:S3CRET@proxy:21"), timeout=1, env={})


@pytest.mark.parametrize("env, scheme, expected", [
    ({"HTTPS_PROXY": "http://up:1", "https_proxy": "http://low:1"}, "https", "http://up:1"),   # upper case first
    ({"HTTPS_PROXY": "", "https_proxy": "http://low:1"}, "https", "http://low:1"),              # empty is unset
    ({"https_proxy": "low:3128"}, "https", "http://low:3128"),                                  # no scheme: http
    ({"HTTP_PROXY": "http://p:1"}, "https", None),            # an https request uses only HTTPS_PROXY
    ({"HTTP_PROXY": "http://p:1"}, "http", "http://p:1"),
    ({"HTTPS_PROXY": "socks5://p:1080"}, "https", "socks5://p:1080"),
    ({}, "https", None),
])
def test_proxy_from_the_environment(env, scheme, expected):
    assert proxy.choose(None, scheme, "api.example", 6443, env) == expected


@pytest.mark.parametrize("host, port, no_proxy, use", [
    ("localhost", "443", "", False), ("127.0.0.1", "443", "", False), ("::1", "443", "", False),
    ("127.1.2.3", "443", "", False),
    ("api.example.com", "443", "", True),
    ("api.example.com", "443", "*", False),
    ("api.example.com", "443", "example.com", False),          # the name and its subdomains
    ("example.com", "443", "example.com", False),
    ("example.com", "443", ".example.com", True),              # a leading dot: subdomains only
    ("api.example.com", "443", ".example.com", False),
    ("api.example.com", "443", "*.example.com", False),
    ("notexample.com", "443", "example.com", True),
    ("api.example.com", "443", "example.com:6443", True),      # a port narrows the entry
    ("api.example.com", "6443", "example.com:6443", False),
    ("10.1.2.3", "443", "10.0.0.0/8", False), ("11.1.2.3", "443", "10.0.0.0/8", True),
    ("10.1.2.3", "443", "10.1.2.3", False), ("10.1.2.3", "443", "10.1.2.3:6443", True),
    ("10.1.2.3", "443", "example.com, 10.1.2.3:443", False),
    ("10.1.2.3", "443", "10.1.2", True),                       # a domain entry never matches an address
    ("API.Example.COM", "443", " Example.com ", False),        # case and spaces do not matter
    ("fd00::1", "443", "fd00::/8", False), ("fd00::1", "443", "[fd00::1]:443", False),
])
def test_no_proxy_like_go(host, port, no_proxy, use):
    assert proxy.use_proxy(host, port, no_proxy) is use


def test_the_direct_path_imports_no_proxy_machinery():
    code = ("import os, sys; os.environ.pop('HTTPS_PROXY', None); os.environ.pop('https_proxy', None);"
            "os.environ.pop('HTTP_PROXY', None); os.environ.pop('http_proxy', None);"
            "from kubectl_gpudoctor.collect.transport import Credentials, Transport;"
            "Transport(Credentials(server='https://10.0.0.1:6443', insecure=True), 5);"
            "print(sorted(m for m in ('urllib3', 'socks', 'kubectl_gpudoctor.collect.proxy',"
            " 'kubectl_gpudoctor.collect.libtransport') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_request_timeout_bounds_a_dripped_body_through_a_proxy():
    import time

    from kubectl_gpudoctor.collect.transport import Timeout
    from tests.test_transport_limits import drip
    srv = Scripted([drip], tls=True)
    px = ConnectProxy(srv.port)
    start = time.monotonic()
    with pytest.raises(Timeout):
        Transport(remote(srv, proxy_url=f"http://127.0.0.1:{px.port}"), timeout=1, env={}).get("/api/v1/nodes")
    assert time.monotonic() - start < 5


def test_an_endless_body_through_a_proxy_ends_at_the_size_bound():
    from tests.test_transport_limits import endless_chunks
    srv = Scripted([endless_chunks], tls=True)
    px = ConnectProxy(srv.port)
    t = Transport(remote(srv, proxy_url=f"http://127.0.0.1:{px.port}"), timeout=10, env={})
    with pytest.raises(Unreachable, match="larger than 1 MiB"):
        t.get("/api/v1/pods", limit=1 << 20)


def test_retry_after_through_a_proxy():
    from tests.test_transport_limits import answer
    srv = Scripted([answer(429, "0"), ok(b'{"ok":1}')], tls=True)
    px = ConnectProxy(srv.port)
    t = Transport(remote(srv, proxy_url=f"http://127.0.0.1:{px.port}"), timeout=5, env={})
    assert t.get("/x") == (200, b'{"ok":1}') and len(srv.requests) == 2


def test_through_a_proxy_the_server_is_still_verified_before_a_credential_goes_out():
    srv = Scripted([ok(b"{}")], tls=True)
    px = ConnectProxy(srv.port)
    creds = Credentials(server=REMOTE, authorization="Bearer tok", tls_server_name="localhost",
                        proxy_url=f"http://127.0.0.1:{px.port}")   # no CA: the server's certificate is untrusted
    with pytest.raises(Unreachable, match="certificate verify failed|CERTIFICATE_VERIFY_FAILED"):
        Transport(creds, timeout=5, env={}).get("/api/v1/pods")
    assert srv.requests == []


def test_through_a_proxy_the_certificate_must_name_the_server():
    srv = Scripted([ok(b"{}")], tls=True)
    px = ConnectProxy(srv.port)
    creds = Credentials(server=REMOTE, authorization="Bearer tok", ca_file=srv.ca_file,   # names localhost only
                        proxy_url=f"http://127.0.0.1:{px.port}")
    with pytest.raises(Unreachable):
        Transport(creds, timeout=5, env={}).get("/api/v1/pods")
    assert srv.requests == []


def test_insecure_skip_tls_verify_through_a_proxy():
    srv = Scripted([ok(b'{"ok":1}')], tls=True)
    px = ConnectProxy(srv.port)
    creds = Credentials(server=REMOTE, authorization="Bearer tok", insecure=True,
                        proxy_url=f"http://127.0.0.1:{px.port}")
    assert Transport(creds, timeout=5, env={}).get("/x") == (200, b'{"ok":1}')


def test_an_https_proxy_is_verified_with_the_kubeconfigs_authority():
    """Go's transport dials an https:// proxy with the cluster's TLS settings (its CA here)."""
    import ssl
    srv = Scripted([ok(b'{"via":"tls-proxy"}')], tls=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(srv.cert, srv.key)
    px = ConnectProxy(srv.port, tls=ctx)
    t = Transport(remote(srv, proxy_url=f"https://localhost:{px.port}"), timeout=5, env={})
    assert t.get("/api/v1/pods") == (200, b'{"via":"tls-proxy"}')
    assert px.seen[0].startswith("CONNECT api.internal.example:6443")


def test_a_proxy_that_refuses_the_tunnel():
    px = Scripted([b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"])
    creds = Credentials(server=REMOTE, authorization="Bearer tok", proxy_url=f"http://127.0.0.1:{px.port}")
    with pytest.raises(Unreachable, match="407"):
        Transport(creds, timeout=5, env={}).get("/version")
    assert px.requests[0].startswith("CONNECT api.internal.example:6443") and "Bearer" not in px.requests[0]
