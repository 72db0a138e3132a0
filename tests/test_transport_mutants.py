"""Transport decisions pinned where mutation testing found them loose (issue 23), in-process: how long a
Retry-After client-go honours, and a gzip answer whose matches reach back the whole 32 KiB window."""
import gzip
import random

from kubectl_gpudoctor.collect import transport


def test_retry_after_of_up_to_five_digits_is_honoured_and_six_are_not():
    assert transport._retry_after(429, {"retry-after": "99999"}) == 99999
    assert transport._retry_after(503, {"retry-after": " 1 "}) == 1
    assert transport._retry_after(429, {"retry-after": "100000"}) is None
    assert transport._retry_after(429, {"retry-after": "Wed, 04 Dec 2026 19:00:00 GMT"}) is None
    assert transport._retry_after(404, {"retry-after": "1"}) is None and transport._retry_after(500, {}) is None


def test_a_gzip_answer_using_the_whole_window_decodes():
    """kube-apiserver compresses with Go's gzip writer (a 32 KiB window): a list repeating an object 20 KiB back
    must decode whole."""
    rng = random.Random(23)
    pod = bytes(rng.randrange(256) for _ in range(20000))
    body = pod + b'},{"kind":"Pod"' + pod
    assert transport._decoded({"content-encoding": "gzip"}, gzip.compress(body), 1 << 20) == body


def test_a_content_coding_not_asked_for_is_refused_by_name():
    import pytest
    from kubectl_gpudoctor.collect import http11
    with pytest.raises(http11.BadResponse, match="content coding 'zstd'"):
        transport._decoded({"content-encoding": "zstd"}, b"(\xb5/\xfd", 1 << 20)


def test_a_gzip_answer_just_under_the_limit_decodes_and_one_byte_over_does_not():
    import pytest
    from kubectl_gpudoctor.collect import http11
    body = b'{"kind":"PodList","items":[' + b'{"kind":"Pod"},' * 600 + b'{}]}'
    assert transport._decoded({"content-encoding": "gzip"}, gzip.compress(body), len(body)) == body
    with pytest.raises(http11.TooLarge):
        transport._decoded({"content-encoding": "gzip"}, gzip.compress(body), len(body) - 1)


def test_a_server_without_a_port_gets_its_schemes_and_a_bad_port_is_refused():
    import pytest
    assert transport.endpoint("https://api.example.internal") == ("https", "api.example.internal", 443, "")
    assert transport.endpoint("HTTP://api.example.internal/") == ("http", "api.example.internal", 80, "")
    with pytest.raises(transport.Refused, match="invalid port"):
        transport.endpoint("https://api.example.internal:99999")


def test_retry_after_is_for_429_and_5xx_only():
    """client-go: a 429 or any 5xx with an integer Retry-After; a 451 or 499 with one is not retried."""
    assert transport._retry_after(500, {"retry-after": "2"}) == 2
    assert transport._retry_after(451, {"retry-after": "2"}) is None
    assert transport._retry_after(499, {"retry-after": "2"}) is None


def test_a_coding_that_sorts_before_gzip_is_refused_by_name_and_a_long_one_shown_cut():
    import pytest
    from kubectl_gpudoctor.collect import http11
    with pytest.raises(http11.BadResponse, match="content coding 'br'"):
        transport._decoded({"content-encoding": "br"}, b"\x0b\x02\x80", 1 << 20)
    long = "x-vendor-" + "c" * 60
    with pytest.raises(http11.BadResponse) as exc:
        transport._decoded({"content-encoding": long}, b"abc", 1 << 20)
    assert f"content coding {long[:40]!r}," in str(exc.value)


def test_zlib_data_labelled_gzip_is_not_accepted():
    """Content-Encoding: gzip means the gzip format; a zlib (deflate) stream under that label is a bad answer."""
    import pytest
    import zlib
    from kubectl_gpudoctor.collect import http11
    with pytest.raises(http11.BadResponse):
        transport._decoded({"content-encoding": "gzip"}, zlib.compress(b'{"kind":"PodList"}'), 1 << 20)


def test_an_odd_sized_answer_exactly_at_the_limit_decodes(monkeypatch):
    """The decompressor is asked for one byte past the limit and never more: a bomb is never inflated in memory
    beyond that, and an answer of exactly the limit still decodes whole."""
    import zlib
    body = b'{"kind":"Pod","x":"' + b"y" * 980 + b'"}'
    assert len(body) % 2 == 1
    asked = []
    real = zlib.decompressobj

    class Recording:
        def __init__(self, *args):
            self._d = real(*args)

        def decompress(self, data, max_length=0):
            asked.append(max_length)
            return self._d.decompress(data, max_length)

        def __getattr__(self, attr):
            return getattr(self._d, attr)

    monkeypatch.setattr(zlib, "decompressobj", Recording)
    assert transport._decoded({"content-encoding": "gzip"}, gzip.compress(body), len(body)) == body
    assert asked == [len(body) + 1]


class _Sock:
    def __init__(self):
        self.timeouts = []

    def settimeout(self, value):
        self.timeouts.append(value)

    def close(self):
        pass


def test_a_connection_uses_the_requests_time_left_and_a_spare_the_timeout(monkeypatch):
    """A request's connection gets what is left of its deadline for both handshakes; a spare connection (no
    request yet) the whole timeout, and its TLS handshake keeps that timeout."""
    import time
    seen = []

    def connect(address, timeout=None):
        seen.append(timeout)
        return _Sock()

    monkeypatch.setattr(transport.socket, "create_connection", connect)
    t = transport.Transport(transport.Credentials(server="https://api.example.internal:6443", insecure=True), 30,
                            env={})
    monkeypatch.setattr(t.ctx, "wrap_socket", lambda sock, server_hostname=None: sock)
    spare = t._connect(None)
    assert seen == [30] and spare.sock.timeouts == []
    seen.clear()
    conn = t._connect(time.monotonic() + 5)
    assert len(seen) == 1 and 0 < seen[0] <= 5
    assert len(conn.sock.timeouts) == 1 and 0 < conn.sock.timeouts[0] <= seen[0]


def test_the_host_header_names_a_port_only_when_it_is_not_the_schemes_own():
    def host(server):
        return dict(transport.Transport(transport.Credentials(server=server, insecure=True), 30, env={}).headers)["Host"]
    assert host("https://api.example.internal") == "api.example.internal"
    assert host("https://api.example.internal:6443") == "api.example.internal:6443"
    assert host("http://api.example.internal") == "api.example.internal"
    assert host("http://api.example.internal:443") == "api.example.internal:443"
    assert host("https://[fd00::1]:6443") == "[fd00::1]:6443"


def test_a_retry_after_of_seven_digits_is_not_honoured():
    assert transport._retry_after(429, {"retry-after": "1000000"}) is None


def test_an_unreadable_client_certificate_names_openssls_reason(tmp_path):
    import ssl
    import pytest
    cert = tmp_path / "client.crt"
    cert.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    try:
        ssl.create_default_context().load_cert_chain(str(cert), str(cert))
    except ssl.SSLError as exc:
        reason = exc.reason or str(exc)
    with pytest.raises(transport.Refused) as refused:
        transport.tls_context(transport.Credentials(server="https://api.example.internal", cert_file=str(cert),
                                                    key_file=str(cert)))
    assert str(refused.value).endswith(f"({reason})"), (str(refused.value), reason)


def test_a_proxied_server_url_keeps_every_explicit_port():
    """Through a proxy the request line carries the server's URL: its port is written whatever it is, even 1."""
    env = {"HTTPS_PROXY": "http://proxy.corp.example:3128"}
    for server, base in (("https://api.example.internal:1", "https://api.example.internal:1"),
                         ("https://api.example.internal", "https://api.example.internal:443"),
                         ("https://api.example.internal:6443/k8s/", "https://api.example.internal:6443/k8s")):
        t = transport.Transport(transport.Credentials(server=server, insecure=True), 30, env=env)
        assert t.library is not None and t.library.base == base, (server, t.library.base)


def test_a_proxy_from_the_environment_with_a_scheme_kubectl_cannot_use_is_refused_in_one_line():
    import pytest
    with pytest.raises(transport.Refused, match='unsupported scheme "ftp"'):
        transport.Transport(transport.Credentials(server="https://api.example.internal:6443", insecure=True), 30,
                            env={"HTTPS_PROXY": "ftp://proxy.corp.example:21"})
