"""Matches log signatures in container logs, previous log first, and quotes the matching line."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, List, Optional, Sequence, Tuple

from ..data.log_signatures import SIGNATURES, Signature
from ..evidence import Evidence, Line
from ..record import record
from .lines import clean, continues, segments, squeeze  # noqa: F401  (clean: the one cleaning every log reader uses)
from .prefilter import Prefiltered, fold

# kubectl logs --timestamps prefixes and common log prefixes are kept: the pattern decides.
# (text a pattern is searched in, the offset a match must cross: -1, or the end of a wrapped line; the text folded)
View = Tuple[str, int, str]


@record(frozen=True)
class Match:
    signature: Signature
    container: str
    previous: bool
    lineno: int
    line: str

    def as_line(self, pod_name: str) -> Line:
        which = "previous log" if self.previous else "log"
        return Line("log", f"{pod_name}/{self.container} {which}, line {self.lineno}", self.line.strip()[:400])


@lru_cache(maxsize=None)
def _patterns() -> dict:
    """Every signature's pattern, each compiled on its first search of a line holding its literal text (most
    never are): case-insensitive unless the signature's case carries meaning (an exception's class name, a log level)."""
    return {s: Prefiltered(s.pattern, 0 if s.exact_case else re.I) for s in SIGNATURES}


@lru_cache(maxsize=None)
def compiled(rule: Optional[str] = None) -> tuple:
    """(Signature, pattern) for one rule, or for every rule."""
    patterns = _patterns()
    return tuple((s, patterns[s]) for s in SIGNATURES if rule is None or s.rule == rule)


def views(lines: Sequence[str], idx: int) -> List[View]:
    """What a pattern reads for line `idx` of cleaned lines, spacing squeezed: the line; each part of it between
    escaped newlines; the line joined with its wrapped continuation, where only a match across the join counts."""
    line = squeeze(lines[idx])
    out: List[View] = [(line, -1, fold(line))] + [(part, -1, fold(part)) for part in segments(line)]
    if idx + 1 < len(lines) and continues(line, lines[idx + 1]):
        head = line.rstrip()
        joined = head + " " + squeeze(lines[idx + 1]).lstrip()
        out.append((joined, len(head), fold(joined)))
    return out


def search(rx: Prefiltered, line_views: List[View]) -> Optional["re.Match"]:
    """The first match of a pattern in a line's views (see views())."""
    for text, join, folded in line_views:
        m = rx.search(text, folded)
        if m and (join < 0 or m.start() < join < m.end() - 1):
            return m
    return None


def scan(ev: Evidence, pod: dict, container: str, rule: Optional[str] = None) -> List[Match]:
    """All matches for one container, previous log first, each log scanned from its end backwards."""
    out: List[Match] = []
    for previous in (True, False):
        text = ev.log(pod, container, previous)
        if text:
            out += [Match(sig, container, previous, lineno, line) for sig, lineno, line in _scan_text(text, rule)]
    return out


@lru_cache(maxsize=256)
def _scan_text(text: str, rule: Optional[str]) -> Tuple[Tuple[Signature, int, str], ...]:
    """(signature, line number, line) of every match in one log, from its end backwards; several rules ask."""
    lines = clean(text).split("\n")
    out = []
    for idx in range(len(lines) - 1, -1, -1):
        line_views = views(lines, idx)
        out += [(sig, idx + 1, lines[idx]) for sig, rx in compiled(rule) if search(rx, line_views)]
    return tuple(out)


def first(ev: Evidence, pod: dict, containers: Iterable[str], rule: str) -> Optional[Match]:
    """The most recent matching line for a rule in the first container that has one."""
    for name in containers:
        found = scan(ev, pod, name, rule)
        if found:
            return found[0]
    return None


def has_logs(ev: Evidence, pod: dict, container: str) -> bool:
    return bool(ev.log(pod, container, True) or ev.log(pod, container, False))
