"""Renderers from hand-built verdicts: layout, severity words, and untrusted text kept inert."""
import json

import yaml

from kubectl_gpudoctor.evidence import Line
from kubectl_gpudoctor.render import render
from kubectl_gpudoctor.safety.sanitize import inert
from kubectl_gpudoctor.report import Check, Diagnosis, Finding

HOSTILE = "boom \x1b]0;owned\x07 \x1b[2J\x1b[31mred\x9b31m \u202eevil\r\nnext"


def _diag():
    finding = Finding(id="app-error", phase="crash", severity="warning", title="Application error in the container log",
                      message=f"Container trainer exited with code 1; its log says: {HOSTILE}",
                      evidence=[Line("log", "train-0/trainer previous log, line 3", HOSTILE)],
                      remediation="Read the quoted line.", snippet="resources:\n  limits:\n    nvidia.com/gpu: 1",
                      docs="docs/rules.md#app-error", summary="exited 1")
    return Diagnosis(kind="PodDiagnosis", target={"kind": "Pod", "namespace": "ml", "name": "train-0", "node": "gpu-1"},
                     status="warning", phase="Error", root_cause=None, summary=f"summary {HOSTILE}",
                     findings=[finding], checks=[Check("app-error", "failed", "exited 1"), Check("oom-killed", "passed")],
                     gaps=[{"source": "nodes", "reason": "forbidden", "detail": "nodes is forbidden"}],
                     next_commands=["kubectl logs train-0 -n ml -c trainer --previous --tail=80"],
                     collected_at="2026-12-02T08:30:00Z")


def test_text_layout_reads_without_color():
    out = render(_diag(), "text")
    assert out.splitlines()[0] == "WARNING  Pod ml/train-0 on gpu-1  (Error)"
    assert "[WARNING] Application error in the container log (app-error)" in out
    assert "  Fix: Read the quoted line." in out
    assert "nvidia.com/gpu: 1" in out
    assert "Could not read:\n  nodes: forbidden — nodes is forbidden" in out
    assert out.rstrip().endswith("kubectl logs train-0 -n ml -c trainer --previous --tail=80")


def test_control_characters_never_reach_the_terminal():
    for color in (False, True):
        out = render(_diag(), "text", color=color)
        stripped = out.replace("\x1b[0m", "")
        for code in ("\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[35m", "\x1b[36m", "\x1b[22m", "\x1b[39m"):
            stripped = stripped.replace(code, "")
        assert "\x1b" not in stripped and "\x07" not in stripped and "\x9b" not in stripped and "\r" not in stripped
        assert "\u202e" not in out
        assert "\\x1b]0;owned\\x07" in out


def test_json_and_yaml_escape_controls():
    js = render(_diag(), "json")
    assert "\x1b" not in js and "\x9b" not in js and "\u202e" not in js
    assert json.loads(js)["summary"] == f"summary {HOSTILE}"     # escaped, not altered
    ym = render(_diag(), "yaml")
    assert "\x1b" not in ym and "\x9b" not in ym
    assert yaml.safe_load(ym)["findings"][0]["evidence"][0]["text"] == HOSTILE


def test_verbose_lists_passed_checks():
    section = lambda out: [l for l in out.split("Checks:")[1].split("Could not read")[0].splitlines()[1:] if l.strip()]
    assert section(render(_diag(), "text")) == []
    assert any(l.split()[:2] == ["passed", "oom-killed"] for l in section(render(_diag(), "text", verbose=True)))


def test_inert_keeps_ordinary_text():
    assert inert("GPU 0: NVIDIA H100 — 80GB\tok\n") == "GPU 0: NVIDIA H100 — 80GB\tok\n"
    assert inert("a\nb", multiline=False) == "a\\nb"


def test_rules_id_renders_for_a_terminal_and_markdown_on_request(capsys, monkeypatch):
    """`rules <id>`: headings as words, no Markdown marks, the example as indented text; -o markdown: the section
    published in docs/rules.md."""
    import pytest

    from kubectl_gpudoctor import cli
    from kubectl_gpudoctor.render.ruledocs import explain

    def run(*args):
        with pytest.raises(SystemExit) as exc:
            cli.main(list(args))
        assert exc.value.code == 0
        return capsys.readouterr().out

    monkeypatch.setenv("COLUMNS", "80")
    text = run("rules", "oom-killed")
    assert "```" not in text and "**" not in text and "`" not in text
    lines = text.splitlines()
    assert lines[0] == "oom-killed — Container killed for exceeding its memory limit (OOMKilled)"
    assert {"Fires when:", "Fix:", "Example:"} <= set(lines)
    example = lines[lines.index("Example:") + 1:lines.index("", lines.index("Example:"))]
    assert example and all(line.startswith("    ") for line in example) and "      limits:" in "\n".join(example)
    assert all(len(line) <= 80 for line in lines if not line.startswith("https://"))
    markdown = run("rules", "oom-killed", "-o", "markdown")
    assert markdown == explain("oom-killed") and "```" in markdown and "**Container killed" in markdown
    listing = run("rules")
    assert all(len(line) <= 80 for line in listing.splitlines()) and "(PHASE left out at 80 columns" in listing
