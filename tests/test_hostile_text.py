"""Text from the cluster or a file is inert in every renderer and every field: names, gaps, next commands, headers."""
import os
import shutil

import pytest
import yaml

from tests.conftest import ROOT
from tests.live import run_plugin

OOM = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
POD = "inference-7d9f8b6c5-x2x9q"
# OSC title set, clear screen, SGR, one-byte CSI, right-to-left override, NUL, carriage return; then every
# invisible character that reorders or breaks a line without looking like it: the Arabic letter mark, LRM/RLM,
# the embeddings and overrides, the isolates, the line and paragraph separators, zero-width space, BOM.
INVISIBLE = ("\u061c", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067",
             "\u2068", "\u2069", "\u2028", "\u2029", "\u200b", "\ufeff")
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31m\x9b31m\u202eevil\x00\rfake" + "x".join(INVISIBLE)
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\x00", "\r") + INVISIBLE


def _hostile_case(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(OOM, case)
    docs = list(yaml.safe_load_all((case / "objects.yaml").read_text()))
    for doc in docs:
        if doc and doc.get("kind") == "Pod" and doc["metadata"]["name"] == POD:
            doc["metadata"]["name"] = POD + HOSTILE
            doc["metadata"]["labels"]["evil"] = "x"
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "inference-7d9f8b6c5", "namespace": "serving",
                       "uid": "0b3e7f5d-8c21-4e6f-a9d4-71c2e5b8f3a6", "creationTimestamp": "2026-11-30T08:41:10Z"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": "inference",
                                                               "pod-template-hash": "7d9f8b6c5"}}},
          "status": {"replicas": 1, "readyReplicas": 0, "availableReplicas": 0}}
    (case / "objects.yaml").write_text(yaml.safe_dump_all(docs + [rs]))
    meta = yaml.safe_load((case / "bundle.yaml").read_text())
    meta["target"]["name"] = POD + HOSTILE
    meta["sources"] = ["pods", "events", "nodes", "pods/log", "replicasets"]
    meta["gaps"] = [{"source": "nodes" + HOSTILE, "reason": "forbidden" + HOSTILE, "detail": "d" + HOSTILE}]
    (case / "bundle.yaml").write_text(yaml.safe_dump(meta))
    return case


def _assert_inert(out):
    for ch in RAW:
        assert ch not in out, (repr(ch), out)


@pytest.mark.parametrize("output", ["text", "json", "yaml"])
def test_every_renderer_keeps_hostile_names_and_gaps_inert(tmp_path, output):
    case = _hostile_case(tmp_path)
    for args in (["--from", str(case)], ["scan", "-A", "--from", str(case)], ["rs/inference-7d9f8b6c5", "--from", str(case)]):
        proc = run_plugin(*args, "-o", output, "--color", "always")
        assert proc.returncode == 1, (args, proc.stderr)
        out = proc.stdout
        if output == "text":   # the plugin's own colors are the only escapes left
            for code in ("\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[35m", "\x1b[36m"):
                out = out.replace(code, "")
        _assert_inert(out)
        _assert_inert(proc.stderr)
