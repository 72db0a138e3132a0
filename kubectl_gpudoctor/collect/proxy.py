"""Which proxy, if any, a request to the API server goes through, as kubectl (client-go over Go's net/http) decides:
the kubeconfig's `proxy-url`, else HTTPS_PROXY / HTTP_PROXY / NO_PROXY with golang.org/x/net/http/httpproxy's rules."""
from __future__ import annotations

from typing import Mapping, Optional
from urllib.parse import urlsplit

# Proxy schemes Go's http.Transport dials; proxy-url itself accepts only the first three (clientcmd's parseProxyURL).
SCHEMES = ("http", "https", "socks5", "socks5h")
DEFAULT_PORTS = {"http": "80", "https": "443", "socks5": "1080"}


def choose(proxy_url: Optional[str], scheme: str, host: str, port: int, env: Mapping[str, str]) -> Optional[str]:
    """The proxy URL for a request to scheme://host:port, or None for a direct connection. A kubeconfig's
    proxy-url applies to every request, loopback included (client-go sets http.ProxyURL); the environment's
    proxies never apply to localhost or a loopback address, nor to what NO_PROXY names."""
    if proxy_url:
        return proxy_url
    name = "HTTPS_PROXY" if scheme == "https" else "HTTP_PROXY"
    value = _env_any(env, name, name.lower())
    if not value or not use_proxy(host, str(port), _env_any(env, "NO_PROXY", "no_proxy")):
        return None
    return _with_scheme(value)


def _env_any(env: Mapping[str, str], *names: str) -> str:
    """httpproxy.FromEnvironment's getEnvAny: the first name set to a non-empty value (upper case first)."""
    return next((env[n] for n in names if env.get(n)), "")


def _with_scheme(value: str) -> str:
    """httpproxy's parseProxy: a value without a scheme or host ("proxy:3128") is read as http://…."""
    parts = urlsplit(value)
    return value if parts.scheme and parts.netloc else "http://" + value


def use_proxy(host: str, port: str, no_proxy: str) -> bool:
    """httpproxy's useProxy: False for localhost, loopback addresses, and what NO_PROXY matches (`*`; CIDRs;
    IPs with an optional port; `example.com` for the name and its subdomains, `.example.com` / `*.example.com`
    for subdomains only, each with an optional port)."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    for entry in no_proxy.split(","):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return False
        if "/" in entry:
            try:
                import ipaddress
                if ip is not None and ip in ipaddress.ip_network(entry, strict=False):
                    return False
            except ValueError:
                pass
            continue
        phost, pport = _split_host_port(entry)
        if not phost:
            continue
        pip = _ip(phost)
        if pip is not None:
            if ip == pip and pport in ("", port):
                return False
            continue
        if ip is not None:   # a domain entry never matches an IP address
            continue
        if phost.startswith("*."):
            phost = phost[1:]
        match_host = not phost.startswith(".")
        suffix = phost if phost.startswith(".") else "." + phost
        if (host.endswith(suffix) or (match_host and host == suffix[1:])) and pport in ("", port):
            return False
    return True


def _split_host_port(entry: str):
    """Go's net.SplitHostPort, leniently: (host, port) when the entry ends in :port, else (entry, "")."""
    if entry.startswith("["):
        end = entry.find("]")
        if end > 0:
            rest = entry[end + 1:]
            return entry[1:end], rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""


def _ip(host: str):
    import ipaddress
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
