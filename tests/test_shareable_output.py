"""Reports people share: published docs links, `rules <id>` offline, bundles that replay without false gaps, text
that fits the terminal, honest tables, the JSON Schema of the gpudoctor/v1 documents."""
import json
import os
import re

import jsonschema
import pytest
import yaml

from kubectl_gpudoctor import __version__
from tests.apiserver import FakeApiServer, load_case
from tests.conftest import ROOT
from tests.live import clean_env, run_json, run_plugin

CASES = os.path.join(ROOT, "tests", "cases")
OOM = os.path.join(CASES, "oom-killed", "fail-startup-peak")
QUOTA = os.path.join(CASES, "pod-creation-rejected", "fail-replicaset-gpu-quota-exceeded")
HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
PENDING = os.path.join(ROOT, "examples", "pending-fragmented-gpus")
POD = "inference-7d9f8b6c5-x2x9q"
PUBLISHED = f"https://github.com/gpudoctor/kubectl-gpudoctor/blob/v{__version__}/docs/rules.md#"
SCHEMA = os.path.join(ROOT, "docs", "gpudoctor-v1.schema.json")


# --- (3) docs links --------------------------------------------------------------------------------------------

def test_docs_links_point_to_the_published_rule_page():
    proc, doc = run_json(POD, "--from", OOM)
    assert all(f["docs"] == PUBLISHED + f["id"] for f in doc["findings"])
    text = run_plugin(POD, "--from", OOM, "--color", "never").stdout
    assert f"Docs: {PUBLISHED}oom-killed" in text and "Docs: docs/rules.md" not in text


def test_rules_id_prints_the_published_section():
    """`rules <id>` prints the rule's section of docs/rules.md (what the link shows), offline."""
    with open(os.path.join(ROOT, "docs", "rules.md")) as f:
        page = f.read()
    section = re.search(r"^### oom-killed\n(.*?)(?=^##)", page, re.S | re.M).group(1).strip()
    out = run_plugin("rules", "oom-killed", "-o", "markdown", env=clean_env(KUBECONFIG="/nonexistent")).stdout
    assert section in out
    assert PUBLISHED + "oom-killed" in out


# --- (4) bundles record what they deliberately left out --------------------------------------------------------

def test_replaying_a_bundle_reports_only_real_gaps(tmp_path):
    objects, logs = load_case(OOM)
    out = tmp_path / "b"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        live = run_json(POD, "--kubeconfig", kc)[1]
        assert run_plugin("bundle", POD, "-f", str(out), "--kubeconfig", kc).returncode == 0
        srv.forbid("nodes")
        forbidden = tmp_path / "f"
        assert run_plugin("bundle", POD, "-f", str(forbidden), "--kubeconfig", kc).returncode == 0
    meta = yaml.safe_load((out / "bundle.yaml").read_text())
    assert "secrets" in meta["notCollected"] and "nodes" not in meta["notCollected"]
    replay = run_json("--from", str(out))[1]
    assert replay["gaps"] == live["gaps"] == []
    assert replay["rootCause"] == live["rootCause"] and replay["summary"] == live["summary"]
    text = run_plugin("--from", str(out), "--color", "never").stdout
    assert "not-in-bundle" not in text and "Could not read" not in text
    real = run_json("--from", str(forbidden))[1]
    assert [g["source"] for g in real["gaps"]] == ["nodes"] and real["gaps"][0]["reason"] == "forbidden"


def test_a_hand_made_bundle_still_reports_what_it_lacks(tmp_path):
    (tmp_path / "pod.yaml").write_text(open(os.path.join(OOM, "objects.yaml")).read())
    doc = run_json("--from", str(tmp_path / "pod.yaml"))[1]
    assert any(g["reason"] == "not-in-bundle" for g in doc["gaps"])


# --- (5) text output -------------------------------------------------------------------------------------------

def test_text_wraps_prose_to_the_terminal_width_keeping_indentation():
    proc = run_plugin(POD, "--from", OOM, "--color", "never", env=clean_env(COLUMNS="72"))
    lines = proc.stdout.splitlines()
    head = lines.index("[CRITICAL] Container killed for exceeding its memory limit (OOMKilled)") + 1
    assert lines[head] == "    (oom-killed)"   # the title, wrapped with a hanging indent
    message = lines[head + 1:lines.index("  Evidence:", head)]
    assert len(message) > 1 and all(len(l) <= 72 and l.startswith("  ") and not l.startswith("   ") for l in message)
    fix = [i for i, l in enumerate(lines) if l.startswith("  Fix: Raise")][0]
    assert len(lines[fix]) <= 72 and lines[fix + 1].startswith("    ") and len(lines[fix + 1]) <= 72   # hanging indent
    assert "      resources:" in lines                      # snippets are copied, never wrapped
    assert any(l.startswith("  kubectl logs ") for l in lines)
    unwrapped = run_plugin(POD, "--from", OOM, "--color", "never").stdout
    assert max(len(l) for l in unwrapped.splitlines()) > 72    # a pipe without COLUMNS is not wrapped


def test_scan_summary_marks_where_it_cuts():
    proc, doc = run_json("scan", "-A", "--from", PENDING)
    text = run_plugin("scan", "-A", "--from", PENDING, "--color", "never", "-o", "wide").stdout   # the table
    full = doc["items"][0]["summary"]
    assert len(full) > 100
    assert "…" in text and full not in text and full[:60] in text


def test_clicolor_is_honoured():
    """CLICOLOR=0 turns color off on a terminal; CLICOLOR_FORCE turns it on in a pipe; --color still wins."""
    from kubectl_gpudoctor.render.style import want_color
    assert want_color("auto", "text", True, {"CLICOLOR": "0"}) is False
    assert want_color("auto", "text", True, {"CLICOLOR": "1"}) is True
    assert want_color("auto", "text", False, {"CLICOLOR_FORCE": "1"}) is True
    assert want_color("auto", "text", False, {"CLICOLOR_FORCE": "0"}) is False
    assert want_color("always", "text", False, {"CLICOLOR": "0"}) is True


def test_tables_keep_version_strings():
    """tabulate would print CUDA 11.0 as 11 and 1.50 as 1.5: the text keeps what the labels say."""
    from kubectl_gpudoctor.render.text import table_lines
    out = "\n".join(table_lines([{"cuda": "11.0", "driver": "450.80.02", "count": 8}], None))
    assert "11.0" in out and "450.80.02" in out


def test_gpu_pod_count_is_the_same_live_and_offline(tmp_path):
    objects, logs = load_case(HEALTHY)
    done = [o for o in objects if o["kind"] == "Pod"][0]
    done = json.loads(json.dumps(done))
    done["metadata"].update(name="warmup-done", uid="9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b")
    done["status"] = {"phase": "Succeeded", "conditions": [], "containerStatuses": []}
    objects.append(done)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        live = run_json("scan", "--kubeconfig", kc)[1]
    path = tmp_path / "all.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    offline = run_json("scan", "-n", "serving", "--from", str(path))[1]
    assert live["gpuPods"] == offline["gpuPods"] == 1


def test_bundle_rejects_structured_output(tmp_path):
    proc = run_plugin("bundle", POD, "-f", str(tmp_path / "x"), "-o", "json", "--from", OOM)
    assert proc.returncode == 2 and "-o" in proc.stderr and not (tmp_path / "x").exists()


def test_scan_report_has_a_top_level_status(tmp_path):
    objects, logs = load_case(OOM)
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        doc = run_json("scan", "--kubeconfig", kc)[1]
    assert doc["status"] == "failing"


# --- (5) the JSON Schema ---------------------------------------------------------------------------------------

def _validator():
    with open(SCHEMA) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("args", [
    (POD, "--from", OOM), ("--from", PENDING), ("--from", HEALTHY), ("deploy/chat", "--from", QUOTA),
    ("scan", "-A", "--from", os.path.join(CASES, "job-failed", "fail-deadline-exceeded-pods-gone")),
    ("node", "--from", os.path.join(CASES, "device-plugin-finds-no-gpu", "fail-toolkit-not-configured")),
    ("node", "gpu-node-01", "--from", OOM), ("scan", "-A", "--from", PENDING), ("rules",)])
def test_documents_validate_against_the_shipped_schema(args):
    proc, doc = run_json(*args)
    _validator().validate(doc)


def test_schema_rejects_a_document_missing_a_key():
    doc = run_json(POD, "--from", OOM)[1]
    del doc["rootCause"]
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(doc)
