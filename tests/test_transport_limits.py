"""The transport's bounds against scripted servers on loopback: --request-timeout ends a whole request (a body
dripped byte by byte included), answers are bounded in size (an endless chunked body, a gzip bomb), gzip is asked
for as kubectl asks and a corrupt one is a one-line error, and 429/5xx with Retry-After are retried as client-go
retries them (count and time bounded)."""
import gzip
import time

import pytest

from kubectl_gpudoctor.collect import http11
from kubectl_gpudoctor.collect.api import Api
from kubectl_gpudoctor.collect.transport import MAX_RETRIES, Timeout, Unreachable
from tests.test_http11 import Scripted, ok


def drip(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        conn.sendall(b"x")
        time.sleep(0.1)


@pytest.mark.parametrize("tls", [False, True])
def test_the_request_timeout_bounds_a_dripped_body(tls):
    """kubectl --request-timeout 3s ends such a body in ~3.6 s; each byte within the socket timeout once kept a
    GET alive for minutes."""
    srv = Scripted([drip], tls=tls)
    start = time.monotonic()
    with pytest.raises(Timeout, match="within 1s"):
        srv.transport(timeout=1).get("/api/v1/nodes")
    assert time.monotonic() - start < 5


def endless_chunks(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (65536, b"{" * 65536)
    while True:
        conn.sendall(chunk)


def test_an_endless_chunked_body_ends_at_the_size_bound():
    srv = Scripted([endless_chunks])
    with pytest.raises(Unreachable, match="larger than 1 MiB"):
        srv.transport().get("/api/v1/pods", limit=1 << 20)


def test_a_declared_length_over_the_bound_is_refused_before_reading():
    srv = Scripted([b"HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n{"])
    with pytest.raises(Unreachable, match=f"larger than {http11.MAX_BODY >> 20} MiB"):
        srv.transport().get("/api/v1/nodes")


def test_a_body_until_close_is_bounded_too():
    srv = Scripted([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"a" * 3000])
    with pytest.raises(Unreachable, match="larger than"):
        srv.transport().get("/x", limit=2048)


def gz(body: bytes, extra: bytes = b"") -> bytes:
    return ok(body, b"Content-Encoding: gzip\r\n" + extra)


def test_gzip_is_asked_for_and_decoded():
    doc = b'{"kind":"NodeList","items":[' + b",".join([b'{"metadata":{"name":"n"}}'] * 500) + b"]}"
    srv = Scripted([gz(gzip.compress(doc))])
    assert srv.transport().get("/api/v1/nodes") == (200, doc)
    assert "Accept-Encoding: gzip" in srv.requests[0].split("\r\n")


def test_disable_compression_asks_for_identity():
    srv = Scripted([ok(b"{}")])
    assert srv.transport(disable_compression=True).get("/x") == (200, b"{}")
    assert "Accept-Encoding: identity" in srv.requests[0].split("\r\n")


@pytest.mark.parametrize("body, reason", [
    (b"\x1f\x8b\x08\x00garbage-not-deflate", "does not decompress"),
    (gzip.compress(b'{"items":[]}')[:-12], "cut short"),
])
def test_a_corrupt_gzip_body_is_a_one_line_error(body, reason):
    srv = Scripted([gz(body)])
    with pytest.raises(Unreachable, match=reason):
        srv.transport().get("/api/v1/pods")


def test_a_gzip_bomb_is_bounded_once_decompressed():
    bomb = gzip.compress(b"\0" * (4 << 20))   # ~4 KiB on the wire
    srv = Scripted([gz(bomb)])
    with pytest.raises(Unreachable, match="larger than 1 MiB once decompressed"):
        srv.transport().get("/api/v1/pods", limit=1 << 20)


def test_a_corrupt_gzip_list_becomes_a_gap_with_one_line():
    srv = Scripted([gz(b"\x1f\x8bnot gzip at all")])
    resp = Api(srv.transport(), 5).get("/api/v1/nodes")
    assert resp.reason == "unreachable" and "\n" not in resp.message and "gzip" in resp.message


def answer(status: int, retry_after=None) -> bytes:
    extra = b"Retry-After: %s\r\n" % retry_after.encode() if retry_after is not None else b""
    body = b'{"kind":"Status","code":%d}' % status
    return b"HTTP/1.1 %d X\r\n%sContent-Length: %d\r\n\r\n%s" % (status, extra, len(body), body)


@pytest.mark.parametrize("status", [429, 503, 500, 504])
def test_retry_after_is_retried_like_client_go(status):
    srv = Scripted([answer(status, "0"), answer(status, "0"), ok(b'{"kind":"PodList"}')])
    assert srv.transport().get("/api/v1/pods") == (200, b'{"kind":"PodList"}')
    assert len(srv.requests) == 3


def test_retries_are_bounded_in_count():
    srv = Scripted([answer(429, "0")] * (MAX_RETRIES + 5))
    status, _ = srv.transport().get("/api/v1/pods")
    assert status == 429 and len(srv.requests) == MAX_RETRIES + 1


@pytest.mark.parametrize("status, retry_after", [(429, None), (503, None), (503, "Wed, 21 Oct 2015 07:28:00 GMT"),
                                                 (404, "0"), (409, "1")])
def test_what_client_go_does_not_retry(status, retry_after):
    """client-go retries only 429 and 5xx, and only with an integer Retry-After."""
    srv = Scripted([answer(status, retry_after), ok(b"{}")])
    assert srv.transport().get("/x")[0] == status
    assert len(srv.requests) == 1


def test_a_wait_beyond_the_request_timeout_is_not_waited():
    """client-go's retries run inside the request's context: a Retry-After longer than the time left ends it."""
    srv = Scripted([answer(429, "30"), ok(b"{}")])
    start = time.monotonic()
    assert srv.transport(timeout=2).get("/x")[0] == 429
    assert time.monotonic() - start < 2 and len(srv.requests) == 1


def test_a_retried_request_waits_what_retry_after_says():
    srv = Scripted([answer(503, "1"), ok(b'{"ok":1}')])
    start = time.monotonic()
    assert srv.transport(timeout=5).get("/x") == (200, b'{"ok":1}')
    assert time.monotonic() - start >= 1


def test_a_log_answer_has_its_own_smaller_bound(monkeypatch):
    """Logs are asked for with limitBytes; a server that ignores it still cannot send more than LOG_BODY."""
    from kubectl_gpudoctor.collect import api
    monkeypatch.setattr(api, "LOG_BODY", 1024)
    srv = Scripted([b"HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n" + b"l" * 4096, ok(b"x" * 4096)])
    client = Api(srv.transport(), 5)
    resp = client.get("/api/v1/namespaces/ml/pods/p/log", {"limitBytes": "262144"}, text=True)
    assert resp.reason == "unreachable" and "larger than" in resp.message


@pytest.mark.parametrize("via_proxy", [False, True])
def test_a_server_that_never_finishes_the_tls_handshake_times_out(via_proxy):
    """The listen backlog accepts the TCP connection; nothing ever answers the ClientHello."""
    import socket

    from kubectl_gpudoctor.collect.transport import Credentials, Transport
    from tests.test_transport_proxy import ConnectProxy
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    creds = Credentials(server=f"https://127.0.0.1:{port}", authorization="Bearer tok")
    if via_proxy:
        creds.proxy_url = f"http://127.0.0.1:{ConnectProxy(port).port}"
    start = time.monotonic()
    with pytest.raises(Timeout):
        Transport(creds, timeout=1, env={}).get("/api/v1/pods")
    assert time.monotonic() - start < 5
    silent.close()
