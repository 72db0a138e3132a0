"""Packs a PyInstaller onedir build into the krew archive for this platform (used by packaging/build.sh).

    python packaging/pack.py version                  # the package version (read, not imported)
    python packaging/pack.py platform                 # <os>_<arch> as krew names them (linux_amd64, …)
    python packaging/pack.py archive --frozen DIR --out OUTDIR

The archive `kubectl-gpudoctor_<version>_<os>_<arch>.tar.gz` (`.zip` on Windows) holds:

    kubectl-gpudoctor/                 the frozen onedir (executable + _internal/)
    LICENSE
    kubectl_complete-gpudoctor         completion shim (kubectl_complete-gpudoctor.cmd on Windows)

Only regular files and directories go in: krew's extractor rejects any other tar entry type (symlinks,
hard links) and any name containing "..". Symlinks in the build are dereferenced while staging, and the
build fails if one remains. Packing one frozen tree twice gives the same archive (sorted entries, fixed
mtime, uid/gid 0); freezing is not reproducible, so a rebuild of the same commit has another sha256.
Writes `<archive>.sha256`, `plugin.yaml` (the manifest with this archive's checksum, for
`kubectl krew install --manifest=OUTDIR/plugin.yaml --archive=OUTDIR/<archive>`) and `build-info.json` (what
was built from which sources), and prints the sha256.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NAME = "kubectl-gpudoctor"
MTIME = 315532800  # 1980-01-01: zip's epoch, and a fixed time keeps the tarball reproducible


def version() -> str:
    text = (ROOT / "kubectl_gpudoctor" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if not m:
        raise SystemExit("pack.py: no __version__ in kubectl_gpudoctor/__init__.py")
    return m.group(1)


def host_platform() -> tuple[str, str]:
    """(os, arch) in Go's names, which krew's selectors use."""
    system = {"linux": "linux", "darwin": "darwin", "windows": "windows"}.get(platform.system().lower())
    if system is None and sys.platform.startswith(("cygwin", "msys", "win")):
        system = "windows"
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if not system or not arch:
        raise SystemExit(f"pack.py: unsupported platform {platform.system()}/{platform.machine()}")
    return system, arch


def archive_name(ver: str, os_: str, arch: str) -> str:
    return f"{NAME}_{ver}_{os_}_{arch}" + (".zip" if os_ == "windows" else ".tar.gz")


def layout(os_: str) -> dict:
    """Top-level entries of the archive and the executable's path inside it (the manifest's `bin`)."""
    exe = ".exe" if os_ == "windows" else ""
    shim = "kubectl_complete-gpudoctor" + (".cmd" if os_ == "windows" else "")
    return {"dir": NAME, "bin": f"{NAME}/{NAME}{exe}", "license": "LICENSE", "shim": shim}


def stage(frozen: Path, dest: Path, os_: str) -> Path:
    lay = layout(os_)
    top = dest / "stage"
    top.mkdir(parents=True)
    # symlinks=False copies what a link points to (files and directories); a dangling link is an error.
    try:
        shutil.copytree(frozen, top / lay["dir"], symlinks=False)
    except (shutil.Error, OSError) as exc:  # e.g. a dangling symlink: nothing to dereference
        raise SystemExit(f"pack.py: cannot stage {frozen} without symlinks: {exc}")
    shutil.copy2(ROOT / "LICENSE", top / lay["license"])
    shutil.copy2(HERE / lay["shim"], top / lay["shim"])
    if os_ != "windows":
        for p in (top / lay["shim"], top / lay["bin"]):
            p.chmod(p.stat().st_mode | 0o755)
    bad = [str(p.relative_to(top)) for p in sorted(top.rglob("*"))
           if p.is_symlink() or not (p.is_file() or p.is_dir()) or ".." in p.relative_to(top).as_posix()]
    if bad:
        raise SystemExit("pack.py: entries krew cannot extract remain (symlink, special file or '..'): "
                         + ", ".join(bad[:10]))
    return top


def _entries(top: Path):
    yield from sorted((p for p in top.rglob("*")), key=lambda p: p.relative_to(top).as_posix())


def write_tar_gz(top: Path, out: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for p in _entries(top):
            rel = p.relative_to(top).as_posix()
            info = tar.gettarinfo(str(p), arcname=rel)
            if not (info.isreg() or info.isdir()):
                raise SystemExit(f"pack.py: {rel}: not a regular file or directory")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = MTIME
            info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
            if info.isreg():
                with open(p, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=MTIME, compresslevel=9) as gz:
        gz.write(buf.getvalue())


def write_zip(top: Path, out: Path) -> None:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for p in _entries(top):
            rel = p.relative_to(top).as_posix()
            mode = 0o755 if p.is_dir() or os.access(p, os.X_OK) or rel.endswith((".exe", ".cmd")) else 0o644
            info = zipfile.ZipInfo(rel + ("/" if p.is_dir() else ""), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = ((stat.S_IFDIR if p.is_dir() else stat.S_IFREG) | mode) << 16
            info.create_system = 3  # unix, so the mode bits above are honoured
            if p.is_dir():
                zf.writestr(info, b"")
            else:
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, p.read_bytes())


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def example_bundles() -> list:
    """The shipped example bundles (examples/<name>/ or examples/*.tgz); a test case until examples/ has one."""
    found = sorted(p for p in (ROOT / "examples").glob("*")
                   if (p.is_dir() and any((p / f).is_file() for f in ("objects.yaml", "bundle.yaml")))
                   or p.name.endswith(".tgz"))
    return found or [ROOT / "tests" / "cases" / "oom-killed" / "fail-startup-peak"]


def smoke_test(top: Path, os_: str, ver: str) -> None:
    """The staged binary must start, print its version and diagnose the example bundle (catches a freeze
    that lacks a module)."""
    exe = str(top / layout(os_)["bin"])
    res = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    if res.returncode != 0 or res.stdout.strip() != f"{NAME} {ver}":
        raise SystemExit(f"pack.py: smoke test failed: {exe} --version -> rc={res.returncode} "
                         f"out={res.stdout.strip()!r} err={res.stderr.strip()[-500:]!r}")
    bundle = example_bundles()[0]
    res = subprocess.run([exe, "--from", str(bundle), "-o", "json"], capture_output=True, text=True, timeout=120)
    try:
        kind = json.loads(res.stdout).get("kind")
    except ValueError:
        kind = None
    if res.returncode not in (0, 1) or kind not in ("PodDiagnosis", "NodeDiagnosis"):
        raise SystemExit(f"pack.py: smoke test failed: {exe} --from {bundle} -o json -> rc={res.returncode} "
                         f"err={res.stderr.strip()[-500:]!r}")


def source_digest() -> str:
    """sha256 over the files a freeze is made of (the package and the freeze recipe): tells whether an archive
    built earlier still matches the working tree."""
    h = hashlib.sha256()
    files = [p for p in (ROOT / "kubectl_gpudoctor").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    files += [HERE / "entry.py", HERE / "kubectl-gpudoctor.spec", HERE / "pack.py", ROOT / "LICENSE",
              HERE / "kubectl_complete-gpudoctor", HERE / "kubectl_complete-gpudoctor.cmd"]
    for p in sorted(files):
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:  # "\n" on Windows too: sha256sum-compatible
        f.write(text)


def build_archive(frozen: Path, out_dir: Path) -> Path:
    ver = version()
    os_, arch = host_platform()
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / archive_name(ver, os_, arch)
    with tempfile.TemporaryDirectory(prefix="gpudoctor-pack-") as tmp:
        top = stage(frozen, Path(tmp), os_)
        smoke_test(top, os_, ver)
        (write_zip if os_ == "windows" else write_tar_gz)(top, archive)
    digest = sha256_of(archive)
    _write(out_dir / (archive.name + ".sha256"), f"{digest}  {archive.name}\n")
    sys.path.insert(0, str(HERE))
    import manifest  # noqa: E402  (packaging/manifest.py)

    _write(out_dir / "plugin.yaml", manifest.render_file(f"v{ver}", manifest.local_checksums([archive])))
    info = {"archive": archive.name, "sha256": digest, "version": ver, "os": os_, "arch": arch,
            "source": source_digest()}
    _write(out_dir / "build-info.json", json.dumps(info, indent=2) + "\n")
    print(f"{digest}  {archive}")
    return archive


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version")
    sub.add_parser("platform")
    arc = sub.add_parser("archive")
    arc.add_argument("--frozen", required=True, type=Path, help="the PyInstaller onedir output")
    arc.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "version":
        print(version())
    elif args.cmd == "platform":
        print("_".join(host_platform()))
    else:
        build_archive(args.frozen, args.out)


if __name__ == "__main__":
    main()
