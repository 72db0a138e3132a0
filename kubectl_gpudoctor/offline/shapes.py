"""Checks that saved objects have the shapes the API gives them (types and sane numbers of the fields the
checks read) so malformed input is refused with the field it names, instead of failing inside a rule."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterator, Tuple

from .files import OfflineError

INT32 = (-2 ** 31, 2 ** 31 - 1)
COUNT = (0, 2 ** 31 - 1)

# path (dots; [] for every item of a list; {} for every value of a map) -> expected type
_META = {"metadata": "map", "metadata.name": "str", "metadata.namespace": "str", "metadata.uid": "str",
         "metadata.labels": "map", "metadata.labels{}": "str", "metadata.annotations": "map",
         "metadata.annotations{}": "str", "metadata.ownerReferences": "list", "metadata.ownerReferences[]": "map",
         "metadata.ownerReferences[].kind": "str", "metadata.ownerReferences[].name": "str",
         "metadata.ownerReferences[].uid": "str", "metadata.creationTimestamp": "str",
         "metadata.deletionTimestamp": "str", "spec": "map", "status": "map"}
_CONDITIONS = {"conditions": "list", "conditions[]": "map", "conditions[].type": "str", "conditions[].status": "str",
               "conditions[].reason": "str", "conditions[].message": "str", "conditions[].lastTransitionTime": "str"}
_CONTAINER = {"": "map", "name": "str", "image": "str", "command": "list", "command[]": "scalar", "args": "list",
              "args[]": "scalar", "env": "list", "env[]": "map", "env[].name": "str", "env[].value": "scalar",
              "resources": "map", "resources.limits": "map", "resources.limits{}": "quantity",
              "resources.requests": "map", "resources.requests{}": "quantity", "ports": "list", "ports[]": "map",
              "volumeMounts": "list", "volumeMounts[]": "map", "volumeMounts[].name": "str",
              "volumeMounts[].mountPath": "str"}
_STATE = {"": "map", "waiting": "map", "running": "map", "terminated": "map", "waiting.reason": "str",
          "waiting.message": "str", "terminated.reason": "str", "terminated.message": "str",
          "terminated.exitCode": "int32", "terminated.signal": "int32", "terminated.startedAt": "str",
          "terminated.finishedAt": "str", "running.startedAt": "str"}
_STATUS = {"": "map", "name": "str", "ready": "bool", "started": "bool", "restartCount": "count", "image": "str",
           **{f"state.{k}".rstrip("."): v for k, v in _STATE.items()},
           **{f"lastState.{k}".rstrip("."): v for k, v in _STATE.items()}}


def _under(prefix: str, table: dict) -> dict:
    return {(f"{prefix}.{k}" if k else prefix): v for k, v in table.items()}


POD = {**_META, "spec.nodeName": "str", "spec.volumes": "list", "spec.volumes[]": "map", "spec.volumes[].name": "str",
       "spec.tolerations": "list", "spec.tolerations[]": "map", "spec.nodeSelector": "map",
       "spec.nodeSelector{}": "str", "spec.affinity": "map", "spec.runtimeClassName": "str",
       "spec.resourceClaims": "list", "spec.resourceClaims[]": "map", "spec.schedulingGates": "list",
       "spec.schedulingGates[]": "map", "spec.activeDeadlineSeconds": "count",
       "status.phase": "str", "status.reason": "str", "status.message": "str", "status.startTime": "str",
       **_under("status", _CONDITIONS),
       **{k: v for key in ("containers", "initContainers", "ephemeralContainers")
          for k, v in _under(f"spec.{key}[]", _CONTAINER).items()},
       **{f"spec.{key}": "list" for key in ("containers", "initContainers", "ephemeralContainers")},
       **{k: v for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
          for k, v in _under(f"status.{key}[]", _STATUS).items()},
       **{f"status.{key}": "list" for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")}}
NODE = {**_META, "spec.unschedulable": "bool", "spec.taints": "list", "spec.taints[]": "map", "spec.taints[].key": "str",
        "spec.taints[].value": "str", "spec.taints[].effect": "str", "status.capacity": "map",
        "status.capacity{}": "quantity", "status.allocatable": "map", "status.allocatable{}": "quantity",
        "status.nodeInfo": "map", "status.nodeInfo{}": "str", "status.addresses": "list", "status.addresses[]": "map",
        **_under("status", _CONDITIONS)}
EVENT = {**_META, "involvedObject": "map", "involvedObject.name": "str", "involvedObject.kind": "str",
         "involvedObject.uid": "str", "regarding": "map", "reason": "str", "message": "str", "note": "str",
         "type": "str", "count": "count", "series": "map", "series.count": "count", "lastTimestamp": "str",
         "firstTimestamp": "str", "eventTime": "str", "source": "map"}
WORKLOAD = {**_META, "spec.replicas": "count", "spec.selector": "map", "spec.template": "map",
            "status.replicas": "count", "status.readyReplicas": "count", "status.availableReplicas": "count",
            **_under("status", _CONDITIONS)}
SCHEMAS = {"Pod": POD, "Node": NODE, "Event": EVENT,
           **{k: WORKLOAD for k in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")}}
BUNDLE = {"": "map", "collectedAt": "str", "target": "map", "target.kind": "str", "target.name": "str",
          "target.namespace": "str", "sources": "list", "sources[]": "str", "gaps": "list", "gaps[]": "map",
          "gaps[].source": "str", "gaps[].reason": "str", "gaps[].detail": "str", "gaps[].verb": "str",
          "absent": "list", "absent[]": "str", "tailLines": "count", "podNodes": "list", "podNodes[]": "str"}


def check(objects, meta, path: str) -> None:
    """Raise OfflineError naming the first field whose type or value no API server would give."""
    problem = _first_problem(meta or {}, BUNDLE)
    if problem:
        raise OfflineError(f"--from {path}: bundle.yaml: {problem}")
    for obj in objects:
        m = obj.get("metadata")
        problem = None if isinstance(m, dict) and isinstance(m.get("name"), str) else "metadata.name: missing"
        problem = problem or _first_problem(obj, {**_META, **SCHEMAS.get(obj.get("kind"), {})})
        if problem:
            m = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            ref = "/".join(str(x) for x in (m.get("namespace"), m.get("name")) if x is not None) or "?"
            raise OfflineError(f"--from {path}: {obj.get('kind')} {ref}: {problem}")


def _first_problem(obj, schema: dict):
    for spec_path, want in schema.items():
        if spec_path and not isinstance(obj, dict) or (spec_path and spec_path.split(".", 1)[0].rstrip("[]{}") not in obj):
            continue   # the field's top-level key is absent: nothing to check under it
        item = spec_path.endswith(("[]", "{}")) or not spec_path   # a null list item or map value is no object
        for where, value in _values(obj, spec_path):
            if (value is not None or item) and not _fits(value, want):
                return f"{where or '(document)'}: expected {_WORDS[want]}, found {_shown(value)}"
    return None


def _values(obj, spec_path: str) -> Iterator[Tuple[str, object]]:
    """(concrete path, value) for every value the path reaches; absent fields reach nothing."""
    nodes = [("", obj)]
    for step in _steps(spec_path):
        out = []
        for where, node in nodes:
            if step == "[]":
                out += [(f"{where}[{i}]", v) for i, v in enumerate(node)] if isinstance(node, list) else []
            elif step == "{}":
                out += [(f"{where}.{k}", v) for k, v in node.items()] if isinstance(node, dict) else []
            elif isinstance(node, dict) and step in node:
                out.append((f"{where}.{step}" if where else step, node[step]))
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
    if want == "map":
        return isinstance(value, dict)
    if want == "list":
        return isinstance(value, list)
    if want == "str":
        return isinstance(value, str)
    if want == "bool":
        return isinstance(value, bool)
    if want == "scalar":
        return isinstance(value, (str, int, float)) and not (isinstance(value, float) and not math.isfinite(value))
    if want == "quantity":
        return isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                          and math.isfinite(value) and abs(value) < 1e18)
    low, high = COUNT if want == "count" else INT32
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


_WORDS = {"map": "a mapping", "list": "a list", "str": "a string", "bool": "true or false", "scalar": "a string",
          "quantity": "a quantity such as 16Gi or 2", "count": "an integer from 0 to 2147483647",
          "int32": "a 32-bit integer"}


def _shown(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"
