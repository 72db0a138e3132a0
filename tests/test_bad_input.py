"""Huge or unreadable --from input ends in exit 2 with one line, reading a bounded amount; a malformed object costs
itself (a gap), never the verdict; rule bugs are not health."""
import io
import json
import os
import shutil
import tarfile

import pytest
import yaml

from tests.conftest import ROOT
from tests.live import run_plugin

OOM = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
TGI_OOM = os.path.join(ROOT, "tests", "cases", "gpu-out-of-memory", "fail-tgi-warmup")
POD = "inference-7d9f8b6c5-x2x9q"
GUARD = 120   # a hang guard for the subprocess, not a timing assertion


def _one_line_exit_2(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr[-500:]
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_yaml_alias_bomb_is_refused(tmp_path):
    """Nine levels of nine aliases: a few hundred bytes that expand to 9**9 strings (kubectl never writes anchors)."""
    anchors = ["xa0: &a0 [x, x, x, x, x, x, x, x, x]"]
    anchors += [f"xa{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(["apiVersion: v1", "kind: Pod", "metadata: {name: bomb, namespace: ml}"] + anchors
                              + ["spec:", "  containers:", "  - name: main", "    image: x", "    args: *a9", ""]))
    _one_line_exit_2(run_plugin("--from", str(path), timeout=GUARD))


def test_deeply_nested_json_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"apiVersion": "v1", "kind": "Pod", "metadata": ' + "[" * 100000 + "]" * 100000 + "}")
    _one_line_exit_2(run_plugin("--from", str(path), timeout=GUARD))


def test_gzip_bomb_is_refused_before_it_is_extracted(tmp_path):
    archive = tmp_path / "bomb.tgz"
    size = 600 * 1024 * 1024
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("gpudoctor-x/objects.yaml")
        info.size = size

        class Zeros(io.RawIOBase):
            left = size

            def readable(self):
                return True

            def readinto(self, b):
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n
        tar.addfile(info, io.BufferedReader(Zeros(), 1 << 20))
    assert archive.stat().st_size < 5 * 1024 * 1024
    proc = run_plugin("--from", str(archive), timeout=GUARD)
    _one_line_exit_2(proc)
    assert "too large" in proc.stderr or "larger than" in proc.stderr, proc.stderr


def test_dev_zero_is_refused():
    _one_line_exit_2(run_plugin("--from", "/dev/zero", timeout=GUARD))
    import subprocess
    from tests.live import clean_env, plugin_path
    with open("/dev/zero", "rb") as zero:   # `--from -` reads standard input, boundedly
        proc = subprocess.run([plugin_path(), "--from", "-"], stdin=zero, capture_output=True, text=True,
                              env=clean_env(), timeout=GUARD)
    _one_line_exit_2(proc)


def test_fifos_are_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "objects.yaml"
    os.mkfifo(fifo)
    _one_line_exit_2(run_plugin("--from", str(fifo), timeout=GUARD))
    case = tmp_path / "case"
    shutil.copytree(OOM, case)
    os.remove(case / "bundle.yaml")
    os.mkfifo(case / "bundle.yaml")
    _one_line_exit_2(run_plugin("--from", str(case), timeout=GUARD))
    case2 = tmp_path / "case2"
    shutil.copytree(OOM, case2)
    logs = next(p for p in (case2 / "logs").rglob("*.log"))
    os.remove(logs)
    os.mkfifo(logs)
    proc = run_plugin("--from", str(case2), timeout=GUARD)
    assert proc.returncode in (1, 2), proc.stderr      # the FIFO is skipped or refused, never waited on


def _limited_memory():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1536 * 1024 * 1024, 1536 * 1024 * 1024))


def test_offline_logs_are_read_as_a_tail(tmp_path):
    """Offline reads what live reads, the end of a log: a 3 GB saved log (sparse here) is not read whole."""
    import subprocess
    from tests.live import clean_env, plugin_path
    case = tmp_path / "case"
    shutil.copytree(TGI_OOM, case)
    log = next(p for p in (case / "logs").rglob("*.log"))
    tail = log.read_bytes()
    with open(log, "r+b") as f:
        f.truncate(3 * 1024 ** 3)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + tail)
    proc = subprocess.run([plugin_path(), "--from", str(case), "-o", "json"], capture_output=True, text=True,
                          env=clean_env(), timeout=GUARD, preexec_fn=_limited_memory)
    assert proc.returncode == 1, proc.stderr[-300:]
    assert json.loads(proc.stdout)["rootCause"] == "gpu-out-of-memory"


def _mutated(tmp_path, mutate):
    case = tmp_path / "case"
    if case.exists():
        shutil.rmtree(case)
    shutil.copytree(OOM, case)
    docs = list(yaml.safe_load_all((case / "objects.yaml").read_text()))
    for doc in docs:
        if doc and doc.get("kind") == "Pod" and doc["metadata"]["name"] == POD:
            mutate(doc)
    (case / "objects.yaml").write_text(yaml.safe_dump_all(docs))
    return case


MALFORMED = {
    "restartCount 1e100": lambda p: p["status"]["containerStatuses"][0].update(restartCount=1e100),
    "restartCount .inf": lambda p: p["status"]["containerStatuses"][0].update(restartCount=float("inf")),
    "restartCount text": lambda p: p["status"]["containerStatuses"][0].update(restartCount="many"),
    "status a list": lambda p: p.update(status=[]),
    "spec a string": lambda p: p.update(spec="x"),
    "containers a mapping": lambda p: p["spec"].update(containers={"a": 1}),
    "containerStatuses of strings": lambda p: p["status"].update(containerStatuses=["x"]),
    "exitCode text": lambda p: p["status"]["containerStatuses"][0]["lastState"]["terminated"].update(exitCode="x"),
    "labels a list": lambda p: p["metadata"].update(labels=[1]),
    "state a string": lambda p: p["status"]["containerStatuses"][0].update(state="running"),
    "conditions a mapping": lambda p: p["status"].update(conditions={"Ready": True}),
    "env of numbers": lambda p: p["spec"]["containers"][0].update(env=[1, 2]),
}


MALFORMED.update({
    "restartCount 1e+100 float": lambda p: p["status"]["containerStatuses"][0].update(restartCount=1e100),
    "containerStatuses a string": lambda p: p["status"].update(containerStatuses="x"),
    "containerStatuses [null]": lambda p: p["status"].update(containerStatuses=[None]),
    "startedAt year 1": lambda p: p["status"]["containerStatuses"][0]["lastState"]["terminated"].update(
        startedAt="0001-01-01T00:00:00Z"),
    "finishedAt year 9999": lambda p: p["status"]["containerStatuses"][0]["lastState"]["terminated"].update(
        finishedAt="9999-12-31T23:59:59Z"),
    "limit NaN": lambda p: p["spec"]["containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": "NaN"}),
    "limit 1e1000": lambda p: p["spec"]["containers"][0]["resources"]["limits"].update(memory="1e1000"),
})
# the field each mutation breaks, as the gap names it
NAMED = {"restartCount": "restartCount", "status a list": "status", "spec a string": "spec",
         "containers a mapping": "spec.containers", "containerStatuses": "status.containerStatuses",
         "exitCode": "exitCode", "labels": "metadata.labels", "state a string": "state",
         "conditions": "status.conditions", "env": "env[0]", "startedAt": "startedAt", "finishedAt": "finishedAt",
         "limit": "resources.limits"}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_target_field_costs_the_field_not_the_verdict(tmp_path, name):
    """The target pod with a field no API server writes: a report still comes (never a crash, never a hang on
    back-off arithmetic or a date overflow), and a `malformed` gap names the field that was ignored."""
    proc = run_plugin("--from", str(_mutated(tmp_path, MALFORMED[name])), "-o", "json", timeout=GUARD)
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-500:])
    doc = json.loads(proc.stdout)
    gaps = [g for g in doc["gaps"] if g["reason"] == "malformed"]
    assert len(gaps) == 1 and gaps[0]["source"] == "pods", doc["gaps"]
    field = next(v for k, v in NAMED.items() if k in name)
    assert "field ignored" in gaps[0]["detail"] and field in gaps[0]["detail"], gaps[0]["detail"]
    assert not [c for c in doc["checks"] if "internal" in c["reason"]], doc["checks"]


def test_a_malformed_side_object_is_skipped_with_a_gap_and_the_verdict_stands(tmp_path):
    """One event whose metadata.name is a list and one whose involvedObject is a string: both dropped, named in
    one gap, and the OOM verdict comes from the rest."""
    case = tmp_path / "case"
    shutil.copytree(OOM, case)
    docs = [d for d in yaml.safe_load_all((case / "objects.yaml").read_text()) if d]
    event = next(d for d in docs if d["kind"] == "Event")
    bad1 = yaml.safe_load(yaml.safe_dump(event))
    bad1["metadata"]["name"] = ["a", "b"]
    bad2 = yaml.safe_load(yaml.safe_dump(event))
    bad2["metadata"]["name"] += "-other"
    bad2["involvedObject"] = "pod/" + POD
    (case / "objects.yaml").write_text(yaml.safe_dump_all(docs + [bad1, bad2]))
    proc = run_plugin("--from", str(case), "-o", "json", timeout=GUARD)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["rootCause"] == "oom-killed"
    gap = next(g for g in doc["gaps"] if g["reason"] == "malformed")
    assert gap["source"] == "events" and gap["detail"].startswith("2 objects skipped: "), gap
    assert "metadata.name is a list" in gap["detail"] and "involvedObject is the string" in gap["detail"]
    assert not [g for g in doc["gaps"] if g["source"] == "events" and g["reason"] != "malformed"]


def test_a_rule_that_raises_is_an_internal_failure_not_health(monkeypatch, capsys):
    """A bug in one rule must not turn into `unknown` under a healthy verdict with exit 0."""
    from kubectl_gpudoctor import cli
    from kubectl_gpudoctor.rules import RULES
    monkeypatch.delenv("GPUDOCTOR_STRICT", raising=False)

    def boom(ev):
        raise KeyError("containers")
    applicable = [r for r in RULES.values() if "Pod" in r.targets and not r.needs]
    from kubectl_gpudoctor import record
    for r in applicable[:3]:
        monkeypatch.setitem(RULES, r.id, record.replace(r, check=boom, applies=None))
    for output in ("text", "json"):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["--from", HEALTHY, "-o", output])
        out = capsys.readouterr().out
        assert exit_.value.code not in (0, None)
        assert "internal" in out.lower()
        if output == "text":
            assert "HEALTHY" not in out.splitlines()[0]


def test_offline_scan_diagnoses_at_most_25_pods(tmp_path):
    """Many failing GPU pods offline: the same 25-pod cap as live (benchmarks/offline_scan.py times 2,000)."""
    docs = [d for d in yaml.safe_load_all(open(os.path.join(OOM, "objects.yaml"))) if d]
    pod = next(d for d in docs if d["kind"] == "Pod")
    others = [d for d in docs if d["kind"] not in ("Pod", "Event")]
    pods = []
    for i in range(300):
        p = yaml.safe_load(yaml.safe_dump(pod))
        p["metadata"]["name"] = f"inference-{i:05d}"
        p["metadata"]["uid"] = f"00000000-0000-4000-8000-{i:012d}"
        pods.append(p)
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": others + pods}))
    proc = run_plugin("scan", "-A", "--from", str(path), "-o", "json", timeout=GUARD)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["gpuPods"] == 300 and len(doc["items"]) == 25


def test_local_input_failures_are_one_line_exit_2(tmp_path):
    """Each place a user's own files can be wrong ends in one line and exit 2, never `internal error`."""
    proc = run_plugin("bundle", POD, "--from", OOM, "-f", str(tmp_path / "missing" / "b.tgz"))
    _one_line_exit_2(proc)
    assert "does not exist" in proc.stderr
    (tmp_path / "a-file").write_text("x")
    _one_line_exit_2(run_plugin("bundle", POD, "--from", OOM, "-f", str(tmp_path / "a-file")))
    _one_line_exit_2(run_plugin("bundle", POD, "--from", OOM, "-f", str(tmp_path / "a-file" / "inside")))
    case = tmp_path / "case"
    shutil.copytree(OOM, case)
    shutil.rmtree(case / "logs" / "serving")
    (case / "logs" / "serving").write_text("not a directory")   # logs/<ns> a file: no logs, not a crash
    proc = run_plugin("--from", str(case), "-o", "json")
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["target"]["name"] == POD


@pytest.mark.parametrize("value", ["1e1000", "Infinity", "NaN", "-Inf", "1_000", "8e99999999"])
def test_absurd_quantities_cost_their_object_not_the_run(tmp_path, value):
    """A node whose allocatable says `nvidia.com/gpu: <value>` is skipped with a gap naming the field; the target's
    own limit with that value is ignored with a gap; both reports still come."""
    case = tmp_path / "case"
    shutil.copytree(OOM, case)
    docs = [d for d in yaml.safe_load_all((case / "objects.yaml").read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Node":
            doc["status"]["allocatable"]["nvidia.com/gpu"] = value
        if doc["kind"] == "Pod":
            doc["spec"]["containers"][0]["resources"].setdefault("limits", {})["memory"] = value
    (case / "objects.yaml").write_text(yaml.safe_dump_all(docs))
    proc = run_plugin("--from", str(case), "-o", "json", timeout=GUARD)
    assert proc.returncode in (0, 1), proc.stderr
    gaps = {g["source"]: g["detail"] for g in json.loads(proc.stdout)["gaps"] if g["reason"] == "malformed"}
    assert "status.allocatable.nvidia.com/gpu" in gaps["nodes"] and "resources.limits.memory" in gaps["pods"], gaps


def test_a_target_without_a_name_is_one_line_naming_why(tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n")
    proc = run_plugin("--from", str(path))
    _one_line_exit_2(proc)
    assert "1 object skipped: metadata is null, not a mapping" in proc.stderr
