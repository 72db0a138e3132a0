"""Neutralises terminal control sequences in untrusted text (logs, event messages) before it is printed."""
from __future__ import annotations

import re

# C0 controls except tab/newline, DEL, C1 controls (0x9b is a one-byte CSI on some terminals),
# and the bidirectional overrides that can make text read differently than it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: "re.Match") -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text, multiline: bool = True) -> str:
    """The text with every control character shown as an escape, never interpreted."""
    out = _UNSAFE.sub(_escape, "" if text is None else str(text))
    return out if multiline else out.replace("\n", "\\n")


def escape_json_unsafe(text: str) -> str:
    """JSON escapes C0 itself; escape C1 and bidi characters too so a terminal showing it stays safe."""
    return re.sub("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m.group(0)):04x}", text)
