"""Shell completion (`kubectl_complete-gpudoctor`): the protocol kubectl >= 1.26 speaks with a plugin's completion
executable — the words after the plugin name, the word under the cursor last; one candidate per line, then
`:<cobra directive>` — answered from the click definitions and, for names, from the current context."""
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from kubectl_gpudoctor import completion
from kubectl_gpudoctor.cli import main_group
from tests.live import BIN_DIR, assert_read_only, clean_env, serving

ROOT = Path(__file__).resolve().parent.parent
OOM_CASE = ROOT / "tests" / "cases" / "oom-killed" / "fail-startup-peak"
QUOTA_CASE = ROOT / "tests" / "cases" / "pod-creation-rejected" / "fail-replicaset-gpu-quota-exceeded"
POD = "inference-7d9f8b6c5-x2x9q"
COMPLETE = os.path.join(BIN_DIR, "kubectl_complete-gpudoctor")


class FakeLister:
    def __init__(self):
        self.calls = []

    def __call__(self, what, conn):
        self.calls.append((what, dict(conn)))
        return {"pods": [("train-0", ""), ("train-1", ""), ("infer-0", "")],
                "nodes": [("gpu-a", ""), ("gpu-b", "")],
                "namespaces": [("ml", ""), ("serving", "")],
                "deployments": [("chat", ""), ("train-api", "")], "statefulsets": [("train", "")]}.get(what, [])


def values(args, lister=None):
    words, directive = completion.complete(args, lister or FakeLister())
    return [w.split("\t")[0] for w in words], directive


def test_first_word_offers_subcommands_and_pods():
    got, directive = values([""])
    visible = [n for n, c in main_group.commands.items() if not c.hidden]
    assert got == visible + ["train-0", "train-1", "infer-0"]
    assert directive == completion.NO_FILE_COMP


def test_prefix_filters():
    assert values(["tr"])[0] == ["train-0", "train-1"]
    assert values(["no"])[0] == ["node", "nodes"]


def test_subcommand_arguments():
    lister = FakeLister()
    assert values(["pod", ""], lister)[0] == ["train-0", "train-1", "infer-0"]
    assert values(["node", "gpu-"], lister)[0] == ["gpu-a", "gpu-b"]
    assert [c[0] for c in lister.calls] == ["pods", "nodes"]
    assert values(["pod", "train-0", ""])[0] == []          # one pod per command
    assert values(["train-0", ""])[0] == []
    assert values(["rules", "oom"])[0] == ["oom-killed"]


def test_subcommands_arguments_that_are_not_pods():
    """rules <TAB>: rule ids; help <TAB>: commands; bundle <TAB>: pods; deploy/<TAB>: that kind's names."""
    from kubectl_gpudoctor.rules import RULES
    assert values(["rules", ""])[0] == list(RULES)
    assert values(["rules", "oom-killed", ""])[0] == []
    assert values(["help", "sc"])[0] == ["scan"]
    assert values(["help", ""])[0] == [n for n, c in main_group.commands.items() if not c.hidden]
    assert values(["bundle", "tr"])[0] == ["train-0", "train-1"]
    lister = FakeLister()
    assert values(["deploy/"], lister) == (["deploy/chat", "deploy/train-api"], completion.NO_FILE_COMP)
    assert values(["deployments.apps/tr"], lister)[0] == ["deployments.apps/train-api"]
    assert values(["sts/"], lister)[0] == ["sts/train"]
    assert values(["bundle", "deploy/c"], lister)[0] == ["deploy/chat"]
    assert values(["workload", "sts/t"], lister)[0] == ["sts/train"]
    assert values(["node/gpu-a"], lister)[0] == ["node/gpu-a"]
    assert [c[0] for c in lister.calls] == ["deployments", "deployments", "statefulsets", "deployments",
                                            "statefulsets", "nodes"]
    assert values(["svc/"])[0] == []                                   # not a kind the plugin diagnoses
    assert values(["scan", "deploy/"])[0] == []                        # scan takes no target


def test_a_typed_kind_is_completed_without_a_space():
    words, directive = completion.complete(["st"], FakeLister())
    assert words == ["sts/\tStatefulSet"] and directive == completion.NO_FILE_COMP | completion.NO_SPACE
    words, directive = completion.complete(["d"], FakeLister())
    assert [w.split("\t")[0] for w in words] == ["deploy/", "ds/"] and directive & completion.NO_SPACE
    words, directive = completion.complete(["t"], FakeLister())   # a pod name too: the space stays
    assert [w.split("\t")[0] for w in words] == ["train-0", "train-1"] and not directive & completion.NO_SPACE


def test_flags_come_from_the_cli():
    got, directive = values(["--"])
    assert directive == completion.NO_FILE_COMP
    long_opts = {o for p in main_group.params if not getattr(p, "hidden", False)
                 for o in p.opts + p.secondary_opts if o.startswith("--")}
    assert long_opts <= set(got)
    assert values(["--out"])[0] == ["--output"]
    words, _ = completion.complete(["--out"], FakeLister())
    assert words[0].startswith("--output\t")                 # with its help text as the description


@pytest.mark.parametrize("args,expected", [
    (["-o", ""], ["text", "wide", "json", "yaml"]),
    (["--output", "j"], ["json"]),
    (["--output=y"], ["--output=yaml"]),
    (["--color", ""], ["auto", "always", "never"]),
    (["pod", "x", "-o", "t"], ["text"]),
    (["rules", "-o", ""], ["text", "wide", "json", "yaml", "markdown"]),
    (["--ignore", "oom"], ["oom-killed"]),
])
def test_flag_values(args, expected):
    assert values(args)[0] == expected


def test_path_flags_leave_files_to_the_shell():
    assert values(["--from", ""]) == ([], completion.DEFAULT)
    assert values(["--kubeconfig", "~/"]) == ([], completion.DEFAULT)
    assert values(["--tail", ""]) == ([], completion.NO_FILE_COMP)


def test_namespace_and_connection_flags_reach_the_lister():
    lister = FakeLister()
    assert values(["-n", ""], lister)[0] == ["ml", "serving"]
    values(["--context", "prod", "-n", "ml", "--kubeconfig", "/k", "pod", ""], lister)
    values(["-nserving", ""], lister)
    values(["--namespace=ml", "node", ""], lister)
    assert lister.calls[1] == ("pods", {"context": "prod", "namespace": "ml", "kubeconfig": "/k"})
    assert lister.calls[2] == ("pods", {"namespace": "serving"})
    assert lister.calls[3] == ("nodes", {"namespace": "ml"})


def test_flag_values_do_not_count_as_the_pod():
    assert values(["-n", "ml", ""])[0][-3:] == ["train-0", "train-1", "infer-0"]
    assert values(["-o", "json", "pod", ""])[0] == ["train-0", "train-1", "infer-0"]


def test_contexts_come_from_the_kubeconfig(tmp_path):
    kc = tmp_path / "config"
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters: [{name: c1, cluster: {server: "
                  "'https://127.0.0.1:1'}}]\nusers: [{name: u1, user: {token: x}}]\ncontexts:\n"
                  "- {name: a, context: {cluster: c1, user: u1}}\n- {name: b-prod, context: {cluster: c1, user: u1}}\n")
    assert values(["--kubeconfig", str(kc), "--context", ""])[0] == ["a", "b-prod"]
    assert values(["--kubeconfig", str(kc), "--context", "b"])[0] == ["b-prod"]
    assert values(["--kubeconfig", str(kc), "--cluster", ""])[0] == ["c1"]
    assert values(["--kubeconfig", str(kc), "--user", ""])[0] == ["u1"]


# ---------------------------------------------------------------------------------------------------------------
# The installed executable, as kubectl runs it

def run_complete(*args, env=None, timeout=30):
    return subprocess.run([COMPLETE, *args], capture_output=True, text=True, env=env or clean_env(), timeout=timeout)


def test_executable_lists_live_pods_nodes_namespaces(tmp_path):
    with serving(OOM_CASE, tmp_path, namespace="serving") as (srv, kc):
        pods = run_complete("--kubeconfig", kc, "")
        nodes = run_complete("--kubeconfig", kc, "node", "")
        other = run_complete("--kubeconfig", kc, "-n", "default", "pod", "")
        namespaces = run_complete("--kubeconfig", kc, "-n", "")
        assert_read_only(srv)
        assert all("as=PartialObjectMetadataList" in r.accept and r.query.get("limit") for r in srv.requests)
        assert {r.path for r in srv.requests} == {"/api/v1/namespaces/serving/pods", "/api/v1/nodes",
                                                  "/api/v1/namespaces/default/pods", "/api/v1/namespaces"}
    assert pods.returncode == 0 and pods.stderr == ""
    assert POD in pods.stdout.splitlines() and pods.stdout.endswith("\n:4\n")
    assert nodes.stdout.splitlines() == ["gpu-node-01", ":4"]
    assert other.stdout.splitlines() == [":4"]
    assert "serving" in namespaces.stdout.splitlines()


def test_executable_lists_live_workloads(tmp_path):
    with serving(QUOTA_CASE, tmp_path, namespace="serving") as (srv, kc):
        deploys = run_complete("--kubeconfig", kc, "deploy/")
        bundle = run_complete("--kubeconfig", kc, "bundle", "deployment/c")
        assert_read_only(srv)
    assert {r.path for r in srv.requests} == {"/apis/apps/v1/namespaces/serving/deployments"}
    assert deploys.stdout.splitlines() == ["deploy/chat", ":4"]
    assert bundle.stdout.splitlines() == ["deployment/chat", ":4"]


def test_executable_accepts_a_leading___complete(tmp_path):
    proc = run_complete("__complete", "-o", "")
    assert proc.stdout.splitlines() == ["text", "wide", "json", "yaml", ":4"]


@pytest.mark.parametrize("kubeconfig", ["unreachable", "malformed", "missing"])
def test_executable_is_silent_and_fast_when_the_cluster_is_not_there(tmp_path, kubeconfig):
    kc = tmp_path / "kc"
    if kubeconfig == "unreachable":
        kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters: [{name: x, cluster: {server: "
                      "'https://127.0.0.1:1'}}]\nusers: [{name: x, user: {token: t}}]\n"
                      "contexts: [{name: x, context: {cluster: x, user: x}}]\n")
    elif kubeconfig == "malformed":
        kc.write_text("clusters: [unclosed\n")
    start = time.monotonic()
    proc = run_complete("--kubeconfig", str(kc), "")
    assert time.monotonic() - start < 10
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[-1] == ":4" and "pod" in [line.split("\t")[0] for line in lines]


def test_output_format():
    proc = run_complete("")
    lines = proc.stdout.split("\n")
    assert lines[-1] == "" and lines[-2] == ":4"
    assert all(line and "\t" not in line.split("\t", 1)[0] for line in lines[:-1])


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_runs_it_for_the_plugin(tmp_path):
    """The real kubectl finds kubectl_complete-gpudoctor on PATH next to the pip-installed plugin."""
    with serving(OOM_CASE, tmp_path, namespace="serving") as (_, kc):
        env = clean_env(KUBECONFIG=kc)
        proc = subprocess.run(["kubectl", "__complete", "gpudoctor", ""], capture_output=True, text=True, env=env,
                              timeout=60)
        flag = subprocess.run(["kubectl", "__complete", "gpudoctor", "--color", ""], capture_output=True, text=True,
                              env=env, timeout=60)
    names = [line.split("\t")[0] for line in proc.stdout.splitlines()]
    assert "pod" in names and POD in names and names[-1] == ":4", proc.stdout + proc.stderr
    assert flag.stdout.splitlines() == ["auto", "always", "never", ":4"]
