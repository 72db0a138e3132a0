"""Secrets stay out of bundles and reports: every pod-template shape, values redacted by shape, and paths from names."""
import os
import re
import shutil
import tarfile

import yaml
from hypothesis import given, settings, strategies as st

from tests.conftest import ROOT
from tests.live import run_plugin

HEALTHY = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
POD = "chat-6b7c9d8f4-m2kqz"
# Token shapes as their issuers print them (lengths and alphabets as documented; values made up).
HF = "hf_QkTbXwLpNzRvYcMdFgHjKsAeUoIyBnVx"
GHP = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
GH_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
OPENAI = "sk-proj-Vq3nX8pL2mR7tK9wB4cF6hJ1dS5gA0zE"
AKIA = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
       ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
DB_PASSWORD = "Pg-pr0d-2026!x"
DB_URL = f"postgres://app:{DB_PASSWORD}@db.prod.svc:5432/app"
ALL_SECRETS = (HF, GHP, GH_PAT, OPENAI, AKIA, AWS_SECRET, JWT, DB_PASSWORD)


def _env():
    """Names the name-based redactor cannot know; only the values' shapes give them away."""
    return [{"name": "OPENAI_KEY", "value": OPENAI}, {"name": "GH_PAT", "value": GH_PAT},
            {"name": "DATABASE_URL", "value": DB_URL}, {"name": "MODEL_REPO_CRED", "value": HF},
            {"name": "AWS_ACCESS_KEY_ID", "value": AKIA}, {"name": "S3_SIGNING", "value": AWS_SECRET},
            {"name": "HF_TOKEN", "value": HF}, {"name": "LOG_LEVEL", "value": "info"}]


def _container(name="main"):
    return {"name": name, "image": "nvcr.io/nvidia/pytorch:24.05-py3", "env": _env(),
            "args": ["--hub-token", GHP, "--db", DB_URL]}


def _pod_template():
    return {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [_container()],
                                                          "initContainers": [_container("fetch")]}}


def _workloads():
    meta = lambda name: {"name": name, "namespace": "serving", "uid": f"uid-{name}",  # noqa: E731
                         "creationTimestamp": "2026-12-01T09:00:00Z"}
    return [
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("nightly-eval"),
         "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": _pod_template()}}}},
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta("pretrain"),
         "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2,
                                      "template": {"spec": {"template": _pod_template()}}}]}},
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta("llama-405b"),
         "spec": {"leaderWorkerTemplate": {"size": 2, "leaderTemplate": _pod_template(),
                                           "workerTemplate": _pod_template()}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(meta("chat"), annotations={
            "example.com/deploy-token": JWT, "example.com/registry": f"https://robot:{DB_PASSWORD}@registry.example.com"}),
         "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": _pod_template()}},
    ]


def _case(tmp_path, extra_log=""):
    case = tmp_path / "case"
    shutil.copytree(HEALTHY, case)
    with open(case / "objects.yaml", "a") as f:
        f.write("---\n" + yaml.safe_dump_all(_workloads(), sort_keys=False))
        f.write("---\n" + yaml.safe_dump({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{POD}.1", "namespace": "serving", "uid": "ev-1",
                         "creationTimestamp": "2026-12-01T09:03:40Z"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": POD, "namespace": "serving",
                               "uid": "0c8f3a51-2d6e-4b7a-9c1f-5e8d2a4b6c90"},
            "reason": "Failed", "type": "Warning", "count": 1, "lastTimestamp": "2026-12-01T09:03:40Z",
            "message": f'Failed to pull image "registry.example.com/x": pull access denied for user robot '
                       f'with token {GHP}'}))
    log = case / "logs" / "serving" / POD / "vllm.log"
    log.write_text(log.read_text() + f"INFO loading with HF_TOKEN={HF} from {DB_URL}\n{extra_log}")
    return case


def _bundle_text(case, out):
    proc = run_plugin("bundle", POD, "--from", str(case), "-f", str(out))
    assert proc.returncode == 0, proc.stderr
    if str(out).endswith(".tgz"):
        with tarfile.open(out) as tar:
            return b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()).decode()
    return "".join(p.read_text() for p in out.rglob("*") if p.is_file())


def test_every_pod_template_shape_is_redacted_by_name_and_by_value(tmp_path):
    text = _bundle_text(_case(tmp_path), tmp_path / "out.tgz")
    for secret in ALL_SECRETS:
        assert secret not in text, secret
    assert "nightly-eval" in text and "LeaderWorkerSet" in text     # the objects themselves are kept
    assert "LOG_LEVEL" in text and "value: info" in text            # ordinary values stay readable
    assert "postgres://app:" in text and "@db.prod.svc:5432/app" in text   # the URL minus its password


def test_logs_and_event_messages_in_bundles_are_redacted(tmp_path):
    text = _bundle_text(_case(tmp_path), tmp_path / "outdir")
    assert HF not in text and GHP not in text and DB_PASSWORD not in text
    assert "INFO loading with HF_TOKEN=" in text       # the line is kept, its token is not
    assert "pull access denied for user robot" in " ".join(text.split())   # YAML folds long lines


def test_reports_mask_secret_values_and_say_so(tmp_path):
    case = _case(tmp_path, extra_log="")
    # an event naming a token is quoted by the report; the report must not print it
    for output in ("text", "json", "yaml"):
        proc = run_plugin("--from", str(case), "-o", output, "-v")
        assert proc.returncode in (0, 1), proc.stderr
        for secret in ALL_SECRETS:
            assert secret not in proc.stdout, (output, secret)
    cj = tmp_path / "crash"
    shutil.copytree(os.path.join(ROOT, "tests", "cases", "app-error"), cj)
    for root, _, files in os.walk(cj):
        for f in files:
            if f.endswith(".log"):
                with open(os.path.join(root, f), "a") as fh:
                    fh.write(f"RuntimeError: 401 Client Error for url https://huggingface.co/api token={HF}\n")
    scenario = next(os.path.join(cj, d) for d in sorted(os.listdir(cj)) if d.startswith("fail-"))
    proc = run_plugin("--from", scenario)
    assert HF not in proc.stdout
    if "<redacted" in proc.stdout:
        assert "masked" in proc.stdout.lower()


def test_target_names_with_slashes_never_reach_a_url(tmp_path):
    from tests.live import serving
    with serving(HEALTHY, tmp_path, namespace="serving") as (srv, kc):
        for args in (["bundle", "../../../api/v1/namespaces/serving/secrets/hf-token", "-f", str(tmp_path / "b.tgz")],
                     ["pod", "x/../../secrets/hf-token"], ["node", "../api/v1/namespaces/serving/secrets/hf-token"],
                     ["deploy/../../secrets/hf-token"], ["pod", POD, "-n", "serving/secrets/hf-token"]):
            srv.reset_requests()
            proc = run_plugin(*args, "--kubeconfig", kc)
            assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
            assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
            assert not [r for r in srv.requests if "secrets" in r.path], srv.requests
    assert not (tmp_path / "b.tgz").exists()


def test_bundle_dir_never_writes_outside_it(tmp_path):
    """A server naming a container `../../../../../escape` must not place a file outside -f DIR."""
    from tests.apiserver import FakeApiServer, load_case
    objects, logs = load_case(HEALTHY)
    evil = "../../../../../escape"
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == POD:
            obj["spec"]["containers"][0]["name"] = evil
            obj["status"]["containerStatuses"][0]["name"] = evil
    logs = {(ns, pod, evil if c == "vllm" else c, prev): text for (ns, pod, c, prev), text in logs.items()}
    out = tmp_path / "a" / "b" / "out"
    with FakeApiServer(objects, logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), namespace="serving")
        proc = run_plugin("bundle", POD, "-f", str(out), "--kubeconfig", kc)
    assert proc.returncode == 0, proc.stderr
    written = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path) for f in fs if f != "kc"]
    assert written and all(os.path.realpath(p).startswith(str(out.resolve()) + os.sep) for p in written), written


# The shortest value of each shape (no 32-character run in them, so only their own literal text lets them through).
SHORT_SHAPES = ("hf_Ab3dEf5gHi7jKl9m", "ghs_Ab3dEf5gHi7jKl9mNo1p", "github_pat_Ab3dEf5gHi7jKl9mNo1p", "sk-Ab3dEf5gHi7jKl9mNo1p",
                "AKIAB3DEF5GHI7JKL9MN", "eyJhbGciOiJI.eyJzdWIiOiIx.Sfl", "s3://u:p@h")
_SHAPE_TEXT = st.lists(st.sampled_from([*ALL_SECRETS, *SHORT_SHAPES, DB_URL, "hf_", "ghs_", "sk-", "AKIA", "eyJ", "://", ":", "@",
                                        "/", "=", " ", "-", "_", ".", "gpu-node-0421", "nvidia.com/gpu", "A", "z", "9",
                                        "Kx8", "QkTbXwLpNzRvYcMd"]), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(_SHAPE_TEXT)
def test_masking_skips_only_text_no_shape_can_match(text):
    """mask() returns a string at once when it holds no shape's literal text; the full pass agrees on every string."""
    from kubectl_gpudoctor.safety import redact
    fast = redact.mask(text)
    full = redact._ANY_SHAPE
    try:
        redact._ANY_SHAPE = re.compile("")   # matches everywhere: every pattern runs
        assert redact.mask(text) == fast
    finally:
        redact._ANY_SHAPE = full
