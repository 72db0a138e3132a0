"""verdict.py's decisions on hand-built findings: the root cause is a critical finding of the earliest failing phase,
the highest rank within it, then the declared rule order; warnings and info never are; a fallback (app-error)
is dropped once a specific critical finding of its phase or an earlier one fired; findings are shown cause first,
then by severity, phase, rank and order."""
import pytest

from kubectl_gpudoctor.report import Check, Finding
from kubectl_gpudoctor.rules.registry import DEFAULT, GENERIC, SPECIFIC, RULES
from kubectl_gpudoctor import verdict


def f(rule_id, severity=None, rank=None):
    r = RULES[rule_id]
    return Finding(id=r.id, phase=r.phase, severity=severity or r.severity, title=r.title, message="m.",
                   evidence=[], remediation="r.", snippet="", docs="", summary=r.id,
                   rank=r.rank if rank is None else rank, order=r.order)


def test_no_critical_finding_no_root_cause():
    assert verdict.root_cause([]) is None
    assert verdict.root_cause([f("node-pressure"), f("crash-backoff"), f("oom-killed", severity="warning")]) is None


def test_the_earliest_phase_wins_over_a_later_one():
    later, earlier = f("oom-killed", rank=DEFAULT), f("image-pull-failed", rank=DEFAULT)   # crash vs creation
    assert verdict.root_cause([later, earlier]) is earlier
    assert verdict.root_cause([earlier, later]) is earlier


def test_within_a_phase_the_higher_rank_wins_then_the_declared_order():
    a, b = f("oom-killed", rank=GENERIC), f("gpu-out-of-memory", rank=SPECIFIC)
    assert verdict.root_cause([a, b]) is b and verdict.root_cause([b, a]) is b
    x, y = f("oom-killed", rank=DEFAULT), f("gpu-out-of-memory", rank=DEFAULT)
    first = x if RULES["oom-killed"].order < RULES["gpu-out-of-memory"].order else y
    assert verdict.root_cause([x, y]) is first and verdict.root_cause([y, x]) is first


def test_a_warning_of_an_earlier_phase_never_beats_a_critical_one():
    assert verdict.root_cause([f("image-pull-failed", severity="warning"), f("oom-killed")]).id == "oom-killed"


def test_ordering_puts_the_cause_first_then_severity_phase_rank_order():
    cause = f("oom-killed")
    info, warn, crit_later = f("crash-backoff"), f("node-pressure"), f("rdma-device-missing")
    out = verdict.order_findings([info, warn, crit_later, cause], cause)
    assert [x.id for x in out] == ["oom-killed", "rdma-device-missing", "node-pressure", "crash-backoff"]
    assert [x.id for x in verdict.order_findings([info, cause], None)] == ["oom-killed", "crash-backoff"]


@pytest.mark.parametrize("specific,dropped", [("oom-killed", True), ("image-pull-failed", True),
                                              ("evicted", False)])
def test_a_fallback_is_dropped_only_by_a_specific_critical_finding_of_its_phase_or_earlier(specific, dropped):
    fallback = f("app-error", severity="critical")
    other = f(specific)
    checks = [Check("app-error", "failed", "app-error"), Check(specific, "failed", specific)]
    kept, checks = verdict._drop_explained_fallbacks([fallback, other], checks)
    assert (fallback not in kept) is dropped
    app = next(c for c in checks if c.id == "app-error")
    assert (app.result, app.reason) == (("passed", f"explained by {specific}") if dropped else ("failed", "app-error"))


def test_a_warning_does_not_explain_a_fallback_away():
    fallback, warn = f("app-error", severity="critical"), f("oom-killed", severity="warning")
    kept, _ = verdict._drop_explained_fallbacks([fallback, warn], [])
    assert fallback in kept


def test_the_root_cause_id_is_the_specific_cause_an_umbrella_names():
    from kubectl_gpudoctor.record import replace
    umbrella = f("pod-creation-rejected")
    assert verdict.cause_id(umbrella) == "pod-creation-rejected"
    assert verdict.cause_id(replace(umbrella, cause="runtimeclass-not-found")) == "runtimeclass-not-found"
    assert verdict.cause_id(None) is None


def test_later_findings_are_ordered_by_rank_within_a_phase():
    cause = f("image-pull-failed")
    low, high = f("oom-killed", rank=GENERIC), f("gpu-out-of-memory", rank=SPECIFIC)
    assert [x.id for x in verdict.order_findings([low, high, cause], cause)] == \
        ["image-pull-failed", "gpu-out-of-memory", "oom-killed"]


def test_only_the_fallbacks_own_check_is_explained_and_by_the_first_specific_finding():
    fallback, first, second = f("app-error", severity="critical"), f("oom-killed"), f("gpu-out-of-memory")
    checks = [Check("app-error", "failed", "app-error"), Check("oom-killed", "failed", "oom"),
              Check("gpu-out-of-memory", "failed", "gpu")]
    kept, checks = verdict._drop_explained_fallbacks([fallback, first, second], checks)
    assert kept == [first, second]
    assert [(c.id, c.result, c.reason) for c in checks] == [
        ("app-error", "passed", "explained by oom-killed"), ("oom-killed", "failed", "oom"),
        ("gpu-out-of-memory", "failed", "gpu")]
