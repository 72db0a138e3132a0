"""Meta-tests over the rule registry: ids, metadata, docs and cases for every rule."""
import os
import re

import pytest

from kubectl_gpudoctor.render import ruledocs
from kubectl_gpudoctor.rules import PHASES, RULES
from tests.casebook import all_cases
from tests.conftest import ROOT

CATALOGUE = os.path.join(os.path.dirname(ROOT), "shared", "design", "rule-catalogue.md")


def test_ids_are_unique_kebab_case():
    for rid in RULES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rid), rid


@pytest.mark.parametrize("rid", sorted(RULES))
def test_rule_metadata(rid):
    r = RULES[rid]
    assert r.phase in PHASES
    first = r.title.split()[0]
    camel_field = first[0].islower() and any(c.isupper() for c in first)   # e.g. "nodeSelector …"
    assert r.title and (r.title[0].isupper() or camel_field) and not r.title.endswith(".")
    if r.severity != "info":
        assert r.remediation.rstrip().endswith("."), f"{rid}: remediation must end with '.'"
    assert r.summary, f"{rid}: the rule function needs a docstring saying when it fires"


def test_docs_are_generated_from_the_code():
    with open(os.path.join(ROOT, "docs", "rules.md")) as f:
        on_disk = f.read()
    assert on_disk == ruledocs.generate(), "docs/rules.md is stale: python -m kubectl_gpudoctor.render.ruledocs > docs/rules.md"
    for rid in RULES:
        assert f"\n### {rid}\n" in on_disk


def test_every_rule_has_fail_and_pass_cases():
    have = {}
    for rid, kind, _ in all_cases():
        have.setdefault(rid, set()).add(kind)
    missing = [f"{rid}: {sorted({'fail', 'pass'} - have.get(rid, set()))}" for rid in RULES
               if have.get(rid, set()) != {"fail", "pass"}]
    assert not missing, "rules without cases:\n" + "\n".join(missing)
    orphans = sorted(set(have) - set(RULES))
    assert not orphans, f"case directories for unknown rules: {orphans}"


def test_catalogue_ids_exist():
    """Every id in the design catalogue is implemented (ids are a public contract)."""
    if not os.path.exists(CATALOGUE):
        pytest.skip("design catalogue not available")
    with open(CATALOGUE) as f:
        ids = set(re.findall(r"^\| `([a-z0-9-]+)` \|", f.read(), re.M))
    missing = sorted(ids - set(RULES))
    assert not missing, f"catalogue ids not implemented: {missing}"


def test_rule_order_is_declared_once_and_unchanged():
    """rules/order.py decides the order (it breaks root-cause ties); changing it is a decision, so the golden
    list tests/golden/rule-order.txt changes with it in the same commit."""
    from kubectl_gpudoctor.rules.order import RULE_ORDER
    assert list(RULES) == list(RULE_ORDER), "every rule id is in rules/order.py once, and every id there is a rule"
    with open(os.path.join(ROOT, "tests", "golden", "rule-order.txt")) as f:
        golden = f.read().split("\n")
    assert [f"{r.phase} {r.id}" for r in RULES.values()] == [line for line in golden if line]
    phases = [PHASES.index(r.phase) for r in RULES.values()]
    assert phases == sorted(phases), "rules of one phase stay together, phases in PHASES order"


def test_no_module_registers_rules_by_being_imported_elsewhere():
    """Rule modules are listed in rules/__init__.py; none imports another rule module (helpers start with _)."""
    rules_dir = os.path.join(ROOT, "kubectl_gpudoctor", "rules")
    listed = open(os.path.join(rules_dir, "__init__.py")).read()
    for phase in sorted(os.listdir(rules_dir)):
        folder = os.path.join(rules_dir, phase)
        if not os.path.isdir(folder) or phase.startswith("_"):
            continue
        modules = [m[:-3] for m in os.listdir(folder) if m.endswith(".py") and not m.startswith("_")]
        for m in modules:
            assert re.search(rf"from \.{phase} import [^\n]*\b{m}\b", listed), f"rules/{phase}/{m}.py is not listed"
            text = open(os.path.join(folder, m + ".py")).read()
            others = [o for o in modules if o != m]
            assert not re.search(rf"^from \.(?:{'|'.join(others) or 'NONE'}) import", text, re.M), f"{phase}/{m} imports a rule module"
