"""A kubeconfig's YAML read as client-go reads it (sigs.k8s.io/yaml, go-yaml v2 rules): `y`, `n`, `on`, `off` are
booleans, `0x1F` and `1_000` numbers, while timestamps and `1:20` stay strings — so that a token or a flag that
client-go would refuse as the wrong type is refused here too, and one it reads as text is text here."""
from __future__ import annotations

import re
from typing import Optional

from . import blockyaml
from ..lazyre import Pattern


class GoYAMLError(Exception):
    """The file is not YAML (the parser's first line)."""


# go-yaml v2 resolve.go: the plain scalars it reads as something other than a string.
_BOOL_TRUE = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_BOOL_FALSE = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
# Its numbers: strconv.ParseInt(text, 0, 64) or its float pattern, after removing every "_".
_INT = Pattern(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+)")
_FLOAT = Pattern(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
# blockyaml answers as PyYAML does; the one difference in what it reads: these four are booleans to go-yaml.
_GO_ONLY_BOOLS = {"y", "Y", "n", "N"}


def load(text: str):
    """The document as client-go's decoder sees it (before its type checks)."""
    doc = blockyaml.load(text)
    if doc is not None and not _mentions(doc, _GO_ONLY_BOOLS):
        return doc
    return _pyyaml(text)


def _mentions(value, words) -> bool:
    if isinstance(value, str):
        return value in words
    if isinstance(value, dict):
        return any(_mentions(v, words) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, words) for v in value)
    return False


_LOADER: Optional[type] = None


def _loader():
    global _LOADER
    if _LOADER is None:
        import yaml
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class GoLoader(base):
            """PyYAML's safe loader with go-yaml v2's implicit types instead of YAML 1.1's."""
        GoLoader.yaml_implicit_resolvers = {}
        words = sorted(_BOOL_TRUE | _BOOL_FALSE)
        GoLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile("^(?:%s)$" % "|".join(words)),
                                       list(set(w[0] for w in words)))
        GoLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"),
                                       ["~", "n", "N", ""])
        GoLoader.add_implicit_resolver("tag:yaml.org,2002:float", _Number(), list("-+.0123456789"))
        GoLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
        GoLoader.add_constructor("tag:yaml.org,2002:bool",
                                 lambda loader, node: loader.construct_scalar(node) in _BOOL_TRUE)
        GoLoader.add_constructor("tag:yaml.org,2002:float",
                                 lambda loader, node: _number(loader.construct_scalar(node)))
        _LOADER = GoLoader
    return _LOADER


class _Number:
    """A resolver "pattern" for go-yaml's numbers (PyYAML only calls .match)."""

    def match(self, text: str) -> bool:
        return _number(text) is not None


def _number(text: str):
    plain = text.replace("_", "")
    if _INT.fullmatch(plain):
        sign = -1 if plain.startswith("-") else 1
        digits = plain.lstrip("+-")
        low = digits[:2].lower()
        base = {"0x": 16, "0o": 8, "0b": 2}.get(low)
        if base:
            return sign * int(digits[2:], base)
        if len(digits) > 1 and digits.startswith("0"):   # Go's base 0: a leading zero means octal
            return sign * int(digits, 8) if set(digits) <= set("01234567") else float(plain)
        return sign * int(digits)
    if _FLOAT.fullmatch(plain):
        return float(plain.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                     .replace(".nan", "nan").replace(".NaN", "nan").replace(".NAN", "nan"))
    return None


def _pyyaml(text: str):
    import yaml
    try:
        # go-yaml reads the first document of a stream and ignores the rest
        return next(iter(yaml.load_all(text, Loader=_loader())), None)
    except yaml.YAMLError as exc:   # go-yaml's form: "yaml: line 2: did not find expected node content"
        mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
        if mark is not None and problem:
            raise GoYAMLError(f"yaml: line {mark.line + 1}: {problem}") from None
        lines = str(exc).strip().splitlines()
        raise GoYAMLError(f"yaml: {lines[0].strip()}" if lines else "yaml: not YAML") from None
