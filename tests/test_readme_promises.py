"""What a newcomer reads first is true: the first command exits 1 by design, the tests take minutes, the archive
build needs no activated venv, and the README says how to install before the plugin is in the krew index."""
import os
import re
import shutil
import stat
import subprocess

from tests.conftest import ROOT


def _readme():
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def _try_it():
    return _readme().split("## Try it", 1)[1].split("\n## ", 1)[0]


def test_readme_says_the_first_command_exits_1_by_design():
    text = " ".join(_try_it().split())
    assert re.search(r"exits? (with status |with code )?1", text), "say that the example exits 1"
    assert "found a problem" in text or "diagnosed a problem" in text


def test_readme_says_the_tests_take_a_few_minutes():
    assert "a few minutes" in " ".join(_try_it().split())


def test_readme_says_how_to_install_until_krew_lists_it():
    install = " ".join(_readme().split("## Install", 1)[1].split("\n## ", 1)[0].split())
    assert "not in the krew index yet" in install or "not yet in the krew index" in install
    assert "pip install" in install


def test_install_docs_do_not_overclaim_reproducibility():
    """The archive is reproducible only if two builds of one commit have the same sha256; docs say what holds."""
    with open(os.path.join(ROOT, "docs", "install.md")) as f:
        doc = " ".join(f.read().split())
    assert "reproducible for a given build" not in doc


def _fake_python(path, log):
    path.write_text(f'#!/bin/sh\necho "$@" >> {log}\ncase "$*" in *"pack.py version"*) echo 0.0.0;; '
                    f'*"pack.py platform"*) echo linux_amd64;; esac\nexit 0\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_build_sh_finds_the_project_venv_without_activation(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(os.path.join(ROOT, "packaging"), repo / "packaging")
    (repo / ".venv" / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    _fake_python(repo / ".venv" / "bin" / "python", log)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    proc = subprocess.run(["bash", str(repo / "packaging" / "build.sh"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text()
    assert "-m PyInstaller" in calls and "pack.py archive" in calls
    assert str(repo / ".venv" / "bin" / "python") in proc.stderr    # it says which interpreter it used
