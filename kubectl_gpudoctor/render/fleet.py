"""The `nodes` report as text: a row per GPU node and resource, free GPUs by model, the nodes that cannot run GPU
pods by cause; within 80 columns (long names are cut with …); decides nothing."""
from __future__ import annotations

from typing import List, Optional

from ..safety.sanitize import inert
from .style import Style
from .wrap import fill

NODE_WIDTH, GPU_WIDTH = 24, 16


def _cut(text: Optional[str], width: int) -> str:
    text = inert(text or "-", False)
    return text if len(text) <= width else text[: width - 1] + "…"


def _gpu(row: dict) -> str:
    res = row["resource"]
    if res in ("nvidia.com/gpu", "amd.com/gpu") and row.get("model"):
        return row["model"]
    return res.split("/", 1)[-1]


def _state(row: dict) -> str:
    parts = ["Ready" if row["ready"] else "NotReady"]
    if row["cordoned"]:
        parts.append("cordoned")
    if row["taints"]:
        parts.append(f"{len(row['taints'])} taint(s)")
    if row["unhealthy"]:
        parts.append(f"{row['unhealthy']} unhealthy")
    if row["operatorFailing"]:
        parts.append(f"op {row['operatorFailing'][0].split(':')[0]}")
    return ",".join(parts)


def _table(headers: List[str], body: List[list]) -> str:
    from tabulate import tabulate
    return tabulate(body, headers=headers, tablefmt="plain", disable_numparse=True)


def to_text(report, color: bool = False, width: Optional[int] = None) -> str:
    s = Style(color)
    free = sum(g["schedulableFree"] for g in report.free)
    bad = sum(len(g["nodes"]) for g in report.unavailable)
    head = f"{report.gpu_nodes} GPU node(s), {free} free GPU(s) on schedulable nodes, {bad} with a critical problem"
    out = fill(f"{s(report.status, report.status.upper())}  {head}", "", min(width or 80, 80))
    if report.nodes:
        body = [[_cut(r["node"], NODE_WIDTH), _cut(_gpu(r), GPU_WIDTH), r["allocatable"],
                 "-" if r["requested"] is None else r["requested"], "-" if r["free"] is None else r["free"],
                 _cut(r.get("driver"), 10), _cut(_state(r), 22)] for r in report.nodes]
        out += ["", _table(["NODE", "GPU", "ALLOC", "USED", "FREE", "DRIVER", "STATE"], body)]
    if report.free:
        body = [[_cut(_gpu(dict(g, model=g["model"])), 22), g["nodes"], g["allocatable"],
                 f"{g['free']}+?" if g["unknownNodes"] else g["free"], g["largestFree"]] for g in report.free]
        out += ["", s("bold", "Free GPUs (LARGEST: the most one pod can get on one node):"),
                _table(["GPU", "NODES", "ALLOC", "FREE", "LARGEST"], body)]
    if report.unavailable:
        out += ["", s("bold", "Nodes with a critical problem, by root cause:")]
        for g in report.unavailable:
            shown = ", ".join(g["nodes"][:6]) + (f" and {len(g['nodes']) - 6} more" if len(g["nodes"]) > 6 else "")
            out.append(f"  {g['cause']} ({len(g['nodes'])}): {inert(shown, False)}")
        out.append("  See why: kubectl gpudoctor node <node>")
    if report.health:
        out += ["", s("bold", "GPU health:")] + [f"  {inert(h['summary'], False)} ({h['rule']})" for h in report.health[:20]]
    if report.gaps:
        out += ["", s("bold", "Could not read:")] + [f"  {inert(g['source'], False)}: {inert(g['reason'], False)}"
                                                     for g in report.gaps]
    return "\n".join(out) + "\n"
