"""Literal needles of a regex: text every match must hold, so a line without one skips the regex and its compiling."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from .. import lazyre

# Characters re.IGNORECASE matches to an ASCII letter beyond its two cases (Turkish dotted/dotless i, long s,
# Kelvin sign); folded to that letter before lower(), so a needle test is never stricter than the regex.
_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_VERBOSE = re.compile(r"\(\?[aiLmsux]*x")
# A pattern as a sequence of tokens (one finditer, not a loop over characters: this runs for every signature).
_TOKEN = re.compile(r"""
    (?P<escape>\\(?:x[0-9a-fA-F]{0,2}|u[0-9a-fA-F]{0,4}|U[0-9a-fA-F]{0,8}|N\{[^}]*\}|[0-9]+|.))
  | (?P<klass>\[\^?\]?(?:\\.|[^\]\\])*\])             # a character class, a leading ']' a member
  | (?P<open>\()
  | (?P<close>\))
  | (?P<alt>\|)
  | (?P<quantifier>[*+?]|\{\d*(?:,\d*)?\})
  | (?P<plain>[ !"#%&',\-/0-9:;<=>@A-Z_`a-z}~]+)     # printable ASCII that is no operator
  | (?P<other>.)                                       # . ^ $ a stray '[', '{' or ']', any non-ASCII character
""", re.S | re.X)


def fold(text: str) -> str:
    """Text as needles are looked for in it: lower case, with the characters above made ASCII."""
    return text.translate(_TO_ASCII).lower()


def needles(pattern: str) -> Optional[Tuple[str, ...]]:
    """One folded literal per top-level alternative, each present in every match of that alternative (so any
    match holds one of them); None when some alternative has no literal or the pattern is not understood.
    A literal is the longest run of plain characters outside every group and class, none of them made optional
    or repeatable by a quantifier."""
    if _VERBOSE.match(pattern):   # (?x): spaces and '#' are not literal
        return None
    found: List[str] = []
    best, run, depth, last_plain = "", "", 0, False
    for m in _TOKEN.finditer(pattern):
        kind, text = m.lastgroup, m.group()
        if depth:   # inside a group: only its nesting matters
            depth += kind == "open"
            depth -= kind == "close"
            continue
        if kind == "plain" or (kind == "escape" and len(text) == 2 and text[1].isascii() and not text[1].isalnum()):
            run += text if kind == "plain" else text[1]   # \. \- \( \  …: the character itself
            last_plain = True
            continue
        if kind == "quantifier" and last_plain:
            run = run[:-1]   # it applies to the last character only, which is then not always there
        best, run, last_plain = max(best, run, key=len), "", False
        if kind == "open":
            depth = 1
        elif kind == "close":
            return None   # unbalanced
        elif kind == "alt":
            found.append(best)
            best = ""
    if depth:
        return None
    found.append(max(best, run, key=len))
    return None if not all(found) else tuple(dict.fromkeys(fold(n) for n in found))


class Prefiltered:
    """A regex compiled (lazyre) on its first search of a text that holds one of its needles."""
    __slots__ = ("_rx", "_needles")

    def __init__(self, pattern: str, flags: int = 0):
        self._rx, self._needles = lazyre.compile(pattern, flags), needles(pattern)

    def search(self, text: str, folded: Optional[str] = None) -> Optional["re.Match"]:
        """re.search, or None at once when the text (given `folded` as fold(text) if known) holds no needle."""
        if self._needles is not None:
            f = fold(text) if folded is None else folded
            if not any(n in f for n in self._needles):
                return None
        return self._rx.search(text)
