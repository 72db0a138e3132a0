"""krew's manifest rules, applied to plugin.yaml, to the krew-release-bot template rendered with a fake release,
and (to show each rule bites) to broken copies. The rules are krew's own (see tests/krewsim.py for sources)
plus the plugin-manifest guidance krew's reviewers apply to shortDescription, description and caveats."""
import copy
import re
import sys
from pathlib import Path

import pytest

from tests import krewsim

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packaging"))
import manifest  # noqa: E402  packaging/manifest.py
import pack  # noqa: E402  packaging/pack.py

NAME = "gpudoctor"
HOMEPAGE = "https://github.com/gpudoctor/kubectl-gpudoctor"
PLATFORMS = {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"), ("windows", "amd64")}
VERSION = pack.version()
TAG = f"v{VERSION}"


def plugin_doc():
    return krewsim.load(ROOT / "plugin.yaml")


def platform_of(p):
    labels = p["selector"]["matchLabels"]
    return labels["os"], labels["arch"]


def review(doc) -> list:
    """The plugin-manifest guidance (krew docs: developer-guide/plugin-manifest) and this project's wording."""
    spec, problems = doc["spec"], []
    short = spec.get("shortDescription", "")
    if len(short) > 50:
        problems.append(f"shortDescription is {len(short)} chars (max 50): {short!r}")
    if re.search(r"\b(kubectl|plugin)\b", short, re.I):
        problems.append("shortDescription repeats 'kubectl'/'plugin' (redundant words)")
    if not re.search(r"\bdiagnos", short, re.I) or re.search(r"\bmonitor", short, re.I):
        problems.append("shortDescription must say it diagnoses (not monitors)")
    desc = spec.get("description", "")
    usage = [line for line in desc.splitlines() if re.search(
        r"^\s*(\$ |kubectl |#)|```|\busage\b|\bexamples?:|\bkubectl gpudoctor\b|(^|\s)--?[a-z]", line, re.I)]
    if usage:
        problems.append(f"description holds usage examples or flags: {usage}")
    if any(len(line) > 80 for line in desc.splitlines()) or len(desc.splitlines()) < 2:
        problems.append("description must be wrapped prose (lines of at most 80 chars)")
    caveats = spec.get("caveats", "")
    if not re.search(r"pods/log", caveats) or not re.search(r"\bget\b", caveats) or "glibc" not in caveats:
        problems.append("caveats must state the read-only RBAC it needs and the glibc floor")
    if spec.get("homepage") != HOMEPAGE:
        problems.append(f"homepage {spec.get('homepage')!r} is not {HOMEPAGE}")
    return problems


def consistent_with_build(doc, tag=TAG) -> list:
    """Every platform points at the archive build.sh names, with the files and bin of the archive layout."""
    problems = []
    found = {platform_of(p) for p in doc["spec"]["platforms"]}
    if found != PLATFORMS:
        problems.append(f"platforms {sorted(found)} != {sorted(PLATFORMS)}")
    for p in doc["spec"]["platforms"]:
        os_, arch = platform_of(p)
        if set(p["selector"]) != {"matchLabels"} or set(p["selector"]["matchLabels"]) != {"os", "arch"}:
            problems.append(f"{os_}/{arch}: selector must be matchLabels os+arch only")
        want = f"{HOMEPAGE}/releases/download/{tag}/{pack.archive_name(manifest.tag_version(tag), os_, arch)}"
        if p["uri"] != want:
            problems.append(f"{os_}/{arch}: uri {p['uri']} != {want}")
        lay = pack.layout(os_)
        if p["bin"] != lay["bin"]:
            problems.append(f"{os_}/{arch}: bin {p['bin']} != {lay['bin']}")
        froms = [f["from"] for f in p.get("files") or []]
        if sorted(froms) != sorted([lay["dir"], lay["shim"], lay["license"]]):
            problems.append(f"{os_}/{arch}: files {froms}")
    return problems


def fake_tree(base: Path, os_: str, arch: str) -> Path:
    """A staged archive tree with the real layout (tiny files instead of the frozen build)."""
    lay = pack.layout(os_)
    exe = base / lay["bin"]
    exe.parent.mkdir(parents=True)
    exe.write_bytes(f"fake {os_}/{arch} executable".encode())
    exe.chmod(0o755)
    (base / lay["dir"] / "_internal").mkdir()
    (base / lay["dir"] / "_internal" / "base_library.zip").write_bytes(b"PK")
    (base / lay["license"]).write_text("Apache License 2.0\n")
    (base / lay["shim"]).write_text("#!/bin/sh\n")
    return base


@pytest.fixture(scope="module")
def fake_release(tmp_path_factory):
    """Archives for every platform of the template, named as the release assets, and their checksums."""
    out = tmp_path_factory.mktemp("release")
    for os_, arch in sorted(PLATFORMS):
        tree = fake_tree(tmp_path_factory.mktemp(f"tree-{os_}-{arch}"), os_, arch)
        target = out / pack.archive_name(VERSION, os_, arch)
        (pack.write_zip if os_ == "windows" else pack.write_tar_gz)(tree, target)
    return out


@pytest.fixture(scope="module")
def rendered(fake_release, tmp_path_factory):
    archives = sorted(fake_release.iterdir())
    text = manifest.render_file(TAG, manifest.local_checksums(archives, strict=True), header=False)
    path = tmp_path_factory.mktemp("index") / f"{NAME}.yaml"   # krew-index names the file after the plugin
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------------------------------

def test_plugin_yaml_passes_krew_validation():
    doc = plugin_doc()
    assert krewsim.validate_plugin(NAME, doc) == []
    assert doc["spec"]["version"] == TAG, "plugin.yaml is not for the current version in kubectl_gpudoctor/__init__.py"


def test_plugin_yaml_follows_review_guidance_and_build_layout():
    doc = plugin_doc()
    assert review(doc) == []
    assert consistent_with_build(doc) == []


def test_plugin_yaml_is_the_template_rendered_for_this_version():
    expected = manifest.render_file(TAG, manifest.local_checksums([]))
    assert (ROOT / "plugin.yaml").read_text() == expected, \
        "plugin.yaml is stale: run `python packaging/manifest.py -o plugin.yaml`"
    assert {p["sha256"] for p in plugin_doc()["spec"]["platforms"]} == {manifest.PLACEHOLDER}


def test_template_uses_only_release_bot_syntax():
    text = (ROOT / "krew-manifest.yaml").read_text()
    assert text.count("addURIAndSha") == len(PLATFORMS)
    for line in text.splitlines():
        if "addURIAndSha" in line:
            # the bot's output is `uri: …` + "\n    sha256: …": the call must sit at 4-space indentation
            assert re.match(r"^ {4}\{\{addURIAndSha \"https://[^\"]+\" \.TagName \}\}$", line), line
    assert "{{ .TagName }}" in text
    with pytest.raises(ValueError):
        manifest.render("x: {{ .Foo }}", TAG, lambda u: "")


def test_template_rendered_with_fake_release_passes_krew_validation(rendered):
    doc = krewsim.load(rendered)
    assert rendered.name == f"{NAME}.yaml" and rendered.suffix == ".yaml"   # validate-krew-manifest: name from file
    assert krewsim.validate_plugin(rendered.stem, doc) == []
    assert review(doc) == []
    assert consistent_with_build(doc) == []
    assert all(isinstance(p["sha256"], str) and p["sha256"] != manifest.PLACEHOLDER for p in doc["spec"]["platforms"])


def test_template_and_plugin_yaml_agree(rendered):
    """The same manifest apart from the checksums (plugin.yaml holds placeholders until a release)."""
    doc, plug = krewsim.load(rendered), plugin_doc()
    for d in (doc, plug):
        for p in d["spec"]["platforms"]:
            p["sha256"] = "-"
    assert doc == plug


@pytest.mark.parametrize("os_,arch", sorted(PLATFORMS))
def test_every_platform_installs_like_krew(rendered, fake_release, tmp_path, os_, arch):
    """validate-krew-manifest's install step for each platform (KREW_OS/KREW_ARCH): bin exists after `files`,
    LICENSE is extracted, and the completion shim lands beside the binary."""
    doc = krewsim.load(rendered)
    archive = fake_release / pack.archive_name(VERSION, os_, arch)
    res = krewsim.install(doc, archive, tmp_path / "krew", os_, arch)
    assert res["bin"].is_file()
    assert res["link"].name == "kubectl-gpudoctor" + (".exe" if os_ == "windows" else "")
    assert krewsim.license_extracted(res["install_dir"])
    assert (res["install_dir"] / pack.layout(os_)["shim"]).is_file()
    assert not any(p.is_symlink() for p in res["install_dir"].rglob("*"))


def test_checksum_mismatch_is_refused(rendered, fake_release, tmp_path):
    doc = krewsim.load(rendered)
    wrong = fake_release / pack.archive_name(VERSION, "linux", "arm64")
    with pytest.raises(krewsim.KrewError, match="checksum"):
        krewsim.install(doc, wrong, tmp_path / "krew", "linux", "amd64")


def test_unsupported_platform_is_refused(rendered, fake_release, tmp_path):
    with pytest.raises(krewsim.KrewError, match="does not offer installation"):
        krewsim.install(krewsim.load(rendered), fake_release / pack.archive_name(VERSION, "linux", "amd64"),
                        tmp_path / "krew", "linux", "ppc64le")


# ---------------------------------------------------------------------------------------------------------------
# The validator itself: each rule rejects what krew rejects.

def _mut(path, value):
    def apply(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return apply


_DELETE = object()
P0 = ("spec", "platforms", 0)
MUTATIONS = {
    "version without v": _mut(("spec", "version"), VERSION),
    "version not semver": _mut(("spec", "version"), "v1.2"),
    "version zero-prefixed": _mut(("spec", "version"), "v01.2.3"),
    "version junk suffix": _mut(("spec", "version"), "v1.2.3_beta"),
    "apiVersion": _mut(("apiVersion",), "krew.googlecontainertools.github.com/v1alpha1"),
    "kind": _mut(("kind",), "Plugins"),
    "name mismatch": _mut(("metadata", "name"), "gpu-doctor"),
    "no shortDescription": _mut(("spec", "shortDescription"), ""),
    "sha256 uppercase": _mut((*P0, "sha256"), "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"),
    "sha256 short": _mut((*P0, "sha256"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"),
    "sha256 a YAML number": _mut((*P0, "sha256"), 0),
    "no uri": _mut((*P0, "uri"), _DELETE),
    "no bin": _mut((*P0, "bin"), _DELETE),
    "empty files": _mut((*P0, "files"), []),
    "files without to": _mut((*P0, "files"), [{"from": "LICENSE"}]),
    "selector with another key": _mut((*P0, "selector"), {"matchLabels": {"os": "linux", "distro": "debian"}}),
    "empty selector": _mut((*P0, "selector"), {}),
    "no selector": _mut((*P0, "selector"), _DELETE),
    "overlapping selectors": _mut((*P0, "selector"), {"matchLabels": {"os": "linux"}}),
    "selector matching nothing": _mut((*P0, "selector"), {"matchLabels": {"os": "plan9", "arch": "amd64"}}),
    "no platforms": _mut(("spec", "platforms"), []),
}


@pytest.mark.parametrize("what", sorted(MUTATIONS))
def test_validator_rejects(what):
    doc = copy.deepcopy(plugin_doc())
    MUTATIONS[what](doc)
    assert krewsim.validate_plugin(NAME, doc), f"{what} was accepted"


def test_validator_rejects_duplicate_platform():
    doc = copy.deepcopy(plugin_doc())
    doc["spec"]["platforms"].append(copy.deepcopy(doc["spec"]["platforms"][0]))
    assert any("overlapping" in e for e in krewsim.validate_plugin(NAME, doc))


@pytest.mark.parametrize("name", ["CON", "gpu doctor", "gpu/doctor", ""])
def test_validator_rejects_unsafe_names(name):
    doc = copy.deepcopy(plugin_doc())
    doc["metadata"]["name"] = name
    assert krewsim.validate_plugin(name, doc)


def test_validator_accepts_match_expressions():
    doc = copy.deepcopy(plugin_doc())
    doc["spec"]["platforms"] = [dict(doc["spec"]["platforms"][0], selector={"matchExpressions": [
        {"key": "os", "operator": "In", "values": ["linux", "darwin"]}]})]
    assert krewsim.validate_plugin(NAME, doc) == []


@pytest.mark.parametrize("field,value", [
    ("shortDescription", "Monitors GPU pods and nodes in your Kubernetes cluster"),   # too long, monitors
    ("shortDescription", "Monitor GPU pods"),
    ("shortDescription", "A kubectl plugin to diagnose GPU pods"),
    ("description", "Diagnoses GPU pods.\nUsage:\n  kubectl gpudoctor <pod>\n"),
    ("description", "Diagnoses GPU pods.\nRun it with --from to read saved files.\n"),
    ("caveats", "None.\n"),
])
def test_review_rejects(field, value):
    doc = copy.deepcopy(plugin_doc())
    doc["spec"][field] = value
    assert review(doc)


def test_bin_must_exist_after_files(rendered, fake_release, tmp_path):
    doc = krewsim.load(rendered)
    for p in doc["spec"]["platforms"]:
        p["files"] = [f for f in p["files"] if f["from"] != "kubectl-gpudoctor"]
    with pytest.raises(krewsim.KrewError, match="cannot be found"):
        krewsim.install(doc, fake_release / pack.archive_name(VERSION, "linux", "amd64"), tmp_path / "k", "linux", "amd64")


def test_license_must_be_extracted(rendered, fake_release, tmp_path):
    doc = krewsim.load(rendered)
    for p in doc["spec"]["platforms"]:
        p["files"] = [f for f in p["files"] if f["from"] != "LICENSE"]
    res = krewsim.install(doc, fake_release / pack.archive_name(VERSION, "linux", "amd64"), tmp_path / "k",
                          "linux", "amd64")
    assert not krewsim.license_extracted(res["install_dir"])


def test_extractor_refuses_symlinks_and_dotdot(tmp_path):
    import io
    import tarfile
    for make in ("symlink", "dotdot"):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            if make == "symlink":
                info = tarfile.TarInfo("kubectl-gpudoctor/lib.so")
                info.type, info.linkname = tarfile.SYMTYPE, "lib.so.1"
                tar.addfile(info)
            else:
                data = b"x"
                info = tarfile.TarInfo("a/../LICENSE")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        archive = tmp_path / f"{make}.tar.gz"
        archive.write_bytes(buf.getvalue())
        dest = tmp_path / make
        dest.mkdir()
        with pytest.raises(krewsim.KrewError):
            krewsim.extract(archive, dest)


def test_pack_refuses_a_build_that_keeps_a_symlink(tmp_path):
    frozen = tmp_path / "frozen"
    (frozen / "_internal").mkdir(parents=True)
    (frozen / "kubectl-gpudoctor").write_text("x")
    (frozen / "_internal" / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(SystemExit, match="symlink"):
        pack.stage(frozen, tmp_path / "out", "linux")


def test_pack_dereferences_symlinks(tmp_path):
    frozen = tmp_path / "frozen"
    (frozen / "_internal").mkdir(parents=True)
    (frozen / "kubectl-gpudoctor").write_text("x")
    (frozen / "_internal" / "libfoo.so.1").write_text("lib")
    (frozen / "_internal" / "libfoo.so").symlink_to("libfoo.so.1")
    top = pack.stage(frozen, tmp_path / "out", "linux")
    staged = top / "kubectl-gpudoctor" / "_internal" / "libfoo.so"
    assert staged.is_file() and not staged.is_symlink() and staged.read_text() == "lib"
    out = tmp_path / "a.tar.gz"
    pack.write_tar_gz(top, out)
    import tarfile
    with tarfile.open(out) as tar:
        assert all(m.isreg() or m.isdir() for m in tar.getmembers())
