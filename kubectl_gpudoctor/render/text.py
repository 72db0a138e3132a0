"""The human report: headline, findings with severity words, Fix and snippet, gaps, next commands; fitted to the
terminal's width when there is one (render/wrap.py), every line whole when there is none (a pipe, -o wide)."""
from __future__ import annotations

from typing import List, Optional

from ..safety.sanitize import inert
from .style import Style
from .table import table
from .wrap import command, cut, fill, width_of

INDENT = "  "
HANG = INDENT * 2     # the later lines of a wrapped headline, title or paragraph
# A snippet line starting with one of these is a shell command (continued with ` \`); any other snippet line
# (YAML) is printed as written, however wide, so that it pastes into a manifest unchanged.
COMMANDS = ("kubectl ", "helm ", "nvidia-smi", "sudo ", "curl ", "oc ")
SCAN_PODS = 5         # pods listed per root cause in a scan; the rest are counted ("and 14 more: -o wide")


def to_text(diag, color: bool = False, verbose: bool = False, width: Optional[int] = None) -> str:
    if diag.kind == "WorkloadDiagnosis":
        return workload_text(diag, color, verbose, width)
    s = Style(color)
    out = _head(diag, _cause(diag), s, width)
    for f in diag.findings:
        out.append("")
        out += _finding(f, s, width)
    for key, value in diag.extra.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            out += ["", s("bold", _heading(key))] + table_lines(value, width)
    out += [""] + _checks(diag.checks, s, verbose, width)
    out += _internal(diag.checks, s, width)
    out += _gaps(diag.gaps, s, width)
    out += _next(diag.next_commands, s, width)
    return "\n".join(out) + "\n"


def _cause(diag):
    """The root cause's finding: the target's own, else (a workload) that of the first pod it came from."""
    # an umbrella finding whose evidence names a more specific cause (its `cause`) stands for that cause
    found = next((f for f in diag.findings if diag.root_cause in (f.id, f.cause)), None)
    for m in diag.members:
        if found is None and m.root_cause == diag.root_cause:
            found = next((f for f in m.findings if diag.root_cause in (f.id, f.cause)), None)
    return found


def _head(diag, cause, s, width) -> List[str]:
    t = diag.target
    where = f"{t['kind']} {t['namespace']}/{t['name']}" if t.get("namespace") else f"{t['kind']} {t['name']}"
    if t["kind"] == "Pod" and t.get("node"):
        where += f" on {t['node']}"
    out = fill(f"{s(diag.status, diag.status.upper())}  {inert(where, False)}  ({inert(diag.phase, False)})", "",
               width, HANG)
    if cause:
        key = diag.root_cause or cause.id
        out += fill(f"Root cause: {s('bold', inert(_title(cause, key), False))} ({key})", "", width, HANG)
    out += fill(inert(diag.summary, False), "", width, INDENT)
    also = [f.id for f in diag.findings if f is not cause and f.severity in ("critical", "warning")]
    if also:
        out += fill(f"Contributing: {', '.join(also)}", "", width, HANG)
    return out


def _finding(f, s, width: Optional[int] = None) -> List[str]:
    lines = fill(f"{s(f.severity, '[' + f.severity.upper() + ']')} {s('bold', inert(f.title, False))} ({f.id})", "",
                 width, HANG)
    lines += [w for l in f.message.splitlines() if l.strip() for w in fill(inert(l, False), INDENT, width)]
    if f.evidence:
        lines.append(f"{INDENT}Evidence:")
        for e in f.evidence:
            lines.append(cut(f"{e.source:<6} {s('dim', inert(e.ref, False))}", INDENT * 2, width))
            if e.text:   # quoted: cut to one line (whole in -o json and -o wide), never reflowed
                lines.append(cut(inert(e.text, False), INDENT * 3, width))
    if f.table:
        lines += table_lines(f.table, width, INDENT)
    if f.remediation:
        lines += fill(inert(f.remediation, False), f"{INDENT}Fix: ", width, INDENT * 2)
    if f.snippet:
        lines += snippet_lines(f.snippet, s, width)
    lines.append(_docs(f, width))
    return lines


def snippet_lines(snippet: str, s, width, indent: str = INDENT * 3) -> List[str]:
    """A snippet under `indent`: commands continued with ` \\`, comments wrapped as comments, YAML as written."""
    out = []
    for line in snippet.splitlines():
        text = inert(line, False)
        body = text.lstrip(" ")
        pad = indent + text[:len(text) - len(body)]
        if body.startswith(COMMANDS):
            out += [s("snippet", l) for l in command(body, pad, width)]
        elif body.startswith("# ") and width:
            out += [s("snippet", l) for l in fill(body[2:], pad + "# ", width)]
        else:
            out.append(indent + s("snippet", text))
    return out


def _docs(f, width) -> str:
    """The docs address when it fits on the line (a terminal makes it a link only whole), else the command that
    prints the same page offline."""
    line = f"{INDENT}Docs: {f.docs}"
    return line if not width or width_of(line) <= width else f"{INDENT}Docs: kubectl gpudoctor rules {f.id}"


def table_lines(rows: List[dict], width: Optional[int], indent: str = "") -> List[str]:
    lines, left_out = table(rows, width, indent)
    if left_out:
        lines += fill(f"({', '.join(left_out)} left out at {width} columns: -o wide shows every column)", indent,
                      width)
    return lines


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


def _checks(checks, s, verbose: bool, width=None, whose=None, suffix: str = "") -> List[str]:
    """One Checks line of counts; then the unknown checks (every check with -v), `whose[i]` naming the pod."""
    counts = {}
    for c in checks:
        counts[c.result] = counts.get(c.result, 0) + 1
    order = ("failed", "unknown", "passed", "not-applicable")
    line = "Checks: " + ", ".join(f"{counts[k]} {k.replace('-', ' ')}" for k in order if counts.get(k)) + suffix
    out = [s("bold", l) for l in fill(line, "", width, HANG)]
    shown = {"unknown"} | ({"passed", "not-applicable", "failed"} if verbose else set())
    for i, c in enumerate(checks):
        if c.result in shown:
            who = f"{whose[i]}: " if whose and whose[i] else ""
            reason = f"  {inert(c.reason, False)}" if c.reason else ""
            text = f"{s(c.result, f'{c.result:<14}')} {inert(who, False)}{c.id}{reason}"
            out += fill(text, INDENT, width, INDENT + " " * 17)
    return out


def _internal(checks, s, width=None) -> List[str]:
    """Checks whose rule raised: a bug in the tool, listed so that no one reads the rest as a full verdict."""
    broken = [c for c in checks if getattr(c, "internal", False)]
    if not broken:
        return []
    head = "Internal failures (a bug in kubectl gpudoctor; rerun with GPUDOCTOR_DEBUG=1 and report it):"
    out = [""] + [s("critical", l) for l in fill(head, "", width, INDENT)]
    return out + [l for c in broken for l in fill(f"{c.id}: {inert(c.reason, False)}", INDENT, width, HANG)]


def _gaps(gaps, s, width) -> List[str]:
    if not gaps:
        return []
    out = ["", s("bold", "Could not read:")]
    for g in gaps:
        text = f"{inert(g['source'], False)}: {inert(g['reason'], False)}" + (
            f" — {inert(g['detail'], False)}" if g.get("detail") else "")
        out += fill(text, INDENT, width, HANG)
    return out


def _next(commands, s, width) -> List[str]:
    if not commands:
        return []
    return ["", s("bold", "Next:")] + [l for c in commands for l in command(inert(c, False), INDENT, width)]


def _pods_word(items) -> str:
    pods = sum(1 for d in items if d.target["kind"] == "Pod")
    parts = [f"{pods} pod" + ("s" if pods != 1 else "")] if pods else []
    if len(items) - pods:
        parts.append(f"{len(items) - pods} workload" + ("s" if len(items) - pods != 1 else ""))
    return ", ".join(parts)


def _cause_title(key: str, items) -> str:
    """What a group of failing items shares: the root cause's title and id, or what the bucket means."""
    if key == "unexplained":
        return "not explained: failing, but no rule names the cause (kubectl describe shows what is known)"
    if key == "none":
        return "no critical finding: not healthy yet (starting, or warnings only); nothing to fix yet"
    f = next((f for d in items for f in d.findings if key in (f.id, f.cause)), None)
    return f"{inert(_title(f, key), False)} ({key})" if f else key


def _title(f, key: str) -> str:
    """The title of the cause `key`: the finding's own, or, when an umbrella finding names a more specific cause
    (its `cause`), that rule's title."""
    if f.id == key:
        return f.title
    from ..rules.registry import RULES   # loaded already: the verdict that named the cause ran the rules
    return RULES[key].title if key in RULES else f.title


# ---------------------------------------------------------------------------------------------------------------
# A workload: its headline and root cause as a pod's, one line per distinct pod failure, then the report of the
# first pod of each cause without its own Checks and Next (one of each for the whole workload).

def workload_text(diag, color: bool = False, verbose: bool = False, width: Optional[int] = None) -> str:
    s = Style(color)
    out = _head(diag, _cause(diag), s, width)
    unhealthy = [m for m in diag.members if m.status != "healthy"]
    groups = {}
    for m in unhealthy:
        groups.setdefault(m.root_cause or ("unexplained" if m.exit_code == 1 else "none"), []).append(m)
    if diag.members:
        out += ["", s("bold", f"Pods: {len(unhealthy)} of {len(diag.members)} diagnosed not healthy")
                + ("" if unhealthy else " (every pod is healthy)")]
        for key, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            names = ", ".join(inert(m.target["name"], False) for m in items)
            out += fill(f"{_pods_word(items):<7} {_cause_title(key, items)}: {names}", INDENT, width, HANG + INDENT)
    for f in diag.findings:
        out.append("")
        out += _finding(f, s, width)
    for key, items in groups.items():
        m = items[0]
        note = f" (and {len(items) - 1} more pod(s) with the same root cause)" if len(items) > 1 else ""
        out += [""] + [s("bold", l) for l in fill(f"── pod {inert(m.target['name'], False)}{note} ──", "", width, HANG)]
        out += fill(f"{s(m.status, m.status.upper())}  ({inert(m.phase, False)}) on "
                    f"{inert(m.target.get('node') or 'no node', False)}: {inert(m.summary, False)}", "", width, HANG)
        for f in m.findings:
            out.append("")
            out += _finding(f, s, width)
    checks = list(diag.checks) + [c for m in diag.members for c in m.checks]
    whose = [None] * len(diag.checks) + [m.target["name"] for m in diag.members for _ in m.checks]
    n = len(diag.members)
    out += [""] + _checks(checks, s, verbose, width, whose,
                          f" (the {diag.target['kind']}'s and {n} pod(s)')" if n else "")
    out += _internal(checks, s, width)
    gaps = list(diag.gaps)
    for m in diag.members:
        gaps += [dict(g, source=f"{m.target['name']}: {g['source']}") for g in m.gaps if g not in diag.gaps]
    out += _gaps(gaps, s, width)
    out += _next(diag.next_commands, s, width)
    return "\n".join(out) + "\n"


def masked_note(count: int) -> str:
    """Says that values were masked, so a reader knows the <redacted:…> markers are the tool's, not the cluster's."""
    if not count:
        return ""
    return (f"\nMasked: {count} value(s) shaped like credentials (tokens, keys, passwords in URLs) are shown as "
            f"<redacted:…>; see README, Redaction.\n")


# ---------------------------------------------------------------------------------------------------------------
# A scan: a triage list, one block per root cause, the cause with the most pods first; -o wide: the full table.

def scan_text(report, color: bool = False, verbose: bool = False, width: Optional[int] = None,
              wide: bool = False) -> str:
    from ..report import scan_rows, target_ref
    s = Style(color)
    pods = [d for d in report.items if d.target["kind"] == "Pod"]
    workloads = len(report.items) - len(pods)
    head = (f"{s(report.status, report.status.upper())}  {inert(report.scope, False)}: {report.gpu_pods} GPU pod(s), "
            f"{sum(1 for d in pods if d.status != 'healthy')} not healthy"
            + (f"; {workloads} GPU workload(s) whose pods are missing, refused or failed" if workloads else ""))
    out = fill(head, "", width, HANG)
    if report.items and wide:
        out += [""] + table_lines(scan_rows(report.items), None)
        out += ["", s("bold", "By root cause:")]
        out += [f"{INDENT}{cause:<32} {n}" for cause, n in report.by_root_cause.items()]
        out += _next([f"kubectl gpudoctor {target_ref(d)} -n {d.target['namespace']}" for d in report.items], s, None)
    elif report.items:
        for key, items in report.groups().items():
            out += [""] + [s("bold", l) for l in fill(f"{_pods_word(items)}: {_cause_title(key, items)}", "", width,
                                                     HANG)]
            rows = [{"pod": f"{d.target['namespace']}/{target_ref(d)}",   # a workload: its readiness, no node
                     "node": d.target.get("node") or ("-" if d.target["kind"] == "Pod" else d.phase),
                     "age": d.age or "-"} for d in items[:SCAN_PODS]]
            out += table(rows, width, INDENT)[0][1:]   # the rows, without a header
            if len(items) > SCAN_PODS:
                out.append(f"{INDENT}and {len(items) - SCAN_PODS} more: -o wide")
            out += _shared_fix(key, items, s, width)
            lead = items[0]
            out += command(f"Next: kubectl gpudoctor {inert(target_ref(lead), False)} -n "
                           f"{inert(lead.target['namespace'], False)}", INDENT, width)
    out += _gaps(report.gaps, s, width)
    return "\n".join(out) + "\n"


def _shared_fix(key: str, items, s, width) -> List[str]:
    """The fix the group shares: said once; when the pods' fixes differ (other names), the first pod's is shown
    and named."""
    if key == "unexplained":
        d = items[0]
        return command(f"Look: kubectl describe pod {inert(d.target['name'], False)} -n "
                       f"{inert(d.target['namespace'], False)}", INDENT, width) if d.target["kind"] == "Pod" else []
    fixes = [next((f.remediation for f in d.findings if key in (f.id, f.cause) and f.remediation), "") for d in items]
    if key == "none" or not fixes[0]:
        return []
    from ..report import target_ref
    label = "Fix: " if len(set(fixes)) == 1 else f"Fix for {inert(target_ref(items[0]), False)}: "
    return fill(inert(fixes[0], False), INDENT + label, width, HANG)
