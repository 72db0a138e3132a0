"""The HTTP/1.1 a GET to the API server needs, over a connected socket: request bytes, status, headers, and a
body by Content-Length, chunks or close, bounded in size and by a deadline for the whole answer. (http.client
costs more to import than a diagnosis spends reading; this reads the same wire format, with the same bounds.)"""
from __future__ import annotations

import io
import socket
import time
from typing import Callable, List, Optional, Tuple

MAX_LINE = 65536      # http.client's bound on a status, header or chunk-size line
MAX_HEADERS = 100     # … and on the number of header lines
MAX_BODY = 256 << 20  # bytes of one answer as sent (the largest real lists are paged well below it)


class BadResponse(Exception):
    """The server's answer is not HTTP/1.x as written: a garbled status line, too many headers, a short body."""


class TooLarge(BadResponse):
    """An answer longer than the caller's bound (an endless chunked body ends here, not in MemoryError)."""


def host_header(host: str, port: int, default_port: int) -> str:
    name = f"[{host}]" if ":" in host else host   # an IPv6 literal
    return name if port == default_port else f"{name}:{port}"


def request(method: str, target: str, headers: List[Tuple[str, str]]) -> bytes:
    lines = [f"{method} {target} HTTP/1.1"]
    for name, value in headers:
        value = str(value)
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise ValueError(f"invalid header {name!r}")   # no header may smuggle another in
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each with the time left until the deadline as its timeout: a body dripped byte by byte
    ends at the deadline, not one socket timeout after each byte."""

    def __init__(self, sock: socket.socket):
        self.sock, self.deadline = sock, None

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        self.sock.settimeout(time_left(self.deadline))
        return self.sock.recv_into(buf)


def time_left(deadline: Optional[float]) -> Optional[float]:
    """Seconds until a monotonic deadline (None: no deadline); socket.timeout once it has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("the request's deadline passed")
    return left


class Connection:
    """One kept-alive connection: a request out, its whole response in. Set `deadline` (time.monotonic()) and
    `limit` (bytes) before each exchange."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.raw = _DeadlineReader(sock)
        self.rfile = io.BufferedReader(self.raw, 65536)
        self.deadline: Optional[float] = None
        self.limit = MAX_BODY

    def exchange(self, data: bytes, sent: Optional[Callable[[], None]] = None) -> Tuple[int, dict, bytes, bool]:
        """(status, headers, body, whether the connection must close) for one request; `sent()` is called once the
        request is on the wire, before its answer is awaited."""
        self.raw.deadline = self.deadline
        self.sock.settimeout(time_left(self.deadline))
        self.sock.sendall(data)
        if sent is not None:
            sent()
        return read_response(self.rfile, self.limit)

    def close(self) -> None:
        for closer in (self.rfile.close, self.sock.close):
            try:
                closer()
            except OSError:
                pass


def read_response(rfile, limit: int = MAX_BODY) -> Tuple[int, dict, bytes, bool]:
    while True:
        version, status, _ = _status_line(rfile)
        headers = _headers(rfile)
        if not 100 <= status < 200:   # skip interim answers (100 Continue, 103 Early Hints)
            break
    connection = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    will_close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
    codings = [t.strip().lower() for t in headers.get("transfer-encoding", "").split(",") if t.strip()]
    if status in (204, 304):
        return status, headers, b"", will_close
    if codings:
        if codings[-1] != "chunked":   # only chunked ends a body before the connection does
            return status, headers, _until_close(rfile, limit), True
        return status, headers, _chunked(rfile, limit), will_close
    length = _content_length(headers.get("content-length"))
    if length is None:
        return status, headers, _until_close(rfile, limit), True
    return status, headers, _exactly(rfile, _bounded(length, limit)), will_close


def _bounded(size: int, limit: int) -> int:
    if size > limit:
        raise TooLarge(f"an answer larger than {size_text(limit)}")
    return size


def size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1024 else f"{n} bytes"


def _line(rfile) -> bytes:
    line = rfile.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise BadResponse("a response line longer than 64 KiB")
    return line


def _status_line(rfile) -> Tuple[str, int, str]:
    line = _line(rfile)
    if not line:   # a kept-alive connection the server has closed: the caller retries on a new one
        raise ConnectionResetError("the server closed the connection without answering")
    parts = line.decode("latin-1").rstrip("\r\n").split(None, 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not (parts[1].isdigit() and len(parts[1]) == 3):
        raise BadResponse(f"not an HTTP/1.x answer: {line[:80]!r}")
    return parts[0], int(parts[1]), parts[2] if len(parts) > 2 else ""


def _headers(rfile) -> dict:
    """Header fields by lower-case name (repeats joined with ', ', as HTTP allows)."""
    out: dict = {}
    for _ in range(MAX_HEADERS + 1):
        line = _line(rfile)
        if line in (b"\r\n", b"\n", b""):
            return out
        name, sep, value = line.decode("latin-1").partition(":")
        if sep:
            key = name.strip().lower()
            out[key] = f"{out[key]}, {value.strip()}" if key in out else value.strip()
    raise BadResponse(f"more than {MAX_HEADERS} header lines")


def _content_length(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    values = {v.strip() for v in value.split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise BadResponse(f"invalid Content-Length: {value[:40]!r}")
    return int(values.pop())


def _exactly(rfile, n: int) -> bytes:
    data = rfile.read(n)
    if len(data) < n:
        raise BadResponse(f"the connection closed after {len(data)} of {n} bytes")
    return data


def _chunked(rfile, limit: int) -> bytes:
    chunks, total = [], 0
    while True:
        size_field = _line(rfile).split(b";", 1)[0].strip()   # a size may carry ";extensions"
        if not size_field or size_field.strip(b"0123456789abcdefABCDEF"):
            raise BadResponse(f"invalid chunk size: {size_field[:40]!r}")
        size = int(size_field, 16)
        if size == 0:
            break
        total = _bounded(total + size, limit)
        chunks.append(_exactly(rfile, size))
        _exactly(rfile, 2)   # the CRLF after each chunk
    _headers(rfile)   # trailer fields, ignored
    return b"".join(chunks)


def _until_close(rfile, limit: int) -> bytes:
    data = rfile.read(limit + 1)
    _bounded(len(data), limit)
    return data
