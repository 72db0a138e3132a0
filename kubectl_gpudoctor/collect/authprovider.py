"""A kubeconfig user's oidc auth provider through the client library, which checks the id-token's expiry and
refreshes it at the issuer; any failure is one line, and nothing is sent without the credential."""
from __future__ import annotations

from typing import Optional


def token(provider: dict, cluster: dict, base: Optional[str]) -> str:
    """The "Bearer …" header the provider yields (the removed gcp and azure providers are refused before this)."""
    from .kubeconfig import CredentialError, bearer_case, quiet_client_library
    quiet_client_library()
    from kubernetes.client import Configuration
    from kubernetes.config.kube_config import KubeConfigLoader

    config = {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
              "clusters": [{"name": "c", "cluster": {"server": cluster.get("server")}}],
              "users": [{"name": "u", "user": {"auth-provider": provider}}]}
    cfg = type.__call__(Configuration)
    try:
        KubeConfigLoader(config_dict=config, active_context="c", config_base_path=base).load_and_set(cfg)
    except Exception as exc:  # noqa: BLE001 — the library's ConfigException, urllib3's MaxRetryError, JSON errors
        raise CredentialError(f"getting credentials: auth provider oidc: {_reason(exc)}") from None
    auth = bearer_case(cfg.get_api_key_with_prefix("BearerToken"))
    if not auth:
        raise CredentialError("getting credentials: auth provider oidc gave no token (is the id-token expired "
                              "and no refresh-token set?)")
    return auth


def _reason(exc: BaseException) -> str:
    """urllib3's failures name the URL and, deep inside, why: the line a user can act on."""
    reason = getattr(exc, "reason", None)
    url = getattr(exc, "url", None)
    if reason is not None and url is not None:
        pool = getattr(exc, "pool", None)
        host = f"https://{pool.host}:{pool.port}" if pool is not None else ""
        why = str(reason).rsplit(": ", 1)[-1].strip("')\" ")
        return f"cannot reach {host}{url}: {why}"
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
