"""The krew install path, end to end on this machine: build the archive (once per session), install it the way
krew does into a temporary KREW_ROOT, put its bin/ on PATH, and drive the frozen binary through the real kubectl.
The frozen binary must give the same bytes as the pip install for the shipped example bundle."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests import krewsim
from tests.live import assert_read_only, clean_env, plugin_path, serving

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packaging"))
import pack  # noqa: E402  packaging/pack.py

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
OOM_CASE = ROOT / "tests" / "cases" / "oom-killed" / "fail-startup-peak"
OOM_POD = "inference-7d9f8b6c5-x2x9q"


@pytest.fixture(scope="module")
def built():
    return krewsim.built_archive()


@pytest.fixture(scope="module")
def krew_root(built, tmp_path_factory):
    """KREW_ROOT with the plugin installed from the built archive and its manifest, as krew would."""
    root = tmp_path_factory.mktemp("krew-root")
    doc = krewsim.load(built["manifest"])
    res = krewsim.install(doc, built["archive"], root, built["os"], built["arch"])
    # docs/install.md: krew links only `bin`; the completion shim is linked by hand, the same way
    shim = pack.layout(built["os"])["shim"]
    (root / "bin" / shim).symlink_to(os.path.relpath(res["install_dir"] / shim, root / "bin"))
    # PATH for kubectl: krew's bin/ and a directory holding only kubectl (no pip-installed plugin to shadow it)
    kdir = tmp_path_factory.mktemp("kubectl-only")
    (kdir / "kubectl").symlink_to(KUBECTL)
    res.update(root=root, path=os.pathsep.join([str(root / "bin"), str(kdir)]))
    return res


def kubectl(krew_root, *args, env_extra=None, timeout=120):
    env = clean_env(**(env_extra or {}))
    env["PATH"] = krew_root["path"]
    return subprocess.run(["kubectl", *args], capture_output=True, env=env, timeout=timeout)


def pip_plugin(*args, env_extra=None, timeout=120):
    return subprocess.run([plugin_path(), *args], capture_output=True, env=clean_env(**(env_extra or {})),
                          timeout=timeout)


def example_bundles():
    return pack.example_bundles()


# ---------------------------------------------------------------------------------------------------------------

def test_archive_is_what_krew_can_extract(built):
    archive, lay = built["archive"], pack.layout(built["os"])
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            names = [i.filename.rstrip("/") for i in zf.infolist()]
    else:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            bad = [m.name for m in members if not (m.isreg() or m.isdir())]
            assert not bad, f"entries krew's extractor rejects (symlinks, links, devices): {bad[:5]}"
            names = [m.name for m in members]
            mode = {m.name: m.mode for m in members}
            assert mode[lay["bin"]] & 0o111 and mode[lay["shim"]] & 0o111
    assert not [n for n in names if ".." in n or n.startswith(("/", "\\"))]
    for entry in (lay["dir"], lay["bin"], lay["license"], lay["shim"]):
        assert entry in names
    assert {n.split("/")[0] for n in names} == {lay["dir"], lay["license"], lay["shim"]}


def test_build_prints_and_records_the_sha256(built):
    digest = krewsim.hashlib.sha256(built["archive"].read_bytes()).hexdigest()
    sums = (built["dir"] / (built["archive"].name + ".sha256")).read_text()
    assert sums == f"{digest}  {built['archive'].name}\n"
    if "stdout" in built:
        assert f"{digest}  " in built["stdout"]
    platform = krewsim.matching_platform(krewsim.load(built["manifest"]), built["os"], built["arch"])
    assert platform["sha256"] == digest


def test_built_manifest_passes_krew_validation(built):
    doc = krewsim.load(built["manifest"])
    assert krewsim.validate_plugin("gpudoctor", doc) == []
    assert doc["spec"]["version"] == f"v{built['version']}"


def test_installed_like_krew(krew_root, built):
    link = krew_root["link"]
    assert link.is_symlink() and not os.path.isabs(os.readlink(link)), "krew creates a relative symlink"
    assert link.resolve() == krew_root["bin"].resolve()
    assert krew_root["install_dir"] == krew_root["root"] / "store" / "gpudoctor" / f"v{built['version']}"
    assert krewsim.license_extracted(krew_root["install_dir"])
    assert (krew_root["root"] / "receipts" / "gpudoctor.yaml").is_file()


def test_kubectl_plugin_list_shows_it(krew_root):
    proc = kubectl(krew_root, "plugin", "list")
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert str(krew_root["link"]) in out.splitlines()
    assert "warning" not in (out + proc.stderr.decode()).lower()


def test_kubectl_gpudoctor_version_runs_through_the_link(krew_root, built):
    proc = kubectl(krew_root, "gpudoctor", "--version")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode() == f"kubectl-gpudoctor {built['version']}\n"
    assert proc.stderr == b""


@pytest.mark.parametrize("bundle", example_bundles(), ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", [[], ["-o", "json"], ["-o", "yaml"], ["--color", "always", "-v"]],
                         ids=["text", "json", "yaml", "color-verbose"])
def test_frozen_diagnosis_matches_pip_install_byte_for_byte(krew_root, bundle, fmt):
    frozen = kubectl(krew_root, "gpudoctor", "--from", str(bundle), *fmt)
    pip = pip_plugin("--from", str(bundle), *fmt)
    assert frozen.stdout, frozen.stderr.decode()
    assert (frozen.returncode, frozen.stdout, frozen.stderr) == (pip.returncode, pip.stdout, pip.stderr)


@pytest.mark.parametrize("args", [["--help"], ["rules"], ["rules", "-o", "json"], ["--from", "/nonexistent"]],
                         ids=["help", "rules", "rules-json", "bad-input"])
def test_frozen_cli_matches_pip_install(krew_root, args):
    frozen = kubectl(krew_root, "gpudoctor", *args)
    pip = pip_plugin(*args)
    assert (frozen.returncode, frozen.stdout, frozen.stderr) == (pip.returncode, pip.stdout, pip.stderr)


def test_frozen_binary_diagnoses_a_live_pod(krew_root, tmp_path):
    """The live path needs kubernetes' lazily imported modules (config, api_client, rest, urllib3, yaml,
    dateutil): the frozen binary must carry them."""
    with serving(OOM_CASE, tmp_path, namespace="serving") as (srv, kc):
        frozen = kubectl(krew_root, "gpudoctor", OOM_POD, "--kubeconfig", kc, "-o", "json")
        assert_read_only(srv)
        srv.reset_requests()
        pip = pip_plugin(OOM_POD, "--kubeconfig", kc, "-o", "json")
    assert frozen.returncode == pip.returncode == 1, frozen.stderr.decode()
    doc, ref = json.loads(frozen.stdout), json.loads(pip.stdout)
    assert doc["rootCause"] == "oom-killed"
    for d in (doc, ref):
        d.pop("collectedAt")
    assert doc == ref


def test_frozen_binary_authenticates_through_an_exec_plugin(krew_root, tmp_path):
    """EKS, GKE and AKS kubeconfigs run a credential plugin through the kubernetes library, the one part of the
    live path that still imports it: the frozen binary carries what that needs (its ThreadPool included, without
    PyInstaller's multiprocessing runtime hook, which the spec drops)."""
    from tests.test_kubeconfig import HEALTHY, POD, exec_plugin_kubeconfig
    with serving(HEALTHY, tmp_path) as (srv, _):
        kc = exec_plugin_kubeconfig(srv, tmp_path)
        frozen = kubectl(krew_root, "gpudoctor", POD, "--kubeconfig", kc, "-o", "json")
        assert_read_only(srv)
    assert frozen.returncode == 0, frozen.stderr.decode()
    assert json.loads(frozen.stdout)["status"] == "healthy"


def test_completion_shim_answers_kubectl(krew_root, tmp_path):
    """kubectl >= 1.26 runs kubectl_complete-gpudoctor for `kubectl gpudoctor <TAB>` (`kubectl __complete`
    is what the shell scripts call)."""
    with serving(OOM_CASE, tmp_path, namespace="serving") as (srv, kc):
        proc = kubectl(krew_root, "__complete", "gpudoctor", "", env_extra={"KUBECONFIG": kc})
        node = kubectl(krew_root, "__complete", "gpudoctor", "node", "", env_extra={"KUBECONFIG": kc})
        assert_read_only(srv)
    lines = proc.stdout.decode().splitlines()
    assert lines[-1] == ":4", proc.stdout
    assert {"pod", "node", "rules", OOM_POD} <= {line.split("\t")[0] for line in lines}
    assert "gpu-node-01" in node.stdout.decode().splitlines()
    flags = kubectl(krew_root, "__complete", "gpudoctor", "--out")
    assert flags.stdout.decode().splitlines()[0].split("\t")[0] == "--output"


def test_completion_script_from_the_docs_survives_upgrades(krew_root, tmp_path):
    """docs/install.md's krew recipe: a two-line script that calls the kubectl-gpudoctor link krew maintains."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = scripts / "kubectl_complete-gpudoctor"
    script.write_text('#!/bin/sh\nexec kubectl-gpudoctor __complete "$@"\n')
    script.chmod(0o755)
    env = clean_env()
    env["PATH"] = os.pathsep.join([str(scripts), krew_root["path"]])
    proc = subprocess.run(["kubectl", "__complete", "gpudoctor", "--color", ""], capture_output=True, env=env,
                          timeout=60)
    assert proc.stdout.decode().splitlines() == ["auto", "always", "never", ":4"], proc.stderr.decode()
