"""Finds the cluster as kubectl does (--kubeconfig, KUBECONFIG list, ~/.kube/config, in-cluster); never writes a kubeconfig."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional

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
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.config.config_exception import ConfigException

    paths = kubeconfig_paths(opts)
    cfg = type.__call__(Configuration)
    try:
        if paths:
            context, namespace = _load_from_files(paths, opts, cfg)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            context, namespace = _load_in_cluster(cfg)
        else:
            raise NoConfiguration("no kubeconfig found (~/.kube/config, KUBECONFIG or --kubeconfig) "
                                  "and not running inside a cluster")
    except ConfigException as exc:
        raise KubeconfigError(f"invalid kubeconfig: {_one_line(exc)}") from None
    except (yaml.YAMLError, OSError, UnicodeDecodeError, TypeError, AttributeError, KeyError) as exc:
        raise KubeconfigError(f"invalid kubeconfig: {_one_line(exc)}") from None
    cfg.retries = False             # an unreachable server should fail fast, as kubectl does
    return Connection(ApiClient(configuration=cfg), opts.namespace or namespace or "default", cfg.host, context)


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
