"""Fits report text to the terminal width by display width: prose wrapped with a hanging indent, quoted lines cut
with …, commands continued with ` \\` at argument boundaries; with no width (a pipe), every line stays whole."""
from __future__ import annotations

import os
import re
import sys
from typing import List, Mapping, Optional

MIN_WIDTH = 40   # narrower than this, wrapping hurts more than it helps
ELLIPSIS = "…"
CONTINUATION = "    "   # a command's continued lines, under its first word
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SPACE = re.compile(r"(\s+)")
_ONE_COLUMN = frozenset("—–…‘’“”•→←×·≥≤")


def terminal_width(isatty: bool, env: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """COLUMNS when set, else the terminal's width on a terminal; None (no wrapping) in a pipe, as for a file."""
    env = os.environ if env is None else env
    cols = (env.get("COLUMNS") or "").strip()
    if cols.isdigit():
        return max(int(cols), MIN_WIDTH)
    if isatty:
        return max(_columns() or 100, MIN_WIDTH)
    return None


def _columns() -> int:
    """The terminal's width, 0 when unknown (shutil.get_terminal_size's reading, without importing shutil, which
    loads the compression modules: ~3 ms of every diagnosis)."""
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):   # no stdout, a closed or detached one, not a terminal
        return 0


def width_of(text: str) -> int:
    """Columns the text takes on a terminal: color codes take none, East Asian wide characters two, combining
    marks none. Text whose every character takes one column (ASCII, "—", "…", accented letters) is measured by
    len(); wcwidth, which takes 10-30 ms to import, loads only for text that holds another kind."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if text.isascii() or _narrow(text):
        return len(text)
    from wcwidth import wcswidth, wcwidth
    n = wcswidth(text)
    return n if n >= 0 else sum(max(wcwidth(ch), 0) for ch in text)


def _narrow(text: str) -> bool:
    """Every character one column, as wcwidth says: letters and signs of the alphabetic scripts (below U+1100,
    where the Hangul jamo start) that are not marks, format or control characters, and the punctuation reports
    use (— – … ‘ ’ “ ” • → ×). Anything else is left to wcwidth."""
    import unicodedata   # built in: no start-up cost worth naming
    for ch in text:
        if ch.isascii() or ch in _ONE_COLUMN:
            continue
        if ch >= "\u1100" or unicodedata.category(ch)[0] in ("M", "C"):
            return False
    return True


def _take(text: str, columns: int) -> int:
    """How many characters of text fit in `columns` (at least one, so that a line always advances)."""
    if text.isascii():
        return max(min(len(text), columns), 1)
    used = 0
    for i, ch in enumerate(text):
        used += width_of(ch)
        if used > columns:
            return max(i, 1)
    return len(text)


def fill(text: str, first: str, width: Optional[int], rest: Optional[str] = None) -> List[str]:
    """`first` + text as lines of at most `width` columns, broken at spaces (later lines indented by `rest`,
    default `first`); one line when width is None. A word longer than a whole line is split where it must be."""
    rest = first if rest is None else rest
    if not width or width_of(first) + width_of(text) <= width:
        return [first + text]
    lines: List[str] = []
    prefix, line, used = first, "", width_of(first)
    for sep, word in _words(text):
        w = width_of(word)
        if used + w + (len(sep) if line else 0) <= width:
            used += w + (len(sep) if line else 0)
            line += (sep if line else "") + word
            continue
        if width_of(rest) + w > width and line:   # longer than a whole line: its first pieces end this one
            room = width - used - len(sep)
            n = _boundary(word, room) if room >= MIN_PIECE else 0
            if n:
                line, word = line + sep + word[:n], word[n:]
                w = width_of(word)
        if line:
            lines.append(prefix + line)
            prefix, line, used = rest, "", width_of(rest)
        while used + w > width:   # longer than a whole line: split between a path's fields, else where it must be
            n = _boundary(word, width - used) or _take(word, max(width - used, 1))
            lines.append(prefix + word[:n])
            prefix, word, used = rest, word[n:], width_of(rest)
            w = width_of(word)
        line, used = word, used + w
    if line:
        lines.append(prefix + line)
    return lines or [first.rstrip()]


MIN_PIECE = 12   # columns left on a line below which a long word starts on the next one instead
_BEFORE, _AFTER = ".[", "/,=-"


def _boundary(word: str, columns: int) -> int:
    """Where to split a word too long for a line within `columns`: before a path's `.field` or `[`, after `/`, `,`,
    `=` or `-`, never inside `[...]` (`spec.replicatedJobs[name=w].template` | `.spec`); 0 when none fits."""
    limit, best, depth = min(_take(word, columns), len(word) - 1), 0, 0
    for i in range(1, limit + 1):
        prev = word[i - 1]
        depth += (prev == "[") - (prev == "]")
        if depth == 0 and (word[i] in _BEFORE or prev in _AFTER):
            best = i
    return best


def _words(text: str):
    """(the spaces before it, word) for each word: a line's inner spacing ("FAILING  Pod") survives wrapping."""
    parts = _SPACE.split(text.strip())
    return [(" " if i == 0 else parts[i - 1], parts[i]) for i in range(0, len(parts), 2)]


def cut(text: str, first: str, width: Optional[int]) -> str:
    """`first` + text on one line of at most `width` columns, ending in … where it is cut."""
    line = first + text
    if not width or width_of(line) <= width:
        return line
    room = width - width_of(first) - 1
    return first + text[:_take(text, room)].rstrip() + ELLIPSIS


def command(cmd: str, indent: str, width: Optional[int]) -> List[str]:
    """A shell command as lines that paste as the same command: continued with ` \\` between arguments (never
    inside quotes), a trailing `# comment` moved to a line of its own above it. One line when it fits."""
    if not width or width_of(indent + cmd) <= width:
        return [indent + cmd]
    words, comment = _shell_words(cmd)
    out = [indent + comment] if comment else []
    line = [words[0]]
    for word in words[1:]:
        used = width_of(_continued(indent, out, comment, line))
        if used + 1 + width_of(word) + 2 <= width:
            line.append(word)
            continue
        # break before a flag rather than between a flag and its value (`--field-selector \` alone reads badly)
        carry = []
        if (len(line) >= 2 and line[-1].startswith("-") and not word.startswith("-")
                and width_of(indent + CONTINUATION + line[-1] + " " + word) + 2 <= width):
            carry = [line.pop()]
        out.append(_continued(indent, out, comment, line) + " \\")
        line = carry + [word]
    return out + [_continued(indent, out, comment, line)]


def _continued(indent: str, out: List[str], comment: str, words: List[str]) -> str:
    """A command's line: the first under `indent`, later ones under it by CONTINUATION."""
    first = len(out) == (1 if comment else 0)
    return indent + ("" if first else CONTINUATION) + " ".join(words)


def _shell_words(cmd: str):
    """(arguments, trailing comment) of a command line, split at whitespace outside quotes."""
    words, cur, quote, i = [], "", "", 0
    while i < len(cmd):
        ch = cmd[i]
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote, cur = ch, cur + ch
        elif ch == "\\" and i + 1 < len(cmd):
            cur, i = cur + cmd[i:i + 2], i + 1
        elif ch.isspace():
            if cur:
                words.append(cur)
                cur = ""
        elif ch == "#" and not cur:
            return words, cmd[i:].strip()
        else:
            cur += ch
        i += 1
    if cur:
        words.append(cur)
    return words or [cmd], ""
