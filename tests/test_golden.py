"""Golden end-to-end reports for whole scenarios, text and json, and every kind of report fitted to 80 and 120
columns; refresh with GPUDOCTOR_UPDATE_GOLDEN=1 and review the diff."""
import json
import os

import pytest

from kubectl_gpudoctor import cli
from tests import reportkinds
from tests.conftest import ROOT
from tests.widthrule import snippet_lines, too_wide

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


def _compare(path, got):
    if UPDATE or not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(got)
        if not UPDATE:
            pytest.fail(f"wrote missing golden file {path}; review it and commit")
    with open(path) as f:
        assert got == f.read(), f"{path} differs; rerun with GPUDOCTOR_UPDATE_GOLDEN=1 and review the diff"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reports")
    reportkinds.prepare(tmp)
    return tmp


def _run(args, capsys):
    with pytest.raises(SystemExit):
        cli.main(args)
    return capsys.readouterr().out


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("name", sorted(reportkinds.REPORTS))
def test_fitted_to_the_terminal(name, columns, inputs, capsys, monkeypatch):
    """Every kind of report at 80 and 120 columns: no line wider than the terminal (but YAML snippet lines and
    words longer than a line, see tests/widthrule.py), and the same text as reviewed."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", str(columns))
    args = reportkinds.arguments(name, inputs)
    text = _run(args + ["--color", "never"] if args[0] != "rules" else args, capsys)
    snippets = set()
    if args[0] != "rules":
        snippets = snippet_lines(json.loads(_run(args + ["-o", "json"], capsys)))
    assert too_wide(text, columns, snippets) == []
    _compare(os.path.join(GOLDEN, "fitted", f"{name}.{columns}.txt"), text)
