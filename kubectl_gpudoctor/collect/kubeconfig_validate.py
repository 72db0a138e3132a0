"""client-go's checks of the user and cluster a command will use (tools/clientcmd/validation.go ConfirmUsable, and
the refusals its transport and auth plugins add), in its wording: what kubectl refuses, the plugin refuses."""
from __future__ import annotations

import os
from typing import List

from .transport import mask_url
from ..data.kubeconfig_schema import (EXEC_API_VERSIONS, INTERACTIVE_DEFAULTED, INTERACTIVE_MODES,
                                     REMOVED_AUTH_PROVIDERS)


def problems(user_name: str, user: dict, cluster_name: str, cluster: dict) -> List[str]:
    """Every reason client-go refuses this (merged, flag-overridden) user and cluster, in its order; [] if none.
    Paths are already resolved against the kubeconfig's directory."""
    return _user(user_name, user) + _cluster(cluster_name, cluster) + _transport(user_name, user, cluster)


def _open_error(path: str) -> str:
    try:
        with open(path, "rb"):
            return ""
    except OSError as exc:
        return f"open {path}: {(exc.strerror or str(exc)).lower()}"


def _user(name: str, u: dict) -> List[str]:
    out = []
    methods = []
    if u.get("token"):
        methods.append("token")
    if u.get("username") or u.get("password"):
        methods.append("basicAuth")
    if u.get("client-certificate") or u.get("client-certificate-data"):
        if u.get("client-certificate") and u.get("client-certificate-data"):
            out.append(f"client-cert-data and client-cert are both specified for {name}. "
                       "client-cert-data will override.")
        if u.get("client-key") and u.get("client-key-data"):
            out.append(f"client-key-data and client-key are both specified for {name}; client-key-data will override")
        if not (u.get("client-key") or u.get("client-key-data")):
            out.append(f"client-key-data or client-key must be specified for {name} to use the clientCert "
                       "authentication method.")
        for key, label in (("client-certificate", "client-cert"), ("client-key", "client-key")):
            err = _open_error(u[key]) if u.get(key) else ""
            if err:
                out.append(f"unable to read {label} {u[key]} for {name} due to {err}")
    ex = u.get("exec")
    if ex is not None:
        ex = ex or {}
        if u.get("auth-provider") is not None:
            out.append(f"authProvider cannot be provided in combination with an exec plugin for {name}")
        if not ex.get("command"):
            out.append(f"command must be specified for {name} to use exec authentication plugin")
        if not ex.get("apiVersion"):
            out.append(f"apiVersion must be specified for {name} to use exec authentication plugin")
        for var in ex.get("env") or ():
            if not (var or {}).get("name"):
                out.append(f"env variable name must be specified for {name} to use exec authentication plugin")
        mode = interactive_mode(ex)
        if not mode:
            out.append(f"interactiveMode must be specified for {name} to use exec authentication plugin")
        elif mode not in INTERACTIVE_MODES:
            out.append(f'invalid interactiveMode for {name}: "{mode}"')
    if len(methods) > 1:
        out.append(f"more than one authentication method found for {name}; found [{' '.join(methods)}], "
                   "only one is allowed")
    if (u.get("as-uid") or u.get("as-groups") or u.get("as-user-extra")) and not u.get("as"):
        out.append(f"requesting uid, groups or user-extra for {name} without impersonating a user")
    return out


def interactive_mode(ex: dict) -> str:
    """The exec plugin's interactiveMode after client-go's defaulting (v1beta1 and v1alpha1: IfAvailable)."""
    mode = ex.get("interactiveMode") or ""
    if not mode and ex.get("apiVersion") in INTERACTIVE_DEFAULTED:
        return "IfAvailable"
    return mode


def _cluster(name: str, c: dict) -> List[str]:
    out = []
    if not c.get("server"):
        out.append(f'no server found for cluster "{name}"' if name else "default cluster has no server defined")
    proxy = c.get("proxy-url")
    if proxy:
        scheme = proxy.partition(":")[0].lower() if ":" in proxy else ""
        if scheme not in ("http", "https", "socks5"):
            out.append(f"invalid 'proxy-url' \"{mask_url(proxy)}\" for cluster \"{name}\": unsupported scheme \"{scheme}\", "
                       "must be http, https, or socks5")
    if c.get("certificate-authority") and c.get("certificate-authority-data"):
        out.append(f"certificate-authority-data and certificate-authority are both specified for {name}. "
                   "certificate-authority-data will override.")
    if c.get("certificate-authority"):
        err = _open_error(c["certificate-authority"])
        if err:
            out.append(f"unable to read certificate-authority {c['certificate-authority']} for {name} due to {err}")
    return out


def _transport(user_name: str, u: dict, c: dict) -> List[str]:
    """Refusals after validation: the TLS config (k8s.io/client-go/transport) and the removed auth providers."""
    out = []
    if c.get("insecure-skip-tls-verify") and (c.get("certificate-authority") or c.get("certificate-authority-data")):
        out.append("specifying a root certificates file with the insecure flag is not allowed")
    version = (u.get("exec") or {}).get("apiVersion")
    if version and version not in EXEC_API_VERSIONS:
        out.append(f'exec plugin: invalid apiVersion "{version}"')
    provider = u.get("auth-provider")
    if provider is not None and u.get("exec") is None:
        pname = (provider or {}).get("name") or ""
        if pname in REMOVED_AUTH_PROVIDERS:
            out.append(REMOVED_AUTH_PROVIDERS[pname])
        elif pname != "oidc":
            out.append(f'no Auth Provider found for name "{pname}"')
    return out


def resolve(path: str, base: str) -> str:
    """A path from a kubeconfig, as client-go resolves it: relative to the file that holds it (no `~`)."""
    return path if os.path.isabs(path) else os.path.join(base, path)
