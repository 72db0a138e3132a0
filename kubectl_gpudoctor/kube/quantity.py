"""Kubernetes resource quantities (`16Gi`, `500m`, `1e3`) parsed and printed; pure functions."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Optional

from .. import lazyre

_BINARY = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}

_LIMIT = Decimal("1e30")
# The quantity grammar's number: sign, digits with an optional fraction, optional decimal exponent.
_NUMBER = lazyre.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def parse_quantity(value) -> Optional[Decimal]:
    """A quantity as a Decimal in base units, or None when it is not a quantity."""
    if value is None:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        return _bounded(Decimal(str(value)))
    return _parse_text(str(value))


@lru_cache(maxsize=4096)   # a cluster repeats a few quantities thousands of times (Decimal is immutable)
def _parse_text(value: str) -> Optional[Decimal]:
    text = value.strip()
    if not text:
        return None
    for suffix, mult in _BINARY.items():
        if text.endswith(suffix):
            return _num(text[: -len(suffix)], mult)
    last = text[-1]
    if last.isalpha() and last in _DECIMAL:
        return _num(text[:-1], _DECIMAL[last])
    return _num(text, 1)


def _num(text: str, mult) -> Optional[Decimal]:
    if not _NUMBER.match(text):   # Decimal also reads "NaN", "Infinity" and "1_000", which no quantity is
        return None
    try:
        return _bounded(Decimal(text) * Decimal(mult))
    except (InvalidOperation, ArithmeticError):   # 1e999999999 overflows the decimal context
        return None


def _bounded(q: Decimal) -> Optional[Decimal]:
    """A finite quantity of a sane magnitude (an exabyte of exabytes is not a resource: `1e1000` is refused)."""
    return q if q.is_finite() and abs(q) < _LIMIT else None


def count(value) -> int:
    """Whole-unit count of an extended resource (GPUs, rdma devices)."""
    if isinstance(value, str):
        return _count_text(value)
    q = parse_quantity(value)
    return int(q) if q is not None else 0


@lru_cache(maxsize=4096)   # every node's allocatable, read by several rules
def _count_text(value: str) -> int:
    q = _parse_text(value)
    return int(q) if q is not None else 0


def format_bytes(value) -> str:
    """Bytes the way a manifest would say them: 16Gi, 512Mi, 1500M."""
    q = parse_quantity(value)
    if q is None:
        return str(value)
    n = int(q)
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    for suffix in ("Ti", "Gi", "Mi"):
        unit = _BINARY[suffix]
        if n >= unit:
            return f"{n / unit:.1f}{suffix}"
    return str(n)
