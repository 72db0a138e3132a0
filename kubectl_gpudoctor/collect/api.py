"""Raw read-only GETs over one connection pool (JSON bodies as plain dicts), run in parallel rounds."""
from __future__ import annotations

import json
import math
import urllib.parse
from typing import Callable, Dict, List, Optional, Tuple

from .. import lazyre
from ..evidence import Evidence, Gap
from ..kube import shapes
from ..kube.names import InvalidName, safe_segment
from ..record import field, record, replace
from ..safety.redact import remember_names, secret_metadata
from .parallel import Parallel
from .transport import Timeout, Unreachable

METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
POOL_SIZE = 16   # every round of a diagnosis fits in one wave: one round trip each
PAGE = 500       # kubectl's --chunk-size: a list of more objects comes in pages (limit + continue)
# Kubernetes is built and tested for clusters of up to 5,000 nodes (its scalability thresholds), so the node list of
# any supported cluster comes in one page: kubectl's 500-object chunks protect the API server from lists that grow
# without bound (every pod of a cluster), and for nodes they only add sequential round trips to a Pending pod's
# diagnosis. A bigger cluster is still read in pages.
NODE_PAGE = 5000
LOG_BODY = 16 << 20   # bytes of a log answer, should a server ignore the request's limitBytes


class ClusterError(Exception):
    """The cluster cannot answer for the target itself: unreachable, unauthorized, forbidden, timeout (exit 3)."""


class TargetNotFound(Exception):
    """The target does not exist (exit 2)."""


@record
class Response:
    status: int                 # HTTP status; 0 when no response arrived
    body: object = None         # parsed JSON, or text for logs
    reason: str = ""            # forbidden | unauthorized | timeout | error | not-found | ok
    message: str = ""


@record
class Request:
    """One GET and where its answer goes in the evidence."""
    source: str                        # RBAC resource, e.g. "pods/log"
    verb: str                          # "get" | "list" (for gap messages)
    path: str
    query: Dict[str, str] = field(default_factory=dict)
    kind: Optional[str] = None         # kind of the returned object(s)
    accept: str = "application/json"
    log_key: Optional[Tuple[str, str, str, bool]] = None
    optional_api: bool = False         # a 404 on a list means the API (CRD) is not installed
    page: int = PAGE                   # objects per page of a list
    gap_key: Optional[str] = None      # a failed read's own gap key, when another read shares its source
    about: str = ""                    # what that read is, at the head of its gap's detail
    scope: Optional[str] = None        # the namespace its gap names: a source read in two namespaces (scoped())
    then: Optional[Callable] = None    # called with (Response) after it is stored


def quote(name) -> str:
    """A name as one path segment: '/' and every other reserved character escaped (and then refused by get)."""
    return urllib.parse.quote(str(name), safe="")


class Api:
    def __init__(self, client, timeout: float):
        self.client = client
        self.timeout = timeout
        self.server = getattr(client, "server", None) or "the API server"
        self.repairs: Dict[tuple, List[Tuple[str, str]]] = {}   # target (ns, name) -> (source, its fields ignored)

    def get(self, path: str, query: Optional[Dict[str, str]] = None, accept: str = "application/json",
            text: bool = False, meanwhile: Optional[Callable[[], None]] = None) -> Response:
        """The answer as a Response (never raises for a failed read); `meanwhile()` runs once the request is sent."""
        bad = next((p for p in path.strip("/").split("/") if not safe_segment(p)), None)
        if bad is not None:   # only valid names build a request path: "../" or "%2F" never reach the server
            shown = urllib.parse.unquote(bad)[:80]
            return Response(0, reason="invalid", message=f"not requested: {shown!r} is not a valid Kubernetes name")
        try:
            bound = {"limit": LOG_BODY} if text else {}   # other answers: the transport's own bound
            status, raw = self.client.get(path, query, accept, meanwhile, **bound)
        except Timeout:
            return Response(0, reason="timeout", message=f"no answer from {self.server} within {self.timeout:g}s")
        except Unreachable as exc:
            return Response(0, reason="unreachable", message=_one_line(str(exc)))
        body_text = raw.decode("utf-8", errors="replace")
        if 200 <= status < 300:
            return Response(status, body_text, "ok") if text else _object_or_gap(status, _json(body_text))
        status_doc = _json(body_text) if body_text.lstrip().startswith("{") else {}
        status_doc = status_doc if isinstance(status_doc, dict) else {}
        message = (status_doc or {}).get("message") or body_text.strip()[:300] or f"HTTP {status}"
        reason = {401: "unauthorized", 403: "forbidden", 404: "not-found", 504: "timeout"}.get(status, "error")
        return Response(status, status_doc, reason, _one_line(message))

    def run(self, requests: List[Request], ev: Evidence, meanwhile: Optional[Callable[[], object]] = None) -> None:
        """Run requests in parallel; store each answer as objects, logs, absence or a gap. `meanwhile()`, pure work
        on what is already held, runs while they are in flight (its errors are left to the verdict, which redoes it)."""
        for problem in self.repairs.pop((ev.target.namespace, ev.target.name), ()):
            shapes.note(ev, problem[0], problem[1])   # the target's malformed fields, read before ev existed
        if not requests:
            return
        in_flight = Parallel(self._fetch, requests, POOL_SIZE)   # every request is sent now
        if meanwhile is not None:
            try:
                meanwhile()
            except Exception:   # noqa: BLE001 — a warm-up: the verdict computes it again and reports its errors
                pass
        answers = in_flight.results()
        for req, resp in zip(requests, answers):
            store(ev, req, resp)
            if req.then:
                req.then(resp)

    def _fetch(self, req: Request) -> Response:
        # a field-selected list (a node's pods, an object's events) is bounded by what it selects, and a list that
        # sets its own limit wants that one page (a sample: a Service's pods): one GET
        if req.verb == "list" and req.log_key is None and "fieldSelector" not in req.query and "limit" not in req.query:
            return self.list(req.path, req.query, req.accept, req.page)
        return self.get(req.path, req.query, req.accept, text=req.log_key is not None)

    def list(self, path: str, query: Optional[Dict[str, str]] = None, accept: str = "application/json",
             page: int = PAGE) -> Response:
        """A list read in pages of `page` objects, as kubectl reads one: one GET for an ordinary list, and for a
        big one (every node of a large cluster) pages whose raw text is dropped once parsed. A page that fails
        (an expired continue token: 410) makes the whole list a gap, never a silently partial list."""
        query = dict(query or {}, limit=str(page))
        whole: Optional[Response] = None
        while True:
            resp = self.get(path, query, accept)
            if resp.reason != "ok" or "items" not in resp.body:
                if whole is None or resp.reason != "ok":
                    return resp
                return Response(resp.status, None, "error", "a page of the list came back without items")
            token = (resp.body.get("metadata") or {}).get("continue")
            if whole is None:
                whole = resp
            else:
                whole.body["items"].extend(resp.body["items"])
            if not token or not isinstance(token, str):
                for key in ("continue", "remainingItemCount"):
                    (whole.body.get("metadata") or {}).pop(key, None)
                return whole
            query = dict(query, **{"continue": token})


def read_target(api: Api, path: str, what: str, ns=None, meanwhile: Optional[Callable[[], None]] = None) -> dict:
    """The target itself: its object, or the error that ends the diagnosis (exit 2 or 3). `meanwhile()` runs once
    its request is sent, while the answer is awaited."""
    resp = api.get(path, meanwhile=meanwhile)
    where = f" in namespace {ns}" if ns else ""
    if resp.reason == "ok" and isinstance(resp.body, dict):
        return target_shaped(api, resp.body, what, where, ns)
    if resp.reason == "invalid":
        raise InvalidName(f"cannot read {what}{where}: {resp.message}")
    if resp.reason == "not-found":
        raise TargetNotFound(f"{what} not found{where}")
    if resp.reason in ("unauthorized", "forbidden"):
        raise ClusterError(refused(api, resp, "get", path, ns, f"cannot read {what}{where}"))
    if resp.reason == "timeout":
        raise ClusterError(f"timed out reading {what}{where} from the API server ({resp.message})")
    raise ClusterError(f"cannot reach the API server: {resp.message}")


def _in_namespace(obj, ns: Optional[str]):
    """A namespaced object read from a namespace's path is in that namespace: a missing metadata.namespace is
    filled in from the path (a repair that changes no meaning; a wrong one is left to the shape checks)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if ns and isinstance(meta, dict) and meta.get("namespace") is None:
        return dict(obj, metadata=dict(meta, namespace=ns))
    return obj


def target_shaped(api: Api, obj: dict, what: str, where: str, ns: Optional[str] = None) -> dict:
    """The target (read by name, or found by -A in a list) with its malformed fields removed (each remembered for
    the gap list); an answer without a name is no object at all: the diagnosis cannot name what it diagnoses."""
    remember_names(obj)
    obj = _in_namespace(obj, ns)
    found = shapes.problems(obj, None, walk=True)
    if not found:
        return obj
    if found[0][0] in (("metadata",), ("metadata", "name")) or not isinstance(obj, dict):
        raise ClusterError(f"cannot read {what}{where}: the API server answered with no object ({found[0][1]})")
    kind = obj.get("kind") or "object"
    fixed = _in_namespace(shapes.repaired(obj, found, None, walk=True), ns)
    m = fixed["metadata"]
    api.repairs.setdefault((m.get("namespace"), m["name"]), []).append(
        (shapes.source_of(kind), f"{kind.lower()} {m['name']}: field ignored: " + "; ".join(p for _, p in found)))
    return fixed


def refused(api: Api, resp: Response, verb: str, path: str, ns, doing: str) -> str:
    """The one-line message of a 401 (whose credentials, and how to renew them) or a 403 (the RBAC verb and
    resource the read needs) that ends a command."""
    if resp.reason == "unauthorized":
        return (f"credentials rejected by {api.server} ({resp.message}): refresh them (your cloud CLI's "
                f"get-credentials / re-login) or pick another --context")
    return f"{doing}: forbidden: needs RBAC verb {verb} on {_resource(path, ns)} (server said: {resp.message})"


def _resource(path: str, ns) -> str:
    """The resource a path reads, as RBAC names it: `pods in namespace ml`, `deployments.apps (cluster-wide)`."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] if rest else "?"
    return f"{resource}{'.' + group if group else ''}" + (f" in namespace {ns}" if ns else " (cluster-wide)")


def store(ev: Evidence, req: Request, resp: Response) -> None:
    if resp.reason == "ok":
        ev.mark_read(req.source)
        if req.scope:   # what a namespaced read covered: a rule says "none in namespace X", never "in the cluster"
            ev.mark_read(f"{req.source}#{req.scope}")
        if req.log_key is not None:
            ev.logs[req.log_key] = resp.body or ""
        elif isinstance(resp.body, dict):
            items = resp.body["items"] if "items" in resp.body else [resp.body]
            for item in items:
                # List items carry no kind/apiVersion, and metadata-only reads say PartialObjectMetadata:
                # stamp the real ones so evidence and bundles read like `kubectl get -o yaml`.
                if req.kind and isinstance(item, dict):
                    item = _in_namespace(dict(item, kind=req.kind, apiVersion=_api_version(req.path)),
                                         _listed_in(req.path))
                # one malformed object is dropped with a gap naming its field; the rules read the rest
                item = shapes.screened(ev, item, req.kind, walk=resp.message == _REFUSED)
                if item is None:
                    continue
                remember_names(item)   # names are never masked as secrets in reports and bundles
                # Secrets: keep metadata only, even if a server ignored the PartialObjectMetadata Accept.
                ev.add(secret_metadata(item) if req.kind == "Secret" else item, req.kind)
    elif resp.reason == "not-found":
        if req.log_key is not None or req.verb == "list":
            # a 404 on a list: the API group is not served (CRD not installed) — nothing of that kind exists
            ev.mark_read(req.source)
        else:
            ev.mark_read(req.source)
            ev.mark_absent(req.kind or "", req.path.rsplit("/", 1)[-1], _namespace_of(req.path), resp.message)
    elif req.log_key is not None and resp.status == 400 and _NO_SUCH_LOG.search(resp.message or ""):
        ev.mark_read(req.source)   # the kubelet says this log does not exist: a fact, not a gap
    else:
        reason = "error" if resp.reason in ("unreachable", "invalid") else resp.reason
        if req.gap_key:   # e.g. the node's events: refused, they leave the pod's own events readable
            detail = f"{req.about}: {resp.message}" if req.about else resp.message
            ev.gaps.setdefault(req.gap_key, Gap(req.source, reason, detail, req.verb, req.scope))
        else:
            ev.add_gap(Gap(req.source, reason, resp.message, req.verb, req.scope))


def scoped(req: Request, ns: str, target_ns: str) -> Request:
    """A namespaced read whose gap names its namespace: the target's namespace keeps the source's own gap key (the
    rules that need only it, by `needs`, see it), another namespace's read has a key of its own (`source#ns`), so a
    403 there leaves unknown only what needed that namespace (Evidence.gap_in)."""
    key = None if ns == target_ns else f"{req.source}#{ns}"
    about = f"the {req.source} of namespace {ns}" if key else ""
    return replace(req, scope=ns, gap_key=key, about=about)


# The kubelet's 400s for a log that does not exist (pkg/kubelet/kubelet_pods.go validateContainerLogStatus): no
# previous run, or a container that has not started. Any other 400 on a log is a failed read.
_NO_SUCH_LOG = lazyre.compile(r"previous terminated container \S+ in pod \S+ not found|is waiting to start")


def _api_version(path: str) -> str:
    parts = path.strip("/").split("/")
    return parts[1] if parts[0] == "api" else "/".join(parts[1:3])


def _listed_in(path: str) -> Optional[str]:
    """The namespace of a namespaced read (`…/namespaces/<ns>/<resource>[/<name>]`); None for cluster scope."""
    parts = path.strip("/").split("/")
    i = parts.index("namespaces") if "namespaces" in parts else -1
    return parts[i + 1] if 0 <= i and len(parts) >= i + 3 else None


def _namespace_of(path: str) -> Optional[str]:
    parts = path.split("/")
    return parts[parts.index("namespaces") + 1] if "namespaces" in parts[:-1] else None


_REFUSED = "refused numbers"   # a Response's message when decoding refused a number somewhere in the body


def _object_or_gap(status: int, body) -> Response:
    """A 200 whose body is not the JSON object (or list object) the API promises is an error, never "nothing";
    its objects' shapes are checked one by one when stored."""
    if isinstance(body, _TooDeep):
        return Response(status, None, "error", f"HTTP {status} with a body nested deeper than JSON decoding allows")
    if not isinstance(body, dict) or ("items" in body and not isinstance(body.get("items"), list)):
        what = type(body).__name__ if body is not None else "not JSON"
        return Response(status, None, "error", f"HTTP {status} with an unexpected body ({what}), not a Kubernetes object")
    return Response(status, body, "ok", _REFUSED if isinstance(body, _WithRefused) else "")


class _TooDeep:
    """A body nested beyond the interpreter's recursion limit (a custom resource 2,000 levels deep)."""


class _WithRefused(dict):
    """A decoded body in which a number was refused: its objects are walked whole for shapes.Refused."""


def _json(text: str):
    """The document, or None when it is not JSON. NaN and infinities (also 1e999) become shapes.Refused, which
    the shape checks refuse where they stand (the body is then a _WithRefused); too deep a body is _TooDeep."""
    refused = []

    def constant(word):
        refused.append(word)
        return shapes.Refused(word)

    def number(text):
        value = float(text)
        if math.isfinite(value):
            return value
        refused.append(text)
        return shapes.Refused(text)
    try:   # integers stay Python's (bounded to 4,300 digits); the shape checks bound the fields rules read
        doc = json.loads(text, parse_constant=constant, parse_float=number)
    except RecursionError:
        return _TooDeep()
    except ValueError:
        return None
    return _WithRefused(doc) if refused and isinstance(doc, dict) else doc


def _one_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0][:300] if lines else ""
