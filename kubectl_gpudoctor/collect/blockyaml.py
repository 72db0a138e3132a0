"""Reads the plain block-style YAML that kubectl and the cloud CLIs write for kubeconfigs, without PyYAML (whose
import costs more than a diagnosis spends parsing); anything it does not fully understand gives None, and
PyYAML reads that file instead. Where it answers, the answer is PyYAML's safe_load (tests/test_blockyaml.py)."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

# Plain scalars PyYAML (YAML 1.1) resolves to something other than a string, by exact spelling…
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False,
         "yes": True, "Yes": True, "YES": True, "no": False, "No": False, "NO": False,
         "on": True, "On": True, "ON": True, "off": False, "Off": False, "OFF": False}
_NULL = {"null", "Null", "NULL", "~"}
_INT = re.compile(r"0|[1-9][0-9]*")
# …and first characters that may start a number, timestamp, merge key, value key, or a YAML indicator: not read.
_NOT_PLAIN_START = set("0123456789+-.<=[]{}&*!|>%@`#,?:'\"")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r", "0": "\0", " ": " "}
# Characters YAML forbids in a document (PyYAML refuses them); non-ASCII text is left to PyYAML altogether.
_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_HEX = {"x": 2, "u": 4, "U": 8}

Line = Tuple[int, str]   # (indent, content without the indent)


class _NotRead(Exception):
    """A construct left to PyYAML."""


def load(text: str) -> Optional[dict]:
    """The document as PyYAML's safe_load gives it, when it is a mapping written in plain block style; else None."""
    try:
        lines = _lines(text)
        if not lines or lines[0][0] != 0:
            return None
        value, end = _block(lines, 0, 0)
        if end != len(lines) or not isinstance(value, dict):
            return None
        return value
    except (_NotRead, RecursionError):
        return None


def _lines(text: str) -> List[Line]:
    text = text.replace("\r\n", "\n")
    if not text.isascii() or "\t" in text or "\r" in text or _FORBIDDEN.search(text):
        raise _NotRead
    out = []
    for n, raw in enumerate(text.split("\n")):
        content = raw.rstrip(" ")
        stripped = content.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(("---", "...", "%")):
            if n == 0 and stripped == "---" and not out:   # an explicit start, before anything else
                continue
            raise _NotRead
        out.append((len(content) - len(stripped), stripped))
    return out


def _block(lines: List[Line], i: int, indent: int):
    """(value, index of the next line) of the block whose first line is lines[i], at `indent`."""
    content = lines[i][1]
    if content == "-" or content.startswith("- "):
        return _sequence(lines, i, indent)
    return _mapping(lines, i, indent)


def _sequence(lines: List[Line], i: int, indent: int):
    items = []
    while i < len(lines) and lines[i][0] == indent and (lines[i][1] == "-" or lines[i][1].startswith("- ")):
        rest = lines[i][1][1:]
        if not rest.strip():
            raise _NotRead   # "-" alone: the item's value on the next lines
        inner = indent + 1 + (len(rest) - len(rest.lstrip(" ")))
        rest = rest.lstrip(" ")
        if rest.startswith("- ") or _split_key(rest) is not None:
            # "- key: value" (or "- - x"): a block starting at the item's own column, as if on its own line
            lines[i] = (inner, rest)
            value, i = _block(lines, i, inner)
        else:
            value, i = _scalar(rest), i + 1
        items.append(value)
    return items, i


def _mapping(lines: List[Line], i: int, indent: int):
    out: dict = {}
    while i < len(lines) and lines[i][0] == indent:
        split = _split_key(lines[i][1])
        if split is None:
            raise _NotRead
        key, rest = split
        i += 1
        if rest:
            out[key] = _scalar(rest)
        elif i < len(lines) and (lines[i][0] > indent or (lines[i][0] == indent and (
                lines[i][1] == "-" or lines[i][1].startswith("- ")))):
            # a nested block; a sequence may sit at the key's own indent ("clusters:\n- cluster: …")
            out[key], i = _block(lines, i, lines[i][0])
        else:
            out[key] = None
    if i < len(lines) and lines[i][0] > indent:
        raise _NotRead   # a continuation line (a multi-line scalar) or stray indentation
    return out, i


def _split_key(content: str) -> Optional[Tuple[str, str]]:
    """(key, rest of the line) of "key: value" / "key:"; None when the line is no mapping entry."""
    if content[0] in "\"'":
        key, end = _quoted(content)
        after = content[end:]
        if after == ":" or after.startswith(": "):
            return key, after[1:].strip(" ")
        return None
    colon = content.find(": ")
    if colon < 0:
        if not content.endswith(":"):
            return None
        colon = len(content) - 1
    key = content[:colon]
    if " #" in key or key != key.strip(" ") or not key:
        raise _NotRead
    if not isinstance(_plain(key), str):
        raise _NotRead   # a key PyYAML would read as a bool, null or number
    return key, content[colon + 1:].strip(" ")


def _scalar(text: str):
    if text in ("{}", "[]"):
        return {} if text == "{}" else []
    if text[0] in "\"'":
        value, end = _quoted(text)
        if end != len(text):
            raise _NotRead   # a comment or more after the closing quote
        return value
    return _plain(text)


def _plain(text: str):
    if text[0] == "-" and text[1:2] not in ("", " ") and not text[1].isdigit() and text[1] != "." \
            and ": " not in text and " #" not in text and not text.endswith(":"):
        return text   # "--region", "-v": an option, not a number
    if text[0] in _NOT_PLAIN_START or ": " in text or " #" in text or text.endswith(":"):
        if _INT.fullmatch(text):
            return int(text)
        raise _NotRead
    if text in _NULL:
        return None
    if text in _BOOL:
        return _BOOL[text]
    if text.lower() in ("true", "false", "yes", "no", "on", "off", "null"):
        raise _NotRead   # an odd spelling: leave it to PyYAML's own rules
    return text


def _quoted(text: str) -> Tuple[str, int]:
    """(value, index after the closing quote) of a quoted scalar that ends on this line."""
    quote, out, i = text[0], [], 1
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                if text[i + 1:i + 2] == "'":
                    out.append("'")
                    i += 2
                    continue
                return "".join(out), i + 1
            out.append(c)
            i += 1
            continue
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            code = text[i + 1:i + 2]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                i += 2
                continue
            digits = _HEX.get(code)
            hexa = text[i + 2:i + 2 + digits] if digits else ""
            if not digits or len(hexa) != digits or hexa.strip("0123456789abcdefABCDEF"):
                raise _NotRead
            out.append(chr(int(hexa, 16)))
            i += 2 + digits
            continue
        out.append(c)
        i += 1
    raise _NotRead   # the scalar goes on to the next line
