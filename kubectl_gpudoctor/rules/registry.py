"""The rule registry: rule metadata in a decorator, the Hit a rule returns; rules never do I/O."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import __version__
from ..evidence import Gap, Line  # noqa: F401  (Line is part of a rule's vocabulary)

from ..record import field, record
from .order import PHASES, RULE_ORDER

REPOSITORY = "https://github.com/gpudoctor/kubectl-gpudoctor"
DOCS_PAGE = f"{REPOSITORY}/blob/v{__version__}/docs/rules.md"

SEVERITIES = ("critical", "warning", "info")

# Ranks order root-cause candidates inside a phase: a specific explanation beats a generic one.
SPECIFIC, DEFAULT, GENERIC, FALLBACK = 80, 50, 20, 0


@record
class Hit:
    """What a rule returns when it fires: observed facts, with names and numbers."""
    message: str
    evidence: List[Line] = field(default_factory=list)
    values: Dict[str, object] = field(default_factory=dict)   # fills $placeholders in fix/snippet
    fix: Optional[str] = None          # a more specific remediation than the rule's
    snippet: Optional[str] = None      # a snippet computed from the evidence
    severity: Optional[str] = None     # e.g. warning while a MIG reconfiguration is pending
    summary: Optional[str] = None      # one line for the headline; defaults to the message's first sentence
    next: List[str] = field(default_factory=list)
    table: List[dict] = field(default_factory=list)   # rows for a tabulated view (e.g. free GPUs per node)
    rank: Optional[int] = None         # overrides the rule's rank for this hit
    edits: Optional[str] = None        # overrides the rule's `edits` for this hit ("" when this fix edits no pod)
    cause: Optional[str] = None        # a more specific rule id this umbrella finding's evidence names


@record
class Unknown:
    """Returned by a rule that could not decide because something it needed was unreadable."""
    reason: str

    @classmethod
    def from_gap(cls, gap: Gap) -> "Unknown":
        return cls(gap.needs())


@record(frozen=True)
class Rule:
    id: str
    phase: str
    severity: str
    title: str
    remediation: str
    check: Callable
    snippet: str = ""
    needs: Tuple[str, ...] = ()
    applies: Optional[Callable] = None
    targets: Tuple[str, ...] = ("Pod",)
    rank: int = DEFAULT
    fallback: bool = False   # dropped when another critical finding of the same phase explains the pod
    order: int = 0
    edits: str = ""          # "container" | "pod": the fix changes the pod's spec (fixes.py names where that lives)

    @property
    def docs(self) -> str:
        """The rule's section of the published docs/rules.md, at the tag of this version (krew and pip users have
        no checkout; `kubectl gpudoctor rules <id>` prints the same section offline)."""
        return f"{DOCS_PAGE}#{self.id}"

    @property
    def summary(self) -> str:
        """The first line of the rule function's docstring: when the rule fires."""
        return ((self.check.__doc__ or "").strip().splitlines() or [""])[0]


RULES: Dict[str, Rule] = {}


def rule(id: str, *, phase: str, severity: str, title: str, remediation: str, snippet: str = "",
         needs: Sequence[str] = (), applies: Optional[Callable] = None,
         targets: Sequence[str] = ("Pod",), rank: int = DEFAULT, fallback: bool = False, edits: str = ""):
    """Register a rule function `f(evidence) -> Hit | Unknown | None` (None: the check passed)."""
    if phase not in PHASES:
        raise ValueError(f"{id}: unknown phase {phase}")
    if severity not in SEVERITIES:
        raise ValueError(f"{id}: unknown severity {severity}")
    if id not in RULE_ORDER:
        raise ValueError(f"{id}: not in rules/order.py RULE_ORDER")

    def register(fn: Callable) -> Callable:
        if id in RULES:
            raise ValueError(f"duplicate rule id {id}")
        RULES[id] = Rule(id=id, phase=phase, severity=severity, title=title, remediation=remediation,
                         check=fn, snippet=snippet, needs=tuple(needs), applies=applies,
                         targets=tuple(targets), rank=rank, fallback=fallback, order=RULE_ORDER.index(id),
                         edits=edits)
        return fn
    return register


def sort_rules() -> None:
    """Put RULES in the declared order (rules/order.py), whatever order their modules were imported in."""
    ordered = sorted(RULES.values(), key=lambda r: r.order)
    RULES.clear()
    RULES.update((r.id, r) for r in ordered)
