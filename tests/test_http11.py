"""The transport's HTTP/1.1 against a scripted server: every way an answer's length is told, keep-alive, a closed
kept-alive connection, interim answers, and malformed answers (gaps with a reason, never a hang)."""
import socket
import threading

import pytest

from kubectl_gpudoctor.collect import http11
from kubectl_gpudoctor.collect.transport import Credentials, Transport, Unreachable

STATUS = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}'


class Scripted:
    """A server on loopback: for each accepted connection, the next script — a list of raw answers, each sent
    after one request has arrived (a callable answer is called with the connection, to send as it likes); None
    closes the connection there. `tls=True` serves HTTPS with the fake API server's kind of certificate."""

    def __init__(self, *scripts, tls: bool = False):
        self.scripts, self.requests, self.connections = list(scripts), [], 0
        self.ctx = self.ca_file = self.cert = self.key = None
        if tls:
            import ssl
            import tempfile
            from pathlib import Path

            from tests.apiserver import _make_cert
            cert, key = _make_cert(Path(tempfile.mkdtemp(prefix="scripted-")))
            self.ca_file, self.cert, self.key = str(cert), cert, key
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while self.scripts:
            conn, _ = self.sock.accept()
            self.connections += 1
            script = self.scripts.pop(0)
            if self.ctx is not None:
                try:
                    conn = self.ctx.wrap_socket(conn, server_side=True)
                except OSError:
                    continue
            with conn:
                buf = b""
                for answer in script:
                    while b"\r\n\r\n" not in buf:
                        data = conn.recv(65536)
                        if not data:
                            return
                        buf += data
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    self.requests.append(head.decode())
                    if answer is None:
                        break
                    try:
                        answer(conn) if callable(answer) else conn.sendall(answer)
                    except OSError:   # the client gave up (a timeout test)
                        return

    def transport(self, timeout=5, **creds):
        scheme = "https" if self.ctx else "http"
        if self.ctx:
            creds.setdefault("ca_file", self.ca_file)
        return Transport(Credentials(server=f"{scheme}://127.0.0.1:{self.port}", **creds), timeout=timeout, env={})


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra + \
        b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_content_length_and_keep_alive_reuse_one_connection():
    srv = Scripted([ok(b'{"a":1}'), ok(b'{"b":2}')])
    t = srv.transport(authorization="Bearer abc")
    assert t.get("/api/v1/pods", {"fieldSelector": "spec.nodeName=n1"}) == (200, b'{"a":1}')
    assert t.get("/api/v1/nodes") == (200, b'{"b":2}')
    assert srv.connections == 1
    first = srv.requests[0].split("\r\n")
    assert first[0] == "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1 HTTP/1.1"
    assert f"Host: 127.0.0.1:{srv.port}" in first and "Accept: application/json" in first
    assert "Accept-Encoding: gzip" in first   # as kubectl asks, unless disable-compression
    assert not any(h.startswith("Authorization") for h in first), "no credentials over plain HTTP, as kubectl"


def test_chunked_body_with_extensions_and_trailers():
    """kube-apiserver (Go net/http) chunks every answer it does not size in advance: large lists, logs."""
    answer = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"7;ext=1\r\n{\"items\r\n" b"A\r\n\":[1,2,3]}\r\n" b"0\r\nX-Trailer: t\r\n\r\n")
    srv = Scripted([answer, ok(b"{}")])
    t = srv.transport()
    assert t.get("/api/v1/pods") == (200, b'{"items":[1,2,3]}')
    assert t.get("/api/v1/pods") == (200, b"{}")   # the connection stayed in step after the trailer
    assert srv.connections == 1


@pytest.mark.parametrize("answer, body", [
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nlog line 1\nlog line 2\n", b"log line 1\nlog line 2\n"),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", b"{}"),            # HTTP/1.0 closes unless keep-alive
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", b"{}"),
])
def test_answers_that_end_with_the_connection(answer, body):
    srv = Scripted([answer], [ok(b'{"next":1}')])
    t = srv.transport()
    assert t.get("/x") == (200, body)
    assert t.get("/y") == (200, b'{"next":1}') and srv.connections == 2, "a closing answer's connection is not reused"


def test_no_content_and_error_statuses_keep_their_bodies():
    srv = Scripted([b"HTTP/1.1 204 No Content\r\n\r\n", b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n"
                    % len(STATUS) + STATUS])
    t = srv.transport()
    assert t.get("/a") == (204, b"")
    assert t.get("/b") == (404, STATUS)


def test_a_kept_alive_connection_the_server_closed_is_retried_once_on_a_new_one():
    srv = Scripted([ok(b"{}"), None], [ok(b'{"again":1}')])
    t = srv.transport()
    assert t.get("/a") == (200, b"{}")
    assert t.get("/b") == (200, b'{"again":1}')
    assert srv.connections == 2


def test_meanwhile_runs_once_after_the_send_even_when_the_get_is_retried():
    """The pod diagnosis starts its other work once the pod's GET is sent: a GET retried on a new connection (its
    kept-alive one was closed after the send) must not start that work twice."""
    srv = Scripted([ok(b"{}"), None], [ok(b'{"again":1}')])
    t = srv.transport()
    calls = []
    assert t.get("/a", meanwhile=lambda: calls.append("/a")) == (200, b"{}")
    assert t.get("/b", meanwhile=lambda: calls.append("/b")) == (200, b'{"again":1}')
    assert calls == ["/a", "/b"] and srv.connections == 2


@pytest.mark.parametrize("answer, reason", [
    (b"SSH-2.0-OpenSSH_9.6\r\n", "not an HTTP/1.x answer"),
    (b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 101 + b"\r\n", "more than 100 header lines"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"short\":", "closed after 9 of 100 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nabc", "invalid chunk size"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\n{}", "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70000 + b"\r\n\r\n", "longer than 64 KiB"),
    (b"", "closed the connection without answering"),
])
def test_malformed_answers_are_unreachable_with_a_reason(answer, reason):
    srv = Scripted([answer] if answer else [None])   # the server closes after its answer
    with pytest.raises(Unreachable, match=reason):
        srv.transport().get("/api/v1/pods")


@pytest.mark.parametrize("host, port, default, expected", [
    ("10.0.0.1", 6443, 443, "10.0.0.1:6443"), ("api.example", 443, 443, "api.example"),
    ("::1", 6443, 443, "[::1]:6443")])
def test_host_header(host, port, default, expected):
    assert http11.host_header(host, port, default) == expected


def test_no_header_can_smuggle_another_in():
    with pytest.raises(ValueError):
        http11.request("GET", "/", [("Authorization", "Bearer x\r\nImpersonate-User: admin")])


def test_sizes_in_messages_are_whole_units():
    from kubectl_gpudoctor.collect.http11 import MAX_BODY, size_text
    assert [size_text(n) for n in (0, 1023, 1024, 2047, (1 << 20) - 1, 1 << 20, 16 << 20, MAX_BODY)] == \
        ["0 bytes", "1023 bytes", "1 KiB", "1 KiB", "1023 KiB", "1 MiB", "16 MiB", "256 MiB"]
