"""Writes evidence as a shareable bundle (objects.yaml, logs/, bundle.yaml; .tgz or directory); secrets redacted."""
from __future__ import annotations

import io
import os
import tarfile
import time

import yaml

from .. import __version__
from ..evidence import Evidence
from ..kube.names import safe_segment
from ..safety.redact import for_bundle, masked
from .load import log_path, write_bundle_meta


class BundleError(Exception):
    """The bundle cannot be written where asked (exit 2)."""


def files(ev: Evidence) -> dict:
    """path -> text of every file in the bundle; logs whose names cannot be a path inside it are left out."""
    objects = [for_bundle(o) for kind in sorted(ev.objects) for o in ev.objects[kind]]
    out = {"bundle.yaml": yaml.safe_dump(write_bundle_meta(ev, f"kubectl-gpudoctor {__version__}"), sort_keys=False),
           "objects.yaml": yaml.safe_dump_all(objects, sort_keys=False, allow_unicode=True)}
    for key, text in sorted(ev.logs.items()):
        if all(safe_segment(part) for part in key[:3]):   # a name like "../x" from a server never becomes a path
            out[log_path(key)] = masked(text)
    from . import metrics
    out.update(metrics.files(ev))   # dcgm-exporter's metric text: GPU numbers and UUIDs, no credentials
    return out


def write(ev: Evidence, dest: str) -> str:
    """Write to `dest`: a .tgz/.tar.gz archive (one top directory) or a directory; returns the path. A place
    that cannot be written (a missing parent, a file in the way, no permission) is a one-line error (exit 2)."""
    contents = files(ev)
    try:
        return _write_archive(ev, dest, contents) if dest.endswith((".tgz", ".tar.gz")) else _write_dir(dest, contents)
    except OSError as exc:
        raise BundleError(f"-f {dest}: cannot write the bundle there ({exc.strerror or exc})") from None


def _write_archive(ev: Evidence, dest: str, contents: dict) -> str:
    parent = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(parent):
        raise BundleError(f"-f {dest}: directory {parent} does not exist")
    top = f"gpudoctor-{ev.target.name}" if safe_segment(ev.target.name) else "gpudoctor-bundle"
    with tarfile.open(dest, "w:gz") as tar:
        for path, text in contents.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
    return dest


def _write_dir(dest: str, contents: dict) -> str:
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise BundleError(f"-f {dest}: exists and is not a directory (name a .tgz or a directory)")
    root = os.path.realpath(dest)
    for path, text in contents.items():
        full = os.path.join(root, path)
        # a symlink already inside DEST must not carry a write elsewhere either
        if not os.path.realpath(full).startswith(root + os.sep):
            raise BundleError(f"-f {dest}: refusing to write {path} outside the directory")
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    return dest
