"""Every pod and node case of the suite, written as a bundle and read back, gets the same verdict: the writer and
the reader agree on every kind of object (DRA discovery included), gap and absence the rules use."""
import os

import pytest

from kubectl_gpudoctor import verdict
from kubectl_gpudoctor.offline import bundle, load as offline
from tests.casebook import all_cases, target_kind

CASES = [(rule, path, target_kind(path)) for rule, _, path in all_cases() if target_kind(path) in ("Pod", "Node")]


def _verdict(ev, kind):
    d = verdict.diagnose_pod(ev) if kind == "Pod" else verdict.diagnose_node(ev)
    return {"status": d.status, "rootCause": d.root_cause, "summary": d.summary, "phase": d.phase,
            "findings": sorted(f.id for f in d.findings), "checks": [(c.id, c.result) for c in d.checks],
            "gaps": sorted((g["source"], g["reason"]) for g in d.gaps), "exit": int(d.exit_code)}


@pytest.mark.parametrize("rule,path,kind", CASES, ids=[f"{r}/{os.path.basename(p)}" for r, p, _ in CASES])
def test_a_bundle_of_the_case_replays_to_its_verdict(tmp_path, rule, path, kind):
    ev = offline.load(path, kind)
    before = _verdict(ev, kind)
    bundle.write(ev, str(tmp_path / "b"))
    after = _verdict(offline.load(str(tmp_path / "b"), kind), kind)
    assert after == before
