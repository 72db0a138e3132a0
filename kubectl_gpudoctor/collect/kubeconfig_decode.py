"""One kubeconfig file's document checked as client-go decodes it (kind and apiVersion, every field's Go type,
base64 data, names unique in each list); the first problem in client-go's wording, as kubectl reports it."""
from __future__ import annotations

import binascii
from typing import Optional

from ..data.kubeconfig_schema import NAMED_LISTS, STRING_TYPES, STRUCTS
from ..lazyre import Pattern

SCHEME = "k8s.io/client-go/tools/clientcmd/api/latest/latest.go:50"
_B64 = Pattern(r"[A-Za-z0-9+/]*={0,2}")


class DecodeError(Exception):
    """What client-go's decoder says about the file (kubectl prefixes `error loading config file "F": `)."""


def check(doc) -> None:
    """Raises DecodeError where client-go's decoder refuses the document; a document it reads passes."""
    if doc is None:   # an empty file: client-go reads an empty config
        return
    if not isinstance(doc, dict):
        raise DecodeError(f"couldn't get version/kind; json parse error: json: cannot unmarshal {_json_type(doc)} "
                          "into Go value of type struct { APIVersion string; Kind string }")
    version, kind = doc.get("apiVersion"), doc.get("kind")
    for value in (version, kind):
        if value is not None and not isinstance(value, str):
            raise DecodeError(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                              f"{_json_type(value)} into Go struct field .apiVersion of type string")
    if kind and kind != "Config":
        raise DecodeError(f'no kind "{kind}" is registered for version "{version or "v1"}" in scheme "{SCHEME}"')
    if version and version != "v1":
        raise DecodeError(f'no kind "Config" is registered for version "{version}" in scheme "{SCHEME}"')
    _struct(doc, "Config", "")
    _unique(doc)


def _json_type(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"   # a date or other YAML scalar: text to client-go's YAML reader


def _mismatch(value, struct: str, path: str, gotype: str) -> DecodeError:
    return DecodeError(f"json: cannot unmarshal {_json_type(value)} into Go struct field {struct}.{path} "
                       f"of type {gotype}")


def _struct(obj: dict, name: str, path: str) -> None:
    fields = STRUCTS[name]
    for key, value in obj.items():
        gotype = fields.get(key) if isinstance(key, str) else None
        if gotype is not None:
            _value(value, gotype, name, f"{path}.{key}" if path else key)


def _value(value, gotype: str, struct: str, path: str) -> None:
    """Checks one field's value against its Go type (null is every type's zero value)."""
    if value is None or gotype == "raw":
        return
    if gotype in STRING_TYPES or gotype == "bool":
        if not isinstance(value, bool if gotype == "bool" else str):
            raise _mismatch(value, struct, path, gotype)
    elif gotype == "[]uint8":
        if not isinstance(value, str):
            raise _mismatch(value, struct, path, gotype)
        _base64(value)
    elif gotype.startswith("[]"):
        if not isinstance(value, list):
            raise _mismatch(value, struct, path, gotype)
        for item in value:
            _value(item, gotype[2:], struct, path)
    elif gotype.startswith("map[string]"):
        if not isinstance(value, dict):
            raise _mismatch(value, struct, path, gotype)
        for item in value.values():
            _value(item, gotype[len("map[string]"):], struct, path)
    else:   # a struct: v1.Cluster
        if not isinstance(value, dict):
            raise _mismatch(value, struct, path, gotype)
        _struct(value, gotype[3:], path)


def _base64(text: str) -> None:
    """encoding/json's []byte: standard base64 with padding (line breaks skipped)."""
    data = text.replace("\r", "").replace("\n", "")
    bad: Optional[int] = None
    m = _B64.match(data)
    if m.end() != len(data):
        bad = m.end()
    elif len(data) % 4:
        bad = len(data) - len(data) % 4
    else:
        try:
            binascii.a2b_base64(data.encode("ascii"))
        except binascii.Error:
            bad = max(0, len(data) - 4)
    if bad is not None:
        raise DecodeError(f"illegal base64 data at input byte {bad}")


def _unique(doc: dict) -> None:
    """client-go turns each named list into a map: a name twice in one file refuses the file."""
    def names(items, key):
        seen = set()
        for item in items or ():
            name = (item or {}).get("name") or ""
            if name in seen:
                raise DecodeError(f'error converting {NAMED_LISTS[key]}: duplicate name "{name}" in list')
            seen.add(name)
    for key in ("clusters", "users", "contexts", "extensions"):
        names(doc.get(key), key)
    names((doc.get("preferences") or {}).get("extensions"), "extensions")
    for key, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
        for item in doc.get(key) or ():
            names(((item or {}).get(inner) or {}).get("extensions"), "extensions")
