"""The human report: headline, findings with severity words, Fix and snippet, gaps, next commands."""
from __future__ import annotations

from typing import List

from tabulate import tabulate

from ..sanitize import inert
from .style import Style

INDENT = "  "


def to_text(diag, color: bool = False, verbose: bool = False) -> str:
    s = Style(color)
    out: List[str] = []
    t = diag.target
    where = f"{t['kind']} {t['namespace']}/{t['name']}" if t.get("namespace") else f"{t['kind']} {t['name']}"
    if t["kind"] == "Pod" and t.get("node"):
        where += f" on {t['node']}"
    out.append(f"{s(diag.status, diag.status.upper())}  {inert(where, False)}  ({inert(diag.phase, False)})")
    cause = next((f for f in diag.findings if f.id == diag.root_cause), None)
    if cause:
        out.append(f"Root cause: {s('bold', inert(cause.title, False))} ({cause.id})")
    out.append(inert(diag.summary, False))
    for f in diag.findings:
        out.append("")
        out += _finding(f, s)
    for key, value in diag.extra.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            out += ["", s("bold", _heading(key)), _table(value)]
    out += [""] + _checks(diag, s, verbose)
    if diag.gaps:
        out += ["", s("bold", "Could not read:")]
        out += [f"{INDENT}{g['source']}: {g['reason']}" + (f" — {inert(g['detail'], False)}" if g.get("detail") else "")
                for g in diag.gaps]
    if diag.next_commands:
        out += ["", s("bold", "Next:")] + [f"{INDENT}{inert(c, False)}" for c in diag.next_commands]
    return "\n".join(out) + "\n"


def _finding(f, s) -> List[str]:
    lines = [f"{s(f.severity, '[' + f.severity.upper() + ']')} {s('bold', inert(f.title, False))} ({f.id})"]
    lines += [INDENT + inert(l, False) for l in f.message.splitlines() if l.strip()]
    if f.evidence:
        lines.append(f"{INDENT}Evidence:")
        for e in f.evidence:
            lines.append(f"{INDENT * 2}{e.source:<6} {s('dim', inert(e.ref, False))}")
            if e.text:
                lines.append(f"{INDENT * 3}{inert(e.text, False)}")
    if f.table:
        lines += [INDENT + row for row in _table(f.table).splitlines()]
    if f.remediation:
        lines.append(f"{INDENT}Fix: {inert(f.remediation, False)}")
    if f.snippet:
        lines += [INDENT * 3 + s("snippet", inert(l, False)) for l in f.snippet.splitlines()]
    lines.append(f"{INDENT}Docs: {f.docs}")
    return lines


def _table(rows: List[dict]) -> str:
    headers = list(rows[0].keys())
    body = [[inert("-" if r.get(h) is None else r.get(h), False) for h in headers] for r in rows]
    return tabulate(body, headers=[h.upper() for h in headers], tablefmt="plain")


def _heading(key: str) -> str:
    """camelCase key -> heading: gpuPods -> "GPU pods:"."""
    words, cur = [], ""
    for ch in key:
        if ch.isupper() and cur:
            words.append(cur)
            cur = ch.lower()
        else:
            cur += ch
    words.append(cur)
    words = [w.upper() if w in ("gpu", "mig", "rdma") else w for w in words]
    return (words[0][:1].upper() + words[0][1:] + " " + " ".join(words[1:])).strip() + ":"


def _checks(diag, s, verbose: bool) -> List[str]:
    counts = {}
    for c in diag.checks:
        counts[c.result] = counts.get(c.result, 0) + 1
    order = ("failed", "unknown", "passed", "not-applicable")
    line = "Checks: " + ", ".join(f"{counts[k]} {k.replace('-', ' ')}" for k in order if counts.get(k))
    out = [s("bold", line)]
    shown = {"unknown"} | ({"passed", "not-applicable", "failed"} if verbose else set())
    for c in diag.checks:
        if c.result in shown:
            reason = f"  {inert(c.reason, False)}" if c.reason else ""
            out.append(f"{INDENT}{s(c.result, f'{c.result:<14}')} {c.id}{reason}")
    return out
