"""Parses the scheduler's FailedScheduling message (`0/12 nodes are available: 8 Insufficient …`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

_HEAD = re.compile(r"^(\d+)/(\d+) nodes are available:\s*(.*)$", re.S)
_ITEM = re.compile(r"^(\d+)\s+(.*)$", re.S)


@dataclass
class SchedulingFailure:
    available: int = 0
    total: int = 0
    reasons: List[Tuple[int, str]] = field(default_factory=list)   # (node count, reason text)
    preemption: str = ""
    free_text: str = ""          # a message without per-node counts (e.g. unbound PVCs)

    def count(self, needle: str) -> int:
        """Nodes whose reason contains `needle` (case-insensitive)."""
        low = needle.lower()
        return sum(n for n, text in self.reasons if low in text.lower())

    def matching(self, pattern: str) -> List[Tuple[int, str]]:
        rx = re.compile(pattern, re.I)
        return [(n, t) for n, t in self.reasons if rx.search(t)]


def parse(message: str) -> Optional[SchedulingFailure]:
    """None when the text is not a scheduler summary at all."""
    text = (message or "").strip()
    m = _HEAD.match(text)
    if not m:
        return None
    body = m.group(3)
    preemption = ""
    cut = re.search(r"\.?\s*preemption:\s*", body)
    if cut:
        preemption, body = body[cut.end():].strip(), body[:cut.start()]
    body = body.strip().rstrip(".")
    out = SchedulingFailure(available=int(m.group(1)), total=int(m.group(2)), preemption=preemption)
    # Items are "<count> <reason>" joined by ", "; a reason may itself contain ", " (the older
    # "had taint {k: v}, that the pod didn't tolerate"), so split only before a count.
    for part in re.split(r",\s+(?=\d+\s)", body):
        item = _ITEM.match(part.strip())
        if item:
            out.reasons.append((int(item.group(1)), item.group(2).strip().rstrip(".")))
        elif part.strip():
            out.free_text = (out.free_text + " " + part.strip()).strip()
    return out


_TAINT = re.compile(r"taint\s*\{([^}]*)\}")


def taints_in(reason: str) -> List[Tuple[str, str]]:
    """(key, value) of every `taint {key: value}` in a reason."""
    out = []
    for body in _TAINT.findall(reason):
        key, _, value = body.partition(":")
        out.append((key.strip(), value.strip()))
    return out
