"""Loopback proxies for the parity tests: HTTP CONNECT (optionally behind TLS and Basic auth), SOCKS5 (RFC 1928,
no-auth or RFC 1929 username/password) and a dead proxy address; each records what it was asked and by whom."""
from __future__ import annotations

import base64
import selectors
import socket
import ssl
import threading
from collections import namedtuple
from urllib.parse import quote

# kind: "connect" | "socks5"; target: "host:port" as asked; user/password: the credentials the client offered
# (None if none); method: the HTTP method (CONNECT, or GET for an absolute-URI request in the clear);
# authorization: whether a request in the clear carried an Authorization header (a credential leaked to the proxy);
# ok: whether the proxy opened the tunnel.
ProxyRecord = namedtuple("ProxyRecord", "kind target user password method authorization ok")

IDLE_SECONDS = 30     # a tunnel with no traffic for this long is closed
MAX_HEAD = 64 * 1024  # bound on a CONNECT request head
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


class _Proxy:
    """A proxy on 127.0.0.1 that serves each client in its own daemon thread; `hosts` maps names a client may ask
    for to loopback addresses (the proxy never connects anywhere but loopback)."""

    scheme = "http"

    def __init__(self, *, auth: tuple[str, str] | None = None, hosts: dict | None = None, name: str | None = None):
        self.auth, self.hosts, self.name = auth, dict(hosts or {}), name or type(self).__name__
        self.records: list[ProxyRecord] = []
        self._lock = threading.Lock()
        self._sock = None
        self._stop = threading.Event()

    def start(self):
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept_loop, name=f"proxy-{self.name}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._sock:
            self._sock.close()

    __enter__ = start

    def __exit__(self, *exc):
        self.stop()

    def url(self, user: str | None = None, password: str | None = None) -> str:
        cred = f"{quote(user, safe='')}:{quote(password or '', safe='')}@" if user is not None else ""
        return f"{self.scheme}://{cred}127.0.0.1:{self.port}"

    def reset(self) -> None:
        with self._lock:
            self.records.clear()

    def _record(self, *fields) -> None:
        with self._lock:
            self.records.append(ProxyRecord(*fields))

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, BlockingIOError):
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(IDLE_SECONDS)
        try:
            self.handle(conn)
        except (OSError, ValueError, IndexError):
            pass
        finally:
            conn.close()

    def handle(self, conn) -> None:
        raise NotImplementedError

    def _open(self, host: str, port: int) -> socket.socket | None:
        host = host.strip("[]")  # an IPv6 literal as CONNECT writes it
        address = self.hosts.get(host, host if host in LOOPBACK else None)
        if address is None:
            return None
        try:
            return socket.create_connection((address.strip("[]"), port), timeout=5)
        except OSError:
            return None

    @staticmethod
    def _pipe(a, b) -> None:
        """Bytes both ways until either side closes or the tunnel idles for IDLE_SECONDS."""
        a.setblocking(False)
        b.setblocking(False)
        sel = selectors.DefaultSelector()
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        try:
            while True:
                events = sel.select(IDLE_SECONDS)
                if not events:
                    return
                for key, _ in events:
                    try:
                        data = key.fileobj.recv(65536)
                        while getattr(key.fileobj, "pending", lambda: 0)():  # TLS records already decrypted
                            data += key.fileobj.recv(65536)
                    except (BlockingIOError, ssl.SSLWantReadError):
                        continue
                    if not data:
                        return
                    key.data.setblocking(True)
                    key.data.sendall(data)
                    key.data.setblocking(False)
        finally:
            sel.close()
            b.close()


class ConnectProxy(_Proxy):
    """An HTTP proxy that only tunnels (CONNECT host:port), as corporate proxies in front of an API server do;
    with `auth`, a `Proxy-Authorization: Basic` header with those credentials is required (else 407)."""

    def handle(self, conn) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk or len(head) > MAX_HEAD:
                return
            head += chunk
        head, rest = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        user = password = None
        scheme, _, value = headers.get("proxy-authorization", "").partition(" ")
        if scheme.lower() == "basic":
            user, _, password = base64.b64decode(value + "==").decode("utf-8", "replace").partition(":")
        if method != "CONNECT":  # a request in the clear (http:// server): never forwarded
            self._record("connect", target, user, password, method, "authorization" in headers, False)
            conn.sendall(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        if self.auth and (user, password) != self.auth:
            self._record("connect", target, user, password, method, False, False)
            conn.sendall(b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\n'
                         b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            return
        host, _, port = target.rpartition(":")
        upstream = self._open(host, int(port))
        self._record("connect", target, user, password, method, False, upstream is not None)
        if upstream is None:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            upstream.sendall(rest)
        self._pipe(conn, upstream)


class HttpsConnectProxy(ConnectProxy):
    """A CONNECT proxy reached over TLS (proxy-url https://…): the client verifies the proxy's certificate, so give
    it one the client's CA trusts (Go checks it against the kubeconfig's CA)."""

    scheme = "https"

    def __init__(self, cert_file: str, key_file: str, **kw):
        super().__init__(**kw)
        self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._ctx.load_cert_chain(cert_file, key_file)

    def handle(self, conn) -> None:
        try:
            tls = self._ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            return
        super().handle(tls)


class Socks5Proxy(_Proxy):
    """SOCKS5 (RFC 1928) CONNECT; with `auth`, username/password (RFC 1929) is the only method offered."""

    scheme = "socks5"

    @staticmethod
    def _read(conn, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ValueError("client closed")
            data += chunk
        return data

    def handle(self, conn) -> None:
        if self._read(conn, 1) != b"\x05":  # not SOCKS5 (e.g. an HTTP CONNECT sent to it): hang up at once
            self._record("socks5", None, None, None, "NOT-SOCKS5", False, False)
            return
        methods = self._read(conn, self._read(conn, 1)[0])
        want = 2 if self.auth else 0
        if want not in methods:
            conn.sendall(b"\x05\xff")
            self._record("socks5", None, None, None, "GREETING", False, False)
            return
        conn.sendall(bytes([5, want]))
        user = password = None
        if want == 2:
            _, ulen = self._read(conn, 2)
            user = self._read(conn, ulen).decode("utf-8", "replace")
            plen = self._read(conn, 1)[0]
            password = self._read(conn, plen).decode("utf-8", "replace")
            if (user, password) != self.auth:
                conn.sendall(b"\x01\x01")
                self._record("socks5", None, user, password, "AUTH", False, False)
                return
            conn.sendall(b"\x01\x00")
        _, cmd, _, atyp = self._read(conn, 4)
        if atyp == 1:
            host = socket.inet_ntop(socket.AF_INET, self._read(conn, 4))
        elif atyp == 4:
            host = socket.inet_ntop(socket.AF_INET6, self._read(conn, 16))
        else:
            host = self._read(conn, self._read(conn, 1)[0]).decode("idna")
        port = int.from_bytes(self._read(conn, 2), "big")
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        upstream = self._open(host, port) if cmd == 1 else None
        self._record("socks5", target, user, password, "CONNECT", False, upstream is not None)
        if upstream is None:  # 0x05 connection refused; 0x07 command not supported
            conn.sendall(bytes([5, 5 if cmd == 1 else 7, 0, 1, 0, 0, 0, 0, 0, 0]))
            return
        conn.sendall(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
        self._pipe(conn, upstream)


class DeadAddress:
    """A loopback port that nothing listens on (bound without listen(), so no other test can take it): every
    connection to it is refused at once."""

    def __init__(self):
        self._sock = None

    def start(self):
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        return self

    def stop(self) -> None:
        if self._sock:
            self._sock.close()

    __enter__ = start

    def __exit__(self, *exc):
        self.stop()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"
