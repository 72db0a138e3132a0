"""Finds the cluster as kubectl does (--kubeconfig, KUBECONFIG list, ~/.kube/config, in-cluster); never writes a kubeconfig.

Plain kubeconfigs (token, token file, client certificate, basic auth) are read here; the `kubernetes` library is
imported only for what it does well: exec credential plugins, auth providers and in-cluster config."""
from __future__ import annotations

import base64
import os
from typing import List, Optional, Tuple

from . import blockyaml
from ..record import record
from .transport import Credentials, Transport, basic_auth


class KubeconfigError(Exception):
    """The kubeconfig is malformed or names something that does not exist (exit 2)."""


class NoConfiguration(Exception):
    """No kubeconfig and not inside a cluster (exit 3: nothing to diagnose against)."""


@record
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


@record
class Connection:
    client: Transport
    namespace: str
    server: str
    context: str


# User fields read here; any other way to authenticate (exec, auth-provider) goes through the client library.
PLAIN_USER_KEYS = {"token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
                   "client-key-data", "username", "password", "extensions"}
PLAIN_CLUSTER_KEYS = {"server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify",
                      "tls-server-name", "proxy-url", "extensions", "disable-compression"}
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


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
    _check_flags(opts)
    paths = kubeconfig_paths(opts)
    try:
        if paths:
            creds, context, namespace = _from_files(paths, opts)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            creds, context, namespace = _in_cluster()
        elif opts.server:   # kubectl --server URL [--token …] works with no kubeconfig at all
            creds, context, namespace = Credentials(server=opts.server.rstrip("/")), "(flags)", None
        else:
            raise NoConfiguration("no kubeconfig found (~/.kube/config, KUBECONFIG or --kubeconfig) "
                                  "and not running inside a cluster")
        _apply_flags(opts, creds)
        transport = Transport(creds, opts.request_timeout)
    except KubeconfigError:
        raise
    except (_YAMLError, OSError, UnicodeDecodeError, TypeError, AttributeError, KeyError, ValueError) as exc:
        raise KubeconfigError(f"invalid kubeconfig: {_one_line(exc)}") from None
    except Exception as exc:   # the client library's ConfigException
        if type(exc).__name__ != "ConfigException":
            raise
        raise KubeconfigError(f"invalid kubeconfig: {_one_line(exc)}") from None
    return Connection(transport, opts.namespace or namespace or "default", creds.server, context)


def _check_flags(opts: ConnOptions) -> None:
    """kubectl's own refusals for contradictory connection flags (client-go wording)."""
    if opts.as_groups and not opts.as_user:
        raise KubeconfigError("--as-group needs --as: requesting groups without impersonating a user is not allowed")
    if opts.insecure and opts.ca_file:
        raise KubeconfigError("specifying a root certificates file with the insecure flag is not allowed")
    if opts.ca_file and not os.path.isfile(os.path.expanduser(opts.ca_file)):
        raise KubeconfigError(f"--certificate-authority {opts.ca_file}: no such file")


def _apply_flags(opts: ConnOptions, creds: Credentials) -> None:
    """Command-line connection flags beat the kubeconfig, as with kubectl; impersonation headers go on every GET
    (Impersonate-Group once per group, as client-go sends it)."""
    if opts.server:
        creds.server = opts.server.rstrip("/")
    if opts.token:   # also replaces what an exec plugin or auth provider returned
        creds.authorization = f"Bearer {opts.token}"
    if opts.ca_file:
        creds.ca_file, creds.ca_data, creds.insecure = os.path.expanduser(opts.ca_file), None, False
    if opts.insecure:   # kubectl drops the kubeconfig's CA when the flag asks not to verify
        creds.insecure, creds.ca_file, creds.ca_data = True, None, None
    if opts.as_user:
        creds.headers["Impersonate-User"] = [opts.as_user]
    if opts.as_groups:
        creds.headers["Impersonate-Group"] = list(opts.as_groups)


def _from_files(paths: List[str], opts: ConnOptions) -> Tuple[Credentials, str, Optional[str]]:
    docs = []
    for path in paths:
        doc = _read(path)
        if doc is not None and not isinstance(doc, dict):
            raise KubeconfigError(f"invalid kubeconfig {path}: not a mapping")
        docs.append((path, doc))
    plain = _plain(docs, opts)
    return plain if plain is not None else _with_client_library(paths, opts)


class _YAMLError(Exception):
    """PyYAML's own error, carried out of _read (which alone imports PyYAML)."""


def _read(path: str):
    """The kubeconfig file's document: block-style YAML as kubectl writes it without PyYAML, the rest with it."""
    with open(path, encoding="utf-8") as f:
        doc = blockyaml.load(f.read())
    if doc is not None:
        return doc
    import yaml
    with open(path, encoding="utf-8") as f:   # read again so that PyYAML's messages name the file
        try:
            return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise _YAMLError(str(exc)) from None


def _named(docs, key: str) -> Optional[dict]:
    """kubectl's merge of one list (clusters, contexts, users): the first file that names an entry wins.
    (name -> (entry, file it came from)); None when the list is not the plain shape read here."""
    out = {}
    for path, doc in docs:
        items = doc.get(key) or []
        if not isinstance(items, list):
            return None
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or \
                    not isinstance(item.get(key[:-1]) or {}, dict):
                return None
            out.setdefault(item["name"], (item.get(key[:-1]) or {}, path))
    return out


def _plain(docs, opts: ConnOptions) -> Optional[Tuple[Credentials, str, Optional[str]]]:
    """The connection of a kubeconfig that needs no client library, or None (exec, auth providers, odd shapes:
    the client library reads those, and says what is wrong with them)."""
    if any(doc is None for _, doc in docs):
        return None
    lists = {k: _named(docs, k) for k in ("clusters", "contexts", "users")}
    if any(v is None for v in lists.values()):
        return None
    context = _choose_context(docs, opts, lists)
    ctx = dict(lists["contexts"][context][0])
    for key, val in (("cluster", opts.cluster), ("user", opts.user)):
        if val:
            ctx[key] = val
    cluster, cluster_path = lists["clusters"].get(ctx.get("cluster"), (None, None))
    user, user_path = lists["users"].get(ctx.get("user"), ({}, None)) if ctx.get("user") else ({}, None)
    if not cluster or not isinstance(cluster.get("server"), str) or set(cluster) - PLAIN_CLUSTER_KEYS \
            or set(user) - PLAIN_USER_KEYS:
        return None
    creds = Credentials(server=cluster["server"].rstrip("/"))
    base = os.path.dirname(os.path.abspath(cluster_path))
    if creds.server.startswith("https"):
        creds.ca_file, creds.ca_data = _file_or_data(cluster, "certificate-authority", base)
        user_base = os.path.dirname(os.path.abspath(user_path)) if user_path else base
        # the client library resolves the user's relative paths against the cluster's file; kubectl against the
        # user's own file: the same file in every ordinary kubeconfig
        creds.cert_file, creds.cert_data = _file_or_data(user, "client-certificate", user_base)
        creds.key_file, creds.key_data = _file_or_data(user, "client-key", user_base)
    creds.insecure = bool(cluster.get("insecure-skip-tls-verify"))
    creds.tls_server_name = cluster.get("tls-server-name")
    creds.proxy_url = cluster.get("proxy-url")
    if user.get("token"):
        creds.authorization = f"Bearer {user['token']}"
    elif user.get("tokenFile"):
        with open(os.path.join(os.path.dirname(os.path.abspath(user_path)), user["tokenFile"]), encoding="utf-8") as f:
            token = f.read().strip()
        creds.authorization = f"Bearer {token}" if token else None
    elif "username" in user and "password" in user:
        creds.authorization = basic_auth(str(user["username"]), str(user["password"]))
    return creds, context, ctx.get("namespace")


def _choose_context(docs, opts: ConnOptions, lists) -> str:
    # kubectl: the first file that sets current-context wins (the client library lets the last win).
    current = next((doc.get("current-context") for _, doc in docs if doc.get("current-context")), None)
    context = opts.context or current
    if not context:
        raise KubeconfigError("no context chosen: the kubeconfig has no current-context; pass --context")
    if context not in lists["contexts"]:
        raise KubeconfigError(f'context "{context}" does not exist in the kubeconfig')
    for key, val in (("cluster", opts.cluster), ("user", opts.user)):
        if val and val not in lists[key + "s"]:
            raise KubeconfigError(f'{key} "{val}" does not exist in the kubeconfig')
    return context


def _file_or_data(obj: dict, key: str, base: str) -> Tuple[Optional[str], Optional[bytes]]:
    """A PEM item given inline (`<key>-data`, base64) or as a path relative to the kubeconfig's directory."""
    if obj.get(f"{key}-data"):
        return None, base64.standard_b64decode(obj[f"{key}-data"])
    if obj.get(key):
        path = os.path.normpath(os.path.join(base, os.path.expanduser(obj[key])))
        if not os.path.isfile(path):
            raise KubeconfigError(f"invalid kubeconfig: File does not exist: {path}")
        return path, None
    return None, None


def _with_client_library(paths: List[str], opts: ConnOptions) -> Tuple[Credentials, str, Optional[str]]:
    """Exec credential plugins, auth providers and unusual shapes: the kubernetes library loads them."""
    _quiet_client_library()
    from kubernetes.client import Configuration
    from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader, KubeConfigMerger

    merger = KubeConfigMerger(os.pathsep.join(paths))
    if merger.config is None:
        raise KubeconfigError("invalid kubeconfig: no configuration found")
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
    cfg = type.__call__(Configuration)
    KubeConfigLoader(config_dict=merger.config, active_context=context_for_loader, config_base_path=None).load_and_set(cfg)
    namespace = ((contexts[context].value.get("context") or {}).get("namespace"))
    return _credentials(cfg), context, namespace


def _quiet_client_library() -> None:
    """stderr carries one line: the client library logs exec-plugin failures through the root logger
    (`ERROR:root:…`); the failure itself reaches the user as the one-line error."""
    import logging
    logging.getLogger().addHandler(logging.NullHandler())


def _in_cluster() -> Tuple[Credentials, str, str]:
    _quiet_client_library()
    from kubernetes.client import Configuration
    from kubernetes.config.incluster_config import InClusterConfigLoader, SERVICE_CERT_FILENAME, SERVICE_TOKEN_FILENAME

    cfg = type.__call__(Configuration)
    InClusterConfigLoader(token_filename=SERVICE_TOKEN_FILENAME, cert_filename=SERVICE_CERT_FILENAME).load_and_set(cfg)
    ns_file = os.path.join(SA_DIR, "namespace")
    namespace = open(ns_file).read().strip() if os.path.isfile(ns_file) else "default"
    return _credentials(cfg), "in-cluster", namespace


def _credentials(cfg) -> Credentials:
    """What the client library's Configuration holds, for the transport."""
    auth = cfg.get_api_key_with_prefix("BearerToken")   # "Bearer …", or "Basic …" for username/password
    return Credentials(server=cfg.host.rstrip("/"), authorization=auth or None, ca_file=cfg.ssl_ca_cert,
                       cert_file=cfg.cert_file, key_file=cfg.key_file, insecure=not cfg.verify_ssl,
                       tls_server_name=cfg.tls_server_name, proxy_url=cfg.proxy)


def _one_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
