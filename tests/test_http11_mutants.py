"""http11's reading of an answer at its bounds, in-process over a byte stream (no socket: fast enough to run
against every mutant of collect/http11.py): each bound is met exactly and passed by one, each branch of the
status line, headers and the three ways a body's length is told. Answers are worded as kube-apiserver (Go
net/http) writes them."""
import io
import socket
import time

import pytest

from kubectl_gpudoctor.collect import http11
from kubectl_gpudoctor.collect.http11 import MAX_HEADERS, MAX_LINE, BadResponse, TooLarge, read_response

JSON = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"4711"},"items":[]}'


def _read(raw: bytes, limit: int = http11.MAX_BODY):
    stream = io.BufferedReader(io.BytesIO(raw))
    out = read_response(stream, limit)
    return out, stream.read()   # what is left on the connection for the next answer


def _head(*lines: bytes, status: bytes = b"HTTP/1.1 200 OK") -> bytes:
    return b"\r\n".join((status, *lines)) + b"\r\n\r\n"


def test_a_sized_answer_leaves_the_next_one_on_the_connection():
    raw = _head(b"Content-Type: application/json", b"Content-Length: %d" % len(JSON)) + JSON + b"HTTP/1.1 200 OK"
    (status, headers, body, close), rest = _read(raw)
    assert (status, body, close, rest) == (200, JSON, False, b"HTTP/1.1 200 OK")
    assert headers == {"content-type": "application/json", "content-length": str(len(JSON))}


def test_repeated_headers_are_joined_and_lines_without_a_colon_ignored():
    raw = _head(b"Warning: 299 - \"one\"", b"garbage line", b"WARNING:  299 - \"two\"  ", b"Content-Length: 0")
    (_, headers, body, _), _ = _read(raw)
    assert headers["warning"] == '299 - "one", 299 - "two"' and "garbage line" not in headers and body == b""


@pytest.mark.parametrize("connection, version, close", [
    (b"Connection: close", b"HTTP/1.1", True), (b"Connection: Keep-Alive, Close", b"HTTP/1.1", True),
    (b"Connection: keep-alive", b"HTTP/1.1", False), (b"X-Other: close", b"HTTP/1.1", False),
    (b"Connection: keep-alive", b"HTTP/1.0", False), (b"X-Other: 1", b"HTTP/1.0", True),
    (b"Connection: close", b"HTTP/1.0", True)])
def test_whether_the_connection_closes(connection, version, close):
    (_, _, body, will_close), _ = _read(_head(connection, b"Content-Length: 2", status=version + b" 200 OK") + b"{}")
    assert body == b"{}" and will_close is close


@pytest.mark.parametrize("status", [b"100 Continue", b"103 Early Hints", b"199 Whatever"])
def test_interim_answers_are_skipped(status):
    raw = _head(status=b"HTTP/1.1 " + status) + _head(b"Content-Length: 2") + b"{}"
    (code, _, body, _), _ = _read(raw)
    assert (code, body) == (200, b"{}")


@pytest.mark.parametrize("status", [b"200 OK", b"201 Created", b"099 Odd"])
def test_a_final_answer_is_not_skipped(status):
    (code, _, body, _), rest = _read(_head(b"Content-Length: 2", status=b"HTTP/1.1 " + status) + b"{}" + b"more")
    assert code == int(status[:3]) and body == b"{}" and rest == b"more"


@pytest.mark.parametrize("status", [b"204 No Content", b"304 Not Modified"])
def test_no_body_statuses_read_no_body(status):
    (code, _, body, close), rest = _read(_head(b"Content-Length: 5", status=b"HTTP/1.1 " + status) + b"NEXT!")
    assert body == b"" and rest == b"NEXT!" and close is False


def test_a_205_reads_its_declared_body():
    (_, _, body, _), _ = _read(_head(b"Content-Length: 2", status=b"HTTP/1.1 205 Reset Content") + b"{}")
    assert body == b"{}"


def test_a_status_line_without_a_reason_phrase():
    (code, _, body, _), _ = _read(_head(b"Content-Length: 2", status=b"HTTP/1.1 200") + b"{}")
    assert (code, body) == (200, b"{}")
    assert http11._status_line(io.BytesIO(b"HTTP/1.1 404 Not Found Here\r\n")) == ("HTTP/1.1", 404, "Not Found Here")
    assert http11._status_line(io.BytesIO(b"HTTP/1.1 200\r\n")) == ("HTTP/1.1", 200, "")


@pytest.mark.parametrize("line", [b"HTTP/1.1\r\n", b"HTTP/2 200 OK\r\n", b"HTTP/1.1 2000 OK\r\n", b"HTTP/1.1 20 OK\r\n",
                                  b"HTTP/1.1 2x0 OK\r\n", b"ICY 200 OK\r\n", b"\r\n"])
def test_status_lines_that_are_not_http_1(line):
    with pytest.raises(BadResponse, match="not an HTTP/1.x answer"):
        read_response(io.BytesIO(line + b"Content-Length: 0\r\n\r\n"))


def test_an_empty_answer_is_a_closed_connection():
    with pytest.raises(ConnectionResetError):
        read_response(io.BytesIO(b""))


def test_a_line_of_exactly_the_bound_is_read_and_one_byte_more_is_not():
    fill = MAX_LINE - len(b"X-Fill: \r\n")
    (_, headers, _, _), _ = _read(_head(b"X-Fill: " + b"a" * fill, b"Content-Length: 0"))
    assert len(headers["x-fill"]) == fill
    with pytest.raises(BadResponse, match="longer than 64 KiB"):
        _read(_head(b"X-Fill: " + b"a" * (fill + 1), b"Content-Length: 0"))


def test_exactly_the_header_bound_is_read_and_one_more_is_not():
    lines = [b"X-H%d: v" % i for i in range(MAX_HEADERS - 1)] + [b"Content-Length: 2"]
    (_, headers, body, _), _ = _read(_head(*lines) + b"{}")
    assert len(headers) == MAX_HEADERS and body == b"{}"
    with pytest.raises(BadResponse, match=f"more than {MAX_HEADERS} header lines"):
        _read(_head(b"X-One-More: v", *lines) + b"{}")


@pytest.mark.parametrize("value, length", [(b"2", 2), (b" 2 ", 2), (b"2, 2", 2), (b"02", 2)])
def test_content_length_forms_go_accepts(value, length):
    (_, _, body, _), rest = _read(_head(b"Content-Length: " + value) + b"{}tail")
    assert len(body) == length and rest == b"tail"


@pytest.mark.parametrize("value", [b"2, 3", b"-2", b"", b"0x2", b"2 3"])
def test_content_length_forms_refused(value):
    with pytest.raises(BadResponse, match="invalid Content-Length"):
        _read(_head(b"Content-Length: " + value) + b"{}")


def test_a_declared_length_at_the_limit_is_read_and_one_over_is_refused_before_reading():
    (_, _, body, _), _ = _read(_head(b"Content-Length: 2") + b"{}", limit=2)
    assert body == b"{}"
    with pytest.raises(TooLarge, match="an answer larger than 2 bytes"):
        _read(_head(b"Content-Length: 3") + b"{}x", limit=2)


def test_a_short_body_says_how_much_came():
    with pytest.raises(BadResponse, match="closed after 3 of 5 bytes"):
        _read(_head(b"Content-Length: 5") + b"abc")


def test_a_body_until_close_at_the_limit_and_one_over():
    raw = _head(b"Connection: close") + b"log line\n"
    (_, _, body, close), _ = _read(raw, limit=9)
    assert body == b"log line\n" and close is True
    with pytest.raises(TooLarge, match="larger than 8 bytes"):
        _read(raw, limit=8)


def test_a_body_without_a_length_on_a_kept_alive_connection_ends_with_it():
    (_, _, body, close), _ = _read(_head(b"Content-Type: text/plain") + b"I1204 12:00:00 started\n")
    assert body == b"I1204 12:00:00 started\n" and close is True


def test_transfer_codings_other_than_chunked_last_read_until_close():
    (_, _, body, close), _ = _read(_head(b"Transfer-Encoding: chunked, gzip", b"Content-Length: 2") + b"abcdef")
    assert body == b"abcdef" and close is True
    (_, _, body, close), _ = _read(_head(b"Transfer-Encoding: gzip, Chunked") + b"3\r\nabc\r\n0\r\n\r\nnext")
    assert body == b"abc" and close is False


def test_an_empty_transfer_encoding_is_no_coding():
    (_, _, body, _), rest = _read(_head(b"Transfer-Encoding: ,", b"Content-Length: 2") + b"{}rest")
    assert body == b"{}" and rest == b"rest"


def test_chunked_sizes_in_hex_of_either_case_and_the_stream_after_the_trailer():
    chunks = b"A\r\n0123456789\r\n" b"f\r\n" + b"x" * 15 + b"\r\n" b"1;name=v\r\n!\r\n" b"0\r\nX-T: 1\r\n\r\n"
    (_, _, body, _), rest = _read(_head(b"Transfer-Encoding: chunked") + chunks + b"NEXT")
    assert body == b"0123456789" + b"x" * 15 + b"!" and rest == b"NEXT"


@pytest.mark.parametrize("size", [b"", b"g", b"-1", b"0x5", b"1 2"])
def test_invalid_chunk_sizes(size):
    with pytest.raises(BadResponse, match="invalid chunk size"):
        _read(_head(b"Transfer-Encoding: chunked") + size + b"\r\nabcde\r\n0\r\n\r\n")


def test_chunks_at_the_limit_are_read_and_one_byte_over_is_not():
    chunks = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    (_, _, body, _), _ = _read(_head(b"Transfer-Encoding: chunked") + chunks, limit=5)
    assert body == b"abcde"
    with pytest.raises(TooLarge, match="larger than 4 bytes"):
        _read(_head(b"Transfer-Encoding: chunked") + chunks, limit=4)


def test_a_chunk_cut_short_or_without_its_crlf():
    with pytest.raises(BadResponse, match="closed after 2 of 5 bytes"):
        _read(_head(b"Transfer-Encoding: chunked") + b"5\r\nab")
    with pytest.raises(BadResponse, match="closed after 0 of 2 bytes"):
        _read(_head(b"Transfer-Encoding: chunked") + b"5\r\nabcde")


def test_time_left_until_a_deadline():
    assert http11.time_left(None) is None
    left = http11.time_left(time.monotonic() + 30)
    assert 29 < left <= 30
    with pytest.raises(socket.timeout):
        http11.time_left(time.monotonic() - 0.001)
    with pytest.raises(socket.timeout):
        http11.time_left(time.monotonic())


@pytest.mark.parametrize("name, value", [("X-A\r\nX-B", "v"), ("X-A\n", "v"), ("X-A:", "v"), ("Authorization", "a\rb"),
                                         ("Authorization", "a\nb")])
def test_request_refuses_a_header_that_would_smuggle_another(name, value):
    with pytest.raises(ValueError, match="invalid header"):
        http11.request("GET", "/api", [(name, value)])


def test_request_bytes_as_sent():
    assert http11.request("GET", "/api/v1/pods?limit=500", [("Host", "10.0.0.1:6443"), ("Accept", "application/json")]) \
        == b"GET /api/v1/pods?limit=500 HTTP/1.1\r\nHost: 10.0.0.1:6443\r\nAccept: application/json\r\n\r\n"


def test_host_header_for_a_default_port_and_ipv6():
    assert http11.host_header("fd00::10", 443, 443) == "[fd00::10]"
    assert http11.host_header("api.example", 80, 443) == "api.example:80"


def test_sizes_at_each_unit_boundary():
    assert http11.size_text(1025) == "1 KiB" and http11.size_text((1 << 20) + 1) == "1 MiB"
    assert http11.size_text(3 << 10) == "3 KiB" and http11.size_text(5 << 20) == "5 MiB"


def test_the_line_bound_is_http_clients():
    import http.client
    fill = http.client._MAXLINE - len(b"X-Fill: \r\n")
    (_, headers, _, _), _ = _read(_head(b"X-Fill: " + b"a" * fill, b"Content-Length: 0"))
    assert len(headers["x-fill"]) == fill


def test_time_left_under_a_second_is_still_time():
    left = http11.time_left(time.monotonic() + 0.5)
    assert 0 < left <= 0.5


def test_a_body_longer_than_small_integers_is_read_whole():
    body = b'{"items":[' + b'{"kind":"Pod"},' * 70 + b'{}]}'
    (_, _, got, _), rest = _read(_head(b"Content-Length: %d" % len(body)) + body + b"next")
    assert got == body and rest == b"next"


@pytest.mark.parametrize("coding", [b"br", b"aes128gcm", b"gzip", b"identity"])
def test_any_last_coding_but_chunked_reads_until_close(coding):
    (_, _, body, close), _ = _read(_head(b"Transfer-Encoding: " + coding) + b"3\r\nabc\r\n0\r\n\r\n")
    assert body == b"3\r\nabc\r\n0\r\n\r\n" and close is True


def test_refusals_quote_a_bounded_piece_of_what_came():
    with pytest.raises(BadResponse) as err:
        read_response(io.BytesIO(b"A" * 100 + b"\r\n"))
    assert str(err.value) == f"not an HTTP/1.x answer: {b'A' * 80!r}"
    with pytest.raises(BadResponse) as err:
        _read(_head(b"Content-Length: " + b"9" * 30 + b"x" * 30))
    assert str(err.value) == f"invalid Content-Length: {('9' * 30 + 'x' * 10)!r}"
    with pytest.raises(BadResponse) as err:
        _read(_head(b"Transfer-Encoding: chunked") + b"z" * 60 + b"\r\n")
    assert str(err.value) == f"invalid chunk size: {b'z' * 40!r}"


def test_closing_a_connection_whose_socket_already_failed_says_nothing():
    class Broken:
        def recv_into(self, buf):
            raise ConnectionResetError("reset by peer")

        def settimeout(self, t):
            pass

        def close(self):
            raise OSError("bad file descriptor")

    http11.Connection(Broken()).close()


def test_a_chunk_size_of_several_hex_digits():
    chunk = b"x" * 0x1a
    (_, _, body, _), rest = _read(_head(b"Transfer-Encoding: chunked") + b"1a\r\n" + chunk + b"\r\n0\r\n\r\nnext")
    assert body == chunk and rest == b"next"


@pytest.mark.parametrize("limit", [9, 10])
def test_a_body_until_close_one_byte_over_an_odd_or_even_limit_is_refused(limit):
    with pytest.raises(TooLarge):
        _read(_head(b"Connection: close") + b"x" * (limit + 1), limit=limit)
    (_, _, body, _), _ = _read(_head(b"Connection: close") + b"x" * limit, limit=limit)
    assert body == b"x" * limit


def test_a_line_one_byte_over_http_clients_bound_is_refused():
    import http.client
    fill = http.client._MAXLINE + 1 - len(b"X-Fill: \r\n")
    with pytest.raises(BadResponse, match="longer than 64 KiB"):
        _read(_head(b"X-Fill: " + b"a" * fill, b"Content-Length: 0"))


def test_host_header_compares_port_numbers_by_value():
    port = int("6443")   # a port read from a URL is a new int, not the literal's object
    assert http11.host_header("api.example", port, int("6443")) == "api.example"


def test_close_closes_the_socket():
    a, b = socket.socketpair()
    try:
        conn = http11.Connection(a)
        conn.close()
        assert a.fileno() == -1
    finally:
        b.close()
