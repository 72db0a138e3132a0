"""Generates docs/rules.md from the rule registry (`python -m kubectl_gpudoctor.render.ruledocs > docs/rules.md`)."""
from __future__ import annotations

from typing import List

from ..rules import PHASES, RULES

_PHASE_TEXT = {
    "scheduling": "The pod is Pending and no node was assigned.",
    "creation": "The pod is on a node but its containers cannot be created or started.",
    "init": "An init container fails.",
    "crash": "Containers start and exit (CrashLoopBackOff, Error, restarts).",
    "eviction": "The pod was evicted, or the node under it is unhealthy.",
    "network": "The pod cannot reach its peers.",
    "node": "`kubectl gpudoctor node <node>`, and the node under a pod. The device-plugin and advertised-resource "
            "checks judge every accelerator of the GPU vocabulary (NVIDIA, AMD and Intel GPUs, Intel Gaudi, AWS "
            "Neuron: their device plugins, and Neuron/Gaudi nodes known by instance type or label); the GPU-operator, "
            "MIG and driver checks are NVIDIA's, and Neuron/Gaudi operators and health monitors (neuron-monitor, "
            "hl-smi) are out of scope.",
}


def generate() -> str:
    out = ["# Rule reference", "",
           "Generated from the rule registry by `python -m kubectl_gpudoctor.render.ruledocs`; do not edit by hand.",
           "Rule ids are stable: they appear in `-o json`, in `kubectl gpudoctor rules` and in `--ignore ID`.", ""]
    for phase in PHASES:
        rules = [r for r in RULES.values() if r.phase == phase]
        if not rules:
            continue
        out += [f"## {phase}", "", _PHASE_TEXT[phase], ""]
        for r in rules:
            out += [f"### {r.id}", ""] + section(r)
    return "\n".join(out).rstrip() + "\n"


def section(r) -> List[str]:
    """A rule's section under its `### id` heading: what it is, when it fires, what it needs, the fix, an example."""
    out = [f"**{r.title}** — {r.severity}; runs for {', '.join(r.targets).lower()}s.", ""]
    if r.summary:
        out += [f"Fires when: {r.summary}", ""]
    if r.needs:
        out += [f"Needs: {', '.join(r.needs)} (a check whose source is unreadable is reported as unknown).", ""]
    if r.remediation:
        out += [f"Fix: {r.remediation}", ""]
    if r.snippet:
        out += ["```", r.snippet, "```", ""]
    return out


def explain(rule_id: str) -> str:
    """`kubectl gpudoctor rules <id> -o markdown`: the rule's published section, and where it is published."""
    r = RULES[rule_id]
    lines = [f"{r.id} ({r.phase})", ""] + section(r) + [f"Docs: {r.docs}"]
    return "\n".join(lines) + "\n"


def explain_text(rule_id: str, width=None, color: bool = False) -> str:
    """`kubectl gpudoctor rules <id>`: the same section for a terminal: headings as words, prose wrapped to the
    width, the example as indented text (commands continued with ` \\`), no Markdown marks."""
    from .style import Style
    from .text import HANG, INDENT, snippet_lines
    from .wrap import fill, width_of
    r, s = RULES[rule_id], Style(color)
    out = fill(f"{s('bold', r.id)} — {s('bold', _plain(r.title))}", "", width, HANG)
    out += fill(f"{r.phase} phase, {r.severity}; runs for {', '.join(r.targets).lower()}s", INDENT, width, HANG)
    parts = [("Fires when", r.summary), ("Needs", r.needs and (
        f"{', '.join(r.needs)} (a check whose source is unreadable is reported as unknown)")),
        ("Fix", r.remediation)]
    for heading, text in parts:
        if text:
            out += ["", s("bold", heading + ":")] + fill(_plain(text), INDENT, width)
    if r.snippet:
        out += ["", s("bold", "Example:")] + snippet_lines(r.snippet, s, width, INDENT * 2)
    docs = f"Docs: {r.docs}"   # an address is never split: a terminal makes it a link only whole
    out += ["", docs] if not width or width_of(docs) <= width else ["", "Docs:", r.docs]
    return "\n".join(out) + "\n"


def _plain(text: str) -> str:
    """Markdown's inline marks dropped: `code` and **bold** read as their words on a terminal."""
    return text.replace("**", "").replace("`", "")


if __name__ == "__main__":
    print(generate(), end="")
