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
    """`kubectl gpudoctor rules <id>`: the rule's published section, offline, and where it is published."""
    r = RULES[rule_id]
    lines = [f"{r.id} ({r.phase})", ""] + section(r) + [f"Docs: {r.docs}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(generate(), end="")
