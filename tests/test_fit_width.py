"""Reports fitted to the terminal: every case's report fits 80 columns, measured by display width (wide and
combining characters); commands continue so that they paste as the same command; tables fold and leave columns
out in the declared order; in a pipe with no COLUMNS nothing is wrapped or cut; a real terminal (a pty read by
the pyte emulator) shows the colored report line for line."""
import glob
import json
import os
import shlex
import shutil
import subprocess

import pytest

from kubectl_gpudoctor import cli
from kubectl_gpudoctor.render import table as tables
from kubectl_gpudoctor.render.wrap import command, cut, fill, terminal_width, width_of
from tests import reportkinds
from tests.conftest import CASES
from tests.live import clean_env, plugin_path
from tests.widthrule import snippet_lines, too_wide

ALL_CASES = sorted(glob.glob(os.path.join(CASES, "*", "*", "")))


def _run(args, capsys):
    with pytest.raises(SystemExit):
        cli.main(args)
    return capsys.readouterr().out


def test_every_case_fits_80_columns(capsys, monkeypatch):
    """The issue's sample: 630 of 3,448 lines were wider than 80 columns. Every case's full (-v) report now fits."""
    monkeypatch.setenv("COLUMNS", "80")
    bad, lines = {}, 0
    for case in ALL_CASES:
        doc = json.loads(_run(["--from", case, "-o", "json"], capsys))
        text = _run(["--from", case, "-v", "--color", "never"], capsys)
        lines += len(text.splitlines())
        wide = too_wide(text, 80, snippet_lines(doc))
        if wide:
            bad[os.path.relpath(case, CASES)] = wide
    assert len(ALL_CASES) > 200 and lines > 20000
    assert bad == {}


def test_a_pipe_without_columns_keeps_every_line_whole(capsys, monkeypatch):
    """Scripts grep the unwrapped lines: with no COLUMNS and no terminal the report is -o wide's, lines uncut."""
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = _run(["--from", reportkinds.PENDING, "--color", "never"], capsys)
    monkeypatch.setenv("COLUMNS", "80")
    wide = _run(["--from", reportkinds.PENDING, "--color", "never", "-o", "wide"], capsys)
    fitted = _run(["--from", reportkinds.PENDING, "--color", "never"], capsys)
    assert piped == wide != fitted
    quoted = ("0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 3 Insufficient "
              "nvidia.com/gpu. preemption: 0/5 nodes are available")
    assert quoted in piped and quoted not in fitted and "      0/5 nodes are available: 2 node(s) didn't" in fitted
    assert max(width_of(line) for line in piped.splitlines()) > 80
    assert terminal_width(False, {}) is None and terminal_width(False, {"COLUMNS": "100"}) == 100


# ---------------------------------------------------------------------------------------------------------------
# Display width: wide and combining characters, color codes

def test_width_counts_columns_not_characters():
    assert width_of("GPU") == 3
    assert width_of("日本語") == 6                      # East Asian wide: two columns each
    assert width_of("cafe\u0301") == 4                 # a combining accent takes no column
    assert width_of("\x1b[31m\x1b[1mFAILING\x1b[0m") == 7   # color codes take none


def test_wide_text_wraps_and_cuts_by_display_width():
    text = "推論サーバーのモデルの重みを読み込めませんでした 共有メモリが足りません " * 4
    lines = fill(text, "  ", 40, "    ")
    assert all(width_of(line) <= 40 for line in lines)
    assert any(len(line) <= 30 for line in lines)          # len() would have let twice as much on a line
    assert "".join(line.strip() for line in lines).replace(" ", "") == text.replace(" ", "")
    one = cut("モデル" * 30, "      ", 40)
    assert one.endswith("…") and width_of(one) <= 40 and width_of(one) >= 38
    accented = cut("re\u0301sume\u0301 " * 20, "", 30)
    assert width_of(accented) <= 30 and len(accented) > 30   # combining marks are kept, not counted


def test_a_wide_unicode_report_fits(tmp_path, capsys, monkeypatch):
    """A log in Japanese quoted in a report: every line within 80 columns on screen, cut with … where it is."""
    bundle = tmp_path / "b"
    shutil.copytree(reportkinds.OOM, bundle)
    log = next((bundle / "logs").rglob("*.previous.log"))
    log.write_text(log.read_text() + "チェックポイントのシャードを読み込み中: 3/4 完了、メモリ使用量が上限に近づいています"
                   "（16Gi の制限）。しばらくお待ちください\n")
    monkeypatch.setenv("COLUMNS", "80")
    text = _run(["--from", str(bundle), "--color", "never"], capsys)
    quoted = [line for line in text.splitlines() if "チェックポイント" in line]
    assert quoted and all(line.endswith("…") for line in quoted)
    assert all(width_of(line) <= 80 for line in text.splitlines() if not line.strip().startswith(("memory:",)))
    assert any(len(line) < width_of(line) for line in quoted)


# ---------------------------------------------------------------------------------------------------------------
# Prose, commands

def test_prose_wraps_at_words_with_a_hanging_indent():
    text = ("Wait for GPUs to free up, add GPU nodes (or let the autoscaler add them), or free GPUs held by the "
            "pods listed; lower the request if the workload can run on fewer GPUs.")
    lines = fill(text, "  Fix: ", 60, "    ")
    assert lines[0].startswith("  Fix: Wait") and all(line.startswith("    ") for line in lines[1:])
    assert all(width_of(line) <= 60 for line in lines)
    assert " ".join(line.strip() for line in lines) == "Fix: " + text        # no word broken
    assert fill("FAILING  Pod ml/x  (Pending) " + "word " * 20, "", 40, "  ")[0].startswith("FAILING  Pod ml/x  (")
    assert fill(text, "", None) == [text]                                      # no width: one line
    url = "https://github.com/gpudoctor/kubectl-gpudoctor/blob/v0.1.0/docs/rules.md#insufficient-gpu"
    assert all(width_of(line) <= 40 for line in fill("see " + url, "", 40))    # a word longer than a line


JOBSET = "spec.replicatedJobs[name=workers].template.spec.template.spec.containers[name=trainer].resources.limits"
PYTORCH = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[name=pytorch]"


@pytest.mark.parametrize("width", [70, 80, 100])
def test_a_field_path_longer_than_a_line_breaks_between_its_fields(width):
    """Issue 19: a path too long for a whole line is broken before a `.field` or `[`, never inside a word or a
    `[name=…]` selector, and its first fields end the line it starts on (no line left nearly empty)."""
    text = f"Raise the memory limit. Where: JobSet llama-ft, {JOBSET}, not the pod."
    lines = fill(text, "  Fix: ", width, "    ")
    assert all(width_of(line) <= width for line in lines), lines
    joined = lines[0].strip()
    for line in lines[1:]:   # a continued path joins without a space; words with one
        piece = line.strip()
        joined += piece if piece[0] in ".[" else " " + piece
    assert joined == "Fix: " + text, lines
    assert any(line.strip()[0] in ".[" for line in lines[1:]), lines   # the path was broken between fields
    for line in lines:   # never inside a word or a selector: every `[` on a line is closed on it
        assert line.count("[") == line.count("]"), lines
    assert width_of(lines[0]) > width - 16, lines   # the path's first fields end the first line


def test_a_report_s_long_owner_path_breaks_between_fields(capsys, monkeypatch):
    """End to end: a PyTorchJob worker's container path (82 columns) in an 80-column report."""
    monkeypatch.setenv("COLUMNS", "80")
    case = os.path.join(CASES, "..", "realworld", "failing", "sched-xid-unhealthy-gpu-fragment")
    text = _run(["--from", case, "--color", "never"], capsys)
    path = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[name=pytorch].resources"
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.endswith("spec.pytorchReplicaSpecs"))
    assert lines[i].split()[-1] + lines[i + 1].split()[0] == path, lines[i:i + 2]   # one break, before `.Worker`
    assert not too_wide(text, 80)


def test_a_field_path_that_fits_a_line_is_moved_whole_and_a_plain_word_still_splits():
    text = f"Where: PyTorchJob bert-ft, {PYTORCH}, not the pod."
    lines = fill(text, "  Fix: ", 80, "    ")
    assert any(PYTORCH in line for line in lines), lines
    word = "x" * 100   # no field boundary: split where it must be, as before
    assert [len(line) for line in fill("a " + word, "  ", 40, "    ")] == [3, 40, 40, 32]


@pytest.mark.parametrize("cmd", [
    "kubectl get pods -A --field-selector spec.nodeName=ip-10-1-0-11.ec2.internal -o wide   # who holds the GPUs",
    "kubectl get events -n ml --field-selector involvedObject.name=llm-finetune-0 --sort-by=.lastTimestamp",
    "kubectl get node gpu-a10-04 -o jsonpath='{.status.allocatable} {.metadata.labels.nvidia\\.com/gpu\\.product}'",
    "kubectl debug node/gpu-a10-04 -it --image=busybox -- sh -c 'ls -l /etc/cdi /var/run/cdi; grep -h name: /etc/cdi/*'",
])
@pytest.mark.parametrize("width", [40, 60, 80])
def test_a_long_command_pastes_as_the_same_command(cmd, width):
    lines = command(cmd, "  ", width)
    body = [line for line in lines if not line.lstrip().startswith("#")]
    assert all(line.endswith(" \\") for line in body[:-1])
    pasted = "\n".join(body).replace("\\\n", "")                  # what the shell reads: continuations joined
    assert shlex.split(pasted) == shlex.split(cmd, comments=True)
    for line in lines:
        assert width_of(line) <= width or len(shlex.split(line.removesuffix(" \\"))) == 1
    if "#" in cmd:
        assert lines[0].strip() == "# who holds the GPUs"
    assert command(cmd, "  ", None) == ["  " + cmd]


# ---------------------------------------------------------------------------------------------------------------
# Tables

CAPACITY = [{"node": f"ip-10-1-0-1{i}.ec2.internal", "resource": "nvidia.com/gpu", "allocatable": 8, "used": 4 + i,
             "free": 4 - i, "eligible": "yes"} for i in range(3)]
PODS = [{"namespace": "ml", "pod": "llm-finetune-0", "node": None, "status": "failing", "phase": "Pending",
         "rootCause": "insufficient-gpu",
         "summary": "No node has enough free GPUs (the pod needs 8 nvidia.com/gpu, the most free on one eligible "
                    "node is 4)"}]


@pytest.mark.parametrize("width", [80, 100, 120])
def test_a_table_that_fits_is_tabulate_s(width):
    lines, left_out = tables.table(CAPACITY, width, "  ")
    assert left_out == [] and lines[0].split() == ["NODE", "RESOURCE", "ALLOCATABLE", "USED", "FREE", "ELIGIBLE"]
    assert lines[1].split() == ["ip-10-1-0-10.ec2.internal", "nvidia.com/gpu", "8", "4", "4", "yes"]


def test_a_table_leaves_columns_out_in_the_declared_order():
    lines, left_out = tables.table(CAPACITY, 60, "  ")
    assert all(width_of(line) <= 60 for line in lines)
    assert lines[0].split()[0] == "NODE" and left_out
    order = [h.upper() for h in tables.DROP_ORDER if h in CAPACITY[0]]
    assert sorted(left_out, key=order.index) == order[:len(left_out)]   # the first declared go first
    assert [line.split()[0] for line in lines[1:]] == [r["node"] for r in CAPACITY]   # the name column stays


@pytest.mark.parametrize("width", [80, 100, 120])
def test_a_long_text_column_folds_before_any_column_goes(width):
    lines, left_out = tables.table(PODS, width)
    assert all(width_of(line) <= width for line in lines)
    assert len(lines) > 2                                   # the summary folded onto more lines
    words = " ".join(line[lines[0].index("SUMMARY"):].strip() for line in lines[1:]).split()
    assert " ".join(words) == PODS[0]["summary"]            # nothing lost
    if width >= 120:
        assert left_out == []
    assert "POD" in lines[0] and "ROOTCAUSE" in lines[0]


def test_a_left_out_column_is_said_in_the_report(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    node = reportkinds.REPORTS["node"]
    text = _run(node + ["--color", "never"], capsys)
    assert "(PHASE left out at 80 columns: -o wide shows every column)" in text
    wide = _run(node + ["--color", "never", "-o", "wide"], capsys)
    assert "left out" not in wide and "PHASE" in wide


# ---------------------------------------------------------------------------------------------------------------
# A real terminal: the plugin writes to a pty 80 columns wide (no COLUMNS: the terminal's own size), with color
# (auto: a terminal); pyte plays it back as the terminal would show it.

def _on_a_terminal(args, columns=80, rows=400):
    import fcntl
    import struct
    import termios

    import pyte
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = clean_env()
    env.pop("COLUMNS", None)
    env.update(TERM="xterm-256color")
    proc = subprocess.Popen([plugin_path(), *args], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:      # EIO: the other end closed
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    proc.wait(timeout=60)
    screen = pyte.Screen(columns, rows)
    pyte.ByteStream(screen).feed(data)
    return proc.returncode, screen, data


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pty")
def test_a_real_terminal_shows_the_colored_report_line_for_line(monkeypatch):
    code, screen, data = _on_a_terminal(["--from", reportkinds.PENDING])
    assert code == 1 and b"\x1b[" in data                   # colored: stdout is a terminal
    env = dict(clean_env(), COLUMNS="80")
    plain = subprocess.run([plugin_path(), "--from", reportkinds.PENDING, "--color", "never"], capture_output=True,
                           text=True, env=env).stdout.splitlines()
    shown = [row.rstrip() for row in screen.display]
    # every line of the report is one row of the screen: none ran past the edge into the next row
    assert shown[:len(plain)] == [line.rstrip() for line in plain]
    assert all(row == "" for row in shown[len(plain):])
    first = screen.buffer[0]
    assert "".join(first[x].data for x in range(7)) == "FAILING" and first[0].fg == "red" and first[0].bold
    cause = shown.index("Root cause: Not enough free GPUs on any node (insufficient-gpu)")
    assert screen.buffer[cause][12].bold and not screen.buffer[cause][0].bold
    assert any(row.startswith("  Docs: ") for row in shown)


def test_the_one_column_shortcut_agrees_with_wcwidth():
    """width_of measures text of one-column characters by len() so that wcwidth need not load for "—" or "…": every
    character the shortcut takes is one column for wcwidth too."""
    import wcwidth

    from kubectl_gpudoctor.render.wrap import _narrow
    assert [hex(c) for c in range(0x80, 0x30000) if _narrow(chr(c)) and wcwidth.wcwidth(chr(c)) != 1] == []
    assert not _narrow("日") and not _narrow("e\u0301") and not _narrow("\u200d") and _narrow("— … é")


def test_wcwidth_loads_only_for_text_that_needs_it(tmp_path):
    """A report of ASCII, em dashes and ellipses on a terminal does not import wcwidth (10-30 ms); a Japanese one
    does."""
    import sys
    probe = ("import sys, io, contextlib\nfrom kubectl_gpudoctor import cli\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    try:\n        cli.main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
             "print('wcwidth' in sys.modules)\n")
    env = dict(clean_env(), COLUMNS="80")
    plain = subprocess.run([sys.executable, "-c", probe, "--from", reportkinds.OOM, "--color", "never"],
                           capture_output=True, text=True, env=env)
    assert plain.stdout.strip() == "False", plain.stderr
    bundle = tmp_path / "b"
    shutil.copytree(reportkinds.OOM, bundle)
    log = next((bundle / "logs").rglob("*.previous.log"))
    log.write_text(log.read_text() + "メモリ不足\n")
    wide = subprocess.run([sys.executable, "-c", probe, "--from", str(bundle), "--color", "never"],
                          capture_output=True, text=True, env=env)
    assert wide.stdout.strip() == "True", wide.stderr
