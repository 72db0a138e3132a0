"""An exec credential plugin (aws eks get-token, gke-gcloud-auth-plugin, kubelogin…) run through the client library,
its failures said as kubectl says them — the plugin's own stderr line, or its installHint when it is not installed;
no credential, no request."""
from __future__ import annotations

import re
import sys

from .kubeconfig_validate import interactive_mode

NOT_INSTALLED = ("It looks like you are trying to use a client-go credential plugin that is not installed.")
_RETURNED = re.compile(r"exec: process returned (-?\d+)(?:\. (.*))?", re.S)
# The library's other words for a plugin's bad answer, and client-go's (plugin/pkg/client/auth/exec/exec.go).
_VERSION = re.compile(r"exec: plugin api version (\S+) does not match (\S+)")
_CLIENT_GO_WORDS = (("exec: malformed response. missing key 'status'", "exec plugin didn't return a status field"),
                    ("exec: failed to decode process output: ", "decoding stdout: "))


def run(exec_cfg: dict, cluster: dict) -> dict:
    """The ExecCredential status the plugin prints (a token, or clientCertificateData and clientKeyData)."""
    from .kubeconfig import CredentialError
    command = exec_cfg.get("command") or ""
    if interactive_mode(exec_cfg) == "Always" and not sys.stdin.isatty():
        raise CredentialError("getting credentials: exec plugin cannot support interactive mode: "
                              "standard input is not a terminal")
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.exec_provider import ExecProvider
    from kubernetes.config.kube_config import ConfigNode

    cfg = dict(exec_cfg, command=command, args=[a or "" for a in exec_cfg.get("args") or ()],
               env=[{"name": (e or {}).get("name") or "", "value": (e or {}).get("value") or ""}
                    for e in exec_cfg.get("env") or ()])
    try:
        status = ExecProvider(ConfigNode("exec", cfg), None, ConfigNode("cluster", cluster)).run()
    except FileNotFoundError:
        hint = " ".join((exec_cfg.get("installHint") or "").split())
        raise CredentialError(f"getting credentials: exec: executable {command} not found. "
                              f"{hint or NOT_INSTALLED}") from None
    except PermissionError:
        raise CredentialError(f"getting credentials: exec: fork/exec {command}: permission denied") from None
    except ConfigException as exc:
        raise CredentialError(f"getting credentials: {_said(command, str(exc))}") from None
    if not isinstance(status, dict):
        raise CredentialError("getting credentials: exec plugin returned no status")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if bool(cert) != bool(key):
        raise CredentialError("getting credentials: exec plugin returned only certificate or key, not both")
    if status.get("token") or cert:
        return status
    raise CredentialError("getting credentials: exec plugin didn't return a token or cert/key pair")


def _said(command: str, message: str) -> str:
    """The library's `exec: process returned 1. <stderr>` in kubectl's words, with the plugin's first stderr line."""
    message = message.strip()
    version = _VERSION.match(message)
    if version:
        return (f"exec plugin is configured to use API version {version.group(2)}, plugin returned version "
                f"{version.group(1)}")
    for library, client_go in _CLIENT_GO_WORDS:
        if message.startswith(library):
            return client_go + message[len(library):].splitlines()[0] if message[len(library):] else client_go
    m = _RETURNED.match(message)
    if not m:
        return message.splitlines()[0] if message else "exec plugin failed"
    line = next((ln.strip() for ln in (m.group(2) or "").splitlines() if ln.strip()), "")
    said = f"exec: executable {command} failed with exit code {m.group(1)}"
    return f"{said}: {line}" if line else said
