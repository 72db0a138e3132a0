"""Neutralises untrusted text (logs, event messages, names) before it is printed: control sequences made
inert, credential-shaped values masked; one pass over every string of a document on its way to a renderer."""
from __future__ import annotations

import re
from typing import Tuple

from ..record import fields, is_record, replace
from .redact import mask

# Invisible characters that make text read differently than it is (Trojan Source, CVE-2021-42574): the
# Arabic letter mark, zero-width space/joiners and the LTR/RTL marks, the line and paragraph separators (a
# line break to some viewers, none to others), the bidi embeddings, overrides and isolates, the word joiner and
# invisible operators, the byte-order mark, and the interlinear annotation controls.
INVISIBLE = "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb"
# C0 controls except tab/newline, DEL, C1 controls (0x9b is a one-byte CSI on some terminals), and INVISIBLE.
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE}]")


def _escape(m: "re.Match") -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text, multiline: bool = True) -> str:
    """The text with every control character shown as an escape, never interpreted."""
    out = _UNSAFE.sub(_escape, "" if text is None else str(text))
    return out if multiline else out.replace("\n", "\\n")


# What JSON and YAML (with allow_unicode) would otherwise write raw: DEL, C1 controls and INVISIBLE.
UNSAFE_UNICODE = re.compile(f"[\x7f-\x9f{INVISIBLE}]")


def escape_json_unsafe(text: str) -> str:
    """JSON escapes C0 itself; escape C1 and bidi characters too so a terminal showing it stays safe."""
    return UNSAFE_UNICODE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


MAX_DEPTH = 50   # levels of a report's records, dicts and lists walked; deeper values are cut


def neutral(doc, escape: bool = True) -> Tuple[object, int]:
    """A copy of a report (records, dicts, lists) whose every string is masked (credentials) and, when
    `escape`, made inert (text output; JSON and YAML escape in their own syntax); and how many values were masked."""
    count = 0
    done = {}   # a report repeats its strings (a node table's keys and values): each is neutralised once

    def walk(node, depth=0):
        nonlocal count
        if depth > MAX_DEPTH:   # nothing a report holds nests this deep: cut, never passed on unneutralised
            return "…"
        if isinstance(node, str):
            if node not in done:
                out, n = mask(node)
                done[node] = (inert(out) if escape else out, n)
            out, n = done[node]
            count += n
            return out
        if node is None or isinstance(node, (int, float)):   # most of a big table: numbers and nulls
            return node
        if isinstance(node, dict):
            return {walk(k, depth + 1) if isinstance(k, str) else k: walk(v, depth + 1) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return type(node)(walk(v, depth + 1) for v in node)
        if is_record(node) and not isinstance(node, type):
            return replace(node, **{f.name: walk(getattr(node, f.name), depth + 1) for f in fields(node) if f.init})
        return node
    return walk(doc), count
