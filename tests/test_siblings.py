"""The other GPU pods on a pod's node as corroboration of a driver/library/visibility crash (issue 21, point 6):
pods of other workloads failing the same way there make it the node's stack, even with the driver unknown; GPU
pods Ready there make the image the likelier cause. Offline from the r4-sib realworld cases (real wording, see their
note.md), and live against the suite's API server: the sibling logs are read only when such an error is seen, in
the follow-up round that reads the GPU stack's logs (its own round trip only when that round is otherwise empty,
never past the 3 of every pod diagnosis), bounded, and a refused one is a gap of its own."""
import copy
import os


from kubectl_gpudoctor import verdict
from kubectl_gpudoctor.gpu import siblings
from kubectl_gpudoctor.offline import bundle, load as offline
from tests.conftest import ROOT
from tests.live import assert_read_only, run_json, run_plugin, serving

CASES = os.path.join(ROOT, "tests", "realworld", "failing")
WELKIN = os.path.join(CASES, "r4-sib-welkin-operator-upgrade-two-workloads-insufficient")
K3S = os.path.join(CASES, "r4-sib-k3s-default-runtime-vectoradd-and-whisper")
AKS = os.path.join(CASES, "r4-sib-aks-vllm-cuda13-sibling-ready")
TARGET, SIBLING = ("demo", "cuda-vectoradd-7c9b6d5f8-q2xkp"), ("ml", "finetune-bert-6mfzq")
SIB_LOG = ("ml", "finetune-bert-6mfzq", "trainer", True)
OWN_LOG = ("demo", "cuda-vectoradd-7c9b6d5f8-q2xkp", "cuda-vectoradd", True)

NO_DEVICE = "CUDA error: no CUDA-capable device is detected\n"   # torch / cudart wording (cudaErrorNoDevice)
NVML_UNKNOWN = "Failed to initialize NVML: Unknown Error\n"       # NVIDIA/nvidia-container-toolkit#48
GPU_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.14 GiB of which 1.12 GiB is free.\n")


def _ev(path):
    return offline.load(path, "Pod")


def _pod(ev, ns, name):
    return next(p for p in ev.all("Pod") if p["metadata"]["namespace"] == ns and p["metadata"]["name"] == name)


def _cause(ev):
    d = verdict.diagnose_pod(ev)
    return d, next((f for f in d.findings if f.id == d.root_cause), None)


# --- offline: the verdict moves with what the siblings show -------------------------------------------------

def test_another_workload_failing_alike_makes_insufficient_driver_the_node_stack():
    d, f = _cause(_ev(WELKIN))
    assert d.root_cause == "driver-libraries-missing", d.summary
    assert "finetune-bert-6mfzq (Job finetune-bert)" in f.message and "GPU stack of node elx-gpu-worker-0" in f.message
    assert any("Found no NVIDIA driver" in e.text for e in f.evidence), f.evidence
    assert "not the image" in f.remediation


def test_a_sibling_whose_log_was_not_read_is_no_evidence():
    """Its CrashLoopBackOff and exit code alone could be anything: the driver unknown, the old-driver reading stays."""
    ev = _ev(WELKIN)
    ev.logs.pop(SIB_LOG)
    d, f = _cause(ev)
    assert d.root_cause == "cuda-driver-too-old", d.summary
    assert "Not checked: whether ml/finetune-bert-6mfzq (Job finetune-bert) on the same node fail" in f.message


def test_a_replica_of_the_same_workload_failing_alike_proves_nothing_about_the_node():
    ev = _ev(WELKIN)
    sib = _pod(ev, *SIBLING)
    sib["metadata"]["ownerReferences"][0].update(kind="ReplicaSet", name="cuda-vectoradd-5f4d8b9c6")
    sib["metadata"]["labels"] = {"app": "cuda-vectoradd", "pod-template-hash": "5f4d8b9c6"}   # an older revision
    assert siblings.workload(sib) == siblings.workload(ev.pod) == ("Deployment", "cuda-vectoradd")
    d, _ = _cause(ev)
    assert d.root_cause == "cuda-driver-too-old", d.summary


def test_a_sibling_failing_another_way_does_not_count():
    ev = _ev(WELKIN)
    ev.logs[SIB_LOG] = GPU_OOM
    d, f = _cause(ev)
    assert d.root_cause == "cuda-driver-too-old" and "finetune-bert" not in f.message, d.summary


def test_a_known_old_driver_stays_an_old_driver_whatever_the_siblings_say():
    ev = _ev(WELKIN)
    ev.node["metadata"]["labels"].update({"nvidia.com/cuda.driver-version.full": "418.226.00",
                                         "nvidia.com/cuda.driver-version.major": "418"})
    d, f = _cause(ev)
    assert d.root_cause == "cuda-driver-too-old", d.summary
    assert "fail the same way" not in f.message   # the versions decide; the siblings are not needed


def test_runtimeclass_hint_when_no_failing_pod_sets_one_and_no_operator_toolkit_runs_there():
    d, f = _cause(_ev(K3S))
    assert d.root_cause == "driver-libraries-missing", d.summary
    assert "faster-whisper-5d8f7c9b4-n8t2w (Deployment faster-whisper)" in f.message
    assert "runtimeClassName: nvidia" in f.snippet and "default runtime on node k3s-gpu-02" in f.remediation
    # the GPU operator's toolkit on the node sets the default runtime itself: then the hint would mislead
    _, g = _cause(_ev(WELKIN))
    assert "runtimeClassName" not in g.remediation + (g.snippet or "")


def test_a_ready_gpu_sibling_names_the_image_as_the_likelier_cause():
    d, f = _cause(_ev(AKS))
    assert d.root_cause == "cuda-driver-too-old", d.summary
    assert "bge-embed-77c6d9b8f4-p9s2d (Deployment bge-embed)" in f.message and "likelier cause" in f.message
    ev = _ev(AKS)
    well = _pod(ev, "llm", "bge-embed-77c6d9b8f4-p9s2d")
    well["status"]["conditions"] = [c for c in well["status"]["conditions"] if c["type"] != "Ready"] + [
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]
    _, g = _cause(ev)
    assert "bge-embed" not in g.message   # not Ready: no sign that the node's GPUs work


def _no_device_everywhere(ev):
    ev.logs[OWN_LOG] = NO_DEVICE
    ev.logs[SIB_LOG] = NO_DEVICE


def test_no_cuda_device_in_two_workloads_is_the_node_stack():
    ev = _ev(WELKIN)
    _no_device_everywhere(ev)
    d, f = _cause(ev)
    assert d.root_cause == "gpu-not-visible", d.summary
    assert "GPU stack of node elx-gpu-worker-0" in f.message and "finetune-bert-6mfzq" in f.message


def test_no_cuda_device_with_a_ready_gpu_sibling_points_at_the_pod():
    ev = _ev(WELKIN)
    _no_device_everywhere(ev)
    sib = _pod(ev, *SIBLING)
    ev.logs.pop(SIB_LOG)
    sib["status"]["containerStatuses"][0].update(ready=True, restartCount=0, state={"running": {"startedAt":
                                                 "2025-03-21T09:55:10Z"}}, lastState={})
    for c in sib["status"]["conditions"]:
        if c["type"] in ("Ready", "ContainersReady"):
            c.update(status="True")
            c.pop("reason", None)
            c.pop("message", None)
    d, f = _cause(ev)
    assert d.root_cause == "gpu-not-visible", d.summary
    assert "likely container cuda-vectoradd's image or command" in f.message and "finetune-bert-6mfzq" in f.message


def test_nvml_unknown_error_keeps_its_own_cause_and_names_the_siblings():
    ev = _ev(WELKIN)
    ev.logs[OWN_LOG] = NVML_UNKNOWN
    ev.logs[SIB_LOG] = NVML_UNKNOWN
    d, f = _cause(ev)
    assert d.root_cause == "gpu-not-visible", d.summary
    assert "systemd reloaded" in f.message and "fail the same way: ml/finetune-bert-6mfzq" in f.message


def test_candidates_are_bounded_other_workloads_first_newest_first():
    ev = _ev(WELKIN)
    sib = _pod(ev, *SIBLING)
    extra = []
    for i, (owner, end) in enumerate([("cuda-vectoradd-5f4d8b9c6", "2025-03-21T10:39:00Z"),
                                      ("job-a", "2025-03-21T10:20:00Z"), ("job-b", "2025-03-21T10:35:00Z"),
                                      ("job-c", "2025-03-21T10:10:00Z")]):
        p = copy.deepcopy(sib)
        p["metadata"]["name"] = f"extra-{i}"
        p["metadata"]["ownerReferences"][0].update(kind="ReplicaSet" if i == 0 else "Job", name=owner)
        p["metadata"]["labels"] = {"pod-template-hash": "5f4d8b9c6"} if i == 0 else {}
        p["status"]["containerStatuses"][0]["lastState"]["terminated"]["finishedAt"] = end
        extra.append(p)
    ev.objects["Pod"] += extra
    got = [p["metadata"]["name"] for p, *_ in siblings.candidates(ev, ev.pod)]
    # job-b finished 10:35, finetune-bert 10:31, job-a 10:20, job-c 10:10; the same Deployment's replica (10:39)
    # is never read: it proves nothing about the node
    assert got == ["extra-2", "finetune-bert-6mfzq", "extra-1"], got


def test_offline_bundle_written_from_the_evidence_replays_the_same_verdict(tmp_path):
    ev = _ev(WELKIN)
    ev.gaps["pods/log#siblings"] = offline.Gap("pods/log", "forbidden", "the logs of other GPU pods on node x", "get")
    before = verdict.diagnose_pod(ev)
    bundle.write(ev, str(tmp_path / "b"))
    back = offline.load(str(tmp_path / "b"), "Pod")
    after = verdict.diagnose_pod(back)
    assert after.root_cause == before.root_cause == "driver-libraries-missing"
    assert "pods/log#siblings" in back.gaps and back.readable("pods/log")   # its own key: the pod's logs still read


# --- live: the suite's API server --------------------------------------------------------------------------

def _sibling_log_reads(srv):
    return [r for r in srv.requests if r.path == "/api/v1/namespaces/ml/pods/finetune-bert-6mfzq/log"]


def test_live_reads_the_sibling_log_once_bounded_in_the_stack_round(tmp_path):
    with serving(WELKIN, tmp_path, namespace="demo", latency=0.2) as (srv, kc):
        proc, doc = run_json(TARGET[1], "--kubeconfig", kc)
    assert_read_only(srv)
    assert doc["rootCause"] == "driver-libraries-missing", doc["summary"]
    reads = _sibling_log_reads(srv)
    assert len(reads) == 1, reads
    q = reads[0].query
    assert q["tailLines"] == "40" and q["limitBytes"] == str(64 * 1024) and q["previous"] == "true", q
    own = next(r for r in srv.requests if r.path.endswith("/pods/cuda-vectoradd-7c9b6d5f8-q2xkp/log"))
    assert reads[0].depth == own.depth + 1 and max(r.depth for r in srv.requests) <= 3, \
        [(r.depth, r.path) for r in srv.requests]
    assert len(srv.requests) <= 13


def test_live_common_case_reads_no_sibling_log(tmp_path):
    """The same node and siblings, but the pod's own log shows an ordinary application error: nothing more is read."""
    from tests.apiserver import load_case
    objects, logs = load_case(WELKIN)
    logs[OWN_LOG] = 'Traceback (most recent call last):\n  File "/app/main.py", line 3\nValueError: bad config\n'
    from tests.apiserver import FakeApiServer
    with FakeApiServer(objects, logs, latency=0.2) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kubeconfig"), namespace="demo")
        _, doc = run_json(TARGET[1], "--kubeconfig", kc)
        baseline = len(srv.requests)
    assert not _sibling_log_reads(srv) and doc["rootCause"] != "driver-libraries-missing"
    with serving(WELKIN, tmp_path, namespace="demo") as (srv2, kc2):
        run_json(TARGET[1], "--kubeconfig", kc2)
    assert len(srv2.requests) == baseline + 1   # the one sibling log, only when the GPU error is seen


def test_live_refused_sibling_log_is_a_gap_of_its_own(tmp_path):
    with serving(WELKIN, tmp_path, namespace="demo") as (srv, kc):
        srv.forbid("pods", namespace="ml", subresource="log")
        proc, doc = run_json(TARGET[1], "--kubeconfig", kc)
    assert "Traceback" not in proc.stderr
    gaps = {(g["source"], g["reason"]) for g in doc["gaps"]}
    assert ("pods/log", "forbidden") in gaps, doc["gaps"]
    assert any("other GPU pods on node elx-gpu-worker-0" in g["detail"] for g in doc["gaps"]), doc["gaps"]
    # without the corroboration the driver stays unknown: the old-driver reading, and the pod's own log still read
    assert doc["rootCause"] == "cuda-driver-too-old", doc["summary"]
    cause = next(f for f in doc["findings"] if f["id"] == "cuda-driver-too-old")
    assert "Not checked: whether ml/finetune-bert-6mfzq" in cause["message"], cause["message"]


def test_live_bundle_carries_the_sibling_log_and_replays(tmp_path):
    out = tmp_path / "sib.tgz"
    with serving(WELKIN, tmp_path, namespace="demo") as (srv, kc):
        proc = run_plugin("bundle", TARGET[1], "-f", str(out), "--kubeconfig", kc)
    assert proc.returncode == 0, proc.stderr
    proc, doc = run_json("--from", str(out))
    assert doc["rootCause"] == "driver-libraries-missing", doc["summary"]
    assert not doc["gaps"], doc["gaps"]


# torch's words when libcuda is there but older than the CUDA it was built for (defilantech/LLMKube#1424)
TORCH_TOO_OLD = ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your "
                 "GPU driver by downloading and installing a new version from the URL: "
                 "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
                 "PyTorch version that has been compiled with your version of the CUDA driver.\n")


def test_an_old_driver_that_other_workloads_hit_too_is_the_node_driver_to_upgrade():
    ev = _ev(WELKIN)
    ev.logs[OWN_LOG] = TORCH_TOO_OLD
    ev.logs[SIB_LOG] = TORCH_TOO_OLD
    d, f = _cause(ev)
    assert d.root_cause == "cuda-driver-too-old", d.summary
    assert "fail the same way: ml/finetune-bert-6mfzq (Job finetune-bert);" in f.message
    assert f.remediation.startswith("Upgrade the NVIDIA driver on node elx-gpu-worker-0")
    ev.logs[SIB_LOG] = GPU_OOM   # the sibling ran CUDA far enough to fill its GPU: not the same failure
    _, g = _cause(ev)
    assert "fail the same way" not in g.message and not g.remediation.startswith("Upgrade the NVIDIA driver on node")


LIBCUDA_MISSING = ("/bin/bash: error while loading shared libraries: libcuda.so.1: cannot open shared object file: "
                   "No such file or directory\n")   # volcano-sh/volcano#4513


def _make_ready(p):
    p["status"]["containerStatuses"][0].update(ready=True, started=True, restartCount=0, lastState={},
                                               state={"running": {"startedAt": p["metadata"]["creationTimestamp"]}})
    for c in p["status"]["conditions"]:
        c.update(status="True")
        c.pop("reason", None)
        c.pop("message", None)


def test_a_ready_sibling_without_runtimeclass_rules_out_the_runtimeclass_guess():
    """RuntimeClass nvidia exists and the pod sets none: a guess, unless a GPU pod without one works on that node
    (then nvidia is containerd's default runtime there) — and a peer that works WITH one names the fix outright."""
    own, whisper = ("default", "cuda-vectoradd", "cuda-vectoradd", True), ("home", "faster-whisper-5d8f7c9b4-n8t2w")
    ev = _ev(K3S)
    ev.logs[own] = LIBCUDA_MISSING
    ev.logs.pop(("home", whisper[1], "faster-whisper", True))
    _make_ready(_pod(ev, *whisper))
    d, f = _cause(ev)
    assert d.root_cause == "driver-libraries-missing", d.summary
    assert "possibly the missing runtimeClassName" not in f.message
    assert "likely container cuda-vectoradd's image or command" in f.message and "faster-whisper" in f.message
    _pod(ev, *whisper)["spec"]["runtimeClassName"] = "nvidia"
    _, g = _cause(ev)
    assert "other GPU pods here use runtimeClassName 'nvidia'" in g.message and "runtimeClassName: nvidia" in g.snippet


def test_the_operators_cuda_validator_failing_alike_corroborates_the_node_stack():
    """gpu-operator#176: nvidia-cuda-validator's vectorAdd prints the same 'insufficient driver' line when the
    toolkit never wired the runtime in; it requests no GPU (the NVIDIA runtime exposes them all) but counts."""
    ev = _ev(WELKIN)
    ev.logs.pop(SIB_LOG)
    val = copy.deepcopy(_pod(ev, *SIBLING))
    val["metadata"].update(name="nvidia-cuda-validator-kq2xt", namespace="gpu-operator", labels={"app": "nvidia-cuda-validator"},
                           ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "nvidia-operator-validator-8xvnm",
                                             "uid": "5966134d-a86d-58e0-be2a-8a27978c1282", "controller": True}])
    val["metadata"].pop("generateName", None)
    val["spec"]["containers"][0].update(name="nvidia-cuda-validator", resources={}, command=["sh", "-c"],
                                        args=["vectorAdd"], image="nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2")
    val["status"]["containerStatuses"][0]["name"] = "nvidia-cuda-validator"
    ev.objects["Pod"].append(val)
    d, f = _cause(ev)
    assert d.root_cause == "cuda-driver-too-old", d.summary   # its log not read: no evidence yet
    ev.logs[("gpu-operator", "nvidia-cuda-validator-kq2xt", "nvidia-cuda-validator", True)] = (
        "[Vector addition of 50000 elements]\nFailed to allocate device vector A (error code CUDA driver version is "
        "insufficient for CUDA runtime version)!\n")
    d, f = _cause(ev)
    assert d.root_cause == "driver-libraries-missing", d.summary
    assert "gpu-operator/nvidia-cuda-validator-kq2xt" in f.message
