"""The record types of signature data: a log signature and an event/status-message signature."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    id: str
    rule: str
    pattern: str
    meaning: str


@dataclass(frozen=True)
class EventSignature:
    id: str
    rule: str
    pattern: str       # searched case-insensitively; named groups feed the rule's message
    meaning: str
    fix: str = ""      # a more specific remediation for this family ($placeholders allowed)
