"""dcgm-exporter metric text saved in a bundle (`metrics/<namespace>/<pod>.prom`), read within bounds and written
back; never parsed here (gpu/dcgm.py does)."""
from __future__ import annotations

import os
from typing import Dict, Tuple

from ..evidence import Evidence
from ..gpu.dcgm import MAX_METRICS_BYTES, SOURCE
from ..kube.names import safe_segment
from .files import regular

DIR, SUFFIX = "metrics", ".prom"


def path(ns: str, pod: str) -> str:
    return os.path.join(DIR, ns, pod + SUFFIX)


def read(root: str) -> Dict[Tuple[str, str], str]:
    """(namespace, pod) -> metric text, for every regular .prom file under metrics/ (each cut at the live bound)."""
    out: Dict[Tuple[str, str], str] = {}
    base = os.path.join(root, DIR)
    if not os.path.isdir(base):
        return out
    for ns in sorted(os.listdir(base)):
        ns_dir = os.path.join(base, ns)
        if not os.path.isdir(ns_dir):
            continue
        for fname in sorted(os.listdir(ns_dir)):
            full = os.path.join(ns_dir, fname)
            if not fname.endswith(SUFFIX) or not os.path.isfile(full):
                continue
            regular(full)
            with open(full, "rb") as f:
                out[(ns, fname[: -len(SUFFIX)])] = f.read(MAX_METRICS_BYTES).decode("utf-8", errors="replace")
    return out


def attach(ev: Evidence, root: str) -> Evidence:
    """Saved metrics into the evidence: a bundle that holds them read the exporter's metrics."""
    found = read(root)
    if found:
        ev.metrics.update(found)
        ev.mark_read(SOURCE)
        ev.gaps.pop(SOURCE, None)
    return ev


def files(ev: Evidence) -> Dict[str, str]:
    """bundle path -> text of each metrics read (names that cannot be a path are left out)."""
    return {path(ns, pod): text for (ns, pod), text in sorted(ev.metrics.items())
            if safe_segment(ns) and safe_segment(pod)}
