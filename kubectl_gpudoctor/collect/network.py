"""Extra reads for the network rules of a pod diagnosis (GET/LIST only, bounded, field/label selectors)."""
from __future__ import annotations

from typing import List

from ..evidence import Evidence
from .api import Request


def first_round(pod: dict) -> List[Request]:
    """Requests that need only the pod."""
    return []


def second_round(ev: Evidence) -> List[Request]:
    """Requests that need the first round's answers (e.g. the nodes)."""
    return []
