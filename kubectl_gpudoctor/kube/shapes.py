"""Shape checks of API objects, live or saved: the types and sane values of the fields the rules read; an object
that fails is dropped (the target: the field is ignored) and recorded as a `malformed` gap naming the field."""
from __future__ import annotations

import math
from datetime import datetime, timezone
from functools import lru_cache
from typing import Iterator, List, Optional, Tuple

from ..evidence import Evidence, Gap, source_of
from .quantity import parse_quantity
from .timeutil import parse_time

INT32 = (-2 ** 31, 2 ** 31 - 1)
COUNT = (0, 2 ** 31 - 1)
MAX_DEPTH = 100     # nesting of one object; real objects stay under 20 (a custom resource may be anything)
MAX_SHOWN = 3       # problems named per source in its gap
# Timestamps a rule may subtract or add to: the API writes times after 1970; year 1 (Go's zero time written by a
# broken controller) or 9999 overflow date arithmetic.
_EARLIEST, _LATEST = datetime(1970, 1, 1, tzinfo=timezone.utc), datetime(3000, 1, 1, tzinfo=timezone.utc)


class Refused:
    """A number JSON decoding refused as a value (NaN, an infinity)."""
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text[:20]


# path (dots; [] for every item of a list; {} for every value of a map) -> expected type
_META = {"apiVersion": "str", "kind": "str", "metadata": "map", "metadata.name": "str", "metadata.namespace": "str", "metadata.uid": "str",
         "metadata.labels": "map", "metadata.labels{}": "str", "metadata.annotations": "map",
         "metadata.annotations{}": "str", "metadata.ownerReferences": "list", "metadata.ownerReferences[]": "map",
         "metadata.ownerReferences[].kind": "str!", "metadata.ownerReferences[].name": "str!",
         "metadata.ownerReferences[].uid": "str", "metadata.creationTimestamp": "time",
         "metadata.deletionTimestamp": "time", "spec": "map", "status": "map"}
_CONDITIONS = {"conditions": "list", "conditions[]": "map", "conditions[].type": "str!", "conditions[].status": "str!",
               "conditions[].reason": "str", "conditions[].message": "str", "conditions[].lastTransitionTime": "time",
               "conditions[].lastHeartbeatTime": "time", "conditions[].lastProbeTime": "time"}
_CONTAINER = {"": "map", "name": "str!", "image": "str", "command": "list", "command[]": "scalar", "args": "list",
              "args[]": "scalar", "env": "list", "env[]": "map", "env[].name": "str!", "env[].value": "scalar",
              "resources": "map", "resources.limits": "map", "resources.limits{}": "quantity",
              "resources.requests": "map", "resources.requests{}": "quantity", "ports": "list", "ports[]": "map",
              # the ports a Service's targetPort should name (rules/init/waiting.py)
              "ports[].containerPort": "int32", "ports[].name": "str", "ports[].protocol": "str",
              "volumeMounts": "list", "volumeMounts[]": "map", "volumeMounts[].name": "str!",
              "volumeMounts[].mountPath": "str!",
              # the Secret and ConfigMap references the creation rules follow
              "env[].valueFrom": "map", "env[].valueFrom.secretKeyRef": "map", "env[].valueFrom.configMapKeyRef": "map",
              "env[].valueFrom.secretKeyRef.name": "str", "env[].valueFrom.secretKeyRef.key": "str",
              "env[].valueFrom.configMapKeyRef.name": "str", "env[].valueFrom.configMapKeyRef.key": "str",
              "envFrom": "list", "envFrom[]": "map", "envFrom[].secretRef": "map", "envFrom[].configMapRef": "map",
              "envFrom[].secretRef.name": "str", "envFrom[].configMapRef.name": "str",
              "livenessProbe": "map", "readinessProbe": "map", "startupProbe": "map", "securityContext": "map",
              # the probe numbers and handlers the probe rules weigh and quote (rules/crash/_startup.py)
              **{f"{p}.{k}": t for p in ("livenessProbe", "readinessProbe", "startupProbe")
                 for k, t in (("initialDelaySeconds", "count"), ("timeoutSeconds", "count"), ("periodSeconds", "count"),
                              ("failureThreshold", "count"), ("httpGet", "map"), ("tcpSocket", "map"), ("grpc", "map"),
                              ("exec", "map"), ("exec.command", "list"),
                                                 ("httpGet.port", "scalar"), ("tcpSocket.port", "scalar"),
                                                 ("grpc.port", "int32"))}}
_STATE = {"": "map", "waiting": "map", "running": "map", "terminated": "map", "waiting.reason": "str",
          "waiting.message": "str", "terminated.reason": "str", "terminated.message": "str",
          "terminated.exitCode": "int32", "terminated.signal": "int32", "terminated.startedAt": "time",
          "terminated.finishedAt": "time", "running.startedAt": "time"}
_STATUS = {"": "map", "name": "str!", "ready": "bool", "started": "bool", "restartCount": "count", "image": "str",
           **{f"state.{k}".rstrip("."): v for k, v in _STATE.items()},
           **{f"lastState.{k}".rstrip("."): v for k, v in _STATE.items()}}


def _under(prefix: str, table: dict) -> dict:
    return {(f"{prefix}.{k}" if k else prefix): v for k, v in table.items()}


_VOLUME = {"secret": "map", "secret.secretName": "str", "configMap": "map", "configMap.name": "str",
           "projected": "map", "projected.sources": "list", "projected.sources[]": "map",
           "projected.sources[].secret": "map", "projected.sources[].secret.name": "str",
           "projected.sources[].configMap": "map", "projected.sources[].configMap.name": "str",
           "persistentVolumeClaim": "map", "persistentVolumeClaim.claimName": "str", "ephemeral": "map",
           "emptyDir": "map", "hostPath": "map", "hostPath.path": "str", "csi": "map"}
POD = {**_META, "spec.nodeName": "str", "spec.volumes": "list", "spec.volumes[]": "map", "spec.volumes[].name": "str!",
       **_under("spec.volumes[]", _VOLUME), "spec.imagePullSecrets": "list", "spec.imagePullSecrets[]": "map",
       "spec.tolerations": "list", "spec.tolerations[]": "map", "spec.nodeSelector": "map",
       "spec.nodeSelector{}": "str", "spec.affinity": "map", "spec.runtimeClassName": "str",
       "spec.resourceClaims": "list", "spec.resourceClaims[]": "map", "spec.schedulingGates": "list",
       "spec.schedulingGates[]": "map", "spec.activeDeadlineSeconds": "count", "spec.terminationGracePeriodSeconds": "count",
       "status.phase": "str", "status.reason": "str", "status.message": "str", "status.startTime": "time",
       **_under("status", _CONDITIONS),
       **{k: v for key in ("containers", "initContainers", "ephemeralContainers")
          for k, v in _under(f"spec.{key}[]", _CONTAINER).items()},
       **{f"spec.{key}": "list" for key in ("containers", "initContainers", "ephemeralContainers")},
       **{k: v for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
          for k, v in _under(f"status.{key}[]", _STATUS).items()},
       **{f"status.{key}": "list" for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")}}
NODE = {**_META, "spec.unschedulable": "bool", "spec.podCIDR": "str", "spec.podCIDRs": "list", "spec.podCIDRs[]": "str",
        "spec.taints": "list", "spec.taints[]": "map", "spec.taints[].key": "str!",
        "spec.taints[].value": "str", "spec.taints[].effect": "str!", "status.capacity": "map",
        "status.capacity{}": "quantity", "status.allocatable": "map", "status.allocatable{}": "quantity",
        "status.nodeInfo": "map", "status.nodeInfo{}": "str", "status.addresses": "list", "status.addresses[]": "map",
        **_under("status", _CONDITIONS)}
EVENT = {**_META, "involvedObject": "map", "involvedObject.name": "str", "involvedObject.kind": "str",
         "involvedObject.namespace": "str", "involvedObject.uid": "str", "regarding": "map", "reason": "str",
         "message": "str", "note": "str", "type": "str", "count": "count", "series": "map", "series.count": "count",
         "lastTimestamp": "time", "firstTimestamp": "time", "eventTime": "time", "source": "map"}
WORKLOAD = {**_META, "spec.replicas": "count", "spec.selector": "map", "spec.template": "map",
            "status.replicas": "count", "status.readyReplicas": "count", "status.availableReplicas": "count",
            "status.startTime": "time", "status.completionTime": "time", "status.lastScheduleTime": "time",
            "status.failed": "count", "status.succeeded": "count",
            **_under("status", _CONDITIONS)}
# A discovery document (GET /apis/<group>) has no metadata: its name says which group is served.
API_GROUP = {"name": "str", "versions": "list", "versions[]": "map", "preferredVersion": "map",
             "preferredVersion.version": "str"}
# The Service and EndpointSlices a waiting init container dials (rules/init/waiting.py).
SERVICE = {**_META, "spec.type": "str", "spec.externalName": "str", "spec.clusterIP": "str", "spec.clusterIPs": "list", "spec.clusterIPs[]": "str",
           "spec.selector": "map", "spec.selector{}": "str", "spec.ports": "list", "spec.ports[]": "map",
           "spec.ports[].port": "int32", "spec.ports[].targetPort": "scalar", "spec.ports[].protocol": "str",
           "spec.ports[].name": "str"}
ENDPOINT_SLICE = {**_META, "endpoints": "list", "endpoints[]": "map", "endpoints[].conditions": "map",
                  "endpoints[].conditions.ready": "bool", "endpoints[].addresses": "list",
                  "endpoints[].addresses[]": "str", "endpoints[].targetRef": "map"}
SCHEMAS = {"Pod": POD, "Node": NODE, "Event": EVENT, "APIGroup": API_GROUP, "Service": SERVICE,
           "EndpointSlice": ENDPOINT_SLICE,
           **{k: WORKLOAD for k in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob")}}
# Built-in kinds reach us through the API server's conversion, which bounds their nesting; anything else
# (custom resources, unknown kinds) is walked whole for depth and refused numbers.
_CONVERTED = frozenset(SCHEMAS) - {"APIGroup"}


def problems(obj, kind: Optional[str] = None, walk: bool = False) -> List[Tuple[tuple, str]]:
    """Every (concrete path, "field is …, not …") the object fails; [] when it has the shapes rules rely on."""
    if not isinstance(obj, dict):
        return [((), f"the object is {_described(obj)}, not a mapping")]
    kind = kind or obj.get("kind")
    out = []
    unnamed = nameless(obj, kind)
    if unnamed:
        return [unnamed]
    _check(obj if type(obj) is dict else dict(obj), _tree(kind if kind in SCHEMAS else None), [], out)
    if walk or kind not in _CONVERTED:
        out += _deep_problems(obj)
    return out


class _Node:
    """One step of a schema: the type its value must have (or None) and the steps under it."""
    __slots__ = ("want", "children", "each", "values", "inner", "exact", "required")

    def __init__(self):
        self.want, self.children, self.each, self.values, self.inner, self.exact = None, {}, None, None, False, None
        self.required = False   # the API requires it: an item without it is malformed as a whole


@lru_cache(maxsize=None)
def _tree(kind: Optional[str]) -> _Node:
    """A kind's schema as a tree, so an object is walked once along the fields it has (thousands of nodes)."""
    root = _Node()
    for spec_path, want in (SCHEMAS.get(kind) or _META).items():
        node = root
        for step in _steps(spec_path):
            if step == "[]":
                node.each = node.each or _Node()
                node = node.each
            elif step == "{}":
                node.values = node.values or _Node()
                node = node.values
            else:
                node = node.children.setdefault(step, _Node())
        node.required = want.endswith("!")
        node.want = want = want.rstrip("!")
        node.exact = {"map": dict, "list": list, "str": str, "bool": bool}.get(want)   # JSON's and YAML's own types
    _mark(root)
    return root


def _mark(node: _Node) -> bool:
    subs = [*node.children.values(), *(n for n in (node.each, node.values) if n is not None)]
    node.inner = bool(subs)
    for sub in subs:
        _mark(sub)
    return node.inner


def _check(value, node: _Node, path: list, out: list) -> None:
    """Walk the value along the schema tree; `path` is the way there (a stack, made a tuple only for a problem)."""
    if node.children and type(value) is dict:
        for key, sub in node.children.items():
            v = value.get(key)
            if v is None:
                if sub.required and path and type(path[-1]) is int:   # the item it belongs to goes
                    out.append((tuple(path), f"{_dotted(tuple(path) + (key,))} is missing"))
                continue   # absent or null: nothing to check (a null field is an absent one)
            if (type(v) is not sub.exact) if sub.exact is not None else (
                    sub.want is not None and not _FITS[sub.want](v)):
                out.append((tuple(path) + (key,), _problem(tuple(path) + (key,), v, sub.want)))
            elif sub.inner:
                path.append(key)
                _check(v, sub, path, out)
                path.pop()
    for sub, items in ((node.each, value) if type(value) is list else (None, ()),
                       (node.values, value) if type(value) is dict else (None, ())):
        if sub is None or not items:
            continue
        values = items if type(items) is list else items.values()
        if not sub.inner and (all(type(v) is sub.exact for v in values) if sub.exact is not None else
                              sub.want == "quantity" and all(type(v) is str and _text_quantity(v) for v in values)):
            continue   # labels, annotations, nodeInfo, capacity: the common case, checked at once
        for key, v in (enumerate(items) if type(items) is list else items.items()):
            # a null list item or map value is no object
            if (type(v) is not sub.exact) if sub.exact is not None else not _FITS[sub.want](v):
                out.append((tuple(path) + (key,), _problem(tuple(path) + (key,), v, sub.want)))
            elif sub.inner:
                path.append(key)
                _check(v, sub, path, out)
                path.pop()


def _problem(where: tuple, value, want: str) -> str:
    return f"{_dotted(where)} is {_described(value)}, not {_WORDS[want]}"


def nameless(obj: dict, kind: Optional[str] = None) -> Optional[Tuple[tuple, str]]:
    """(path, problem) when the object has no metadata mapping with a non-empty string name, else None."""
    if (kind or obj.get("kind")) == "APIGroup":
        return None
    m = obj.get("metadata")
    if not isinstance(m, dict):
        return ("metadata",), f"metadata is {_described(m)}, not a mapping"
    name = m.get("name")
    if not isinstance(name, str) or not name:
        return ("metadata", "name"), "metadata.name is " + (
            "missing" if name is None else f"{_described(name)}, not a string")
    return None


def _deep_problems(obj) -> List[Tuple[tuple, str]]:
    """Values nested deeper than MAX_DEPTH, and numbers the decoder refused, anywhere in the object."""
    out, stack = [], [((), obj)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, Refused):
            out.append((where, f"{_dotted(where)} is {node.text[:20]}, not a number an API server writes"))
        elif isinstance(node, (dict, list)):
            if len(where) > MAX_DEPTH:
                return out + [(where[:2], f"{_dotted(where[:2])} nests deeper than {MAX_DEPTH} levels")]
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((where + (k,), v) for k, v in items)
    return out


def screened(ev: Evidence, obj, kind: Optional[str], origin: str = "", walk: bool = False):
    """The object as rules may see it, or None when it is dropped; each problem becomes a gap. The target keeps
    its place: only its malformed fields are removed (rules then read them as absent, and the gap says so)."""
    found = problems(obj, kind, walk)
    if not found:
        return obj
    kind = kind or (obj.get("kind") if isinstance(obj, dict) else None) or "?"
    source = source_of(kind) if kind != "APIGroup" else "discovery"
    if _is_target(ev, obj, kind) and found[0][0][:2] != ("metadata", "name") and found[0][0] != ("metadata",):
        fixed = repaired(obj, found, kind, walk)
        note(ev, source, f"{kind.lower()} {ev.target.name}: field ignored: " + "; ".join(p for _, p in found))
        return fixed
    note(ev, source, "1 object skipped: " + found[0][1], origin)
    return None


def repaired(obj: dict, found, kind, walk: bool = False) -> dict:
    """A copy without the malformed fields (a malformed list item is removed from its list); only the
    containers on the way to a removed field are copied."""
    out = obj
    for _ in range(200):
        if not found:
            break
        out = _without(out, found[0][0])
        found = problems(out, kind, walk)
    return out


def _without(node, where: tuple):
    if not where:
        return node
    head, rest = where[0], where[1:]
    if isinstance(node, dict):
        copy = dict(node)
        if rest and head in copy:
            copy[head] = _without(copy[head], rest)
        else:
            copy.pop(head, None)
        return copy
    if isinstance(node, list) and isinstance(head, int) and head < len(node):
        copy = list(node)
        if rest:
            copy[head] = _without(copy[head], rest)
        else:
            del copy[head]
        return copy
    return node


def note(ev: Evidence, source: str, problem: str, origin: str = "") -> None:
    """Record a malformed object in the source's `malformed` gap (one per source, counting objects; the rules
    still read the source's other objects: `ev.readable(source)` is unchanged)."""
    key = f"{source}#malformed"
    gap = ev.gaps.get(key)
    if gap is None:
        ev.gaps[key] = Gap(source, "malformed", problem + (f" ({origin})" if origin else ""), "get")
        return
    skipped = problem.startswith("1 object skipped: ")
    head, _, rest = gap.detail.partition(" skipped: ")
    if skipped and head.split(" ")[0].isdigit():
        n = int(head.split(" ")[0]) + 1
        shown = rest.split("; ")
        if len(shown) < MAX_SHOWN:
            shown.append(problem[len("1 object skipped: "):])
        gap.detail = f"{n} objects skipped: " + "; ".join(shown)
    elif problem not in gap.detail:
        gap.detail = f"{gap.detail}; {problem}"


def _is_target(ev: Evidence, obj: dict, kind: str) -> bool:
    m = obj.get("metadata") if isinstance(obj, dict) else None
    return (kind == ev.target.kind and isinstance(m, dict) and m.get("name") == ev.target.name
            and (kind == "Node" or m.get("namespace") in (ev.target.namespace, None)))


def _values(obj, spec_path: str) -> Iterator[Tuple[tuple, object]]:
    """(concrete path, value) for every value the path reaches; absent fields reach nothing."""
    nodes = [((), obj)]
    for step in _steps(spec_path):
        out = []
        for where, node in nodes:
            if step == "[]":
                out += [(where + (i,), v) for i, v in enumerate(node)] if isinstance(node, list) else []
            elif step == "{}":
                out += [(where + (k,), v) for k, v in node.items()] if isinstance(node, dict) else []
            elif isinstance(node, dict) and step in node:
                out.append((where + (step,), node[step]))
        nodes = out
    return iter(nodes)


@lru_cache(maxsize=None)
def _steps(spec_path: str) -> tuple:
    return tuple(_split(spec_path))


def _split(spec_path: str):
    for part in spec_path.split(".") if spec_path else []:
        while part.endswith(("[]", "{}")):
            yield from ([part[:-2]] if part[:-2] else [])
            yield part[-2:]
            part = ""
        if part:
            yield part


def _fits(value, want: str) -> bool:
    return _FITS[want](value)


@lru_cache(maxsize=4096)   # a cluster repeats its timestamps little, but the conditions of one node repeat
def _time_fits(value: str) -> bool:
    t = parse_time(value)
    return t is not None and _EARLIEST <= t < _LATEST


@lru_cache(maxsize=4096)   # every node's capacity repeats a few quantities
def _text_quantity(value: str) -> bool:
    return parse_quantity(value) is not None   # finite and below 1e30 (kube/quantity.py)


def _quantity_fits(value) -> bool:
    if isinstance(value, str):
        return _text_quantity(value)
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and abs(value) < 1e18)


_FITS = {
    "map": lambda v: isinstance(v, dict), "list": lambda v: isinstance(v, list), "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool), "time": lambda v: isinstance(v, str) and _time_fits(v),
    "scalar": lambda v: isinstance(v, (str, int)) or (isinstance(v, float) and math.isfinite(v)),
    "quantity": _quantity_fits,
    "count": lambda v: type(v) is int and COUNT[0] <= v <= COUNT[1],
    "int32": lambda v: type(v) is int and INT32[0] <= v <= INT32[1],
}
_WORDS = {"map": "a mapping", "list": "a list", "str": "a string", "bool": "true or false", "scalar": "a string",
          "quantity": "a quantity such as 16Gi or 2", "count": "an integer from 0 to 2147483647",
          "int32": "a 32-bit integer", "time": "a time such as 2026-12-02T08:30:00Z"}


def _dotted(where: tuple) -> str:
    out = ""
    for step in where:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "(object)"


def _described(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Refused):
        return value.text[:20]
    text = repr(value)
    text = text[:40] + "..." if len(text) > 40 else text
    return f"the string {text}" if isinstance(value, str) else f"the number {text}"
