"""GETs to the API server through a proxy (http, https or socks5, with credentials) by urllib3, for transport.py:
the same request, deadline and size bound as its own socket path, the same (status, headers, body) back."""
from __future__ import annotations

import base64
import socket
import ssl
from typing import Callable, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

import urllib3
from urllib3.exceptions import HTTPError, InsecureRequestWarning, NewConnectionError, ProxyError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from . import http11

# insecure-skip-tls-verify is the kubeconfig's own choice; kubectl prints no warning for it, nor does the plugin
# (stderr carries one line)
urllib3.disable_warnings(InsecureRequestWarning)


class ProxyRefused(ValueError):
    """A proxy URL kubectl would not use (an unknown scheme, no host): exit 2, before any connection."""


class Wire:
    """A urllib3 pool to one API server through one proxy."""

    def __init__(self, base: str, proxy_url: str, ctx: Optional[ssl.SSLContext], server_hostname: Optional[str],
                 size: int, proxy_ctx: Optional[ssl.SSLContext] = None):
        parts = urlsplit(proxy_url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https", "socks5", "socks5h") or not parts.hostname:
            raise ProxyRefused(f'proxy {_masked(parts)}: unsupported scheme "{parts.scheme}", must be http, https, '
                               f'or socks5' if parts.hostname else f"proxy {_masked(parts)}: no host")
        self.base, self.proxy = base, _masked(parts)
        where = f"{parts.hostname if ':' not in parts.hostname else '[' + parts.hostname + ']'}:" \
                f"{parts.port or {'http': 80, 'https': 443}.get(scheme, 1080)}"
        pool_kw = dict(maxsize=size, block=False)
        if ctx is not None:
            pool_kw.update(ssl_context=ctx, server_hostname=server_hostname)
            if server_hostname:
                pool_kw["assert_hostname"] = server_hostname if ctx.check_hostname else False
            elif not ctx.check_hostname:
                pool_kw["assert_hostname"] = False
        user = unquote(parts.username) if parts.username is not None else None
        password = unquote(parts.password) if parts.password is not None else None
        if scheme.startswith("socks5"):
            try:
                from urllib3.contrib.socks import SOCKSProxyManager
            except ImportError:   # PySocks is an install requirement; a broken install says so in one line
                raise ProxyRefused("a socks5 proxy needs the PySocks package (pip install PySocks)") from None
            # Go's SOCKS5 dialer sends the host name to the proxy, which resolves it: urllib3 calls that socks5h
            self.pool = SOCKSProxyManager(f"socks5h://{where}", user, password, num_pools=2, **pool_kw)
        else:
            headers = {}
            if user is not None:   # Go sends the proxy URL's user-info as Basic Proxy-Authorization
                token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
                headers["Proxy-Authorization"] = f"Basic {token}"
            extra = {"proxy_ssl_context": proxy_ctx or ssl.create_default_context()} if scheme == "https" else {}
            self.pool = urllib3.ProxyManager(f"{scheme}://{where}", num_pools=2, proxy_headers=headers,
                                             **extra, **pool_kw)

    def exchange(self, target: str, headers: List[Tuple[str, str]], deadline: Optional[float],
                 sent: Callable[[], None], limit: int) -> Tuple[int, dict, bytes]:
        """(status, lower-case headers, body as sent) of one GET; raises socket.timeout, OSError, or
        http11.BadResponse with the reason (transport.py makes those Timeout and Unreachable)."""
        fields = urllib3.HTTPHeaderDict()
        for name, value in headers:
            if name != "Host":
                fields.add(name, value)
        left = http11.time_left(deadline)
        try:
            resp = self.pool.urlopen("GET", self.base + target, headers=fields, retries=False, redirect=False,
                                     preload_content=False, decode_content=False, assert_same_host=False,
                                     timeout=urllib3.Timeout(connect=left, read=left))
        except ProxyError as exc:
            raise OSError(f"proxy {self.proxy}: {_innermost(exc)}") from None
        except NewConnectionError as exc:   # a ConnectTimeoutError in urllib3 2's hierarchy, but a refusal
            raise OSError(f"proxy {self.proxy}: {_innermost(exc)}") from None
        except Urllib3Timeout:
            raise socket.timeout("no answer") from None
        except HTTPError as exc:
            raise OSError(_innermost(exc)) from None
        sent()
        try:
            body = self._body(resp, deadline, limit)
        except BaseException:
            resp.close()   # the rest of the answer is unread: the connection cannot carry another request
            raise
        resp.release_conn()
        return resp.status, {k.lower(): v for k, v in resp.headers.items()}, body

    @staticmethod
    def _body(resp, deadline: Optional[float], limit: int) -> bytes:
        sock = getattr(getattr(resp, "connection", None), "sock", None)
        read = getattr(resp, "read1", None) or resp.read
        chunks, total = [], 0
        while True:
            left = http11.time_left(deadline)
            if sock is not None:
                sock.settimeout(left)
            try:
                data = read(65536)
            except Urllib3Timeout:
                raise socket.timeout("no answer") from None
            except HTTPError as exc:
                raise http11.BadResponse(_innermost(exc)) from None
            if not data:
                return b"".join(chunks)
            total += len(data)
            if total > limit:
                raise http11.TooLarge(f"an answer larger than {http11.size_text(limit)}")
            chunks.append(data)

    def close(self) -> None:
        self.pool.clear()


def _innermost(exc: BaseException) -> str:
    """The root cause's one line: urllib3 wraps a refused proxy in ProxyError(NewConnectionError(…))."""
    seen = exc
    for _ in range(5):
        inner = getattr(seen, "original_error", None) or getattr(seen, "reason", None) or seen.__context__
        if not isinstance(inner, BaseException):
            break
        seen = inner
    if isinstance(seen, ConnectionRefusedError) or "Connection refused" in str(seen):
        return "connection refused"
    text = str(seen).strip().splitlines()
    return text[0][:300] if text else type(seen).__name__


def _masked(parts) -> str:
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(":" + parts.password + "@", ":xxxxx@", 1)
    return f"{parts.scheme}://{netloc}"
