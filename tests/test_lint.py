"""The linter (ruff, configured in pyproject.toml) is part of the suite: a new module meets the same bar."""
import subprocess
import sys

from tests.conftest import ROOT


def test_ruff_is_clean():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
