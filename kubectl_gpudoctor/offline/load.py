"""Builds evidence from saved files (bundle dir or .tgz, `kubectl get -o yaml|json`, cluster-info dump); never the network."""
from __future__ import annotations

import json
import os
import tarfile
import tempfile
from collections import deque
from typing import Dict, Iterator, List, Optional, Tuple

import yaml

from ..evidence import KNOWN_SOURCES, Evidence, Gap, Target, source_of
from ..kube import podstate
from ..kube import shapes as kshapes
from ..kube.timeutil import format_time, parse_time
from ..safety.redact import remember_names
from . import shapes
from .files import MAX_ARCHIVE_BYTES, MAX_ARCHIVE_MEMBERS, MAX_FILE_BYTES, OfflineError, check_archive, plain_tree, read_tail, read_text, regular
from .. import lazyre

LOG_SUFFIX, PREVIOUS_SUFFIX = ".log", ".previous.log"
_DUMP_BEGIN = lazyre.compile(r"^==== START logs for container (\S+) of pod ([^/\s]+)/(\S+) ====$")
_DUMP_END = lazyre.compile(r"^==== END logs for container \S+ of pod \S+ ====$")
# What `kubectl cluster-info dump` writes; everything else a check needs is not in such a dump.
_DUMP_SOURCES = {"nodes", "pods", "events", "pods/log", "daemonsets", "deployments", "replicasets",
                 "replicationcontrollers", "services"}


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's fast safe loader, keeping timestamps as strings as the API's JSON has them."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _Loader.yaml_implicit_resolvers.items()}


def load(path: str, kind: str = "Pod", name: Optional[str] = None, namespace: Optional[str] = None,
         tail: int = 80) -> Evidence:
    if path == "-":
        path = _stdin_file()
    if not os.path.exists(path):
        raise OfflineError(f"--from {path}: no such file or directory")
    if os.path.isfile(path) and (path.endswith((".tgz", ".tar.gz"))):
        with tempfile.TemporaryDirectory(prefix="gpudoctor-") as tmp:
            _extract(path, tmp)
            root = _single_subdir(tmp)
            return load(root, kind, name, namespace, tail)
    if os.path.isdir(path):
        from . import mustgather   # the GPU Operator's must-gather directory
        if os.path.exists(os.path.join(path, "nodes.json")) and not os.path.exists(os.path.join(path, "bundle.yaml")):
            objects, logs, meta = _read_dump(path, tail)
        elif mustgather.is_mustgather(path):
            objects, logs, meta = mustgather.read(path, _read_objects, tail)
        else:
            objects, logs, meta = _read_bundle(path, tail)
    else:
        objects, logs, meta = _read_objects(path), {}, {}
    shapes.check_meta(meta, path)   # a malformed bundle.yaml is a usage error naming the field, not a crash
    ev = _evidence(objects, logs, meta, kind, name, namespace, tail)
    if os.path.isdir(path):
        from . import metrics   # dcgm-exporter metrics a bundle saved
        metrics.attach(ev, path)
    return ev


_STDIN: List[str] = []


def _stdin_file() -> str:
    """`--from -`: standard input (`kubectl get … -o yaml|json`, or a bundle .tgz) saved once to a private temporary
    file, removed at exit."""
    if not _STDIN:
        import atexit
        import sys
        data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)   # bounded: `--from - < /dev/zero` ends
        if len(data) > MAX_FILE_BYTES:
            raise OfflineError(f"--from -: more than {MAX_FILE_BYTES // (1024 * 1024)} MiB on standard input; too large")
        if not data.strip():
            raise OfflineError("--from -: standard input is empty (pipe `kubectl get … -o yaml` or a bundle .tgz into it)")
        fd, tmp = tempfile.mkstemp(prefix="gpudoctor-stdin-", suffix=".tgz" if data[:2] == b"\x1f\x8b" else ".yaml")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        atexit.register(os.unlink, tmp)
        _STDIN.append(tmp)
    return _STDIN[0]


def saved_target(path: str) -> Optional[dict]:
    """The target a bundle was written for (bundle.yaml's `target`), or None; reads nothing else."""
    if path == "-":
        path = _stdin_file()
    if os.path.isdir(path):
        meta = os.path.join(path, "bundle.yaml")
        doc = _load_one(meta) if os.path.isfile(meta) else None
    elif os.path.isfile(path) and path.endswith((".tgz", ".tar.gz")):
        doc = _bundle_meta_in(path)
    else:
        return None
    target = doc.get("target") if isinstance(doc, dict) else None
    return target if isinstance(target, dict) else None


def _find_bundle_meta(tar):
    """bundle.yaml's header, read header by header within the archive bounds: a bomb is load()'s to refuse,
    not something to inflate here."""
    total = 0
    for _, m in zip(range(MAX_ARCHIVE_MEMBERS), iter(tar.next, None)):
        if m.isfile() and os.path.basename(m.name) == "bundle.yaml" and m.name.count("/") <= 1:
            return m if m.size <= 1024 * 1024 else None
        total += m.size
        if total > MAX_ARCHIVE_BYTES:
            return None
    return None


def _bundle_meta_in(archive: str) -> Optional[dict]:
    try:
        with tarfile.open(archive, "r:*") as tar:
            member = _find_bundle_meta(tar)
            if member is None:
                return None
            doc = yaml.load(tar.extractfile(member).read().decode("utf-8", "replace"), Loader=_Loader)
    except (tarfile.TarError, OSError, EOFError, yaml.YAMLError, RecursionError):
        return None   # load() says what is wrong with it
    return doc if isinstance(doc, dict) else None


# --- readers -------------------------------------------------------------------

def _read_bundle(root: str, tail: int = 80):
    meta = {}
    objects: List[dict] = []
    for fname in sorted(os.listdir(root)):
        full = os.path.join(root, fname)
        if fname == "bundle.yaml":
            meta = _load_one(full) or {}
            if not isinstance(meta, dict):
                raise OfflineError(f"{full}: bundle.yaml must be a mapping")
        elif fname.endswith((".yaml", ".yml", ".json")) and not fname.startswith(".") and os.path.isfile(full):
            objects += _read_objects(full)
    logs = {}
    log_root = os.path.join(root, "logs")
    if os.path.isdir(log_root):
        # logs/<namespace>/<pod>/<container>.log: anything else in that tree (a file where a directory belongs,
        # a directory named like a log) is not a log and is left out, as a log that cannot be read is
        for ns in _subdirs(log_root):
            for pod in _subdirs(os.path.join(log_root, ns)):
                pod_dir = os.path.join(log_root, ns, pod)
                for fname in sorted(os.listdir(pod_dir)):
                    previous = fname.endswith(PREVIOUS_SUFFIX)
                    if not fname.endswith(LOG_SUFFIX):
                        continue
                    container = fname[: -len(PREVIOUS_SUFFIX if previous else LOG_SUFFIX)]
                    # only the tail, as live reads it: a saved log may be gigabytes (or a FIFO, skipped)
                    text = read_tail(os.path.join(pod_dir, fname), _tail_lines(meta, tail))
                    if text is not None:
                        logs[(ns, pod, container, previous)] = text
    if not objects:
        raise OfflineError(f"--from {root}: no Kubernetes objects found (expected objects.yaml or *.json)")
    return objects, logs, meta


def _subdirs(path: str) -> List[str]:
    try:
        return [d for d in sorted(os.listdir(path)) if os.path.isdir(os.path.join(path, d))]
    except OSError as exc:
        raise OfflineError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _tail_lines(meta: dict, tail: int) -> int:
    value = meta.get("tailLines") if isinstance(meta, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 100_000 else tail


def _read_dump(root: str, tail: int = 80):
    objects: List[dict] = []
    logs = {}
    for dirpath, _, files in os.walk(root):
        for fname in files:
            full = os.path.join(dirpath, fname)
            if fname.endswith(".json"):
                objects += _read_objects(full)
            elif fname == "logs.txt":
                logs.update(_split_dump_logs(full, tail))
    return objects, logs, {"sources": sorted(_DUMP_SOURCES)}


def _split_dump_logs(path: str, tail: int = 80) -> Dict[tuple, str]:
    """Each container's log tail (the last `tail` lines, lines cut at 64 KiB), streamed, never held whole."""
    regular(path)
    out, key, buf = {}, None, deque(maxlen=tail)
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in iter(lambda: f.readline(65536), ""):
            begin = _DUMP_BEGIN.match(line.rstrip("\n"))
            if begin:
                key, buf = (begin.group(2), begin.group(3), begin.group(1), False), deque(maxlen=tail)
            elif _DUMP_END.match(line.rstrip("\n")) and key:
                out[key] = "".join(buf)
                key = None
            elif key:
                buf.append(line)
    return out


def _load_one(path: str):
    docs = list(_docs(path))
    return docs[0] if docs else None


def _docs(path: str) -> Iterator:
    try:
        text = read_text(path)
        if path.endswith(".json") or text.lstrip().startswith(("{", "[")):
            docs = [json.loads(text)]
        else:
            docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except RecursionError:
        raise OfflineError(f"{path}: nested too deeply to be a Kubernetes object") from None
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OfflineError(f"{path}: not valid YAML/JSON ({first})") from None
    for doc in docs:
        plain_tree(doc, path)
        yield doc


def _read_objects(path: str) -> List[dict]:
    out: List[dict] = []
    for doc in _docs(path):
        if not isinstance(doc, dict):
            raise OfflineError(f"{path}: expected Kubernetes objects, found {type(doc).__name__}")
        out += list(_flatten(doc))
    return out


def _flatten(doc: dict) -> Iterator[dict]:
    """Objects of a document: the object itself, or the items of a v1 List / *List."""
    kind = doc.get("kind") or ""
    if "items" in doc and kind.endswith("List"):
        item_kind = kind[:-4] if kind != "List" else None
        for item in doc.get("items") or []:
            if isinstance(item, dict):
                if item_kind and not item.get("kind"):
                    item = dict(item, kind=item_kind)
                yield from _flatten(item)
    elif doc.get("apiVersion") and kind:
        yield doc


def _extract(archive: str, dest: str) -> None:
    try:
        with tarfile.open(archive, "r:*") as tar:
            check_archive(tar, archive, dest)
            # members checked above: regular files and directories inside dest, bounded in number and size
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, filter="data")
            else:
                tar.extractall(dest)
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise OfflineError(f"--from {archive}: not a readable .tgz ({exc})") from None


def _single_subdir(path: str) -> str:
    entries = [e for e in os.listdir(path) if not e.startswith(".")]
    if len(entries) == 1 and os.path.isdir(os.path.join(path, entries[0])):
        return os.path.join(path, entries[0])
    return path


# --- evidence ------------------------------------------------------------------

def _evidence(objects, logs, meta, kind, name, namespace, tail) -> Evidence:
    # an object without a name cannot be the target, nor be told apart from others: dropped before the target
    # is chosen; every other malformed object is dropped (the target: its malformed fields) once it is known
    nameless = [(o, p) for o in objects for p in [kshapes.nameless(o)] if p]
    if nameless:
        skip = {id(o) for o, _ in nameless}
        objects = [o for o in objects if id(o) not in skip]
    try:
        target = _target(objects, meta, kind, name, namespace)
    except OfflineError as exc:
        if not nameless:
            raise
        n = len(nameless)
        raise OfflineError(f"{exc} ({n} object{'s' if n > 1 else ''} skipped: {nameless[0][1][1]})") from None
    ev = Evidence(target=target, logs=logs, tail_lines=int(meta.get("tailLines") or tail))
    for obj, (_, problem) in nameless:
        kshapes.note(ev, source_of(obj.get("kind") or "?"), "1 object skipped: " + problem)
    seen = set()
    for obj in objects:   # what Evidence.add does, in one pass: thousands of saved pods stay linear
        obj = kshapes.screened(ev, obj, obj.get("kind"))
        if obj is None:
            continue
        remember_names(obj)   # names are never masked as secrets in reports and bundles
        m = obj.get("metadata") or {}
        key = (obj.get("kind"), m.get("namespace"), m.get("name"), m.get("uid"))
        if obj.get("kind") and key not in seen:
            seen.add(key)
            ev.objects.setdefault(obj["kind"], []).append(obj)
    ev.collected_at = parse_time(meta.get("collectedAt"))
    if "sources" in meta:
        ev.sources = set(meta["sources"] or [])
    elif meta.get("kind") == "Bundle":
        ev.sources = set(KNOWN_SOURCES)   # a complete snapshot: what is not here does not exist
    else:
        ev.sources = {source_of(k) for k in ev.objects}
        if logs:
            ev.sources.add("pods/log")
        others = [o for o in ev.all("Pod") if (o.get("metadata") or {}).get("name") != target.name]
        ev.pod_nodes = {(o.get("spec") or {}).get("nodeName") for o in others} - {None}
    if meta.get("podNodes") is not None:
        ev.pod_nodes = set(meta["podNodes"])
    ev.stack_only = bool(meta.get("stackOnly"))
    for g in meta.get("gaps") or []:
        gap = Gap(g.get("source", "?"), g.get("reason", "error"), g.get("detail", ""), g.get("verb", "get"),
                  g.get("namespace"))   # the one namespace whose read it was, when it names one
        if isinstance(g.get("key"), str) and g["key"].startswith(gap.source + "#"):
            ev.gaps.setdefault(g["key"], gap)   # a gap kept apart from its source's (e.g. other pods' logs)
        else:
            ev.add_gap(gap)
    for ref in meta.get("absent") or []:
        ev.absent[ref] = "404 when collected"
    if ev.pod is not None and podstate.never_ran(ev.pod):
        ev.sources.add("pods/log")   # no container has run: there is no log to lack
    skipped = set(meta.get("notCollected") or ())   # deliberately not read (not needed for that target)
    for src in KNOWN_SOURCES:
        if src not in ev.sources and src not in ev.gaps and src not in skipped:
            ev.add_gap(Gap(src, "not-in-bundle", "", "get"))
    if ev.collected_at is None:   # the clock of saved files is fixed: find the newest timestamp once, not per check
        ev.collected_at = ev.now()
    return ev


def _target(objects, meta, kind, name, namespace) -> Target:
    if kind == "Scan":   # every pod of the input, no single target
        return Target("Scan", "", namespace)
    wanted = [o for o in objects if o.get("kind") == kind]
    t = meta.get("target") or {}
    if not name and t.get("kind", kind) == kind and t.get("name"):
        name, namespace = t["name"], namespace or t.get("namespace")
    if not name:
        if len(wanted) == 1:
            m = wanted[0]["metadata"]
            return Target(kind, m.get("name"), _namespace(m))
        names = ", ".join(sorted(_ref(o) for o in wanted)[:10]) or "none"
        raise OfflineError(f"--from holds {len(wanted)} {kind}s ({names}); name one")
    matches = [o for o in wanted if o["metadata"].get("name") == name
               and (namespace is None or kind == "Node" or o["metadata"].get("namespace") == namespace)]
    if not matches:
        where = f" in namespace {namespace}" if namespace and kind != "Node" else ""
        raise OfflineError(f'{kind.lower()} "{name}" not found in the --from input{where}')
    if len(matches) > 1:
        raise OfflineError(f'{kind.lower()} "{name}" exists in several namespaces of the input; pass -n')
    m = matches[0]["metadata"]
    return Target(kind, m.get("name"), _namespace(m))


def _namespace(meta: dict):
    ns = meta.get("namespace")
    return ns if isinstance(ns, str) else None   # a malformed one is the shape checks' to report


def _ref(obj: dict) -> str:
    m = obj.get("metadata") or {}
    return f"{m['namespace']}/{m.get('name')}" if m.get("namespace") else str(m.get("name"))


def write_bundle_meta(ev: Evidence, tool: str) -> dict:
    """bundle.yaml for a bundle written from live evidence (read back by this module)."""
    return {"apiVersion": "gpudoctor/v1", "kind": "Bundle", "tool": tool,
            "collectedAt": format_time(ev.now()),
            "target": {"kind": ev.target.kind, "namespace": ev.target.namespace, "name": ev.target.name},
            "sources": sorted(ev.sources), "podNodes": sorted(ev.pod_nodes) if ev.pod_nodes is not None else None,
            "tailLines": ev.tail_lines, "gaps": [dict(g.to_dict(), verb=g.verb, **({"key": k} if k != g.source else {}))
                                                  for k, g in ev.gaps.items()],
            # read neither successfully nor with an error: the collector did not need them for this target, so a
            # replay reports them as live does (not collected), not as missing from the bundle
            "notCollected": sorted(set(KNOWN_SOURCES) - ev.sources - set(ev.gaps)),
            "absent": sorted(ev.absent)}


def log_path(key: Tuple[str, str, str, bool]) -> str:
    """Where a log lives inside a bundle directory."""
    ns, pod, container, previous = key
    return os.path.join("logs", ns, pod, container + (PREVIOUS_SUFFIX if previous else LOG_SUFFIX))
