"""The human report: headline, findings with severity words, Fix and snippet, gaps, next commands."""
from __future__ import annotations

from typing import List, Optional

from ..safety.sanitize import inert
from .style import Style
from .wrap import fill

INDENT = "  "


def to_text(diag, color: bool = False, verbose: bool = False, width: Optional[int] = None) -> str:
    s = Style(color)
    out: List[str] = []
    t = diag.target
    where = f"{t['kind']} {t['namespace']}/{t['name']}" if t.get("namespace") else f"{t['kind']} {t['name']}"
    if t["kind"] == "Pod" and t.get("node"):
        where += f" on {t['node']}"
    out.append(f"{s(diag.status, diag.status.upper())}  {inert(where, False)}  ({inert(diag.phase, False)})")
    cause = next((f for f in diag.findings if diag.root_cause in (f.id, f.cause)), None)
    if cause:
        out.append(f"Root cause: {s('bold', inert(cause.title, False))} ({diag.root_cause})")
    out += fill(inert(diag.summary, False), "", width)
    also = [f.id for f in diag.findings if f is not cause and f.severity in ("critical", "warning")]
    if also:
        out.append(f"Contributing: {', '.join(also)}")
    for f in diag.findings:
        out.append("")
        out += _finding(f, s, width)
    for key, value in diag.extra.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            out += ["", s("bold", _heading(key)), _table(value)]
    out += _members(diag, s, verbose, width)
    out += [""] + _checks(diag, s, verbose)
    out += _internal(diag, s)
    if diag.gaps:
        out += ["", s("bold", "Could not read:")]
        out += [f"{INDENT}{inert(g['source'], False)}: {inert(g['reason'], False)}" + (f" — {inert(g['detail'], False)}" if g.get("detail") else "")
                for g in diag.gaps]
    if diag.next_commands:
        out += ["", s("bold", "Next:")] + [f"{INDENT}{inert(c, False)}" for c in diag.next_commands]
    return "\n".join(out) + "\n"


def _finding(f, s, width: Optional[int] = None) -> List[str]:
    lines = [f"{s(f.severity, '[' + f.severity.upper() + ']')} {s('bold', inert(f.title, False))} ({f.id})"]
    lines += [w for l in f.message.splitlines() if l.strip() for w in fill(inert(l, False), INDENT, width)]
    if f.evidence:
        lines.append(f"{INDENT}Evidence:")
        for e in f.evidence:
            lines.append(f"{INDENT * 2}{e.source:<6} {s('dim', inert(e.ref, False))}")
            if e.text:
                lines += fill(inert(e.text, False), INDENT * 3, width)
    if f.table:
        lines += [INDENT + row for row in _table(f.table).splitlines()]
    if f.remediation:
        lines += fill(inert(f.remediation, False), f"{INDENT}Fix: ", width, INDENT * 2)
    if f.snippet:
        lines += [INDENT * 3 + s("snippet", inert(l, False)) for l in f.snippet.splitlines()]
    lines.append(f"{INDENT}Docs: {f.docs}")
    return lines


def _table(rows: List[dict]) -> str:
    from tabulate import tabulate   # loads importlib.metadata, html, zipfile: only for a report that has a table
    headers = list(rows[0].keys())
    body = [[inert("-" if r.get(h) is None else r.get(h), False) for h in headers] for r in rows]
    # Only columns of numbers align as numbers: a string like CUDA "11.0" or "1.50" prints as written.
    text_columns = [i for i, h in enumerate(headers)
                    if any(not isinstance(r.get(h), (int, float, type(None))) for r in rows)]
    return tabulate(body, headers=[h.upper() for h in headers], tablefmt="plain", disable_numparse=text_columns)


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


def _internal(diag, s) -> List[str]:
    """Checks whose rule raised: a bug in the tool, listed so that no one reads the rest as a full verdict."""
    broken = [c for c in diag.checks if getattr(c, "internal", False)]
    if not broken:
        return []
    out = ["", s("critical", "Internal failures (a bug in kubectl gpudoctor; rerun with GPUDOCTOR_DEBUG=1 and report it):")]
    return out + [f"{INDENT}{c.id}: {inert(c.reason, False)}" for c in broken]


def _members(diag, s, verbose: bool, width: Optional[int] = None) -> List[str]:
    """A workload's failing pods: the full report of the first pod of each distinct root cause."""
    shown, out = set(), []
    for m in diag.members:
        if m.status == "healthy" or m.root_cause in shown:
            continue
        shown.add(m.root_cause)
        same = sum(1 for x in diag.members if x.root_cause == m.root_cause and x.status != "healthy")
        note = f" (and {same - 1} more pod(s) with the same root cause)" if same > 1 else ""
        out += ["", s("bold", f"── pod {inert(m.target['name'], False)}{note} ──")]
        out += to_text(m, color=s.color, verbose=verbose, width=width).rstrip("\n").splitlines()
    return out


def masked_note(count: int) -> str:
    """Says that values were masked, so a reader knows the <redacted:…> markers are the tool's, not the cluster's."""
    if not count:
        return ""
    return (f"\nMasked: {count} value(s) shaped like credentials (tokens, keys, passwords in URLs) are shown as "
            f"<redacted:…>; see README, Redaction.\n")


def scan_text(report, color: bool = False, verbose: bool = False) -> str:
    from ..report import scan_rows, target_ref
    s = Style(color)
    pods = [d for d in report.items if d.target["kind"] == "Pod"]
    workloads = len(report.items) - len(pods)
    out = [f"{s(report.status, report.status.upper())}  {inert(report.scope, False)}: {report.gpu_pods} GPU pod(s), "
           f"{sum(1 for d in pods if d.status != 'healthy')} not healthy"
           + (f"; {workloads} GPU workload(s) whose pods are missing, refused or failed" if workloads else "")]
    if report.items:
        out += ["", _table(scan_rows(report.items))]
        out += ["", s("bold", "By root cause:")]
        out += [f"{INDENT}{cause:<32} {n}" for cause, n in report.by_root_cause.items()]
        out += ["", s("bold", "Next:")]
        out += [f"{INDENT}kubectl gpudoctor {inert(target_ref(d), False)} -n {inert(d.target['namespace'], False)}"
                for d in report.items[:10]]
    if report.gaps:
        out += ["", s("bold", "Could not read:")]
        out += [f"{INDENT}{inert(g['source'], False)}: {inert(g['reason'], False)}" + (f" — {inert(g['detail'], False)}" if g.get("detail") else "")
                for g in report.gaps]
    return "\n".join(out) + "\n"
