"""scan as a triage list (one block per root cause, most pods first, never cut silently; -o wide: the table) and
a workload report (root cause first, one line per distinct pod failure, one Checks line, one Next block)."""
import pytest

from kubectl_gpudoctor import cli
from kubectl_gpudoctor.record import replace
from kubectl_gpudoctor.render.text import scan_text, to_text
from kubectl_gpudoctor.report import Diagnosis, ScanReport
from kubectl_gpudoctor.runner import Options, pod_diagnosis
from tests import reportkinds


def _run(args, capsys):
    with pytest.raises(SystemExit):
        cli.main(args)
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def scan_file(tmp_path_factory):
    return reportkinds.scan_list(tmp_path_factory.mktemp("scan") / "all.yaml")


def _blocks(text):
    return [b.splitlines() for b in text.split("\n\n")[1:]]


def test_scan_groups_by_root_cause_most_pods_first(scan_file, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    text = _run(["scan", "-A", "--from", scan_file, "--color", "never"], capsys)
    heads = [b[0] for b in _blocks(text)]
    # the StatefulSet's refusal names a missing RuntimeClass: that specific cause is its group (issue 21)
    assert heads == ["8 pods: Not enough free GPUs on any node (insufficient-gpu)",
                     "1 pod: Container killed for exceeding its memory limit (OOMKilled) (oom-killed)",
                     "1 workload: The Job failed and will not run again (job-failed)",
                     "1 workload: RuntimeClass does not exist (runtimeclass-not-found)",
                     "1 workload: The API server refuses to create the workload's pods (pod-creation-rejected)"]
    first = _blocks(text)[0]
    assert [line.split()[0] for line in first[1:6]] == [f"ml/llm-finetune-{i}" for i in range(5)]
    assert first[1].split()[1:] == ["-", "31m10s"]               # node (none yet), age when collected
    assert first[6] == "  and 3 more: -o wide"                   # never cut silently
    assert sum(line.startswith("  Fix: ") for line in first) == 1   # the one fix they share
    assert first[-1] == "  Next: kubectl gpudoctor llm-finetune-0 -n ml"
    refused = _blocks(text)[3]
    assert refused[1].split() == ["research/statefulset/train", "0/2", "ready", "-"]
    assert refused[2].startswith("  Fix: ") and "RuntimeClass nvidia-cdi" in " ".join(refused[2:4])


def test_scan_wide_is_the_full_table(scan_file, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    wide = _run(["scan", "-A", "--from", scan_file, "--color", "never", "-o", "wide"], capsys)
    assert wide.splitlines()[2].split() == ["NAMESPACE", "NAME", "NODE", "STATUS", "PHASE", "ROOTCAUSE", "SUMMARY"]
    for i in range(8):
        assert f"ml           llm-finetune-{i} " in wide and f"kubectl gpudoctor llm-finetune-{i} -n ml" in wide
    assert "By root cause:" in wide and "  insufficient-gpu                 8" in wide
    assert "more: -o wide" not in wide


def _pod(name, status, root=None, summary="", phase="Running"):
    return Diagnosis(kind="PodDiagnosis", target={"kind": "Pod", "namespace": "ml", "name": name, "node": "gpu-1"},
                     status=status, phase=phase, root_cause=root, summary=summary, health=status, age="5m")


def test_unexplained_and_not_yet_failing_buckets_say_what_they_are():
    report = ScanReport(scope="namespace ml", gpu_pods=4, items=[
        _pod("train-0", "failing", summary="CrashLoopBackOff; no rule explains it", phase="CrashLoopBackOff"),
        _pod("train-1", "failing", summary="CrashLoopBackOff; no rule explains it", phase="CrashLoopBackOff"),
        _pod("serve-0", "warning", summary="ContainerCreating for 40s", phase="ContainerCreating")])
    text = scan_text(report)
    assert report.by_root_cause == {"unexplained": 2, "none": 1}
    blocks = _blocks(text)
    assert blocks[0][0] == ("2 pods: not explained: failing, but no rule names the cause (kubectl describe shows "
                            "what is known)")
    assert blocks[0][-2:] == ["  Look: kubectl describe pod train-0 -n ml", "  Next: kubectl gpudoctor train-0 -n ml"]
    assert blocks[1][0] == ("1 pod: no critical finding: not healthy yet (starting, or warnings only); nothing to "
                            "fix yet")
    assert not any(line.startswith("  Fix") for b in blocks for line in b)


@pytest.fixture(scope="module")
def crashing():
    return pod_diagnosis(Options(source=reportkinds.OOM), None)


def test_a_workload_counts_pods_that_share_a_cause(crashing):
    """Three pods OOMKilled and one Pending: two lines of pods, one report per cause, one Checks, one Next."""
    pending = pod_diagnosis(Options(source=reportkinds.PENDING), None)
    members = [replace(crashing, target=dict(crashing.target, name=f"inference-7d9f8b6c5-{s}")) for s in
               ("x2x9q", "b7k2m", "q4w8z")] + [pending]
    wl = Diagnosis(kind="WorkloadDiagnosis", target={"kind": "Deployment", "namespace": "serving",
                                                     "name": "inference", "node": None},
                   status="failing", phase="0/4 ready", root_cause="oom-killed",
                   summary="4 of 4 pods failing; inference-7d9f8b6c5-x2x9q: " + crashing.summary, members=members,
                   next_commands=["kubectl describe deployment inference -n serving"] + crashing.next_commands[:2])
    text = to_text(wl, width=100)
    lines = text.splitlines()
    assert lines[0] == "FAILING  Deployment serving/inference  (0/4 ready)"
    assert lines[1] == "Root cause: Container killed for exceeding its memory limit (OOMKilled) (oom-killed)"
    assert "Pods: 4 of 4 diagnosed not healthy" in lines
    start = lines.index("Pods: 4 of 4 diagnosed not healthy") + 1
    pods = " ".join(line.strip() for line in lines[start:lines.index("", start)])
    assert pods == ("3 pods  Container killed for exceeding its memory limit (OOMKilled) (oom-killed): "
                    "inference-7d9f8b6c5-x2x9q, inference-7d9f8b6c5-b7k2m, inference-7d9f8b6c5-q4w8z "
                    "1 pod   Not enough free GPUs on any node (insufficient-gpu): llm-finetune-0")
    assert [line for line in lines if line.startswith("── pod")] == [
        "── pod inference-7d9f8b6c5-x2x9q (and 2 more pod(s) with the same root cause) ──",
        "── pod llm-finetune-0 ──"]
    assert text.count("[CRITICAL] Container killed") == 1            # counted, not repeated
    assert sum(line.startswith("Checks:") for line in lines) == 1 and lines.count("Next:") == 1
    assert "(the Deployment's and 4 pod(s)')" in text
    assert all(len(line) <= 100 for line in lines if not line.strip().startswith(("memory:",)))
