"""Signatures survive case, spacing, wrapped lines and escaped newlines; every pattern reads bounded lines only, and
no pattern in data/ has the shape that made long lines quadratic (timings are in benchmarks/log_scan.py)."""
import importlib
import os
import pkgutil
import re
from re import _compiler, _constants as C, _parser as P

import pytest

import kubectl_gpudoctor.data as data
from kubectl_gpudoctor import record
from kubectl_gpudoctor.evidence import Evidence, Target
from kubectl_gpudoctor.logs import lines as loglines
from kubectl_gpudoctor.logs.crashrun import block_matches, failure_block
from tests.conftest import ROOT


def ids(block, rule_id):
    return [sig.id for sig, *_ in block_matches(block, rule_id)]


@pytest.mark.parametrize("line,rule_id", [
    ("runtimeerror: cuda error: no kernel image is available for execution on the device", "no-kernel-image-for-gpu"),
    ("RUNTIMEERROR: CUDA ERROR: OUT OF MEMORY", "gpu-out-of-memory"),
    ("torch.OutOfMemoryError: CUDA  out of memory.\tTried to allocate 2.00 GiB", "gpu-out-of-memory"),
    ("redis.exceptions.ConnectionError: Error 111 connecting to   redis-master:6379.  Connection refused.",
     "dependency-unreachable"),
])
def test_case_and_spacing_do_not_matter(line, rule_id):
    assert ids([(1, line)], rule_id), line


@pytest.mark.parametrize("line,rule_id", [
    ("mirror: the download finished", "app-error"),        # not an exception class: the generic ones keep their case
    ("error: the retry budget is spent", "app-error"),
    ("panic attack averted: all good", "app-error"),
])
def test_generic_signatures_keep_their_case(line, rule_id):
    assert not ids([(1, line)], rule_id), line


def test_a_wrapped_line_matches_across_the_break_and_only_once():
    block = [(1, "RuntimeError: CUDA error: no kernel image is available for execution on"), (2, "the device")]
    found = [(sig.id, n) for sig, n, _, _ in block_matches(block, "no-kernel-image-for-gpu")]
    assert found == [("no-kernel-image", 1)]
    # a line that starts a new record is not a continuation
    block = [(1, "WARNING no kernel image is available for execution on"), (2, "ERROR 01-01 00:00:00 the device")]
    assert not ids(block, "no-kernel-image-for-gpu")


def test_escaped_newlines_split_a_line_for_anchored_patterns():
    line = ('E0806 21:52:46.289 1 pb_stub.cc:366] "Failed to initialize Python stub: OSError: Cannot access gated repo '
            'for url https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/config.json.\\nAccess to '
            'model meta-llama/Meta-Llama-3-8B-Instruct is restricted."')
    urls = [m.group("url") for sig, _, _, m in block_matches([(1, line)], "auth-failure") if sig.id == "hf-gated"]
    assert urls == ["https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/config.json"]


def test_a_status_table_is_layout_not_a_success():
    """Triton's model table (a READY row for another model) does not cut the failure region short."""
    log = "\n".join([
        "I0806 21:53:20.006 1 model_lifecycle.cc:838] \"successfully loaded 'mistral7b'\"",
        'E0806 21:53:20.006 1 model_repository_manager.cc:1383] "Invalid argument: ensemble \'llm\' depends on \'llama3\' '
        'which has no loaded version: Internal: OSError: You are trying to access a gated repo."',
        "I0806 21:53:20.006 1 server.cc:674] ",
        "+-----------+---------+--------+",
        "| Model     | Version | Status |",
        "+-----------+---------+--------+",
        "| mistral7b | 1       | READY  |",
        "+-----------+---------+--------+",
        "",
        "error: creating server: Internal - failed to load all models",
    ])
    block = failure_block(log)
    assert block[0][0] == 2 and ids(block, "auth-failure")


# --- bounded lines -------------------------------------------------------------------------------------------------

def test_an_overlong_line_keeps_its_tail_and_says_so():
    text = "head " + "x" * (1 << 20) + " CUDA error: out of memory\nnext line"
    ev = Evidence(Target("Pod", "p", "ns"), logs={("ns", "p", "c", True): text})
    got = ev.log({"metadata": {"namespace": "ns", "name": "p"}}, "c", True)
    first, second = got.split("\n")
    assert second == "next line"
    assert len(first) <= loglines.MAX_LINE + 60
    assert first.startswith("[gpudoctor: ") and "characters cut]" in first
    assert first.endswith("CUDA error: out of memory") and "head" not in first


def test_only_evidence_reads_the_raw_logs():
    """Every reader goes through Evidence.log (which bounds lines): outside the loaders that fill `logs`, no module
    touches the raw dict."""
    raw = re.compile(r"\.logs(?:\.get\(|\[|\.items\(|\.values\()")
    pkg = os.path.join(ROOT, "kubectl_gpudoctor")
    offenders = []
    for dirpath, _, files in os.walk(pkg):
        rel = os.path.relpath(dirpath, pkg)
        if rel.split(os.sep)[0] in ("offline", "collect"):
            continue   # they fill Evidence.logs
        for f in files:
            if f.endswith(".py") and not (rel == "." and f == "evidence.py"):
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    offenders += [f"{rel}/{f}" for line in fh if raw.search(line)]
    assert not offenders, offenders


# --- pattern shapes --------------------------------------------------------------------------------------------------

def _strings(obj, path, out):
    if isinstance(obj, str):
        out.append((path, obj))
    elif record.is_record(obj) and not isinstance(obj, type):
        _strings(getattr(obj, "pattern", ""), f"{path}.{getattr(obj, 'id', None) or getattr(obj, 'key', '')}", out)
    elif isinstance(obj, (tuple, list, frozenset, set)):
        for i, x in enumerate(obj):
            _strings(x, f"{path}[{i}]", out)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _strings(v, f"{path}[{k}]", out)


def data_patterns():
    """(where, pattern) for every string constant of data/ that compiles as a regular expression."""
    out, found = [], []
    for mod in pkgutil.iter_modules(data.__path__):
        module = importlib.import_module(f"kubectl_gpudoctor.data.{mod.name}")
        for name, value in vars(module).items():
            if name.isupper() or (not name.startswith("_") and isinstance(value, (tuple, dict))):
                _strings(value, f"{mod.name}.{name}", found)
    for where, text in found:
        try:
            out.append((where, P.parse(text)))
        except re.error:
            pass   # prose (a meaning or a remedy), not a pattern
    return out


def _run_from_each_start(items, state) -> bool:
    """The pattern may start anywhere with an unbounded run (or a character its run repeats): retried at every
    offset of a long run, it is quadratic. A start anchor or a lookbehind says where the run begins."""
    if not items:
        return False
    op, av = items[0]
    if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
        return False
    if op is C.SUBPATTERN:
        return _run_from_each_start(list(av[3]) + items[1:], state)
    if op is C.BRANCH:
        return any(_run_from_each_start(list(alt) + items[1:], state) for alt in av[1])
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        return av[1] is C.MAXREPEAT or _run_from_each_start(list(av[2]), state)
    if op is C.LITERAL and len(items) > 1 and items[1][0] in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        _, hi, body = items[1][1]
        return hi is C.MAXREPEAT and _compiler.compile(P.SubPattern(state, list(body)), 0).fullmatch(chr(av)) is not None
    return False


def test_no_data_pattern_starts_with_an_unanchored_run():
    bad = [where for where, parsed in data_patterns() if _run_from_each_start(list(parsed), parsed.state)]
    assert not bad, bad


def test_the_shape_check_knows_the_quadratic_shapes():
    for text, quadratic in [(r"(?P<path>\S+) does not appear", True), (r".*(nvml init failed).*", True),
                            (r"(?P<path>/\S+): read-only", True), (r"(?<!\S)(?P<path>\S+) does not appear", False),
                            (r"^.*(?:OOM)", False), (r'"[^"]+" not found', False), (r"failed to stat file (\S+)", False)]:
        parsed = P.parse(text)
        assert _run_from_each_start(list(parsed), parsed.state) == quadratic, text
