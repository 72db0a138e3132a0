"""A read-only fake kube-apiserver (TLS + bearer token) that serves a test case's objects and logs over the
real REST paths for live tests and demos, and never accepts a write."""
from __future__ import annotations

import argparse, base64, copy, datetime, gzip, ipaddress, json, re  # noqa: E401
import shutil, signal, socketserver, ssl, sys, tempfile, threading, time  # noqa: E401
from collections import namedtuple
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml

JSON = "application/json"
RESOURCE_VERSION = "12345"
DEFAULT_USER = "system:serviceaccount:ml:gpudoctor"
VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.4", "gitTreeState": "clean",
           "gitCommit": "a78aa47129b8539636eb86a9d00e31b2720fe06b", "buildDate": "2024-12-10T11:37:20Z",
           "goVersion": "go1.22.9", "compiler": "gc", "platform": "linux/amd64"}
# Built-in kinds a real cluster always serves, even when a case holds none: (apiVersion, kind, namespaced, shortNames).
BUILTINS = [
    ("v1", "Pod", True, ["po"]), ("v1", "Event", True, ["ev"]), ("v1", "Node", False, ["no"]),
    ("v1", "Namespace", False, ["ns"]), ("v1", "PersistentVolumeClaim", True, ["pvc"]),
    ("v1", "PersistentVolume", False, ["pv"]), ("v1", "ConfigMap", True, ["cm"]), ("v1", "Secret", True, []),
    ("v1", "Service", True, ["svc"]), ("v1", "Endpoints", True, ["ep"]), ("v1", "ServiceAccount", True, ["sa"]),
    ("v1", "ResourceQuota", True, ["quota"]), ("v1", "LimitRange", True, ["limits"]),
    ("apps/v1", "Deployment", True, ["deploy"]), ("apps/v1", "StatefulSet", True, ["sts"]),
    ("apps/v1", "DaemonSet", True, ["ds"]), ("apps/v1", "ReplicaSet", True, ["rs"]),
    ("batch/v1", "Job", True, []), ("batch/v1", "CronJob", True, ["cj"]),
    ("node.k8s.io/v1", "RuntimeClass", False, []), ("networking.k8s.io/v1", "NetworkPolicy", True, ["netpol"]),
    ("storage.k8s.io/v1", "StorageClass", False, ["sc"]), ("scheduling.k8s.io/v1", "PriorityClass", False, ["pc"]),
]
# Kinds that are cluster-scoped even if a hand-written object carries a metadata.namespace.
CLUSTER_KINDS = {"Node", "Namespace", "PersistentVolume", "RuntimeClass", "StorageClass", "PriorityClass",
                 "ClusterPolicy", "NVIDIADriver", "DeviceClass", "ResourceSlice", "CustomResourceDefinition",
                 "ClusterRole", "ClusterRoleBinding", "CSIDriver", "CSINode", "VolumeAttachment", "IngressClass",
                 "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "NodeFeatureRule"}
# Field selectors are not generic in Kubernetes: each resource accepts a fixed set of labels (plus
# metadata.name/namespace) and answers 400 "field label not supported" for anything else.
FIELDS = {
    "pods": {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
    "events": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
               "reason", "reportingComponent", "source", "type"},
    "nodes": {"spec.unschedulable"}, "secrets": {"type"}, "namespaces": {"status.phase"},
    "services": {"spec.clusterIP", "spec.type"}, "replicasets": {"status.replicas"}, "jobs": {"status.successful"},
    # resource.k8s.io ResourceSliceSpec: "A field selector can be used to list only ResourceSlice objects belonging
    # to a certain node" / "with a certain driver name".
    "resourceslices": {"spec.nodeName", "spec.driver"},
}
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
           409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}
MESSAGES = {401: "Unauthorized", 404: "the server could not find the requested resource",
            405: "the server does not allow this method on the requested resource",
            429: "Too many requests, please try again later.", 500: "Internal error occurred: injected failure",
            503: "the server is currently unable to handle the request",
            504: "the server was unable to return a response in the time allotted, "
                 "but may still be processing the request"}


# query: dict[str, str]; impersonate_groups: every Impersonate-Group header line (one group each, as client-go sends);
# depth: 1 + the deepest request answered before this one arrived, i.e. which sequential round trip of the client
# this request belongs to (exact when answers take longer than issuing a round).
# Who asked: user and groups as authentication decided them (None when unauthenticated); credentials: the kinds
# that arrived ("bearer", "basic", "cert"), valid or not; listener: "https" or the name of an extra listener
# (add_listener), e.g. a plain-http one where any credential is a leak; impersonate_uid/extra: the Impersonate-Uid
# header and the Impersonate-Extra-<key> headers as ((key, value), ...); accept_encoding: what the client accepts.
RequestRecord = namedtuple("RequestRecord",
                           "method path query accept user_agent status impersonate_user impersonate_groups depth "
                           "user groups credentials listener impersonate_uid impersonate_extra accept_encoding",
                           defaults=(None, (), 0, None, (), (), "https", None, (), ""))


class ApiError(Exception):
    """An error answered as a metav1.Status body, the way every apiserver error looks on the wire."""

    def __init__(self, code: int, message: str | None = None, details: dict | None = None, headers=None):
        super().__init__(message)
        self.code, self.headers = code, dict(headers or {})
        self.status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message or MESSAGES.get(code, f"injected error {code}"),
                       "reason": REASONS.get(code, "Unknown")}
        if details is not None:  # 401 and 400 carry no details; NotFound/Forbidden do
            self.status["details"] = details
        self.status["code"] = code


def not_found() -> ApiError:  # an unknown path, group, version or resource (e.g. a CRD not installed)
    return ApiError(404, details={})


# CRDs whose definition names the plural explicitly, differently from the default derivation.
CRD_PLURALS = {"NetworkAttachmentDefinition": "network-attachment-definitions"}


def plural(kind: str) -> str:
    """The resource name the apiserver derives from a kind (what CRDs get by default)."""
    if kind in CRD_PLURALS:
        return CRD_PLURALS[kind]
    low = kind.lower()
    if low == "endpoints":
        return low
    if low.endswith("y") and low[-2:-1] not in tuple("aeiou"):
        return low[:-1] + "ies"
    return low + ("es" if low.endswith(("s", "x", "ch", "sh")) else "s")


Resource = namedtuple("Resource", "group version name kind namespaced short_names")


class Req(namedtuple("Req", "group version namespace resource name sub verb")):
    """A resource request as authorization sees it (namespace, name and sub may be None)."""

    @property
    def qualified(self) -> str:  # how errors name a resource: "pods", "runtimeclasses.node.k8s.io"
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def details(self) -> dict:
        return {k: v for k, v in (("name", self.name), ("group", self.group), ("kind", self.resource)) if v}


def parse_resource_path(path: str) -> Req | None:
    parts = [unquote(p) for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":  # /namespaces/<ns> alone is a get of the Namespace
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3 and rest[2] == "proxy":  # pods/NAME[:PORT]/proxy/PATH, services/NAME[:PORT]/proxy/PATH
        rest = rest[:3]
    if not 1 <= len(rest) <= 3:
        return None
    resource, name, sub = (rest + [None, None])[:3]
    return Req(group, version, namespace, resource, name, sub, "get" if name else "list")


@dataclass
class Fault:
    action: str  # "forbid" | "fail" | "delay" | "hold" | "drip" (the body a byte at a time) | "encode" (gzip, corrupt-gzip)
    resource: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    verb: str | None = None
    cluster_scope_only: bool = False
    status: int = 0
    message: str | None = None
    seconds: float = 0.0
    gate: threading.Event | None = None   # "hold": answered once set (or after `seconds`, so no test hangs)
    connections: int = 0                  # "hold": also set once this many connections have been accepted
    arrived: threading.Semaphore | None = None   # "hold": released once per request that reached the hold
    retry_after: float | None = None  # a Retry-After header on the failure (seconds), as 429/503 carry
    times: int | None = None  # the fault applies to this many matching requests, then no more
    encoding: str | None = None  # "gzip" | "corrupt-gzip" (when the client accepts gzip) | "gzip-always"

    def matches(self, r: Req) -> bool:
        return (self.resource == r.resource and self.namespace in (None, r.namespace) and self.name in (None, r.name)
                and self.subresource in (None, r.sub) and self.verb in (None, r.verb)
                and not (self.cluster_scope_only and r.namespace))


def _field_value(obj: dict, path: str) -> str:
    for key in path.split("."):
        obj = obj.get(key) if isinstance(obj, dict) else None
    return str(obj).lower() if isinstance(obj, bool) else "" if obj is None else str(obj)


def _node_name(pod: dict) -> str:
    return _field_value(pod, "spec.nodeName")


def _terms(selector: str) -> list[str]:
    return [t.strip() for t in re.split(r",(?![^()]*\))", selector) if t.strip()]  # commas outside "in (a,b)"


_LABEL_REQ = re.compile(r"(!?)([\w./-]+)(?:\s*(==|=|!=)\s*([\w.-]*)|\s+(in|notin)\s*\(([^)]*)\))?")


def _labels(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("labels") or {}


def selector_predicates(resource: str, field_sel: str, label_sel: str) -> list:
    preds = []
    for term in _terms(field_sel):
        m = re.fullmatch(r"([\w.]+)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise ApiError(400, f"invalid selector: '{field_sel}'; can't understand '{term}'")
        key, op, want = m.groups()
        if key not in FIELDS.get(resource, set()) | {"metadata.name", "metadata.namespace"}:
            raise ApiError(400, f"field label not supported: {key}")
        key = "source.component" if (resource, key) == ("events", "source") else key
        preds.append(lambda o, k=key, w=want, ne=op == "!=": (_field_value(o, k) == w) != ne)
    for term in _terms(label_sel):
        m = _LABEL_REQ.fullmatch(term)
        if not m or (m[1] and (m[3] or m[5])):
            raise ApiError(400, f"unable to parse requirement: {term!r}")
        neg, key, op, want, set_op, values = m.groups()
        if op:  # "!=" (like notin) also matches objects that lack the label
            preds.append(lambda o, k=key, w=want, ne=op == "!=": (_labels(o).get(k) == w) != ne)
        elif set_op:
            vs = {v.strip() for v in values.split(",")}
            preds.append(lambda o, k=key, vs=vs, ni=set_op == "notin": (_labels(o).get(k) in vs) != ni)
        else:
            preds.append(lambda o, k=key, n=bool(neg): (k in _labels(o)) != n)
    return preds


def wants_metadata(accept: str) -> bool:
    # Accept lists alternatives in preference order; the first one this server can produce wins.
    # as=Table is not implemented: kubectl then prints the plain object itself (NAME, AGE).
    for alternative in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in alternative.split(";")[1:])
        if params.get("as", "").startswith("PartialObjectMetadata"):
            return True
        if params.get("as") in (None, "", "Table"):
            return False
    return False


def _version_key(v: str):  # Kubernetes version priority: v2 > v1 > v1beta2 > v1beta1 > v1alpha1
    m = re.fullmatch(r"v(\d+)(?:(beta|alpha)(\d+))?", v)
    return (3, v) if not m else ({None: 0, "beta": 1, "alpha": 2}[m[2]], -int(m[1]), -int(m[3] or 0))


def _dumps(obj) -> bytes:
    return json.dumps(obj, default=lambda o: o.strftime("%Y-%m-%dT%H:%M:%SZ")).encode()


def _int_param(query: dict, key: str, default=0):
    try:
        return int(query[key]) if query.get(key) not in (None, "") else default
    except ValueError:
        raise ApiError(400, f"{key}: Invalid value: {query[key]!r}: must be an integer") from None


class _NoTimestampLoader(yaml.SafeLoader):
    """Keeps unquoted creationTimestamp values as strings, as they are in the API's JSON."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    k: [r for r in v if r[0] != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _flatten(doc) -> list[dict]:
    if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind") or \
            str(doc["apiVersion"]).startswith("gpudoctor/"):
        return []  # expect.yaml, bundle.yaml (kind: Bundle), empty documents
    if doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
        # Items of a typed list (PodList) carry no apiVersion/kind on the wire; a v1 List's items do.
        defaults = {} if doc["kind"] == "List" else {"apiVersion": doc["apiVersion"], "kind": doc["kind"][:-4]}
        return [o for item in doc["items"] if isinstance(item, dict) for o in _flatten({**defaults, **item})]
    return [doc] if (doc.get("metadata") or {}).get("name") else []  # every API object has a name


def load_case(case_dir) -> tuple[list[dict], dict]:
    root, objects, logs = Path(case_dir), [], {}
    for f in sorted(p for p in root.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml", ".json")):
        docs = [json.loads(f.read_text())] if f.suffix == ".json" else yaml.load_all(f.read_text(), _NoTimestampLoader)
        objects += [o for doc in docs for o in _flatten(doc)]
    for f in sorted((root / "logs").glob("*/*/*.log")):
        previous = f.name.endswith(".previous.log")
        container = f.name[: -len(".previous.log")] if previous else f.name[: -len(".log")]
        logs[(f.parent.parent.name, f.parent.name, container, previous)] = f.read_text()
    return objects, logs


def load_metrics(case_dir) -> dict:
    """A case's recorded dcgm-exporter metrics (metrics/<namespace>/<pod>.prom), for FakeApiServer.metrics."""
    return {(f.parent.name, f.stem): f.read_text() for f in sorted((Path(case_dir) / "metrics").glob("*/*.prom"))}


def load_cases(*cases) -> tuple[list[dict], dict]:
    """Several case bundles served as one cluster: their objects together, their logs merged."""
    objects, logs = [], {}
    for case in cases:
        o, l = load_case(case)
        objects += o
        logs.update(l)
    return objects, logs


def _san(name: str):
    from cryptography import x509
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _make_cert(directory: Path, names=("127.0.0.1", "localhost"), stem: str = "") -> tuple[Path, Path]:
    """A self-signed server certificate (its own CA) for `names` (IP addresses or DNS names)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())  # instant, unlike RSA; Go and OpenSSL both accept it
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpudoctor-fake-apiserver")])
    now = datetime.datetime.now(datetime.timezone.utc)
    usage = x509.KeyUsage(digital_signature=True, key_cert_sign=True, content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, crl_sign=False, encipher_only=False,
                          decipher_only=False)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([_san(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)  # it is its own CA
            .add_extension(usage, critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = directory / f"{stem}ca.crt", directory / f"{stem}server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def _make_client_ca(directory: Path):
    """A CA for client certificates: (cert file, key object, cert object)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpudoctor-fake-client-ca")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    path = directory / "client-ca.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, key, cert


def _issue_client_cert(directory: Path, ca, cn: str, groups=(), passphrase: str | None = None, stem: str = ""):
    """A client certificate as kubeadm issues them: CN is the user, each O a group; the key optionally encrypted
    (a traditional OpenSSL PEM with Proc-Type: 4,ENCRYPTED)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    _, ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    stem = stem or cn.replace(":", "_")
    cert_file, key_file = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if passphrase is None:
        key_bytes = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption())
    else:
        key_bytes = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.BestAvailableEncryption(passphrase.encode()))
    key_file.write_bytes(key_bytes)
    return str(cert_file), str(key_file)


def _peer_identity(conn) -> tuple[str, tuple] | None:
    """The verified client certificate's CN and O values, as the apiserver's x509 authenticator reads them."""
    try:
        cert = conn.getpeercert() if isinstance(conn, ssl.SSLSocket) else None
    except (ValueError, ssl.SSLError):
        return None
    if not cert:
        return None
    attrs = [a for rdn in cert.get("subject", ()) for a in rdn]
    cn = next((v for k, v in attrs if k == "commonName"), None)
    return (cn, tuple(v for k, v in attrs if k == "organizationName")) if cn else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as client-go expects
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms delayed-ACK stalls
    server_version = "fake-kube-apiserver"
    timeout = 60

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.server.fake._connected()

    def _handle(self):
        self.server.fake._handle(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class _TLSServer(ThreadingHTTPServer):
    request_queue_size = 128  # socketserver's backlog of 5 stalls a parallel client for 1 s (SYN retry)

    def server_bind(self):  # skip HTTPServer's reverse-DNS lookup of the bind address
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request, client_address):  # clients that reject the cert or hang up mid-answer
        pass


class FakeApiServer:
    def __init__(self, objects=(), logs=None, token: str = "t0ken", *, port: int = 0, username: str = DEFAULT_USER,
                 latency: float = 0.0, tokens: dict | None = None, basic: dict | None = None,
                 client_ca: bool = False, cert_names=()):
        """tokens: more bearer tokens, token -> user or (user, groups); basic: (user, password) -> user or
        (user, groups), accepted as Basic credentials; client_ca: ask for client certificates (CN the user, O the
        groups) signed by a CA of the server's own (issue_client_cert); cert_names: more names the server's
        certificate holds besides 127.0.0.1 and localhost."""
        self.token, self.username, self.port = token, username, port
        self.tokens = {token: username, **(tokens or {})}
        self.basic = dict(basic or {})
        self._client_ca, self._cert_names = client_ca, tuple(cert_names)
        self._listeners: list = []
        self.listener_ca: dict[str, str] = {}  # extra TLS listener -> the CA file that verifies its certificate
        self._local = threading.local()
        self.latency = latency  # seconds added to every answer, like a round trip to a remote control plane
        self.logs: dict = dict(logs or {})  # (namespace, pod, container, previous) -> text
        self.metrics: dict = {}  # (namespace, pod or service) -> text served at .../NAME:PORT/proxy/metrics
        self.requests: list[RequestRecord] = []
        # per accepted connection, the round trip it was opened in (as RequestRecord.depth: 1 + the deepest
        # request answered by then), so a test can tell connections opened while the first answer was awaited
        self.connections: list[int] = []
        self._lock = threading.RLock()
        self._resources: dict[tuple, Resource] = {}
        self._store: dict[tuple, dict] = {}  # (group, version, resource) -> {(namespace or "", name): object}
        # Pods by spec.nodeName, as the apiserver's watch cache indexes them: a field-selected list of one node's
        # pods costs that node's pods, not a scan of every pod (pkg/registry/core/pod NodeNameIndexFunc).
        self._pods_by_node: dict[str, dict] = {}
        self._faults: list[Fault] = []
        # A hostile or broken server, for tests: answer whole objects even when PartialObjectMetadata is asked for,
        # and serve a raw body (bytes, as is) for a path.
        self.ignore_metadata_accept = False
        self.raw_bodies: dict[str, bytes] = {}
        self._httpd = self._tmp = None
        for api_version, kind, namespaced, short in BUILTINS:
            self._register(api_version, kind, namespaced, short)
        for obj in objects:
            self.add(obj)

    def start(self) -> FakeApiServer:
        self._tmp = Path(tempfile.mkdtemp(prefix="fake-apiserver-"))
        cert, key = _make_cert(self._tmp, ("127.0.0.1", "localhost", *self._cert_names))
        self.ca_file, self.key_file = str(cert), str(key)
        if self._client_ca:
            self._client_ca_parts = _make_client_ca(self._tmp)
            self.client_ca_file = str(self._client_ca_parts[0])
        self._httpd = self._serve_on(self.port, "https", self._tls_context(cert, key))
        self.port = self._httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        return self

    def _tls_context(self, cert, key) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        if self._client_ca:  # a client certificate is optional, as for a real apiserver with --client-ca-file
            ctx.load_verify_locations(self.client_ca_file)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx

    def _serve_on(self, port: int, name: str, ctx: ssl.SSLContext | None):
        httpd = _TLSServer(("127.0.0.1", port), _Handler)
        if ctx is not None:
            # The handshake then runs in each connection's own thread, so a stuck client blocks nobody.
            httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        httpd.fake, httpd.listener = self, name
        threading.Thread(target=httpd.serve_forever, args=(0.05,), name=f"fake-apiserver-{name}", daemon=True).start()
        self._listeners.append(httpd)
        return httpd

    def add_listener(self, name: str, *, tls: bool = True, cert_names=None) -> str:
        """Another port serving the same cluster; its requests are recorded with listener=name. tls=False: plain
        http (a client must never send a credential there); cert_names: its own self-signed certificate for those
        names only (its CA file in listener_ca[name]), e.g. ("api.other.example",) so that verifying the host
        127.0.0.1 must fail. Returns its URL."""
        ctx = None
        if tls:
            if cert_names:
                cert, key = _make_cert(self._tmp, tuple(cert_names), stem=f"{name}-")
                self.listener_ca[name] = str(cert)
            else:
                cert, key = self.ca_file, self.key_file
            ctx = self._tls_context(cert, key)
        httpd = self._serve_on(0, name, ctx)
        return f"{'https' if tls else 'http'}://127.0.0.1:{httpd.server_address[1]}"

    def issue_client_cert(self, cn: str, groups=(), passphrase: str | None = None, stem: str = "") -> tuple[str, str]:
        """(cert file, key file) of a client certificate this server accepts (needs client_ca=True)."""
        return _issue_client_cert(self._tmp, self._client_ca_parts, cn, groups, passphrase, stem)

    def stop(self) -> None:
        for httpd in self._listeners:
            httpd.shutdown()
            httpd.server_close()
        self._listeners.clear()
        self._httpd = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)

    __enter__ = start

    def __exit__(self, *exc):
        self.stop()

    def write_kubeconfig(self, path, namespace: str = "default", context: str = "fake", user: str = "tester") -> str:
        cluster = {"server": self.url, "certificate-authority": self.ca_file}
        ctx = {"cluster": context, "user": user, "namespace": namespace}
        config = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "current-context": context,
                  "clusters": [{"name": context, "cluster": cluster}], "contexts": [{"name": context, "context": ctx}],
                  "users": [{"name": user, "user": {"token": self.token}}]}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(yaml.safe_dump(config, sort_keys=False))
        return str(path)

    # Test controls. Narrowing keywords for all three: namespace, name, subresource, verb, cluster_scope_only.
    def forbid(self, resource: str, **narrow) -> None:
        self._add_fault(Fault("forbid", resource, **narrow))

    def fail(self, resource: str, status: int = 500, message: str | None = None, **narrow) -> None:
        """narrow may also hold retry_after (seconds, a Retry-After header) and times (then the fault is spent)."""
        self._add_fault(Fault("fail", resource, status=status, message=message, **narrow))

    def drip(self, resource: str, seconds: float, **narrow) -> None:
        """The answer's body one byte every `seconds` (headers at once), as a stalled proxy or overloaded server."""
        self._add_fault(Fault("drip", resource, seconds=seconds, **narrow))

    def encode(self, resource: str, encoding: str = "gzip", **narrow) -> None:
        """Answer with Content-Encoding: gzip when the client accepts it; "corrupt-gzip" says gzip and is not;
        "gzip-always" compresses even when the client did not ask (a misbehaving server or proxy)."""
        self._add_fault(Fault("encode", resource, encoding=encoding, **narrow))

    def delay(self, resource: str, seconds: float, **narrow) -> None:
        self._add_fault(Fault("delay", resource, seconds=seconds, **narrow))

    def hold(self, resource: str, *, connections: int = 0, limit: float = 30.0, **narrow) -> threading.Event:
        """Matching requests wait, unanswered, until the returned event is set, or until the server has accepted
        `connections` connections (when given), or `limit` seconds pass: an order of events a test can rely on
        under any load, where a delay is only a guess at how long the client takes."""
        gate = threading.Event()
        gate.arrived = threading.Semaphore(0)   # gate.arrived.acquire(timeout=…): a held request is waiting now
        self._add_fault(Fault("hold", resource, seconds=limit, gate=gate, connections=connections,
                              arrived=gate.arrived, **narrow))
        self._release_held()
        return gate

    def _add_fault(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.connections.clear()

    def _connected(self) -> None:
        with self._lock:
            self.connections.append(1 + max((r.depth for r in self.requests), default=0))
        self._release_held()

    def _release_held(self) -> None:
        with self._lock:
            for f in self._faults:
                if f.action == "hold" and f.connections and len(self.connections) >= f.connections:
                    f.gate.set()

    def _register(self, api_version: str, kind: str, namespaced: bool, short_names=()) -> Resource:
        group, _, version = api_version.rpartition("/")
        res = Resource(group, version, plural(kind), kind, namespaced, list(short_names))
        self._resources[(group, version, res.name)] = res
        self._store.setdefault((group, version, res.name), {})
        return res

    def add(self, obj: dict) -> None:
        obj = copy.deepcopy(obj)
        group, _, version = obj["apiVersion"].rpartition("/")
        meta = obj.setdefault("metadata", {})
        with self._lock:
            res = self._resources.get((group, version, plural(obj["kind"]))) or self._register(
                obj["apiVersion"], obj["kind"], bool(meta.get("namespace")) and obj["kind"] not in CLUSTER_KINDS)
            if res.namespaced:
                meta.setdefault("namespace", "default")  # the apiserver defaults a missing namespace
                if ("", meta["namespace"]) not in self._store[("", "v1", "namespaces")]:
                    # objects in a namespace imply that the Namespace exists (kubectl checks it after a 404)
                    self.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["namespace"]},
                              "status": {"phase": "Active"}})
            else:
                meta.pop("namespace", None)
            key = (meta.get("namespace", ""), meta["name"])
            if (group, res.name) == ("", "pods"):
                self._unindex(self._store[(group, version, res.name)].get(key), key)
                self._pods_by_node.setdefault(_node_name(obj), {})[key] = obj
            self._store[(group, version, res.name)][key] = obj

    def stored(self, kind: str, namespace: str | None, name: str) -> dict | None:
        """The object as held (the same dict every index serves): a test may edit it in place."""
        with self._lock:
            for key, res in self._resources.items():
                if res.kind == kind and (namespace or "", name) in self._store[key]:
                    return self._store[key][(namespace or "", name)]
        return None

    def remove(self, kind: str, namespace: str | None, name: str) -> bool:
        with self._lock:
            keys = [k for k, r in self._resources.items() if r.kind == kind]
            if kind == "Pod":
                self._unindex(self._store[("", "v1", "pods")].get((namespace or "", name)), (namespace or "", name))
            return any([self._store[k].pop((namespace or "", name), None) is not None for k in keys])

    def _unindex(self, pod: dict | None, key: tuple) -> None:
        if pod is not None:
            self._pods_by_node.get(_node_name(pod), {}).pop(key, None)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        url = urlsplit(h.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        with self._lock:
            depth = 1 + max((r.depth for r in self.requests), default=0)
        if self.latency:
            time.sleep(self.latency)
        if int(h.headers.get("Content-Length") or 0):  # drain a write's body so keep-alive stays in sync
            h.rfile.read(int(h.headers["Content-Length"]))
        self._local.faults, extra = [], {}
        identity, credentials = self._authenticate(h)
        try:
            code, ctype, body = self._route(h.command, url.path, query, h.headers, identity)
        except ApiError as e:
            code, ctype, body, extra = e.code, JSON, _dumps(e.status), e.headers
        except Exception as e:  # a bug here must show up in the test, not hang the client
            code, ctype, body = 500, JSON, _dumps(ApiError(500, f"Internal error occurred: {e!r}").status)
        extras = tuple(sorted((k[len("Impersonate-Extra-"):].lower(), v) for k, v in h.headers.items()
                              if k.lower().startswith("impersonate-extra-")))
        with self._lock:  # recorded before answering, so a test sees it as soon as its client returns
            self.requests.append(RequestRecord(h.command, url.path, query, h.headers.get("Accept", ""),
                                               h.headers.get("User-Agent", ""), code,
                                               h.headers.get("Impersonate-User"),
                                               tuple(h.headers.get_all("Impersonate-Group") or ()), depth,
                                               identity[0] if identity else None,
                                               identity[1] if identity else (), credentials,
                                               getattr(h.server, "listener", "https"),
                                               h.headers.get("Impersonate-Uid"), extras,
                                               h.headers.get("Accept-Encoding", "")))
        faults = self._local.faults
        encoding = next((f.encoding for f in faults if f.action == "encode"), None)
        if encoding == "gzip-always" or (encoding and "gzip" in h.headers.get("Accept-Encoding", "")):
            body = b"\x1f\x8b\x08\x00" + body[:64] if encoding == "corrupt-gzip" else gzip.compress(body)
            extra = {**extra, "Content-Encoding": "gzip"}
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in extra.items():
            h.send_header(k, v)
        h.end_headers()
        drip = next((f.seconds for f in faults if f.action == "drip"), 0)
        if not drip:
            h.wfile.write(body)
            return
        deadline = time.monotonic() + 120  # a client that never gives up still frees this thread
        for i in range(len(body)):
            h.wfile.write(body[i:i + 1])
            h.wfile.flush()
            if time.monotonic() > deadline:
                break
            time.sleep(drip)

    def _authenticate(self, h) -> tuple[tuple | None, tuple]:
        """((user, groups) or None, the credential kinds that arrived). The x509 authenticator runs before bearer
        tokens, as in kube-apiserver; a presented but unknown token or password authenticates nobody."""
        auth = h.headers.get("Authorization") or ""
        scheme, _, value = auth.partition(" ")
        peer = _peer_identity(h.connection) if self._client_ca else None
        kinds = tuple(k for k, present in (("cert", peer), ("bearer", scheme.lower() == "bearer"),
                                           ("basic", scheme.lower() == "basic")) if present)
        if not kinds and auth:
            kinds = ("other",)

        def who(entry):
            user, groups = (entry, ()) if isinstance(entry, str) else entry
            return user, (*groups, "system:authenticated")
        if peer:
            return (peer[0], (*peer[1], "system:authenticated")), kinds
        if scheme.lower() == "bearer" and value in self.tokens:
            return who(self.tokens[value]), kinds
        if scheme.lower() == "basic" and self.basic:
            try:
                user, _, password = base64.b64decode(value).decode().partition(":")
            except ValueError:
                return None, kinds
            if (user, password) in self.basic:
                return who(self.basic[(user, password)]), kinds
        return None, kinds

    def _route(self, method: str, path: str, query: dict, headers, identity=None) -> tuple[int, str, bytes]:
        # Authentication runs before anything else; a bad or missing token never learns what exists.
        if identity is None:
            raise ApiError(401)
        if method != "GET":
            raise ApiError(405, details={})
        if path == "/version":
            return 200, JSON, _dumps(VERSION)
        if path in ("/healthz", "/livez", "/readyz"):
            return 200, "text/plain; charset=utf-8", b"ok"
        if path in self.raw_bodies:
            return 200, JSON, self.raw_bodies[path]
        discovery = self._discovery(path.rstrip("/"))
        if discovery is not None:
            # Plain JSON even when kubectl asks for aggregated discovery (apidiscovery.k8s.io/v2) first:
            # client-go sees Content-Type application/json and falls back to per-group discovery.
            return 200, JSON, _dumps(discovery)
        req = parse_resource_path(path)
        if req is None:
            raise not_found()
        if query.get("watch") in ("true", "1"):
            raise ApiError(400, "watch is not supported by the fake apiserver")
        body = self._serve(req, query, headers.get("Accept", ""))
        return (200, "text/plain", body) if isinstance(body, bytes) else (200, JSON, _dumps(body))

    def _discovery(self, path: str) -> dict | None:
        with self._lock:
            resources = sorted(self._resources.values(), key=lambda r: r.name)
        versions: dict[str, list[str]] = {}
        for r in resources:
            versions[r.group] = sorted(set(versions.get(r.group, [])) | {r.version}, key=_version_key)
        groups = {g: {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                      "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                  for g, vs in sorted(versions.items()) if g}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}]}
        if path == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups.values())}
        if (m := re.fullmatch(r"/apis/([^/]+)", path)) and m[1] in groups:
            return {"kind": "APIGroup", "apiVersion": "v1", **groups[m[1]]}
        if not (m := re.fullmatch(r"/api/(v1)|/apis/([^/]+)/([^/]+)", path)):
            return None
        group, version = m[2] or "", m[1] or m[3]
        listed = []
        for r in (r for r in resources if (r.group, r.version) == (group, version)):
            listed.append({"name": r.name, "singularName": r.kind.lower(), "namespaced": r.namespaced, "kind": r.kind,
                           "verbs": ["get", "list"], **({"shortNames": r.short_names} if r.short_names else {})})
            if (group, r.name) == ("", "pods"):
                listed.append({"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod",
                               "verbs": ["get"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}".lstrip("/"),
                "resources": listed} if listed else None

    def _apply_faults(self, req: Req) -> None:
        with self._lock:
            faults = [f for f in self._faults if f.matches(req) and f.times != 0]
            for f in faults:
                if f.times is not None:
                    f.times -= 1
        self._local.faults = [f for f in faults if f.action in ("drip", "encode")]
        for f in faults:
            if f.action == "delay":
                time.sleep(f.seconds)
            elif f.action == "hold":
                f.arrived.release()
                f.gate.wait(f.seconds)
        for f in faults:
            if f.action == "forbid" or (f.action == "fail" and f.status == 403):
                # RBAC denials name the verb, the resource with its subresource, and the scope asked for.
                who = f'{req.qualified} "{req.name}"' if req.name else req.qualified
                resource = f"{req.resource}/{req.sub}" if req.sub else req.resource
                where = f'in the namespace "{req.namespace}"' if req.namespace else "at the cluster scope"
                raise ApiError(403, f'{who} is forbidden: User "{self.username}" cannot {req.verb} resource '
                                    f'"{resource}" in API group "{req.group}" {where}', req.details())
            if f.action == "fail" and f.status == 404 and req.name and not f.message:
                raise ApiError(404, f'{req.qualified} "{req.name}" not found', req.details())
            if f.action == "fail":
                headers = {"Retry-After": f"{f.retry_after:g}"} if f.retry_after is not None else None
                raise ApiError(f.status, f.message, details={} if f.status >= 404 else None, headers=headers)

    def _serve(self, req: Req, query: dict, accept: str) -> dict | bytes:
        self._apply_faults(req)  # authorization runs before routing: a 403 even for resources that don't exist
        with self._lock:
            res = self._resources.get((req.group, req.version, req.resource))
            if res is None or (req.namespace is not None and not res.namespaced) or (
                    req.name and req.namespace is None and res.namespaced):
                raise not_found()
            store = self._store[(req.group, req.version, req.resource)]
            if req.name is None:
                store = dict(self._pods_by_node.get(node, {}) if (node := self._one_node(res, query)) is not None
                             else store)
            else:
                obj = store.get((req.namespace or "", req.name.split(":")[0] if req.sub == "proxy" else req.name))
        if req.name is None:
            return self._list(res, req, store, query, accept)
        if obj is None:
            raise ApiError(404, f'{req.qualified} "{req.name}" not found', req.details())
        if req.sub == "log" and (res.group, res.name) == ("", "pods"):
            return self._pod_log(obj, query)
        if req.sub == "proxy" and (res.group, res.name) in (("", "pods"), ("", "services")):
            return self._proxied(req, obj)
        if req.sub not in (None, "status"):
            raise not_found()
        if wants_metadata(accept) and not self.ignore_metadata_accept:
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
        return obj

    @staticmethod
    def _one_node(res: Resource, query: dict) -> str | None:
        """The node of a pod list whose field selector asks for `spec.nodeName=<node>` (the index answers it)."""
        if (res.group, res.name) != ("", "pods"):
            return None
        for term in _terms(query.get("fieldSelector", "")):
            m = re.fullmatch(r"spec\.nodeName\s*==?\s*(.*)", term)
            if m:
                return m[1]
        return None

    def _list(self, res: Resource, req: Req, store: dict, query: dict, accept: str) -> dict:
        preds = selector_predicates(res.name, query.get("fieldSelector", ""), query.get("labelSelector", ""))
        # etcd keys are /registry/<resource>/<namespace>/<name>: lists come back in that order
        items = [o for (ns, _), o in sorted(store.items()) if req.namespace in (None, ns) and all(p(o) for p in preds)]
        limit, start = _int_param(query, "limit"), 0
        if query.get("continue"):
            try:
                start = int(json.loads(base64.urlsafe_b64decode(query["continue"]))["start"])
            except Exception:
                raise ApiError(400, "continue key is not valid: incorrect encoded start resourceVersion") from None
        end = start + limit if limit > 0 else len(items)
        meta = {"resourceVersion": RESOURCE_VERSION}
        if end < len(items):
            token = {"v": "meta.k8s.io/v1", "rv": int(RESOURCE_VERSION), "start": end}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            if not preds:  # the apiserver cannot count what remains once a selector filters
                meta["remainingItemCount"] = len(items) - end
        if wants_metadata(accept) and not self.ignore_metadata_accept:
            return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                    "items": [{"metadata": o["metadata"]} for o in items[start:end]]}
        return {"kind": f"{res.kind}List", "apiVersion": f"{res.group}/{res.version}".lstrip("/"), "metadata": meta,
                "items": [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items[start:end]]}

    def _pod_log(self, pod: dict, query: dict) -> bytes:
        name, ns, spec = pod["metadata"]["name"], pod["metadata"]["namespace"], pod.get("spec") or {}
        names = {k: [c["name"] for c in spec.get(k) or []]
                 for k in ("containers", "initContainers", "ephemeralContainers")}
        container = query.get("container")
        if not container:  # the apiserver picks the only container itself, and otherwise refuses to guess
            if len(names["containers"]) != 1:
                msg = f"a container name must be specified for pod {name}"
                if names["containers"]:
                    msg += f", choose one of: [{' '.join(names['containers'])}]"
                if names["initContainers"]:
                    msg += f" or one of the init containers: [{' '.join(names['initContainers'])}]"
                raise ApiError(400, msg)
            container = names["containers"][0]
        elif container not in sum(names.values(), []):
            raise ApiError(400, f"container {container} is not valid for pod {name}")
        tail, limit_bytes = _int_param(query, "tailLines", None), _int_param(query, "limitBytes", None)
        if query.get("previous") in ("true", "1"):
            text = self.logs.get((ns, name, container, True))
            if text is None:
                raise ApiError(400, f'previous terminated container "{container}" in pod "{name}" not found')
        else:
            text = self._current_log(pod, ns, name, container)
        if tail is not None:
            text = "".join(text.splitlines(keepends=True)[-tail:]) if tail > 0 else ""
        if query.get("timestamps") in ("true", "1"):  # the kubelet's RFC3339Nano time before each line
            text = "".join(f"2026-11-30T09:58:0{i % 10}.{i:09d}Z {line}" for i, line in
                           enumerate(text.splitlines(keepends=True)))
        return text.encode()[:limit_bytes]  # the kubelet applies tailLines first, then limitBytes

    def _proxied(self, req: Req, obj: dict) -> bytes:
        """A pod's or Service's HTTP endpoint through the apiserver proxy: the recorded dcgm-exporter metrics; for a
        pod without any, what a healthy exporter on its node writes (its node's GPUs, idle, no pod labels); the
        apiserver's 503 when the recording is None (nothing listens there)."""
        key = (req.namespace, req.name.split(":")[0])
        text = self.metrics[key] if key in self.metrics else self._healthy_exporter(obj) if req.resource == "pods" else None
        if text is None:
            raise ApiError(503, f'error trying to reach service: dial tcp 10.244.3.17:{req.name.partition(":")[2] or 80}:'
                                f' connect: connection refused')
        return text.encode()

    def _healthy_exporter(self, pod: dict) -> str | None:
        from tests.dcgmtext import exposition
        node_name = (pod.get("spec") or {}).get("nodeName")
        with self._lock:
            node = self._store[("", "v1", "nodes")].get(("", node_name)) or {}
        count = int(((node.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu") or 0)
        return exposition(node_name or "", [{"index": i} for i in range(min(count, 8))], pod_labels=False)

    def _current_log(self, pod: dict, ns: str, name: str, container: str) -> str:
        if not (pod.get("spec") or {}).get("nodeName"):
            return ""  # not scheduled, no kubelet to ask: the apiserver answers an empty stream
        status = pod.get("status") or {}
        statuses = sum((status.get(k) or [] for k in
                        ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")), [])
        st = next((s for s in statuses if s.get("name") == container), {})
        waiting, restarted = (st.get("state") or {}).get("waiting"), (st.get("lastState") or {}).get("terminated")
        current = self.logs.get((ns, name, container, False))
        if waiting and not restarted and current is None:  # the kubelet's wording for a container that never ran
            reason = {"ErrImagePull": "image can't be pulled", "ImagePullBackOff": "trying and failing to pull image"
                      }.get(waiting.get("reason"), waiting.get("reason"))
            raise ApiError(400, f'container "{container}" in pod "{name}" is waiting to start: {reason}')
        if current is None and restarted:  # CrashLoopBackOff: the kubelet serves the last run's log
            current = self.logs.get((ns, name, container, True))
        return current or ""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.apiserver", description="Serve a test case over HTTPS.")
    parser.add_argument("case_dir")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--kubeconfig", help="where to write the kubeconfig (default: a temp file)")
    parser.add_argument("--token", default="t0ken")
    parser.add_argument("-n", "--namespace", help="the kubeconfig's namespace (default: the first pod's)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    args = parser.parse_args(argv)
    objects, logs = load_case(args.case_dir)
    namespace = args.namespace or next((o["metadata"]["namespace"] for o in objects if o["kind"] == "Pod"
                                        and o.get("metadata", {}).get("namespace")), "default")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # so `kill` also removes the temp dir
    # A process started in the background inherits an ignored SIGINT; Ctrl-C must still stop the server.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with FakeApiServer(objects, logs, token=args.token, port=args.port, latency=args.latency) as srv:
        kubeconfig = srv.write_kubeconfig(args.kubeconfig or srv._tmp / "kubeconfig.yaml", namespace=namespace)
        print(f"serving {args.case_dir} at {srv.url} until Ctrl-C; try: kubectl --kubeconfig {kubeconfig} get pods",
              file=sys.stderr)
        print(kubeconfig, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
