"""Reads saved files within bounds: regular files only, capped sizes, log tails, archives checked before they are
extracted, and YAML without aliases; never follows a device, a FIFO or a bomb."""
from __future__ import annotations

import os
import stat
import tarfile
from typing import Optional

MAX_FILE_BYTES = 256 * 1024 * 1024       # one objects file (a cluster-info dump of a large cluster stays below)
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024    # everything a .tgz may extract to
MAX_ARCHIVE_MEMBERS = 50_000
LOG_TAIL_BYTES = 256 * 1024              # what the live path asks the kubelet for (limitBytes)
MAX_DEPTH = 100                          # nesting of a document; real objects stay under 20
MAX_NODES = 20_000_000                   # values in a document once aliases are expanded


class OfflineError(Exception):
    """The input cannot be read as evidence (a usage error: exit 2)."""


def regular(path: str, what: Optional[str] = None) -> os.stat_result:
    """stat of a regular file, or OfflineError: a device (/dev/zero), a FIFO or a socket is never opened."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise OfflineError(f"{what or path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise OfflineError(f"{what or path}: not a regular file (a device, FIFO or socket is not read)")
    return st


def read_text(path: str) -> str:
    """A whole objects file, if it is regular and not larger than MAX_FILE_BYTES."""
    if regular(path).st_size > MAX_FILE_BYTES:
        raise OfflineError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; too large to be read as objects")
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OfflineError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; too large to be read as objects")
    return data.decode("utf-8")


def read_tail(path: str, lines: int) -> Optional[str]:
    """The last `lines` lines of a log within its last LOG_TAIL_BYTES, as the live path reads it; None if the
    file is not regular (skipped, like an unreadable log)."""
    try:
        size = regular(path).st_size
    except OfflineError:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(max(0, size - LOG_TAIL_BYTES))
            data = f.read(LOG_TAIL_BYTES)
    except OSError:   # unreadable (permissions): skipped like a log that is not there
        return None
    text = data.decode("utf-8", errors="replace")
    if size > LOG_TAIL_BYTES and "\n" in text:
        text = text.split("\n", 1)[1]           # the first line was cut by the byte bound
    kept = text.splitlines(keepends=True)
    return "".join(kept[-lines:]) if lines > 0 else ""


def check_archive(tar: tarfile.TarFile, archive: str, dest: str) -> None:
    """Refuse links, devices, paths leaving `dest`, too many members or too many bytes, reading headers one by
    one (a gzip bomb is refused at its first header, not after it was inflated)."""
    total, count, root = 0, 0, os.path.realpath(dest)
    for member in iter(tar.next, None):
        count += 1
        total += member.size
        target = os.path.realpath(os.path.join(dest, member.name))
        if not (member.isfile() or member.isdir()) or not target.startswith(root + os.sep):
            raise OfflineError(f"{archive}: refusing unsafe archive member {member.name!r}")
        if total > MAX_ARCHIVE_BYTES or count > MAX_ARCHIVE_MEMBERS:
            raise OfflineError(f"{archive}: extracts to more than {MAX_ARCHIVE_BYTES // (1024 * 1024)} MiB or "
                               f"{MAX_ARCHIVE_MEMBERS} files; too large for a bundle")


def plain_tree(doc, path: str) -> None:
    """Refuse documents that expand to more than MAX_NODES nodes once YAML aliases are followed (an alias bomb
    is a few hundred bytes that expand to billions), or nest deeper than MAX_DEPTH; linear (null list items
    and other malformed fields are kube/shapes.py's, object by object)."""
    sizes = {}   # id -> expanded size, for containers reached more than once through aliases
    open_ = set()   # containers being expanded: meeting one again inside itself is a cycle
    stack = [(doc, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        if not isinstance(node, (dict, list)) or (not done and id(node) in sizes):
            continue
        children = [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, (dict, list))]
        if done:
            open_.discard(id(node))
            sizes[id(node)] = 1 + len(node) + sum(sizes.get(id(c), 0) for c in children)
            if sizes[id(node)] > MAX_NODES:
                raise OfflineError(f"{path}: expands to more than {MAX_NODES:,} values (YAML aliases?); "
                                   "not a Kubernetes object")
            continue
        if depth > MAX_DEPTH or id(node) in open_:
            raise OfflineError(f"{path}: nested deeper than {MAX_DEPTH} levels or recursive; not a Kubernetes object")
        open_.add(id(node))
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children)
