"""Finds the cluster as kubectl does (--kubeconfig, KUBECONFIG list, ~/.kube/config, in-cluster); never writes a kubeconfig."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional, Tuple

import yaml


class KubeconfigError(Exception):
    """The kubeconfig is malformed or names something that does not exist (exit 2)."""


class NoConfiguration(Exception):
    """No kubeconfig and not inside a cluster (exit 3: nothing to diagnose against)."""


@dataclass
class ConnOptions:
    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    cluster: Optional[str] = None
    user: Optional[str] = None
    namespace: Optional[str] = None
    request_timeout: float = 10.0
    all_namespaces: bool = False     # -A: find a pod by name in whatever namespace holds it
    # kubectl's global flags over the kubeconfig: --as/--as-group, --token, --server, --certificate-authority,
    # --insecure-skip-tls-verify
    as_user: Optional[str] = None
    as_groups: Tuple[str, ...] = ()
    token: Optional[str] = None
    server: Optional[str] = None
    ca_file: Optional[str] = None
    insecure: bool = False


@dataclass
class Connection:
    client: object          # kubernetes.client.ApiClient
    namespace: str
    server: str
    context: str


def kubeconfig_paths(opts: ConnOptions, env=None) -> List[str]:
    """The files kubectl would read, in precedence order (first file that sets a value wins)."""
    env = os.environ if env is None else env
    if opts.kubeconfig:
        path = os.path.expanduser(opts.kubeconfig)
        if not os.path.isfile(path):
            raise KubeconfigError(f"--kubeconfig {opts.kubeconfig}: no such file")
        return [path]
    if env.get("KUBECONFIG"):
        # kubectl silently skips list entries that do not exist.
        return [os.path.expanduser(p) for p in env["KUBECONFIG"].split(os.pathsep) if p and os.path.isfile(os.path.expanduser(p))]
    default = os.path.expanduser("~/.kube/config")
    return [default] if os.path.isfile(default) else []


def connect(opts: ConnOptions) -> Connection:
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException

    _check_flags(opts)
    _quiet_client_library()
    paths = kubeconfig_paths(opts)
    cfg = type.__call__(Configuration)
    try:
        if paths:
            context, namespace = _load_from_files(paths, opts, cfg)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            context, namespace = _load_in_cluster(cfg)
        elif opts.server:   # kubectl --server URL [--token …] works with no kubeconfig at all
            context, namespace = "(flags)", None
        else:
            raise NoConfiguration("no kubeconfig found (~/.kube/config, KUBECONFIG or --kubeconfig) "
                                  "and not running inside a cluster")
    except ConfigException as exc:
        raise KubeconfigError(f"invalid kubeconfig: {_one_line(exc)}") from None
    except (yaml.YAMLError, OSError, UnicodeDecodeError, TypeError, AttributeError, KeyError) as exc:
        raise KubeconfigError(f"invalid kubeconfig: {_one_line(exc)}") from None
    cfg.retries = False             # an unreachable server should fail fast, as kubectl does
    _apply_flags(opts, cfg)
    client = _client(cfg)
    client.impersonate(opts.as_user, opts.as_groups)
    return Connection(client, opts.namespace or namespace or "default", cfg.host, context)


def _check_flags(opts: ConnOptions) -> None:
    """kubectl's own refusals for contradictory connection flags (client-go wording)."""
    if opts.as_groups and not opts.as_user:
        raise KubeconfigError("--as-group needs --as: requesting groups without impersonating a user is not allowed")
    if opts.insecure and opts.ca_file:
        raise KubeconfigError("specifying a root certificates file with the insecure flag is not allowed")
    if opts.ca_file and not os.path.isfile(os.path.expanduser(opts.ca_file)):
        raise KubeconfigError(f"--certificate-authority {opts.ca_file}: no such file")


def _apply_flags(opts: ConnOptions, cfg) -> None:
    """Command-line connection flags beat the kubeconfig, as with kubectl."""
    if opts.server:
        cfg.host = opts.server.rstrip("/")
    if opts.token:
        cfg.api_key = {"authorization": f"Bearer {opts.token}"}
        cfg.api_key_prefix = {}
        cfg.refresh_api_key_hook = None   # an exec/auth-provider refresh would replace the given token
    if opts.ca_file:
        cfg.ssl_ca_cert = os.path.expanduser(opts.ca_file)
        cfg.verify_ssl = True
    if opts.insecure:   # kubectl drops the kubeconfig's CA when the flag asks not to verify
        cfg.verify_ssl, cfg.ssl_ca_cert = False, None


def _client_class():
    from kubernetes.client import ApiClient

    class Client(ApiClient):
        """The API client with impersonation headers on every request (Impersonate-Group once per group, as
        client-go sends it); still only the GETs collect/api.py makes."""
        groups: Tuple[str, ...] = ()

        def impersonate(self, user: Optional[str], groups: Tuple[str, ...]) -> None:
            if user:
                self.set_default_header("Impersonate-User", user)
            self.groups = tuple(groups)

        def call_api(self, method, url, header_params=None, *args, **kwargs):
            if self.groups:
                from urllib3 import HTTPHeaderDict
                headers = HTTPHeaderDict(header_params or {})
                for group in self.groups:
                    headers.add("Impersonate-Group", group)
                header_params = headers
            return super().call_api(method, url, header_params, *args, **kwargs)
    return Client


def _client(cfg):
    return _client_class()(configuration=cfg)


def _quiet_client_library() -> None:
    """stderr carries one line: the client logs exec-plugin failures through the root logger (`ERROR:root:…`),
    and urllib3 warns on every request to a server whose certificate is not verified (kubectl warns nothing)."""
    import logging
    import warnings

    import urllib3
    logging.getLogger().addHandler(logging.NullHandler())
    warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)


def _load_from_files(paths: List[str], opts: ConnOptions, cfg):
    from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader, KubeConfigMerger

    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        if doc is not None and not isinstance(doc, dict):
            raise KubeconfigError(f"invalid kubeconfig {path}: not a mapping")
    merger = KubeConfigMerger(os.pathsep.join(paths))
    if merger.config is None:
        raise KubeconfigError("invalid kubeconfig: no configuration found")
    # kubectl: the first file that sets current-context wins (the client library lets the last win).
    current = next((merger.config_files[p].get("current-context") for p in merger.paths
                    if (merger.config_files[p] or {}).get("current-context")), None)
    context = opts.context or current
    if not context:
        raise KubeconfigError("no context chosen: the kubeconfig has no current-context; pass --context")
    contexts = {c.value["name"]: c for c in merger.config.value["contexts"]}
    if context not in contexts:
        raise KubeconfigError(f'context "{context}" does not exist in the kubeconfig')
    if opts.cluster or opts.user:
        base = dict(contexts[context].value.get("context") or {})
        for key, val in (("cluster", opts.cluster), ("user", opts.user)):
            if val:
                if val not in {c.value["name"] for c in merger.config.value[key + "s"]}:
                    raise KubeconfigError(f'{key} "{val}" does not exist in the kubeconfig')
                base[key] = val
        override = ConfigNode("gpudoctor-override", {"name": "gpudoctor-override", "context": base},
                              contexts[context].path)
        merger.config.value["contexts"].append(override)
        context_for_loader = "gpudoctor-override"
    else:
        context_for_loader = context
    loader = KubeConfigLoader(config_dict=merger.config, active_context=context_for_loader, config_base_path=None)
    loader.load_and_set(cfg)
    namespace = ((contexts[context].value.get("context") or {}).get("namespace"))
    return context, namespace


def _load_in_cluster(cfg):
    from kubernetes.config.incluster_config import InClusterConfigLoader, SERVICE_CERT_FILENAME, SERVICE_TOKEN_FILENAME

    InClusterConfigLoader(token_filename=SERVICE_TOKEN_FILENAME, cert_filename=SERVICE_CERT_FILENAME).load_and_set(cfg)
    ns_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    namespace = open(ns_file).read().strip() if os.path.isfile(ns_file) else "default"
    return "in-cluster", namespace


def _one_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
