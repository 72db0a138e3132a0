"""Keeps secret values out of evidence, bundles and reports: Secrets as metadata only, env values with
secret-looking names hidden, and anything shaped like a credential masked wherever it appears; never reveals."""
from __future__ import annotations

import copy
import math
import re
from collections import Counter
from typing import Tuple

REDACTED = "<redacted>"
# kubectl apply stores the whole applied object here — for a Secret, its data in clear text.
_LEAKY_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|(^|_)PASS($|_)|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|(^|_)KEY$|"
                          r"CREDENTIAL|AUTH|(^|_)PAT($|_)|DSN|DATABASE_URL|CONNECTION_STRING", re.I)

# Credential shapes as their issuers document them: Hugging Face user access tokens (hf_…), GitHub classic and
# fine-grained tokens (ghp_/gho_/ghu_/ghs_/ghr_…, github_pat_…), OpenAI/Anthropic-style keys (sk-…), AWS access
# key ids (AKIA…/ASIA…, 20 characters), and JSON Web Tokens (three base64url parts, the first two JSON objects).
TOKEN_SHAPES = (
    ("hf-token", re.compile(r"\bhf_[A-Za-z0-9]{16,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("api-key", re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
)
# scheme://user:password@host — the password goes, the user and host stay (they say what was reached).
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*:)([^\s@/'\"]+)(@)")
# A long run of base64 characters mixing upper case, lower case and digits with high entropy: a key. Paths
# (a lower-case word between slashes), names (dashes, dots, underscores) and hex digests do not qualify.
_LONG_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")
_ENTROPY_BITS = 4.3
# Text that every shape above needs (its literal prefix, "://", or a 32-character run): a string without any
# is returned as is, so a report of thousands of short strings (a node table) costs one search per string.
_ANY_SHAPE = re.compile(r"hf_|gh[pousr]_|github_pat_|sk-|AKIA|ASIA|eyJ|://|[A-Za-z0-9+/]{32}")


def mask(text: str) -> Tuple[str, int]:
    """The text with every credential-shaped value replaced by <redacted:kind>, and how many were replaced."""
    if not text or not isinstance(text, str) or not _ANY_SHAPE.search(text):
        return text, 0
    hits = 0

    def replace(m, label):
        nonlocal hits
        if label == "<redacted:secret>" and not _random_looking(m.group(0)):
            return m.group(0)
        hits += 1
        return m.expand(label)
    for kind, rx in TOKEN_SHAPES:
        text = rx.sub(lambda m, k=kind: replace(m, f"<redacted:{k}>"), text)
    text = _URL_PASSWORD.sub(lambda m: replace(m, r"\1<redacted:password>\3"), text)
    text = _LONG_RUN.sub(lambda m: replace(m, "<redacted:secret>"), text)
    return text, hits


def _random_looking(s: str) -> bool:
    if not (re.search(r"[A-Z]", s) and re.search(r"[a-z]", s) and re.search(r"[0-9]", s)):
        return False
    if any(re.fullmatch(r"[a-z]{2,}", part) for part in s.split("/")):
        return False
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) >= _ENTROPY_BITS


def masked(text: str) -> str:
    return mask(text)[0]


def secret_metadata(obj: dict) -> dict:
    """A Secret reduced to metadata without the annotations that can carry its data."""
    meta = copy.deepcopy(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    ann = meta.get("annotations") or {}
    for key in _LEAKY_ANNOTATIONS:
        if key in ann:
            ann[key] = REDACTED
    out = {"apiVersion": "v1", "kind": "Secret", "metadata": _masked_tree(meta)}
    if obj.get("type"):
        out["type"] = obj["type"]
    return out


def for_bundle(obj: dict) -> dict:
    """An object safe to share: Secrets as metadata; in every pod template (Pod, Deployment, CronJob's
    jobTemplate, JobSet's and LeaderWorkerSet's nested templates, any depth) literal env values with
    secret-looking names hidden; and every string value masked by shape (args, annotations, messages)."""
    if obj.get("kind") == "Secret":
        return secret_metadata(obj)
    out = copy.deepcopy(obj)
    meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
    meta.pop("managedFields", None)
    ann = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    for key in _LEAKY_ANNOTATIONS:
        if key in ann:
            ann[key] = REDACTED
    _hide_named_env(out)
    return _masked_tree(out)


def _hide_named_env(node, depth: int = 0) -> None:
    """Every `env` list of every container list, wherever a pod template sits in the object."""
    if depth > 40:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers", "ephemeralContainers") and isinstance(value, list):
                for c in value:
                    for env in (c.get("env") if isinstance(c, dict) and isinstance(c.get("env"), list) else []):
                        if isinstance(env, dict) and "value" in env and _SECRET_NAME.search(str(env.get("name") or "")):
                            env["value"] = REDACTED
            _hide_named_env(value, depth + 1)
    elif isinstance(node, list):
        for item in node:
            _hide_named_env(item, depth + 1)


def _masked_tree(node, depth: int = 0):
    if depth > 60:
        return node
    if isinstance(node, str):
        return masked(node)
    if isinstance(node, dict):
        return {k: _masked_tree(v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_masked_tree(v, depth + 1) for v in node]
    return node
