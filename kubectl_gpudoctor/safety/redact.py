"""Keeps secret values out of evidence, bundles and reports: Secrets as metadata only, values whose names say
secret hidden, credential shapes masked wherever they appear (after unescaping), Kubernetes names never."""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable, List, Tuple

from .. import lazyre

REDACTED = "<redacted>"
# kubectl apply stores the whole applied object here — for a Secret its data, for a workload its literal env.
_LEAKY_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_SECRET_NAME = lazyre.compile(r"TOKEN|SECRET|PASSW|(^|_)PASS($|_)|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|(^|_)KEY$|"
                              r"CREDENTIAL|AUTH|(^|_)PAT($|_)|DSN|DATABASE_URL|CONNECTION_STRING", re.I)
# A setting whose name says secret inside a value or an argument: `-Djavax.net.ssl.keyStorePassword=…`,
# `--api-key=…`, `JAVA_OPTS=-Ddb.password=…`, `--hf-token …` (the value is the next argument). The word ends
# there: `--max-num-batched-tokens`, `--tokenizer` and `--secret-name`-like words that go on are not secrets.
_SECRET_WORD = r"(?:password|passwd|secret|token|api[-_.]?key|apikey|access[-_.]?key|private[-_.]?key|credentials?)"
_NAMED_SETTING = lazyre.compile(
    r"(?i)((?<![^\s\"',;])-{0,2}[A-Za-z0-9_.-]*?" + _SECRET_WORD + r"=|(?<![^\s\"'])--?[A-Za-z0-9_.-]*?"
    + _SECRET_WORD + r"\s+(?=[^\s\"'-]))([^\s\"',;]+)")
_NAMED_WORD = lazyre.compile(r"(?i)passw|secret|token|api[-_.]?key|access[-_.]?key|private[-_.]?key|credential")
_NAMED_FLAG = lazyre.compile(r"(?i)-{1,2}[A-Za-z0-9_.-]*" + _SECRET_WORD)

_B = r"(?<![A-Za-z0-9])"     # a token starts after anything but a letter or digit: `_`, `=`, quotes, spaces
_E = r"(?![A-Za-z0-9])"      # a fixed-length token ends likewise
# Credential shapes as their issuers document them, most specific first (the first to match labels the value):
# (kind, pattern, whether the value must mix upper case, lower case and digits — for alphabets a name can use).
TOKEN_SHAPES = (
    ("private-key", lazyre.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.|\n)*?"
                                   r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"), False),
    ("anthropic-key", lazyre.compile(_B + r"sk-ant-[A-Za-z0-9]{2,8}-[A-Za-z0-9_-]{20,}"), False),
    ("openai-key", lazyre.compile(_B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"), False),
    ("stripe-key", lazyre.compile(_B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}"), False),
    ("stripe-key", lazyre.compile(_B + r"whsec_[A-Za-z0-9]{24,}"), False),
    ("hf-token", lazyre.compile(_B + r"hf_[A-Za-z0-9]{16,}"), False),
    ("github-token", lazyre.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), False),
    ("gitlab-token", lazyre.compile(_B + r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas)-[A-Za-z0-9_-]{20,}"), False),
    ("slack-token", lazyre.compile(_B + r"(?:xox[abposre]-[0-9A-Za-z-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})"), False),
    ("slack-webhook", lazyre.compile(r"(?<=hooks\.slack\.com/services/)T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}"),
     False),
    ("ngc-key", lazyre.compile(_B + r"nvapi-[A-Za-z0-9_-]{20,}"), False),
    ("google-api-key", lazyre.compile(_B + r"AIza[0-9A-Za-z_-]{35}" + _E), False),
    ("google-oauth-token", lazyre.compile(_B + r"ya29\.[0-9A-Za-z_-]{20,}"), False),
    ("aws-access-key", lazyre.compile(_B + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}" + _E), False),
    ("jwt", lazyre.compile(_B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), False),
    ("azure-key", lazyre.compile(r"(?<=AccountKey=)[A-Za-z0-9+/]{20,}={0,2}|(?<=SharedAccessKey=)[A-Za-z0-9+/]{20,}={0,2}"),
     False),
    ("azure-sas", lazyre.compile(r"(?<=[?&;]sig=)[A-Za-z0-9%+/=]{20,}|(?<=SharedAccessSignature=)[^;\s\"']{20,}"),
     False),
    ("wandb-key", lazyre.compile(r"(?i)(?<=wandb_api_key=)[0-9a-f]{40}" + _E + r"|(?<=wandb login )[0-9a-f]{40}" + _E),
     False),
    ("aws-secret-key", lazyre.compile(r"(?i)(?<=aws_secret_access_key=)[A-Za-z0-9/+]{40}" + _E), False),
    ("api-key", lazyre.compile(r"(?<![A-Za-z0-9-])sk-[A-Za-z0-9_-]{20,}"), True),
)
# scheme://user:password@host — the password goes (up to the authority's last `@`: passwords hold `@` and `/`),
# the user and host stay (they say what was reached).
_URL_PASSWORD = lazyre.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"<>]*:)([^\s'\"<>]+)(@)(?=[^\s@'\"<>/]*"
                               r"(?:[/\s'\"<>]|$))")
# A long run of base64 characters mixing upper case, lower case and digits with high entropy: a key. Paths
# (a lower-case word between slashes), names (dashes, dots, underscores) and hex digests do not qualify.
_LONG_RUN = lazyre.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")
_ENTROPY_BITS = 4.3
_PORT_PATH = lazyre.compile(r"[0-9]{1,5}(?:/|\Z)")
# Text that every shape above needs (its literal prefix, "://", a 32-character run) or that unescaping removes:
# a string without any is returned as is, so a report of thousands of short strings costs one search per string.
_ANY_SHAPE = lazyre.compile(r"PRIVATE KEY|sk-|sk_|rk_|whsec_|hf_|gh[pousr]_|github_pat_|gl[a-z]{1,5}-|xox|xapp-|"
                            r"slack|nvapi-|AIza|ya29\.|AKIA|ASIA|ABIA|ACCA|eyJ|AccountKey=|SharedAccess|sig=|"
                            r"(?i:wandb)|(?i:aws_secret)|://|[A-Za-z0-9+/]{32}|\\[/u]|\x1b|\\(?:x1b|033|e)\[")
# What unescaping takes away before shapes are matched: terminal color and title sequences (raw, or written
# as text by a logger: `\x1b[31m`, `\033[0m`) and JSON's escaped slash and \u escapes of URL characters.
_ESCAPES = lazyre.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\\(?:x1b|033|e|u001[bB])"
                          r"\[[0-9;]*[A-Za-z]|\\/|\\u00(?:2[fF]|3[aA]|40|26|3[dD])")
_UNESCAPED = {"\\/": "/", "\\u002f": "/", "\\u002F": "/", "\\u003a": ":", "\\u003A": ":", "\\u0040": "@",
              "\\u0026": "&", "\\u003d": "=", "\\u003D": "="}
# Long runs that are not keys: an SRI hash or digest after its algorithm, a request id after its header, a tag
# or digest of an image reference, a path segment.
_HARMLESS_BEFORE = lazyre.compile(r"(?i)(?:sha(?:1|224|256|384|512)[-:=]|md5[-:=]|(?:x-amz-id-2|x-amz-request-id|"
                                  r"host ?id|request ?id|extended ?request ?id|requestid|continue)[\"']?\s*[:=]\s*"
                                  r"[\"']?|[a-z0-9][a-z0-9.-]*(?::[0-9]+)?/[a-z0-9._/-]+[:@][A-Za-z0-9_.-]*)\Z")
_WORDY = lazyre.compile(r"[A-Z]?[a-z]{3,}")

_NAMES: set = set()   # Kubernetes names of the objects read (kept verbatim): only those a shape would mask


def remember_names(obj) -> None:
    """Keep the names of an object verbatim wherever they appear (its name, namespace, owners, node, images):
    names are not secrets, and a report, a `Next:` command or a bundle needs them whole."""
    if not isinstance(obj, dict):
        return
    for name in _names_of(obj):
        if isinstance(name, str) and name not in _NAMES and _ANY_SHAPE.search(name) and _mask(name, ())[1]:
            _NAMES.add(name)


def _names_of(obj: dict) -> Iterable:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    yield meta.get("name")
    yield meta.get("namespace")
    yield meta.get("generateName")
    for ref in meta.get("ownerReferences") or () if isinstance(meta.get("ownerReferences"), list) else ():
        yield ref.get("name") if isinstance(ref, dict) else None
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    yield spec.get("nodeName")
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or () if isinstance(spec.get(key), list) else ():
            yield c.get("image") if isinstance(c, dict) else None
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for c in status.get(key) or () if isinstance(status.get(key), list) else ():
            if isinstance(c, dict):
                yield c.get("image")
                yield c.get("imageID")


def mask(text: str, names: Iterable[str] = ()) -> Tuple[str, int]:
    """The text with every credential-shaped value replaced by <redacted:kind>, and how many were replaced.
    Shapes are matched after unescaping (colors, JSON escapes); text with no match comes back unchanged.
    Kubernetes names read from the cluster (and `names`) are kept verbatim."""
    if not text or not isinstance(text, str) or not _ANY_SHAPE.search(text):
        return text, 0
    return _mask(text, (*_NAMES, *names))


def _mask(text: str, names) -> Tuple[str, int]:
    plain = _ESCAPES.sub(lambda m: _UNESCAPED.get(m.group(0), ""), text)
    kept = _spans(plain, names)
    hits = 0

    def replace(m, label, mixed=False, group=0):
        nonlocal hits
        value = m.group(group)
        if any(a < m.end(group) and m.start(group) < b for a, b in kept):
            return m.group(0)   # a Kubernetes name: never a secret
        if (label == "<redacted:secret>" and not _random_looking(m.string, m.start(), value)) or (
                mixed and not _mixed(value)) or (group == 2 and _PORT_PATH.match(value)):
            return m.group(0)   # not random enough, not mixed, or `host:443/path@…`: a port and a path
        hits += 1
        return m.group(0)[:m.start(group) - m.start()] + label + m.group(0)[m.end(group) - m.start():]
    out = plain
    for kind, rx, mixed in TOKEN_SHAPES:
        if rx.search(out):
            out = rx.sub(lambda m, k=kind, x=mixed: replace(m, f"<redacted:{k}>", x), out)
            kept = _spans(out, names) if kept else kept
    out = _URL_PASSWORD.sub(lambda m: replace(m, "<redacted:password>", group=2), out)
    kept = _spans(out, names) if kept else kept
    out = _LONG_RUN.sub(lambda m: replace(m, "<redacted:secret>"), out)
    return (out, hits) if hits else (text, 0)


def _spans(text: str, names) -> List[Tuple[int, int]]:
    out = []
    for name in names:
        start = text.find(name)
        while start >= 0:
            out.append((start, start + len(name)))
            start = text.find(name, start + 1)
    return out


def _mixed(s: str) -> bool:
    return any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)


def _random_looking(text: str, start: int, s: str) -> bool:
    if not _mixed(s):
        return False
    if any(len(part) >= 2 and part.isalpha() and part.islower() for part in s.split("/")):
        return False   # a path
    if _HARMLESS_BEFORE.search(text, max(0, start - 120), start):
        return False   # a digest, a request id, an image's tag or digest, a continue token
    if sum(len(w) for w in _WORDY.findall(s)) >= 0.6 * len(s):
        return False   # an identifier made of words (a TensorRT plugin or kernel name)
    if _harmless_base64(s):
        return False
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) >= _ENTROPY_BITS


def _harmless_base64(s: str) -> bool:
    """A certificate (DER, or PEM text) in base64, or a Kubernetes list's continue token; a private key is not."""
    if s.startswith("MII") and len(s) >= 8:
        head = _b64(s[:8])
        return len(head) >= 5 and head[0] == 0x30 and head[4] == 0x30   # SEQUENCE of SEQUENCE: a certificate
    if s.startswith("LS0tLS1CRUdJTi"):   # "-----BEGIN" in base64
        text = _b64(s[:80]).decode("ascii", "replace")
        return "CERTIFICATE" in text and "PRIVATE" not in text
    if s.startswith("eyJ"):
        import json
        try:
            doc = json.loads(_b64(s + "=" * (-len(s) % 4)).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return False
        return isinstance(doc, dict) and "rv" in doc and str(doc.get("v", "")).startswith("meta.k8s.io")
    return False


def _b64(s: str) -> bytes:
    import base64
    import binascii
    try:
        return base64.b64decode(s[: len(s) - len(s) % 4] or s, validate=False)
    except (binascii.Error, ValueError):
        return b""


def masked(text: str, names: Iterable[str] = ()) -> str:
    return mask(text, names)[0]


def named_settings(text: str) -> str:
    """A value or argument with every `name=value` whose name says secret hidden (`-Dx.password=…`)."""
    if not isinstance(text, str) or not _NAMED_WORD.search(text):
        return text
    return _NAMED_SETTING.sub(lambda m: m.group(1) + REDACTED, text)


def secret_metadata(obj: dict) -> dict:
    """A Secret reduced to metadata without the annotations that can carry its data."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    meta = _masked_tree({k: v for k, v in meta.items() if k != "managedFields"},
                        tuple(n for n in _names_of(obj) if isinstance(n, str) and n))
    ann = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    for key in _LEAKY_ANNOTATIONS:
        if key in ann:
            ann[key] = REDACTED
    out = {"apiVersion": "v1", "kind": "Secret", "metadata": meta}
    if obj.get("type"):
        out["type"] = obj["type"]
    return out


def for_bundle(obj: dict) -> dict:
    """An object safe to share: Secrets as metadata; in every pod template (Pod, Deployment, CronJob's
    jobTemplate, JobSet's and LeaderWorkerSet's nested templates, any depth) literal env values with
    secret-looking names hidden, and `name=value` settings and `--flag value` arguments whose names say
    secret; every other string masked by shape (args, annotations, messages), names kept."""
    if obj.get("kind") == "Secret":
        return secret_metadata(obj)
    # the masked copy is the object's only copy: bounded in depth, where copy.deepcopy is not
    out = _masked_tree(obj, tuple(n for n in _names_of(obj) if isinstance(n, str) and n))
    meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
    meta.pop("managedFields", None)
    ann = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    for key in _LEAKY_ANNOTATIONS:
        if key in ann:
            ann[key] = REDACTED
    _hide_named_values(out)
    return out


def _hide_named_values(node) -> None:
    """Every container list, wherever a pod template sits in the object: env values by their names, and the
    settings inside values and arguments by theirs. The node is _masked_tree's copy, cut 101 levels down: the
    walk needs no bound of its own (one of 40 left templates nested deeper with their named values shown)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers", "ephemeralContainers") and isinstance(value, list):
                for c in value:
                    if isinstance(c, dict):
                        _hide_in_container(c)
            _hide_named_values(value)
    elif isinstance(node, list):
        for item in node:
            _hide_named_values(item)


def _hide_in_container(c: dict) -> None:
    for env in (c.get("env") if isinstance(c.get("env"), list) else []):
        if isinstance(env, dict) and isinstance(env.get("value"), str):
            if _SECRET_NAME.search(str(env.get("name") or "")):
                env["value"] = REDACTED
            else:
                env["value"] = named_settings(env["value"])
    for key in ("args", "command"):
        items = c.get(key)
        if not isinstance(items, list):
            continue
        hide_next = False
        for i, item in enumerate(items):
            if not isinstance(item, str):
                hide_next = False
                continue
            if hide_next and not item.startswith("-"):
                items[i] = REDACTED
                hide_next = False
                continue
            items[i] = named_settings(item)
            hide_next = bool(_NAMED_FLAG.fullmatch(item))


def _masked_tree(node, names=(), depth: int = 0):
    """A copy with every string masked; values nested past 100 levels (which the shape checks refuse) cut."""
    if depth > 100:
        return REDACTED
    if isinstance(node, str):
        return masked(node, names)
    if isinstance(node, dict):
        return {k: _masked_tree(v, names, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_masked_tree(v, names, depth + 1) for v in node]
    return node
