"""Held-out real-world scenarios (built by independent testers from public issue threads, see each note.md; the
b2a-/b2b- batch was written blind for issue 9): failing pods get the root cause the thread concluded (or, when no
catalogue id fits, are failing with exit 1), healthy GPU pods and nodes are not flagged."""
import os

import pytest
import yaml

from tests.casebook import diagnose
from tests.conftest import ROOT

BASE = os.path.join(ROOT, "tests", "realworld")


def _dirs(kind):
    root = os.path.join(BASE, kind)
    return [pytest.param(os.path.join(root, d), id=d) for d in sorted(os.listdir(root))
            if os.path.isfile(os.path.join(root, d, "bundle.yaml"))]


def _expect(path):
    with open(os.path.join(path, "expect.yaml")) as f:
        return yaml.safe_load(f) or {}


@pytest.mark.parametrize("path", _dirs("failing"))
def test_real_failure_gets_its_root_cause(path):
    exp = _expect(path)
    diag = diagnose(path)
    fired = [f.id for f in diag.findings]
    wanted = [exp["expected"]] + list(exp.get("alternates") or [])
    unexplained_ok = "unexplained" in wanted and diag.root_cause is None and diag.status == "failing"
    if exp["expected"] == "unexplained" or unexplained_ok:   # stuck, and no catalogue id fits: failing, exit 1
        assert int(diag.exit_code) == 1 and diag.status == "failing" and diag.root_cause in (None, *wanted), \
            (diag.status, diag.root_cause, diag.summary)
    elif exp["expected"] in (None, "none"):   # healthy controls
        assert int(diag.exit_code) == 0 and not [f for f in diag.findings if f.severity == "critical"], fired
    elif exp["expected"] == "app-error":   # honest: no specific rule, the error line quoted
        assert diag.root_cause in (None, *wanted) and "app-error" in fired, (diag.root_cause, fired)
    else:
        assert diag.root_cause in wanted, (diag.root_cause, diag.summary)
    for other in exp.get("mustAlso") or []:
        assert other in fired, (other, fired)


@pytest.mark.parametrize("path", _dirs("healthy"))
def test_healthy_gpu_workload_is_not_flagged(path):
    exp = _expect(path)
    diag = diagnose(path)
    critical = [f.id for f in diag.findings if f.severity == "critical"]
    assert int(diag.exit_code) == exp.get("exitCode", 0) and not critical, (diag.status, critical, diag.summary)
    if exp.get("statusIn"):
        assert diag.status in exp["statusIn"], (diag.status, diag.summary)


# Placeholders a fix never needs once the names are known (a secret's value, `<new token>`, stays the user's to type).
UNFILLED = ("<key>", "<node>", "<image>", "<container>")


@pytest.mark.parametrize("path", _dirs("failing"))
def test_real_failure_fix_names_what_to_edit(path):
    """The root cause's fix, as the report prints it (an umbrella finding naming a more specific cause stands for
    it), holds what the case expects; and that fix and every critical finding's fix, when its words change an owned
    pod's spec, name the top of the pod's controller chain (tests/test_fix_targets.py judges both independently)."""
    from tests.test_fix_targets import printed_root_fix, violations
    exp = _expect(path)
    diag = diagnose(path)
    cause = printed_root_fix(diag)
    if cause is None or not cause.remediation:
        assert exp.get("fix") is None, "no root-cause fix, but the case expects one"
        return
    assert "fix" in exp, "a case whose root cause has a fix needs a `fix:` expectation in expect.yaml"
    want = exp["fix"] or {}
    text = cause.remediation + "\n" + (cause.snippet or "")
    if want.get("owner"):
        assert want["owner"] in text, (want["owner"], text)
    for s in want.get("contains") or []:
        assert s in text, (s, text)
    for s in list(want.get("notContains") or []) + list(UNFILLED):
        assert s not in text, (s, text)
    bad = violations(path, diag)
    assert not bad, "\n\n".join(f"{i}: {why}\n{t}" for i, why, t in bad)
