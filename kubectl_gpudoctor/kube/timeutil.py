"""Kubernetes timestamps and human durations; pure functions, no wall clock."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional


def parse_time(value) -> Optional[datetime]:
    """RFC 3339 as the API writes it (`2026-12-02T08:30:00Z`, with optional fraction or offset)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not value or not isinstance(value, str):
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    if "." in text:  # Python < 3.11 accepts only 3 or 6 fraction digits
        head, _, rest = text.partition(".")
        digits = "".join(c for c in rest if c.isdigit())
        tz = rest[len(digits):]
        text = f"{head}.{(digits + '000000')[:6]}{tz}"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def format_time(t: Optional[datetime]) -> Optional[str]:
    if t is None:
        return None
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_between(start, end) -> Optional[float]:
    a, b = parse_time(start), parse_time(end)
    if a is None or b is None:
        return None
    return (b - a).total_seconds()


def human_duration(seconds: Optional[float]) -> str:
    """Like kubectl's ages but exact enough for a diagnosis: 41s, 3m12s, 2h5m, 3d4h."""
    if seconds is None:
        return "unknown time"
    s = int(round(max(seconds, 0)))
    if s < 120:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s}s" if s else f"{m}m"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m}m" if m else f"{h}h"
    d, h = divmod(h, 24)
    return f"{d}d{h}h" if h else f"{d}d"


def parse_duration(text: str) -> float:
    """kubectl's --request-timeout: a bare number of seconds or a Go duration such as 30s, 1m, 1m30s."""
    text = (text or "").strip()
    if not text:
        raise ValueError("empty duration")
    try:
        return float(text)
    except ValueError:
        pass
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    total, num = 0.0, ""
    i = 0
    while i < len(text):
        c = text[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        unit = "ms" if text[i:i + 2] == "ms" else c
        if unit not in units or not num:
            raise ValueError(f"invalid duration {text!r}")
        total += float(num) * units[unit]
        num = ""
        i += len(unit)
    if num:
        raise ValueError(f"invalid duration {text!r} (missing unit)")
    return total
