"""Literal needles of a regex: text every match must hold, so a line without one skips the regex and its compiling."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

# Characters re.IGNORECASE matches to an ASCII letter beyond its two cases (Turkish dotted/dotless i, long s,
# Kelvin sign); folded to that letter before lower(), so a needle test is never stricter than the regex.
_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_QUANTIFIER = re.compile(r"[*+?]|\{\d*(?:,\d*)?\}")
_VERBOSE = re.compile(r"\(\?[aiLmsux]*x")


def fold(text: str) -> str:
    """Text as needles are looked for in it: lower case, with the characters above made ASCII."""
    return text.translate(_TO_ASCII).lower()


def needles(pattern: str) -> Optional[Tuple[str, ...]]:
    """One folded literal per top-level alternative, each present in every match of that alternative (so any
    match holds one of them); None when some alternative has no literal or the pattern is not understood."""
    if _VERBOSE.match(pattern):   # (?x): spaces and '#' are not literal
        return None
    branches = _branches(pattern)
    if branches is None:
        return None
    found = [_longest_literal(b) for b in branches]
    return None if not all(found) else tuple(dict.fromkeys(fold(n) for n in found))


def _branches(pattern: str) -> Optional[List[str]]:
    """The pattern split at '|' outside groups and classes; None when unbalanced."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            if i < 0:
                return None
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return None
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    return None if depth else out + [pattern[start:]]


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class opening at i ('[' … ']', where a leading ']' is a member); -1 if open."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "]":
            return j + 1
        j += 1
    return -1


def _group_end(pattern: str, i: int) -> int:
    """The index after the group opening at i; -1 if unbalanced."""
    depth, j = 0, i
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _class_end(pattern, j)
            if j < 0:
                return -1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return -1


_ESCAPE_ARGUMENT = re.compile(r"x[0-9a-fA-F]{0,2}|u[0-9a-fA-F]{0,4}|U[0-9a-fA-F]{0,8}|N\{[^}]*\}|[0-9]+")


def _escape_end(pattern: str, i: int) -> int:
    """The index after the escape at i, with its argument (a character code, a character name, an octal code or a
    group number)."""
    arg = _ESCAPE_ARGUMENT.match(pattern, i + 1)
    return i + 1 + (len(arg.group()) if arg else 1)


def _longest_literal(branch: str) -> str:
    """The longest run of plain characters in one alternative, outside every group and class, none of them made
    optional or repeatable by a quantifier; '' when there is none."""
    best, run, i = "", [], 0
    while i < len(branch):
        c = branch[i]
        literal = None
        if c == "\\":
            nxt = branch[i + 1:i + 2]
            # \d \s \w \b \A \Z \1 \x41 \n …: classes, anchors, references and codes; \. \- \( \  …: the character
            literal = nxt if nxt and not nxt.isalnum() and nxt.isascii() else None
            i = _escape_end(branch, i)
        elif c == "[":
            i = _class_end(branch, i)
            if i < 0:
                return ""
        elif c == "(":
            i = _group_end(branch, i)
            if i < 0:
                return ""
        elif c in "*+?{":
            if run:   # a quantifier applies to the last character only, which is then not always there
                run.pop()
            best, run = max(best, "".join(run), key=len), []
            q = _QUANTIFIER.match(branch, i)   # a '{' that is no quantifier is a literal to re; skipped here
            i += len(q.group()) if q else 1
            continue
        else:
            literal = c if c not in ".^$)" and c.isascii() and c.isprintable() else None
            i += 1
        if literal is None:
            best, run = max(best, "".join(run), key=len), []
        else:
            run.append(literal)
    return max(best, "".join(run), key=len)


class Prefiltered:
    """A regex compiled on its first search of a text that holds one of its needles; searched like re.Pattern."""
    __slots__ = ("pattern", "flags", "_needles", "_rx")

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern, self.flags, self._needles, self._rx = pattern, flags, False, None

    def search(self, text: str, folded: Optional[str] = None) -> Optional["re.Match"]:
        """re.search, or None at once when the text (given `folded` as fold(text) if known) holds no needle."""
        if self._needles is False:
            self._needles = needles(self.pattern)
        if self._needles is not None:
            f = fold(text) if folded is None else folded
            if not any(n in f for n in self._needles):
                return None
        if self._rx is None:
            self._rx = re.compile(self.pattern, self.flags)
        return self._rx.search(text)
