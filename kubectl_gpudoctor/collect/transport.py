"""One pool of keep-alive HTTPS connections to the API server (socket + ssl, no client library); GET only."""
from __future__ import annotations

import base64
import os
import queue
import socket
import ssl
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import urlencode, urlsplit

from . import http11
from ..record import field, record

USER_AGENT = "kubectl-gpudoctor"


class Unreachable(Exception):
    """No HTTP answer: refused, reset, TLS failure, name resolution (the message names the server)."""


class Timeout(Exception):
    """No answer within the request timeout."""


@record
class Credentials:
    """Where the API server is and how to prove who we are, as a kubeconfig (or in-cluster config) says."""
    server: str
    authorization: Optional[str] = None    # "Bearer …" or "Basic …"
    ca_file: Optional[str] = None
    ca_data: Optional[bytes] = None        # PEM
    cert_file: Optional[str] = None
    cert_data: Optional[bytes] = None      # PEM
    key_file: Optional[str] = None
    key_data: Optional[bytes] = None       # PEM
    insecure: bool = False                 # insecure-skip-tls-verify
    tls_server_name: Optional[str] = None
    proxy_url: Optional[str] = None
    headers: Dict[str, List[str]] = field(default_factory=dict)   # e.g. Impersonate-User, Impersonate-Group
    disable_compression: bool = False      # kubeconfig disable-compression / --disable-compression


def basic_auth(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def tls_context(creds: Credentials) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=creds.ca_file, cadata=creds.ca_data.decode() if creds.ca_data else None)
    if creds.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if creds.cert_file or creds.cert_data:
        with _as_file(creds.cert_file, creds.cert_data) as cert, _as_file(creds.key_file, creds.key_data) as key:
            ctx.load_cert_chain(cert, key)
    return ctx


class _as_file:
    """A path for PEM given as a path or as bytes (written to a private temp file, removed once loaded)."""

    def __init__(self, path: Optional[str], data: Optional[bytes]):
        self.path, self.data, self.tmp = path, data, None

    def __enter__(self) -> Optional[str]:
        if self.path or not self.data:
            return self.path
        import tempfile   # only for a client certificate or key given as data
        fd, self.tmp = tempfile.mkstemp(prefix="gpudoctor-", suffix=".pem")
        with os.fdopen(fd, "wb") as f:
            f.write(self.data)
        return self.tmp

    def __exit__(self, *exc):
        if self.tmp:
            os.unlink(self.tmp)


class Transport:
    """GETs over a pool of reused connections (one TLS handshake per connection, not per request)."""

    def __init__(self, creds: Credentials, timeout: Optional[float], size: int = 16):
        url = urlsplit(creds.server)
        self.creds, self.timeout, self.server = creds, timeout, creds.server.rstrip("/")
        self.https = url.scheme == "https"
        self.host, self.port = url.hostname or "localhost", url.port or (443 if self.https else 80)
        self.prefix = url.path.rstrip("/")
        self.ctx = tls_context(creds) if self.https else None
        self.idle: "queue.LifoQueue[http11.Connection]" = queue.LifoQueue(maxsize=size)
        headers = [("Host", http11.host_header(self.host, self.port, 443 if self.https else 80)),
                   ("User-Agent", USER_AGENT), ("Accept-Encoding", "identity")]
        if creds.authorization:
            headers.append(("Authorization", creds.authorization))
        headers += [(k, v) for k, values in creds.headers.items() for v in values]
        self.headers = headers

    def _connect(self) -> http11.Connection:
        proxy = urlsplit(self.creds.proxy_url) if self.creds.proxy_url else None
        host, port = (proxy.hostname, proxy.port or 80) if proxy else (self.host, self.port)
        sock = socket.create_connection((_ascii(host), port), timeout=self.timeout)
        try:
            if proxy:
                http11.tunnel(sock, self.host, self.port)
            if self.https:
                sock = self.ctx.wrap_socket(sock, server_hostname=_ascii(self.creds.tls_server_name or self.host))
        except BaseException:
            sock.close()
            raise
        return http11.Connection(sock)

    def open_spares(self, n: int) -> None:
        """Open up to n more connections in the background (TCP and TLS handshakes) while the first request is in
        flight, so that the next parallel round starts sending at once: a new connection costs two round trips
        before its request goes out (client-go avoids it with one HTTP/2 connection). A failure here is silent;
        the request that would have used the connection opens its own and reports what goes wrong."""
        import threading

        def one():
            try:
                conn = self._connect()
            except (OSError, http11.BadResponse):
                return
            try:
                self.idle.put_nowait(conn)
            except queue.Full:
                conn.close()

        for _ in range(max(0, min(n, self.idle.maxsize - self.idle.qsize()))):
            threading.Thread(target=one, name="gpudoctor-connect", daemon=True).start()

    def get(self, path: str, query: Optional[Dict[str, str]] = None, accept: str = "application/json",
            meanwhile: Optional[Callable[[], None]] = None) -> Tuple[int, bytes]:
        """(HTTP status, body) of one GET; raises Unreachable or Timeout when no answer arrives. `meanwhile()`, when
        given, is called once, as soon as the request is sent, and its answer is read when it returns."""
        url = self.prefix + path + ("?" + urlencode(query) if query else "")
        request = http11.request("GET", url, self.headers + [("Accept", accept)])

        def sent() -> None:   # once, even when a kept-alive connection fails after the send and the GET is retried
            nonlocal meanwhile
            once, meanwhile = meanwhile, None
            if once is not None:
                once()
        for attempt in (0, 1):
            try:
                conn = self.idle.get_nowait()
                reused = True
            except queue.Empty:
                conn, reused = None, False
            try:
                conn = conn or self._connect()
                status, body, will_close = conn.exchange(request, sent)
            except (OSError, http11.BadResponse) as exc:
                if conn:
                    conn.close()
                timed_out = isinstance(exc, socket.timeout)   # TimeoutError from Python 3.10 on
                if reused and attempt == 0 and not timed_out:
                    continue   # a kept-alive connection the server closed meanwhile: retry once on a new one
                if timed_out:
                    raise Timeout(f"no answer within {self.timeout:g}s") from None
                raise Unreachable(f"{self.server}: {_describe(exc)}") from None
            if will_close:
                conn.close()
            else:
                try:
                    self.idle.put_nowait(conn)
                except queue.Full:
                    conn.close()
            return status, body
        raise Unreachable(f"{self.server}: connection closed")   # not reached

    def close(self) -> None:
        while True:
            try:
                self.idle.get_nowait().close()
            except queue.Empty:
                return


def _ascii(host: str):
    """An ASCII host name as bytes, which socket and ssl take as is; a str goes through the idna codec, whose first
    use imports stringprep and unicodedata (~1.5 ms). An internationalised name stays a str, for that codec."""
    return host.encode("ascii") if host.isascii() else host


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {exc.verify_message}"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
