"""Meta-tests over the rule registry: ids, metadata, docs and cases for every rule."""
import os
import re

import pytest

from kubectl_gpudoctor import ruledocs
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
    assert on_disk == ruledocs.generate(), "docs/rules.md is stale: python -m kubectl_gpudoctor.ruledocs > docs/rules.md"
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
