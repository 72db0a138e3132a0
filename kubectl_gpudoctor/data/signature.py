"""The record types of signature data: a log signature and an event/status-message signature."""
from __future__ import annotations

from ..record import record


@record(frozen=True)
class Signature:
    id: str
    rule: str
    pattern: str       # searched line by line, case-insensitively unless exact_case
    meaning: str
    exact_case: bool = False   # the case carries meaning: a Python exception's class name, a log level


@record(frozen=True)
class EventSignature:
    id: str
    rule: str
    pattern: str       # searched case-insensitively; named groups feed the rule's message
    meaning: str
    fix: str = ""      # a more specific remediation for this family ($placeholders allowed)
