"""Log text made fit for matching: lines bounded in length, terminal noise removed, spacing folded; pure."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List

# The longest line any pattern is run over. Real failure lines are short; a longer one is a serialized blob (a JSON
# dump, a base64 payload, a progress bar without newlines), whose end is what matters. Kept: its last MAX_LINE
# characters after a marker that says how much was cut, so a quoted line never pretends to be whole.
MAX_LINE = 8192
CUT = "[gpudoctor: {n} characters cut] "

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_SPACES = re.compile(r"[ \t\f\v]+")
_ESCAPED_NEWLINE = re.compile(r"(?:\\r)?\\n")
_WS = re.compile(r"\s+")


def cut(line: str) -> str:
    """The line, or the tail of an overlong one behind a marker naming how many characters were cut."""
    if len(line) <= MAX_LINE:
        return line
    return CUT.format(n=len(line) - MAX_LINE) + line[-MAX_LINE:]


@lru_cache(maxsize=64)
def bounded(text: str) -> str:
    """A log with every line at most MAX_LINE characters (plus the marker); the same lines in the same places."""
    if not text or all(len(line) <= MAX_LINE for line in text.split("\n")):
        return text
    return "\n".join(cut(line) for line in text.split("\n"))


def clean_line(line: str) -> str:
    """One line without ANSI colour sequences or carriage-return redraws (progress bars)."""
    return _ANSI.sub("", cut(line)).rsplit("\r", 1)[-1]


def squeeze(line: str) -> str:
    """A line as patterns read it: runs of spaces and tabs folded to one space, so `Connection  refused` and
    `Connection\trefused` read as `Connection refused` (the quoted line keeps its own spacing)."""
    return _SPACES.sub(" ", line)


def clean(text: str) -> str:
    """The log, line by line through clean_line (line numbers unchanged)."""
    return "\n".join(clean_line(line) for line in (text or "").split("\n"))


def fold(text: str) -> str:
    """A status or event message with all whitespace (newlines of a wrapped message included) folded to one space."""
    return _WS.sub(" ", text or "").strip()


def segments(line: str) -> List[str]:
    """The parts of a line that carries escaped newlines (`\\n` printed literally by Triton, JSON loggers and
    Python reprs): each part is a line of its own for patterns anchored at a line's start or end."""
    return _ESCAPED_NEWLINE.split(line) if "\\n" in line else []


def continues(line: str, following: str) -> bool:
    """`following` is a wrapped continuation of `line`: it is not empty, does not start a new record (a timestamp,
    a log level, a bracketed prefix, a traceback frame) and `line` does not end a sentence."""
    if not following.strip() or not line.strip() or line.rstrip().endswith((".", ":", "!", "?")):
        return False
    return not _NEW_RECORD.match(following)


_NEW_RECORD = re.compile(r"\s*(?:\d{4}-\d\d-\d\d|[IWEF]\d{4} |\[|\(|(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\b"
                         r"|Traceback|File \"|During handling|The above exception|[A-Za-z_][\w.]*(?:Error|Exception)\b)")
