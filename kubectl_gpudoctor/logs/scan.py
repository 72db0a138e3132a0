"""Matches log signatures in container logs, previous log first, and quotes the matching line."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, List, Optional

from ..data.log_signatures import SIGNATURES, Signature
from ..evidence import Evidence, Line

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# kubectl logs --timestamps prefixes and common log prefixes are kept: the pattern decides.


@dataclass(frozen=True)
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
def _compiled(rule: Optional[str]) -> tuple:
    return tuple((s, re.compile(s.pattern, re.MULTILINE)) for s in SIGNATURES if rule is None or s.rule == rule)


def clean(text: str) -> str:
    """The log without ANSI color sequences or carriage-return redraws (progress bars)."""
    text = _ANSI.sub("", text or "")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def scan(ev: Evidence, pod: dict, container: str, rule: Optional[str] = None) -> List[Match]:
    """All matches for one container, previous log first, each log scanned from its end backwards."""
    out: List[Match] = []
    for previous in (True, False):
        text = ev.log(pod, container, previous)
        if not text:
            continue
        lines = clean(text).split("\n")
        for idx in range(len(lines) - 1, -1, -1):
            for sig, rx in _compiled(rule):
                if rx.search(lines[idx]):
                    out.append(Match(sig, container, previous, idx + 1, lines[idx]))
    return out


def first(ev: Evidence, pod: dict, containers: Iterable[str], rule: str) -> Optional[Match]:
    """The most recent matching line for a rule in the first container that has one."""
    for name in containers:
        found = scan(ev, pod, name, rule)
        if found:
            return found[0]
    return None


def has_logs(ev: Evidence, pod: dict, container: str) -> bool:
    return bool(ev.log(pod, container, True) or ev.log(pod, container, False))
