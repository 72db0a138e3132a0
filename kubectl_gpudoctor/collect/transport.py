"""GETs to the API server as kubectl would send them: the one place that decides where a request goes, over what,
with which credentials, for how long and how big its answer may be. A pool of keep-alive HTTPS connections of its
own (socket + ssl) for the direct case; urllib3 (libtransport.py) through a proxy."""
from __future__ import annotations

import base64
import os
import queue
import socket
import ssl
import time
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import urlencode, urlsplit

from . import http11
from ..record import field, record

USER_AGENT = "kubectl-gpudoctor"
MAX_RETRIES = 10      # client-go's maxRetries for an answer that asks to be retried (429 or 5xx with Retry-After)
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")


class Unreachable(Exception):
    """No HTTP answer: refused, reset, TLS failure, name resolution (the message names the server)."""


class Timeout(Exception):
    """No answer within the request timeout."""


class Refused(ValueError):
    """A connection the transport will not make, refused before any request: a server URL kubectl would reach
    without TLS or not at all, a client key it cannot use, a proxy URL it would not use (exit 2, one line)."""


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


def mask_url(url: str) -> str:
    """A URL fit to print: a password in its user-info shown as xxxxx, as kubectl prints it (Go's URL.Redacted)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user_info, at, rest = parts.netloc.rpartition("@")
    user = user_info.partition(":")[0]
    return url.replace(parts.netloc, f"{user}:xxxxx{at}{rest}", 1)


def endpoint(server: str) -> Tuple[str, str, int, str]:
    """(scheme, host, port, path prefix) of a server URL, or Refused. kubectl (client-go's DefaultServerURL)
    reads a server without a scheme ("10.0.0.1:6443", "api.example:6443") and an empty one (as
    http://localhost:8080) as plain HTTP and sends no credentials there; the plugin does not guess: it asks for
    the https:// URL. The scheme's case does not matter (Go lower-cases it)."""
    shown = mask_url(server)
    if not server:
        raise Refused("the cluster has no server: kubectl would try http://localhost:8080 without credentials; "
                      "set the cluster's server to https://HOST:PORT")
    parts = urlsplit(server)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise Refused(f'server "{shown}" is not an https:// URL with a host: kubectl would connect over plain '
                      f"HTTP without credentials, or not at all; write server: https://HOST:PORT")
    if any(c in parts.hostname for c in " \t\r\n"):
        raise Refused(f'server "{shown}": invalid character " " in host name')
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise Refused(f'server "{shown}": invalid port') from None
    return scheme, parts.hostname, port, parts.path.rstrip("/")


def tls_context(creds: Credentials) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=creds.ca_file, cadata=creds.ca_data.decode() if creds.ca_data else None)
    if creds.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if creds.cert_file or creds.cert_data:
        with _as_file(creds.cert_file, creds.cert_data) as cert, _as_file(creds.key_file, creds.key_data) as key:
            try:
                ctx.load_cert_chain(cert, key, password=_no_passphrase)
            except ssl.SSLError as exc:
                raise Refused(f"client certificate and key: tls: failed to parse private key or certificate "
                              f"({exc.reason or exc})") from None
    return ctx


def _proxy_context(creds: Credentials) -> ssl.SSLContext:
    """TLS to an https:// proxy: Go's transport dials it with the cluster's TLS settings (its CA, or the system's;
    insecure-skip-tls-verify); the client certificate is kept for the API server alone."""
    return tls_context(Credentials(server=creds.server, ca_file=creds.ca_file, ca_data=creds.ca_data,
                                   insecure=creds.insecure))


def _no_passphrase():
    """OpenSSL asks for an encrypted key's passphrase on the terminal; kubectl cannot use such a key (Go's
    tls.X509KeyPair: "tls: failed to parse private key") and neither can the plugin: it says so at once."""
    raise Refused("client key: tls: failed to parse private key (the key is encrypted with a passphrase, which "
                  "kubectl cannot use; decrypt it: openssl pkey -in KEY -out PLAIN-KEY)")


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
    """GETs over a pool of reused connections (one TLS handshake per connection, not per request). Credentials
    (Authorization, the client certificate) go only over TLS to the server named; `timeout` bounds each request
    whole, retries and body included."""

    def __init__(self, creds: Credentials, timeout: Optional[float], size: int = 16, env=None):
        scheme, self.host, self.port, self.prefix = endpoint(creds.server)
        self.creds, self.timeout, self.server = creds, timeout, mask_url(creds.server).rstrip("/")
        self.https = scheme == "https"
        self.ctx = tls_context(creds) if self.https else None
        self.idle: "queue.LifoQueue[http11.Connection]" = queue.LifoQueue(maxsize=size)
        headers = [("Host", http11.host_header(self.host, self.port, 443 if self.https else 80)),
                   ("User-Agent", USER_AGENT), ("Accept-Encoding", "identity" if creds.disable_compression else "gzip")]
        if creds.authorization and self.https:   # kubectl sends no credentials over plain HTTP
            headers.append(("Authorization", creds.authorization))
        headers += [(k, v) for k, values in creds.headers.items() for v in values]
        bad = next((k for k, v in headers if "\r" in str(v) or "\n" in str(v)), None)
        if bad:   # a token or --as value that would smuggle another header in (http11.request refuses it too)
            raise Refused(f"the {bad} header's value holds a line break (a token or impersonation name)")
        self.headers = headers
        self.library = self._library(scheme, size, os.environ if env is None else env)

    def _library(self, scheme: str, size: int, env):
        """The urllib3 pool when a proxy applies (proxy-url, or HTTPS_PROXY/HTTP_PROXY not excluded by NO_PROXY),
        else None: the socket path below handles only direct connections."""
        if not (self.creds.proxy_url or any(env.get(n) for n in PROXY_VARIABLES)):
            return None
        from . import proxy
        if self.creds.proxy_url and urlsplit(self.creds.proxy_url).scheme.lower() not in ("http", "https", "socks5"):
            raise Refused(f'proxy-url "{mask_url(self.creds.proxy_url)}": unsupported scheme '
                          f'"{urlsplit(self.creds.proxy_url).scheme}", must be http, https, or socks5')
        chosen = proxy.choose(self.creds.proxy_url, scheme, self.host, self.port, env)
        if not chosen:
            return None
        from . import libtransport
        base = f"{scheme}://{http11.host_header(self.host, self.port, -1)}{self.prefix}"
        proxy_ctx = _proxy_context(self.creds) if urlsplit(chosen).scheme.lower() == "https" else None
        try:
            return libtransport.Wire(base, chosen, self.ctx, self.creds.tls_server_name, size, proxy_ctx)
        except libtransport.ProxyRefused as exc:
            raise Refused(str(exc)) from None

    def _connect(self, deadline: Optional[float] = None) -> http11.Connection:
        """A new connection, its TCP and TLS handshakes within the request's time (or the timeout, for a spare)."""
        left = http11.time_left(deadline) if deadline is not None else self.timeout
        sock = socket.create_connection((_ascii(self.host), self.port), timeout=left)
        try:
            if self.https:
                if deadline is not None:
                    sock.settimeout(http11.time_left(deadline))
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
        if self.library is not None:
            return   # urllib3 opens its own
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
            meanwhile: Optional[Callable[[], None]] = None, limit: int = http11.MAX_BODY) -> Tuple[int, bytes]:
        """(HTTP status, body) of one GET; raises Unreachable or Timeout when no answer arrives. `meanwhile()`, when
        given, is called once, as soon as the request is sent, and its answer is read when it returns. An answer
        asking to be retried (429, 5xx with Retry-After) is, as client-go does, within the request's time."""
        target = self.prefix + path + ("?" + urlencode(query) if query else "")
        headers = self.headers + [("Accept", accept)]
        deadline = time.monotonic() + self.timeout if self.timeout else None

        def sent() -> None:   # once, even when a kept-alive connection fails after the send and the GET is retried
            nonlocal meanwhile
            once, meanwhile = meanwhile, None
            if once is not None:
                once()
        try:
            for attempt in range(MAX_RETRIES + 1):
                status, fields, body = self._once(target, headers, deadline, sent, limit)
                wait = _retry_after(status, fields)
                if wait is None or attempt == MAX_RETRIES or (deadline and time.monotonic() + wait >= deadline):
                    break
                time.sleep(wait)
            return status, _decoded(fields, body, limit)
        except socket.timeout:
            raise Timeout(f"no answer within {self.timeout:g}s") from None
        except (OSError, http11.BadResponse) as exc:
            raise Unreachable(f"{self.server}: {_describe(exc)}") from None

    def _once(self, target: str, headers, deadline, sent, limit) -> Tuple[int, dict, bytes]:
        if self.library is not None:
            return self.library.exchange(target, headers, deadline, sent, limit)
        request = http11.request("GET", target, headers)
        for attempt in (0, 1):
            try:
                conn = self.idle.get_nowait()
                reused = True
            except queue.Empty:
                conn, reused = None, False
            try:
                conn = conn or self._connect(deadline)
                conn.deadline, conn.limit = deadline, limit
                status, fields, body, will_close = conn.exchange(request, sent)
            except (OSError, http11.BadResponse) as exc:
                if conn:
                    conn.close()
                # a kept-alive connection the server closed meanwhile: retry once on a new one
                if reused and attempt == 0 and isinstance(exc, OSError) and not isinstance(exc, socket.timeout):
                    continue
                raise
            if will_close:
                conn.close()
            else:
                try:
                    self.idle.put_nowait(conn)
                except queue.Full:
                    conn.close()
            return status, fields, body
        raise ConnectionResetError("connection closed")   # not reached

    def close(self) -> None:
        if self.library is not None:
            self.library.close()
        while True:
            try:
                self.idle.get_nowait().close()
            except queue.Empty:
                return


def _retry_after(status: int, fields: dict) -> Optional[int]:
    """Seconds to wait before retrying, or None: client-go retries a 429 or 5xx answer that carries an integer
    Retry-After (priority-and-fairness throttling answers 429 on busy clusters), and nothing else."""
    if status != 429 and status < 500:
        return None
    value = fields.get("retry-after", "").strip()
    return int(value) if value.isdigit() and len(value) < 6 else None


def _decoded(fields: dict, body: bytes, limit: int) -> bytes:
    """The body without its gzip content coding, no bigger than `limit` once decompressed (a gzip bomb ends in
    TooLarge, a corrupt stream in BadResponse)."""
    coding = fields.get("content-encoding", "").strip().lower()
    if coding in ("", "identity") or not body:
        return body
    if coding != "gzip":
        raise http11.BadResponse(f"an answer in content coding {coding[:40]!r}, which was not asked for")
    import zlib
    unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = unzip.decompress(body, limit + 1)
    except zlib.error as exc:
        raise http11.BadResponse(f"a gzip answer that does not decompress ({exc})") from None
    if len(out) > limit or unzip.unconsumed_tail:
        raise http11.TooLarge(f"a gzip answer larger than {http11.size_text(limit)} once decompressed")
    if not unzip.eof:
        raise http11.BadResponse("a gzip answer cut short")
    return out


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
