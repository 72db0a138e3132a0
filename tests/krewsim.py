"""What krew does with a plugin manifest and its archive, re-implemented for the tests, without krew.

Sources (kubernetes-sigs/krew): internal/index/validation/validate.go (ValidatePlugin, validatePlatform,
validateFiles, validateSelector), cmd/validate-krew-manifest/main.go (name from the file name, every platform
matches a supported os/arch, no two platforms select the same one, install each platform, a LICENSE file is
extracted), internal/installation/semver (a leading "v", then k8s.io/apimachinery ParseSemantic),
internal/download/downloader.go (tar entries must be directories or regular files; no ".." or absolute
names), internal/installation/move.go + install.go (`files` moves, `bin` inside the install dir, a relative
symlink bin/kubectl-<name>), and the plugin-manifest docs (shortDescription, description, caveats).
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import List, Optional, Tuple

import yaml

API_VERSION = "krew.googlecontainertools.github.com/v1alpha2"
# cmd/validate-krew-manifest allPlatforms()
KREW_PLATFORMS = [("windows", "386"), ("windows", "amd64"), ("windows", "arm64"), ("linux", "386"),
                  ("linux", "amd64"), ("linux", "arm"), ("linux", "arm64"), ("linux", "ppc64le"),
                  ("darwin", "386"), ("darwin", "amd64"), ("darwin", "arm64")]
LICENSE_FILES = {"license", "license.txt", "license.md", "licenses", "licenses.txt", "licenses.md", "copying",
                 "copying.txt"}
SAFE_NAME = re.compile(r"^[\w-]+$")
WINDOWS_FORBIDDEN = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
SHA256 = re.compile(r"^[a-f0-9]{64}$")
_SEMVER_PRE = re.compile(r"^(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")


class KrewError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------------------
# Manifest validation

def parse_semver(v) -> Tuple[int, int, int, str]:
    """krew's semver.Parse: "v" prefix required, then exactly MAJOR.MINOR.PATCH[-pre][+build]."""
    if not isinstance(v, str):
        raise KrewError(f"version {v!r} is not a string")
    if not v.startswith("v"):
        raise KrewError(f"version string {v!r} not starting with 'v'")
    m = re.match(r"^v([0-9]+(?:\.[0-9]+)*)(.*)$", v)
    if not m:
        raise KrewError(f"could not parse {v!r} as version")
    parts = m.group(1).split(".")
    if len(parts) != 3:
        raise KrewError(f"illegal version string {v!r}: semantic versions have 3 components")
    for p in parts:
        if len(p) > 1 and p[0] == "0":
            raise KrewError(f"illegal zero-prefixed version component {p!r} in {v!r}")
    if not _SEMVER_PRE.match(m.group(2)):
        raise KrewError(f"illegal version string {v!r}")
    return int(parts[0]), int(parts[1]), int(parts[2]), m.group(2)


def _selector_error(sel) -> Optional[str]:
    if sel is None:
        return "nil selector is not supported"
    if not isinstance(sel, dict):
        return "selector is not a mapping"
    labels, exprs = sel.get("matchLabels"), sel.get("matchExpressions")
    if labels is None and not exprs:
        return "empty selector is not supported"
    keys = list((labels or {}).keys()) + [e.get("key") for e in exprs or []]
    for k in keys:
        if k not in ("os", "arch"):
            return f"key {k!r} not supported"
    if labels is not None and len(labels) == 0:
        return "`matchLabels` specified but empty"
    if exprs is not None and len(exprs) == 0:
        return "`matchExpressions` specified but empty"
    for e in exprs or []:
        op, values = e.get("operator"), e.get("values") or []
        if op in ("In", "NotIn") and not values:
            return f"operator {op} needs values"
        if op in ("Exists", "DoesNotExist") and values:
            return f"operator {op} takes no values"
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return f"{op!r} is not a valid label selector operator"
    return None


def selector_matches(sel: dict, os_: str, arch: str) -> bool:
    """metav1.LabelSelectorAsSelector(sel).Matches({"os": os_, "arch": arch})."""
    if _selector_error(sel):
        return False
    labels = {"os": os_, "arch": arch}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        have, op, values = e["key"] in labels, e["operator"], e.get("values") or []
        if op == "In" and not (have and labels[e["key"]] in values):
            return False
        if op == "NotIn" and have and labels[e["key"]] in values:
            return False
        if op == "Exists" and not have:
            return False
        if op == "DoesNotExist" and have:
            return False
    return True


def validate_plugin(name: str, doc: dict) -> List[str]:
    """krew's structural validation plus validate-krew-manifest's platform checks; [] when valid."""
    errors: List[str] = []
    if not isinstance(doc, dict):
        return ["manifest is not a mapping"]
    spec, meta = doc.get("spec") or {}, doc.get("metadata") or {}
    if doc.get("apiVersion") != API_VERSION:
        errors.append(f"plugin manifest has apiVersion={doc.get('apiVersion')!r}, not supported")
    if doc.get("kind") != "Plugin":
        errors.append(f"plugin manifest has kind={doc.get('kind')!r}, but only 'Plugin' is supported")
    if not SAFE_NAME.match(name or "") or name.upper() in WINDOWS_FORBIDDEN:
        errors.append(f"the plugin name {name!r} is not allowed")
    if meta.get("name") != name:
        errors.append(f"plugin should be named {name!r}, not {meta.get('name')!r}")
    if not spec.get("shortDescription"):
        errors.append("should have a short description")
    platforms = spec.get("platforms") or []
    if not platforms:
        errors.append("should have a platform specified")
    if not spec.get("version"):
        errors.append("should have a version specified")
    else:
        try:
            parse_semver(spec["version"])
        except KrewError as exc:
            errors.append(f"failed to parse plugin version: {exc}")
    for i, p in enumerate(platforms):
        errors += [f"platforms[{i}]: {e}" for e in _platform_errors(p)]
    for i, p in enumerate(platforms):
        if not any(selector_matches(p.get("selector"), o, a) for o, a in KREW_PLATFORMS):
            errors.append(f"spec.platform[{i}]'s selector doesn't match any supported platforms")
    for o, a in KREW_PLATFORMS:
        hits = [i for i, p in enumerate(platforms) if selector_matches(p.get("selector"), o, a)]
        if len(hits) > 1:
            errors.append(f"multiple spec.platforms (at indexes {hits}) have overlapping selectors that select {o}/{a}")
    return errors


def _platform_errors(p: dict) -> List[str]:
    errors = []
    if not isinstance(p, dict):
        return ["platform is not a mapping"]
    if not p.get("uri"):
        errors.append("`uri` has to be set")
    sha = p.get("sha256")
    if sha in (None, ""):
        errors.append("`sha256` sum has to be set")
    elif not isinstance(sha, str):  # an unquoted all-digit value is a YAML number: krew cannot unmarshal it
        errors.append(f"`sha256` value {sha!r} is not a string")
    elif not SHA256.match(sha):
        errors.append(f"`sha256` value {sha} is not valid, must match pattern ^[a-f0-9]{{64}}$")
    if not p.get("bin"):
        errors.append("`bin` has to be set")
    files = p.get("files")
    if files is not None:
        if len(files) == 0:
            errors.append("`files` has to be unspecified or non-empty")
        for op in files:
            if not op.get("from"):
                errors.append("`from` field has to be set")
            elif not op.get("to"):
                errors.append("`to` field has to be set")
    err = _selector_error(p.get("selector"))
    if err:
        errors.append(f"invalid platform selector: {err}")
    return errors


def matching_platform(doc: dict, os_: str, arch: str) -> Optional[dict]:
    """installation.GetMatchingPlatform: the first platform whose selector matches."""
    for p in (doc.get("spec") or {}).get("platforms") or []:
        if selector_matches(p.get("selector"), os_, arch):
            return p
    return None


def load(path) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


# ---------------------------------------------------------------------------------------------------------------
# Archive extraction and installation

def _suspicious(name: str) -> Optional[str]:
    if ".." in name:
        return f"refusing to unpack archive with suspicious entry {name!r}"
    if name.startswith(("/", "\\")):
        return f"refusing to unpack archive with absolute entry {name!r}"
    return None


def extract(archive: Path, dest: Path) -> None:
    """download.extractArchive: the type from the content (gzip or zip), then krew's per-entry rules."""
    head = Path(archive).read_bytes()[:4]
    if head[:2] == b"\x1f\x8b":
        with tarfile.open(archive, "r:gz") as tar:
            for m in tar.getmembers():
                if m.name == "pax_global_header":
                    continue
                err = _suspicious(m.name)
                if err:
                    raise KrewError(err)
                path = dest / m.name
                if m.isdir():
                    path.mkdir(parents=True, exist_ok=True)
                elif m.isreg():
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(m) as src, open(path, "wb") as out:
                        shutil.copyfileobj(src, out)
                    path.chmod(m.mode & 0o7777)
                else:
                    raise KrewError(f"unable to handle file type {m.type!r} for {m.name!r} in tar")
    elif head == b"PK\x03\x04":
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                err = _suspicious(info.filename)
                if err:
                    raise KrewError(err)
                path = dest / info.filename
                mode = (info.external_attr >> 16) & 0o7777
                if info.is_dir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                with zf.open(info) as src, open(path, "wb") as out:  # krew does not create parents for zip files
                    shutil.copyfileobj(src, out)
                if mode:
                    path.chmod(mode)
    else:
        raise KrewError("mime type of the archive is not a supported archive format")


def _go_glob(base: Path, pattern: str) -> List[Path]:
    """filepath.Glob: per path segment, `*` matches any run of non-separators (dot files included)."""
    current = [base]
    for seg in pattern.split("/"):
        nxt = []
        for d in current:
            if not any(c in seg for c in "*?["):
                if (d / seg).exists():
                    nxt.append(d / seg)
                continue
            if d.is_dir():
                nxt += [d / n for n in sorted(os.listdir(d)) if fnmatch.fnmatchcase(n, seg)]
        current = nxt
    return current


def _inside(base: Path, path: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(base))
        return True
    except ValueError:
        return False


def _moves(src: Path, dst: Path, op: dict) -> List[Tuple[Path, Path]]:
    """move.go findMoveTargets: a direct move when `from` names an existing path, else a glob."""
    frm, to = op["from"], op["to"]
    if to != posixpath.normpath(to):
        raise KrewError(f"the provided path is not clean, {to!r} should be {posixpath.normpath(to)!r}")
    direct = Path(os.path.normpath(src / frm))
    if direct.exists():
        target = dst / (direct.name if posixpath.normpath(to) == "." else to)
        if not (_inside(src, direct) and _inside(dst, target)):
            raise KrewError(f"can't move, move target {direct} -> {target} is out of bounds")
        return [(direct, target)]
    matches = _go_glob(src, frm)
    if not matches:
        raise KrewError(f"no files in the plugin archive matched the glob pattern={frm}")
    moves = [(m, dst / to / m.name) for m in matches]
    for a, b in moves:
        if not (_inside(src, a) and _inside(dst, b)):
            raise KrewError(f"can't move, move target {a} -> {b} is not a subpath")
    return moves


def apply_files(src: Path, install_dir: Path, files: Optional[list]) -> None:
    """moveToInstallDir: every `files` operation into a temp dir, then that dir becomes install_dir."""
    ops = files if files is not None else [{"from": "*", "to": "."}]  # applyDefaults
    install_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="krew-temp-move", dir=install_dir.parent))
    try:
        for op in ops:
            for a, b in _moves(src, tmp, op):
                b.parent.mkdir(parents=True, exist_ok=True)
                if b.is_dir():
                    shutil.rmtree(b)
                shutil.move(str(a), str(b))
        if install_dir.exists():
            shutil.rmtree(install_dir)
        tmp.rename(install_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def bin_link_name(name: str, os_: str) -> str:
    return "kubectl-" + name.replace("-", "_") + (".exe" if os_ == "windows" else "")


def install(doc: dict, archive: Path, root: Path, os_: str, arch: str) -> dict:
    """`kubectl krew install --manifest=… --archive=…` with KREW_ROOT=root, KREW_OS=os_, KREW_ARCH=arch."""
    name, version = doc["metadata"]["name"], doc["spec"]["version"]
    errors = validate_plugin(name, doc)
    if errors:
        raise KrewError("; ".join(errors))
    platform = matching_platform(doc, os_, arch)
    if platform is None:
        raise KrewError(f"plugin {name!r} does not offer installation for this platform")
    digest = hashlib.sha256(Path(archive).read_bytes()).hexdigest()
    if digest != platform["sha256"]:
        raise KrewError(f"checksum does not match, want: {platform['sha256']}, got {digest}")
    install_dir = root / "store" / name / version
    with tempfile.TemporaryDirectory(prefix="krew-downloads") as staging:
        extract(Path(archive), Path(staging))
        apply_files(Path(staging), install_dir, platform.get("files"))
    full = install_dir / Path(*platform["bin"].split("/"))
    if not _inside(install_dir, full):
        raise KrewError(f"the path {full} does not extend {install_dir}")
    if not full.exists():
        raise KrewError(f"can't create symbolic link, source binary ({full}) cannot be found in extracted archive")
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / bin_link_name(name, os_)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(os.path.relpath(full, bin_dir))
    (root / "receipts").mkdir(exist_ok=True)
    receipt = dict(doc, status={"source": {"name": "default"}})
    (root / "receipts" / f"{name}.yaml").write_text(yaml.safe_dump(receipt, sort_keys=False), encoding="utf-8")
    return {"install_dir": install_dir, "bin": full, "link": link}


def license_extracted(install_dir: Path) -> bool:
    """validate-krew-manifest validateLicenseFileExists: a LICENSE-like regular file among the installed files."""
    return any(p.is_file() and not p.is_symlink() and p.name.lower() in LICENSE_FILES for p in install_dir.rglob("*"))


# ---------------------------------------------------------------------------------------------------------------
# The real archive, built once per test session

ROOT = Path(__file__).resolve().parent.parent
_BUILT: dict = {}


def built_archive() -> dict:
    """Builds the krew archive for this platform with packaging/build.sh, once per test session.

    Reuses GPUDOCTOR_DIST (a directory where build.sh already wrote them) when set and its build-info.json says
    it was built from the current sources; otherwise builds into a temp dir. Skips when PyInstaller is missing,
    except in CI (CI=true), where the build is required.
    Returns {"archive", "manifest", "os", "arch", "version", "dir"}.
    """
    import importlib.util
    import subprocess
    import sys

    import pytest

    if "error" in _BUILT:
        pytest.fail(_BUILT["error"])
    if "archive" in _BUILT:
        return _BUILT
    sys.path.insert(0, str(ROOT / "packaging"))
    import pack  # packaging/pack.py

    version, (os_, arch) = pack.version(), pack.host_platform()
    name = pack.archive_name(version, os_, arch)
    reuse = os.environ.get("GPUDOCTOR_DIST")
    if reuse and _fresh(Path(reuse), name, pack.source_digest()):
        out = Path(reuse)
    else:
        if importlib.util.find_spec("PyInstaller") is None:
            reason = ("PyInstaller is not installed for this Python, so the krew archive cannot be built "
                      "(pip install '.[dist]')")
            if os.environ.get("CI"):
                pytest.fail(reason + " — CI must install the dist extra")
            pytest.skip(reason)
        out = Path(tempfile.mkdtemp(prefix="gpudoctor-dist-"))
        env = dict(os.environ, PYTHON=sys.executable)
        proc = subprocess.run(["bash", str(ROOT / "packaging" / "build.sh"), "--out", str(out)],
                              capture_output=True, text=True, env=env, timeout=900)
        if proc.returncode != 0:
            _BUILT["error"] = f"packaging/build.sh failed ({proc.returncode}):\n{proc.stderr[-3000:]}\n{proc.stdout[-1000:]}"
            pytest.fail(_BUILT["error"])
        _BUILT["stdout"] = proc.stdout
    _BUILT.update(archive=out / name, manifest=out / "plugin.yaml", os=os_, arch=arch, version=version, dir=out)
    return _BUILT


def _fresh(out: Path, name: str, source: str) -> bool:
    import json
    try:
        info = json.loads((out / "build-info.json").read_text())
    except (OSError, ValueError):
        return False
    return (info.get("archive") == name and info.get("source") == source and (out / name).is_file()
            and (out / "plugin.yaml").is_file())
