"""The README's promise: its two commands are the ones CI and a newcomer run, and they work."""
import os
import re
import subprocess

from tests.conftest import ROOT
from tests.live import clean_env, plugin_path


def _readme():
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = f.read()
    command = "pip install -e '.[test,dist]' && .venv/bin/python -m pytest -q"
    assert command in _readme() and command in ci


def test_readme_example_runs_and_its_sample_is_current():
    match = re.search(r"kubectl gpudoctor --from (examples/\S+)", _readme())
    assert match, "the README names no example"
    example = os.path.join(ROOT, match.group(1))
    assert os.path.isdir(example)
    proc = subprocess.run([plugin_path(), "--from", example, "--color", "never"], capture_output=True, text=True,
                          env=clean_env())
    assert proc.returncode == 1, proc.stderr
    for line in proc.stdout.splitlines()[:3]:
        assert line in _readme(), f"README sample is stale: {line!r}"
