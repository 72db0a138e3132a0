"""Every rule case under tests/cases: a fail case makes its rule fire, a pass case keeps it silent."""
import pytest

from tests.casebook import all_cases, diagnose, expectations

CASES = all_cases()


@pytest.mark.parametrize("rule_id,kind,path", CASES, ids=[f"{r}/{p.rsplit('/', 1)[-1]}" for r, _, p in CASES])
def test_case(rule_id, kind, path):
    exp = expectations(path)
    diag = diagnose(path)
    check = next((c for c in diag.checks if c.id == rule_id), None)
    assert check is not None, f"rule {rule_id} did not run for this target"
    fired = [f.id for f in diag.findings]
    if kind == "fail":
        assert rule_id in fired, f"{rule_id} should fire; check={check}; fired={fired}"
        finding = next(f for f in diag.findings if f.id == rule_id)
        for text in exp.get("messageContains", []):
            assert text in finding.message + " ".join(e.text for e in finding.evidence), text
        for text in exp.get("snippetContains", []):
            assert text in (finding.snippet or ""), text
        for text in exp.get("remediationContains", []):
            assert text in finding.remediation, text
        if "severity" in exp:
            assert finding.severity == exp["severity"]
    else:
        assert rule_id not in fired, f"{rule_id} must stay silent; message: " + \
            next((f.message for f in diag.findings if f.id == rule_id), "")
        assert check.result == exp.get("check", "passed"), check
    if "rootCause" in exp:
        assert diag.root_cause == exp["rootCause"], (diag.root_cause, fired)
    if "status" in exp:
        assert diag.status == exp["status"], (diag.status, diag.summary)
    if "exitCode" in exp:
        assert int(diag.exit_code) == exp["exitCode"]
    for other in exp.get("alsoFires", []):
        assert other in fired, (other, fired)
    for other in exp.get("doesNotFire", []):
        assert other not in fired, (other, fired)
    for text in exp.get("summaryContains", []):
        assert text in diag.summary, (text, diag.summary)
