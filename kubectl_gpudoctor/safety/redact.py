"""Keeps secret values out of evidence and bundles: Secrets as metadata only, secret-looking env values hidden."""
from __future__ import annotations

import copy
import re

REDACTED = "<redacted>"
# kubectl apply stores the whole applied object here — for a Secret, its data in clear text.
_LEAKY_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH", re.I)


def secret_metadata(obj: dict) -> dict:
    """A Secret reduced to metadata without the annotations that can carry its data."""
    meta = copy.deepcopy(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    ann = meta.get("annotations") or {}
    for key in _LEAKY_ANNOTATIONS:
        if key in ann:
            ann[key] = REDACTED
    out = {"apiVersion": "v1", "kind": "Secret", "metadata": meta}
    if obj.get("type"):
        out["type"] = obj["type"]
    return out


def for_bundle(obj: dict) -> dict:
    """An object safe to share: Secrets as metadata, literal env values with secret-looking names hidden."""
    if obj.get("kind") == "Secret":
        return secret_metadata(obj)
    out = copy.deepcopy(obj)
    (out.get("metadata") or {}).pop("managedFields", None)
    ann = (out.get("metadata") or {}).get("annotations") or {}
    for key in _LEAKY_ANNOTATIONS:
        if key in ann:
            ann[key] = REDACTED
    for c in _all_containers(out):
        for env in c.get("env") or []:
            if "value" in env and _SECRET_NAME.search(env.get("name") or ""):
                env["value"] = REDACTED
    return out


def _all_containers(obj: dict):
    spec = obj.get("spec") or {}
    if obj.get("kind") != "Pod":
        spec = ((spec.get("template") or {}).get("spec")) or {}
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []
