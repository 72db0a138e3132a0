"""Golden end-to-end reports for whole scenarios, text and json; refresh with GPUDOCTOR_UPDATE_GOLDEN=1 and review the diff."""
import os

import pytest

from kubectl_gpudoctor import cli
from tests.conftest import ROOT

GOLDEN = os.path.join(ROOT, "tests", "golden")
SCENARIOS = {
    "pending-fragmented-gpus": "examples/pending-fragmented-gpus",
    "healthy-vllm": "tests/scenarios/healthy-vllm",
    "oom-startup-peak": "tests/cases/oom-killed/fail-startup-peak",
}
UPDATE = bool(os.environ.get("GPUDOCTOR_UPDATE_GOLDEN"))


@pytest.mark.parametrize("output", ["text", "json"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden(name, output, capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    with pytest.raises(SystemExit):
        cli.main(["--from", os.path.join(ROOT, SCENARIOS[name]), "-o", output, "-v"])
    got = capsys.readouterr().out
    path = os.path.join(GOLDEN, f"{name}.{'txt' if output == 'text' else 'json'}")
    if UPDATE or not os.path.exists(path):
        with open(path, "w") as f:
            f.write(got)
        if not UPDATE:
            pytest.fail(f"wrote missing golden file {path}; review it and commit")
    with open(path) as f:
        assert got == f.read(), f"{path} differs; rerun with GPUDOCTOR_UPDATE_GOLDEN=1 and review the diff"
