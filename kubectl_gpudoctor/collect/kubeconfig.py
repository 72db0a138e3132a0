"""Finds the cluster as kubectl does (--kubeconfig, KUBECONFIG list, ~/.kube/config, in-cluster) and who to be there,
with client-go's merge, override, precedence and refusal rules; never writes a kubeconfig.

Every kubeconfig is read here into `Credentials`; the `kubernetes` library is imported only for what it does well —
running exec credential plugins, the oidc auth provider and in-cluster config — and what it yields becomes the same
`Credentials`, so the transport's rules hold on every path."""
from __future__ import annotations

import base64
import os
from typing import Dict, List, Optional, Tuple

from . import goyaml, kubeconfig_decode, kubeconfig_validate
from ..record import record
from .transport import Credentials, Refused, Transport, basic_auth, mask_url


class KubeconfigError(Exception):
    """The kubeconfig (or a connection flag) is one kubectl refuses, or names something that does not exist (exit 2)."""


class NoConfiguration(Exception):
    """No kubeconfig and not inside a cluster (exit 3: nothing to diagnose against)."""


class CredentialError(Exception):
    """The exec credential plugin or auth provider gave no credential (exit 3: nothing is read unauthenticated)."""


@record
class ConnOptions:
    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    cluster: Optional[str] = None
    user: Optional[str] = None
    namespace: Optional[str] = None
    request_timeout: float = 10.0
    all_namespaces: bool = False     # -A: find a pod by name in whatever namespace holds it
    # kubectl's global flags over the kubeconfig (client-go ConfigOverrides)
    as_user: Optional[str] = None
    as_groups: Tuple[str, ...] = ()
    token: Optional[str] = None
    server: Optional[str] = None
    ca_file: Optional[str] = None
    insecure: bool = False
    as_uid: Optional[str] = None
    username: Optional[str] = None
    password: Optional[str] = None
    client_certificate: Optional[str] = None
    client_key: Optional[str] = None
    tls_server_name: Optional[str] = None
    disable_compression: bool = False


@record
class Connection:
    client: Transport
    namespace: str
    server: str
    context: str


SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_CLUSTER_DATA = ("certificate-authority",)
_USER_FILES = ("client-certificate", "client-key", "tokenFile")


def kubeconfig_paths(opts: ConnOptions, env=None) -> List[str]:
    """The files kubectl would read, in precedence order (first file that sets a value wins)."""
    env = os.environ if env is None else env
    # client-go expands no `~` in these paths (a shell does, before kubectl sees them)
    if opts.kubeconfig:
        if not os.path.exists(opts.kubeconfig):
            raise KubeconfigError(f"stat {opts.kubeconfig}: no such file or directory")
        return [opts.kubeconfig]
    if env.get("KUBECONFIG"):
        # kubectl silently skips list entries that do not exist, and reads a path listed twice once.
        seen: List[str] = []
        for p in env["KUBECONFIG"].split(os.pathsep):
            if p and p not in seen and os.path.isfile(p):
                seen.append(p)
        return seen
    default = os.path.expanduser("~/.kube/config")
    return [default] if os.path.isfile(default) else []


def connect(opts: ConnOptions) -> Connection:
    paths = kubeconfig_paths(opts)
    try:
        docs = [(path, _read(path)) for path in paths]
        if any(doc for _, doc in docs) or opts.server or (paths and not _in_cluster_possible()):
            # (kubectl --server URL [--token …] works with no kubeconfig at all)
            creds, context, namespace = _from_files(docs, opts)
        elif _in_cluster_possible():
            creds, context, namespace = _in_cluster(opts)
        else:
            raise NoConfiguration("no kubeconfig found (~/.kube/config, KUBECONFIG or --kubeconfig) "
                                  "and not running inside a cluster")
        transport = Transport(creds, opts.request_timeout)
    except (KubeconfigError, CredentialError, NoConfiguration, Refused):
        raise
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise KubeconfigError(f"invalid kubeconfig: {_one_line(exc)}") from None
    return Connection(transport, opts.namespace or namespace or "default", mask_url(creds.server), context)


def _in_cluster_possible() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def _read(path: str):
    """One file's document, decoded and type-checked as client-go does (kubectl's wording on failure)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = goyaml.load(f.read())
        kubeconfig_decode.check(doc)
    except (goyaml.GoYAMLError, kubeconfig_decode.DecodeError) as exc:
        raise KubeconfigError(f'error loading config file "{path}": {exc}') from None
    except UnicodeDecodeError:
        raise KubeconfigError(f'error loading config file "{path}": not UTF-8 text') from None
    except OSError as exc:
        raise KubeconfigError(f'error loading config file "{path}": read {path}: '
                              f'{(exc.strerror or str(exc)).lower()}') from None
    return doc


def _merged(docs, key: str) -> Dict[str, Tuple[dict, str]]:
    """client-go's merge of one list (clusters, contexts, users): the first file that names an entry wins it whole.
    name -> (entry, the file it came from)."""
    inner = {"clusters": "cluster", "contexts": "context", "users": "user"}[key]
    out: Dict[str, Tuple[dict, str]] = {}
    for path, doc in docs:
        for item in (doc or {}).get(key) or ():
            item = item or {}
            out.setdefault(item.get("name") or "", (dict(item.get(inner) or {}), path))
    return out


def _from_files(docs, opts: ConnOptions) -> Tuple[Credentials, str, Optional[str]]:
    lists = {k: _merged(docs, k) for k in ("clusters", "contexts", "users")}
    # client-go: the first file that sets current-context wins
    current = next((doc.get("current-context") for _, doc in docs if doc and doc.get("current-context")), None)
    context = opts.context or current or ""
    if context and context not in lists["contexts"]:
        raise KubeconfigError(f"context was not found for specified context: {context}")
    if not context and not opts.server:
        if _in_cluster_possible():
            return _in_cluster(opts)
        raise KubeconfigError("no context chosen: the kubeconfig has no current-context; pass --context")
    ctx = lists["contexts"][context][0] if context else {}
    (cluster_name, cluster, cluster_path), (user_name, user, user_path) = _entries(lists, context, ctx, opts)
    _resolve_paths(cluster, cluster_path, _CLUSTER_DATA)
    _resolve_paths(user, user_path, _USER_FILES)
    if isinstance(user.get("exec"), dict) and "/" in (user["exec"].get("command") or "") and user_path:
        user["exec"] = dict(user["exec"], command=kubeconfig_validate.resolve(user["exec"]["command"], _dir(user_path)))
    _override_cluster(cluster, opts)
    _override_user(user, opts)
    problems = kubeconfig_validate.problems(user_name, user, cluster_name, cluster)
    if problems:
        raise KubeconfigError("; ".join(problems))
    creds = _credentials(user, cluster, _dir(user_path or cluster_path))
    return creds, context or "(flags)", ctx.get("namespace") or None


def _entries(lists, context: str, ctx: dict, opts: ConnOptions):
    """((cluster name, cluster, its file), (user name, user, its file)) the context and flags choose; names kubectl
    cannot find are refused (with client-go's words where kubectl refuses)."""
    cluster_name = opts.cluster or ctx.get("cluster") or ""
    user_name = opts.user or ctx.get("user") or ""
    if cluster_name in lists["clusters"]:
        cluster, cluster_path = lists["clusters"][cluster_name]
    elif opts.cluster and not opts.server:
        raise KubeconfigError(f'no server found for cluster "{opts.cluster}"')
    elif opts.cluster:
        raise KubeconfigError(f'cluster "{opts.cluster}" does not exist')
    elif cluster_name and not opts.server:
        # kubectl falls back to http://localhost:8080 without credentials: a dead end, said at once
        raise KubeconfigError(f'cluster "{cluster_name}" was not found for context "{context}"')
    else:
        cluster, cluster_path = {}, None
    if user_name in lists["users"]:
        user, user_path = lists["users"][user_name]
    elif opts.user:
        raise KubeconfigError(f'auth info "{opts.user}" does not exist')
    elif user_name and not _user_flags(opts):
        # kubectl would prompt for a username and password, and read anonymously without a terminal
        raise KubeconfigError(f'user "{user_name}" was not found for context "{context}"')
    else:
        user, user_path = {}, None
    return (cluster_name, cluster, cluster_path), (user_name, user, user_path)


def _dir(path: Optional[str]) -> Optional[str]:
    return os.path.dirname(os.path.abspath(path)) if path else None


def _resolve_paths(entry: dict, path: Optional[str], keys) -> None:
    """client-go resolves an entry's relative paths against the file the entry came from."""
    if path:
        for key in keys:
            if entry.get(key):
                entry[key] = kubeconfig_validate.resolve(entry[key], _dir(path))


def _user_flags(opts: ConnOptions) -> bool:
    return bool(opts.token or opts.username or opts.password or opts.client_certificate or opts.client_key)


def _override_cluster(cluster: dict, opts: ConnOptions) -> None:
    """kubectl's cluster flags over the kubeconfig (client-go DirectClientConfig.getCluster)."""
    for key, value in (("server", opts.server), ("disable-compression", opts.disable_compression)):
        if value:
            cluster[key] = value
    if opts.insecure or opts.ca_file:   # either flag replaces the kubeconfig's whole trust setting
        cluster["insecure-skip-tls-verify"] = opts.insecure
        cluster["certificate-authority"] = opts.ca_file or ""
        cluster["certificate-authority-data"] = None
    if opts.tls_server_name or opts.server:   # a --server drops the kubeconfig's tls-server-name
        cluster["tls-server-name"] = opts.tls_server_name or ""


def _override_user(user: dict, opts: ConnOptions) -> None:
    """kubectl's user flags over the kubeconfig (client-go merges each one that is set; --as-group replaces the
    list, and an --as-uid or a kubeconfig's as-user-extra stays)."""
    for key, value in (("token", opts.token), ("client-certificate", opts.client_certificate),
                       ("client-key", opts.client_key), ("username", opts.username), ("password", opts.password),
                       ("as", opts.as_user), ("as-uid", opts.as_uid), ("as-groups", list(opts.as_groups))):
        if value:
            user[key] = value


def _credentials(user: dict, cluster: dict, base: Optional[str]) -> Credentials:
    creds = Credentials(server=(cluster.get("server") or "").rstrip("/"))
    creds.insecure = bool(cluster.get("insecure-skip-tls-verify"))
    creds.tls_server_name = cluster.get("tls-server-name") or None
    creds.proxy_url = cluster.get("proxy-url") or None
    creds.disable_compression = bool(cluster.get("disable-compression"))
    creds.ca_file, creds.ca_data = _file_or_data(cluster, "certificate-authority")
    creds.headers.update(impersonation(user))
    if not creds.server.lower().startswith("https://"):
        return creds   # client-go reads the user's credentials only for a TLS server: plain http gets none
    creds.cert_file, creds.cert_data = _file_or_data(user, "client-certificate")
    creds.key_file, creds.key_data = _file_or_data(user, "client-key")
    creds.authorization = _bearer(user)
    if creds.authorization is None and (user.get("username") or user.get("password")):
        creds.authorization = basic_auth(user.get("username") or "", user.get("password") or "")
    # a token or password already set wins: client-go's exec and auth-provider round trippers step aside when the
    # request carries an Authorization header
    if creds.authorization is None and user.get("exec") is not None:
        from . import execcred
        status = execcred.run(user["exec"], cluster)
        if status.get("token"):
            creds.authorization = f"Bearer {status['token']}"
        if status.get("clientCertificateData"):
            creds.cert_file, creds.cert_data = None, status["clientCertificateData"].encode()
            creds.key_file, creds.key_data = None, status["clientKeyData"].encode()
    elif creds.authorization is None and user.get("auth-provider") is not None:
        from . import authprovider
        creds.authorization = authprovider.token(user["auth-provider"], cluster, base)
    _check_header_values(creds)
    return creds


def _check_header_values(creds: Credentials) -> None:
    """Go's net/http sends no header value holding a control character (a token with a line break cannot smuggle
    another header in); kubectl fails before connecting, in these words."""
    values = [("Authorization", creds.authorization or "")] + [(k, v) for k, vs in creds.headers.items() for v in vs]
    for name, value in values:
        if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
            raise KubeconfigError(f'Unable to connect to the server: net/http: invalid header field value for "{name}"')


def impersonation(user: dict) -> Dict[str, List[str]]:
    """The headers client-go sends for a user's `as`, `as-uid`, `as-groups`, `as-user-extra` (one header line per
    group and per extra value; an extra key path-escaped, as its transport does)."""
    if not user.get("as"):
        return {}
    out = {"Impersonate-User": [user["as"]]}
    if user.get("as-uid"):
        out["Impersonate-Uid"] = [user["as-uid"]]
    if user.get("as-groups"):
        out["Impersonate-Group"] = [g or "" for g in user["as-groups"]]
    for key, values in (user.get("as-user-extra") or {}).items():
        out["Impersonate-Extra-" + _header_key_escape(str(key))] = [v or "" for v in values or ()]
    return out


_TOKEN_CHARS = frozenset("!#$&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _header_key_escape(key: str) -> str:
    """client-go's headerKeyEscape: every byte that is not an HTTP token character (and "%") as %XX."""
    return "".join(chr(b) if chr(b) in _TOKEN_CHARS else f"%{b:02X}" for b in key.encode("utf-8"))


def _bearer(user: dict) -> Optional[str]:
    """client-go: a tokenFile that reads is used even when `token` is also set (the token is the fallback); a
    tokenFile alone must read, and not be empty."""
    token, path = user.get("token"), user.get("tokenFile")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read().strip()
        except OSError as exc:
            if token:
                return f"Bearer {token}"
            raise KubeconfigError(f"open {path}: {(exc.strerror or str(exc)).lower()}") from None
        if text:
            return f"Bearer {text}"
        if not token:
            raise KubeconfigError(f'read empty token from file "{path}"')
    return f"Bearer {token}" if token else None


def _file_or_data(obj: dict, key: str) -> Tuple[Optional[str], Optional[bytes]]:
    """A PEM item given inline (`<key>-data`, base64: it wins over the file) or as a (resolved) path."""
    if obj.get(f"{key}-data"):
        return None, base64.standard_b64decode("".join(obj[f"{key}-data"].split()))
    return (obj.get(key) or None), None


def bearer_case(auth: Optional[str]) -> Optional[str]:
    """The client library writes "bearer …" for a service account; client-go sends "Bearer …"."""
    if auth and auth[:7].lower() == "bearer ":
        return "Bearer " + auth[7:]
    return auth or None


def quiet_client_library() -> None:
    """stderr carries one line: the client library logs failures through the root logger (`ERROR:root:…`)."""
    import logging
    logging.getLogger().addHandler(logging.NullHandler())


def _in_cluster(opts: ConnOptions) -> Tuple[Credentials, str, str]:
    """A pod's service account (client-go inClusterClientConfig): only --server, --token and
    --certificate-authority apply over it."""
    if opts.ca_file and not os.path.isfile(opts.ca_file):
        raise KubeconfigError(f"unable to read certificate-authority {opts.ca_file}: no such file or directory")
    quiet_client_library()
    from kubernetes.client import Configuration
    from kubernetes.config.incluster_config import InClusterConfigLoader, SERVICE_CERT_FILENAME, SERVICE_TOKEN_FILENAME

    cfg = type.__call__(Configuration)
    try:
        InClusterConfigLoader(token_filename=SERVICE_TOKEN_FILENAME, cert_filename=SERVICE_CERT_FILENAME).load_and_set(cfg)
    except Exception as exc:  # noqa: BLE001 — the library's ConfigException
        raise KubeconfigError(f"in-cluster configuration: {_one_line(exc)}") from None
    creds = Credentials(server=cfg.host.rstrip("/"), authorization=bearer_case(cfg.get_api_key_with_prefix("BearerToken")),
                        ca_file=cfg.ssl_ca_cert, tls_server_name=cfg.tls_server_name)
    if opts.server:
        creds.server = opts.server.rstrip("/")
    if opts.token:
        creds.authorization = f"Bearer {opts.token}"
    if opts.ca_file:
        creds.ca_file = opts.ca_file
    user: dict = {}
    _override_user(user, opts)   # --as, --as-group, --as-uid: who reads, never silently dropped
    problems = kubeconfig_validate.problems("in-cluster", {k: v for k, v in user.items() if k.startswith("as")},
                                            "in-cluster", {"server": creds.server})
    if problems:
        raise KubeconfigError("; ".join(problems))
    creds.headers.update(impersonation(user))
    ns = os.environ.get("POD_NAMESPACE")
    ns_file = os.path.join(SA_DIR, "namespace")
    if not ns and os.path.isfile(ns_file):
        with open(ns_file, encoding="utf-8") as f:
            ns = f.read().strip()
    return creds, "in-cluster", ns or "default"


def _one_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
