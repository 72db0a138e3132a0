"""The command line in-process: stdout, stderr and exit code apart; bad input is one line and exit 2."""
import json
import os
import shutil

import pytest

from kubectl_gpudoctor import cli
from tests.conftest import ROOT

OOM = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")


def run(capsys, *args):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def one_line_error(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_help_and_version(capsys):
    code, out, err = run(capsys, "--help")
    assert code == 0 and "kubectl gpudoctor <pod>" in out and "Exit codes" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("kubectl-gpudoctor ")
    code, out2, _ = run(capsys, "version")
    assert code == 0 and out2 == out


def test_no_arguments_prints_help(capsys):
    code, out, _ = run(capsys)
    assert code == 0 and "Usage:" in out


@pytest.mark.parametrize("args,needle", [
    (("--bogus",), "No such option"),
    (("pod", "x", "-o", "xml"), "Invalid value"),
    (("pod",), "a pod name is required"),
    (("node",), "a node name is required"),
    (("--from", "/no/such/dir"), "no such file or directory"),
    (("x", "--from", OOM, "--ignore", "no-such-rule"), "no such rule"),
    (("x", "--from", OOM, "--request-timeout", "soon"), "--request-timeout"),
    (("no-such-pod", "--from", OOM), 'pod "no-such-pod" not found'),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, needle):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert needle in one_line_error(err)


def test_malformed_from_file(capsys, tmp_path):
    bad = tmp_path / "pod.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x\n  spec: [\n")
    code, out, err = run(capsys, "--from", str(bad))
    assert code == 2 and "not valid YAML/JSON" in one_line_error(err)
    notk8s = tmp_path / "list.yaml"
    notk8s.write_text("- just\n- a list\n")
    code, _, err = run(capsys, "--from", str(notk8s))
    assert code == 2 and "expected Kubernetes objects" in one_line_error(err)


def test_bundle_dir_with_several_pods_needs_a_name(capsys, tmp_path):
    shutil.copytree(HEALTHY, tmp_path / "b")
    os.remove(tmp_path / "b" / "bundle.yaml")
    code, _, err = run(capsys, "--from", str(tmp_path / "b"))
    assert code == 2 and "name one" in one_line_error(err)


def test_malformed_kubeconfig_exit_2(capsys, tmp_path):
    kc = tmp_path / "config"
    kc.write_text("apiVersion: v1\nclusters: [\n")
    code, out, err = run(capsys, "some-pod", "--kubeconfig", str(kc))
    # kubectl: error loading config file "…": yaml: line 2: did not find expected node content
    assert code == 2 and out == "" and f'error loading config file "{kc}": yaml: line ' in one_line_error(err)
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nope\ncontexts: []\nclusters: []\nusers: []\n")
    code, _, err = run(capsys, "some-pod", "--kubeconfig", str(kc))
    assert code == 2 and "context was not found for specified context: nope" in one_line_error(err)


def test_no_configuration_at_all_exit_3(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, _, err = run(capsys, "some-pod")
    assert code == 3 and "no kubeconfig found" in one_line_error(err)


def test_json_and_yaml_are_the_same_document(capsys):
    import yaml
    code, out, err = run(capsys, "--from", OOM, "-o", "json")
    assert code == 1 and err == ""
    doc = json.loads(out)
    code, out_yaml, _ = run(capsys, "-o", "yaml", "pod", "--from", OOM)
    assert yaml.safe_load(out_yaml) == doc
    assert doc["rootCause"] == "oom-killed" and doc["collectedAt"] == "2026-11-30T09:14:05Z"


def test_flags_before_and_after_the_subcommand(capsys):
    _, a, _ = run(capsys, "-o", "json", "--from", OOM, "pod", "inference-7d9f8b6c5-x2x9q")
    _, b, _ = run(capsys, "inference-7d9f8b6c5-x2x9q", "--from", OOM, "-o", "json", "-n", "serving")
    assert json.loads(a) == json.loads(b)


def test_ignore_skips_a_rule(capsys):
    code, out, _ = run(capsys, "--from", OOM, "-o", "json", "--ignore", "oom-killed")
    doc = json.loads(out)
    assert doc["rootCause"] != "oom-killed"
    assert {"id": "oom-killed", "result": "not-applicable", "reason": "ignored (--ignore)"} in doc["checks"]


def test_healthy_exit_0(capsys):
    code, out, err = run(capsys, "--from", HEALTHY)
    assert code == 0 and out.startswith("HEALTHY") and err == ""


def test_rules_command(capsys):
    from kubectl_gpudoctor.rules import RULES
    code, out, _ = run(capsys, "rules", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and [r["id"] for r in doc["items"]] == list(RULES)
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "oom-killed" in out and "critical" in out


def test_color_decisions(capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    _, plain, _ = run(capsys, "--from", OOM)
    assert "\x1b[" not in plain                       # not a terminal: no color
    _, colored, _ = run(capsys, "--from", OOM, "--color", "always")
    assert "\x1b[" in colored and "[CRITICAL]" in colored
    monkeypatch.setenv("FORCE_COLOR", "1")
    _, forced, _ = run(capsys, "--from", OOM)
    assert "\x1b[" in forced
    monkeypatch.setenv("NO_COLOR", "1")
    _, none, _ = run(capsys, "--from", OOM)
    assert "\x1b[" not in none
    _, js, _ = run(capsys, "--from", OOM, "-o", "json", "--color", "always")
    assert "\x1b[" not in js


def test_interrupt_exits_130(capsys, monkeypatch):
    from kubectl_gpudoctor import runner

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt
    monkeypatch.setattr(runner, "pod_diagnosis", interrupted)
    code, _, err = run(capsys, "x", "--from", OOM)
    assert code == 130 and "interrupted" in err


def test_internal_error_is_one_line(capsys, monkeypatch):
    from kubectl_gpudoctor import runner

    def broken(*_a, **_k):
        raise RuntimeError("boom")
    monkeypatch.delenv("GPUDOCTOR_STRICT", raising=False)
    monkeypatch.setattr(runner, "pod_diagnosis", broken)
    code, _, err = run(capsys, "x", "--from", OOM)
    assert code == 3 and "internal error: RuntimeError: boom" in one_line_error(err)


def test_bundle_round_trip_offline(capsys, tmp_path):
    """A bundle written from evidence reads back to the same verdict."""
    from kubectl_gpudoctor.offline import bundle, load as offline
    from kubectl_gpudoctor import verdict
    ev = offline.load(OOM, "Pod")
    out = bundle.write(ev, str(tmp_path / "b.tgz"))
    again = verdict.diagnose_pod(offline.load(out, "Pod"))
    first = verdict.diagnose_pod(ev)
    assert again.to_dict() == first.to_dict()


OOM_POD = "inference-7d9f8b6c5-x2x9q"
KUBECTL_GLOBALS = [
    ("--as-uid", "1001"), ("--username", "admin"), ("--password", "hunter2"), ("--client-certificate", "c.crt"),
    ("--client-key", "c.key"), ("--tls-server-name", "api.internal"), ("--disable-compression",),
    ("--cache-dir", "/tmp/kube-cache"), ("--match-server-version",), ("--warnings-as-errors",),
    ("-v=8",), ("--v=8",), ("--v", "8"), ("-v", "8"), ("-v8",),
    ("--insecure-skip-tls-verify=false",), ("--disable-compression=true",), ("--match-server-version=0",),
    ("--vmodule", "round_trippers=8"), ("--log-flush-frequency=5s",),
]


@pytest.mark.parametrize("flag", KUBECTL_GLOBALS, ids=lambda f: " ".join(f))
def test_kubectl_global_flags_are_accepted(capsys, flag):
    """kubectl hands a plugin every argument, its global flags included: each is accepted before or after the
    pod name (a saved case: no cluster needed to parse them)."""
    for args in ((OOM_POD, "--from", OOM, *flag), (*flag, OOM_POD, "--from", OOM)):
        code, out, err = run(capsys, *args, "-o", "json")
        assert code == 1 and json.loads(out)["rootCause"] == "oom-killed", err


def test_kubectls_log_level_is_not_the_plugins_verbose(capsys):
    """`-v` alone lists the passed checks (the plugin's --verbose); `-v=8`, `-v 8`, `--v=8` are kubectl's log level
    (accepted, nothing more); a level that is not a number is refused, as kubectl refuses it."""
    _, quiet, _ = run(capsys, OOM_POD, "--from", OOM, "-v=8")
    _, verbose, _ = run(capsys, OOM_POD, "--from", OOM, "-v")
    _, plain, _ = run(capsys, OOM_POD, "--from", OOM)
    assert quiet == plain and len(verbose) > len(plain)
    for bad in ("-v=abc", "--v=high", "--v="):
        code, out, err = run(capsys, OOM_POD, "--from", OOM, bad)
        assert code == 2 and out == "" and 'for "-v, --v" flag' in one_line_error(err)
    kubectl = shutil.which("kubectl")
    if kubectl:
        import subprocess
        proc = subprocess.run([kubectl, "get", "pod", "x", "-v=abc"], capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and 'invalid argument "abc" for "-v, --v" flag' in proc.stderr


def test_kubectls_boolean_flags_take_pflags_values():
    """pflag reads `--insecure-skip-tls-verify=false` as the flag off, `=true` (or 1, t, T…) as on."""
    from kubectl_gpudoctor.command import options
    from kubectl_gpudoctor.quickargs import parse
    from kubectl_gpudoctor.targets import split_short_equals
    on = parse(split_short_equals(["x", "--insecure-skip-tls-verify=T", "--disable-compression=1"]))[1]
    off = parse(split_short_equals(["x", "--insecure-skip-tls-verify=false", "--disable-compression=0"]))[1]
    assert options(on).conn.insecure and options(on).conn.disable_compression
    assert not options(off).conn.insecure and not options(off).conn.disable_compression
