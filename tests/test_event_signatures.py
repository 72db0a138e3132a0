"""Event/status wording families (data/event_signatures.py) and the controller-chain reads (collect/workload.py)."""
import pytest

from kubectl_gpudoctor.collect import workload
from kubectl_gpudoctor.data import event_signatures as sigs

RUNC11 = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "
          "unable to start container process: error during container init: error running hook #0: error running hook: "
          "exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n")

# (message as the kubelet/runtime wrote it, rule, signature id, {group: value}) — sources in the data module.
WORDING = [
    ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for '
     '"nvidia" is configured', "runtime-handler-not-configured", "containerd-no-runtime", {"handler": "nvidia"}),
    ('Failed to create pod sandbox: rpc error: code = Unknown desc = unable to get OCI runtime for sandbox "7def1d2c": '
     'no runtime for "nvidia-cdi" is configured', "runtime-handler-not-configured", "containerd-no-runtime",
     {"handler": "nvidia-cdi"}),
    ("(combined from similar events): Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find "
     "runtime handler nvidia from runtime list map[crun:0xc00047e300 runc:0xc00047ef00]",
     "runtime-handler-not-configured", "crio-no-handler", {"handler": "nvidia"}),
    # the same, as a user pasted it from `kubectl describe`: a prefix typo, a wrapped line, a space in "map ["
    # (NVIDIA/gpu-operator#1298)
    ("Failled to create pod sandbox:rpc error code = Unknown desc = failed to find runtime handler nvidia from \n"
     "runtime list map [crun:0x0004dd5f0 runc: 0xc0004dd790]", "runtime-handler-not-configured", "crio-no-handler",
     {"handler": "nvidia"}),
    ("FAILED TO FIND RUNTIME HANDLER nvidia  from  runtime list map[crun:0xc00047e300]", "runtime-handler-not-configured",
     "crio-no-handler", {"handler": "nvidia"}),
    ('Failed to create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler "nvidia" not supported',
     "runtime-handler-not-configured", "dockershim-handler", {"handler": "nvidia"}),
    ('OCI runtime create failed: unable to retrieve OCI runtime error (open /run/containerd/x/log.json: no such file or '
     'directory): exec: "nvidia-container-runtime": executable file not found in $PATH: unknown',
     "runtime-handler-not-configured", "runtime-binary-missing", {"binary2": "nvidia-container-runtime"}),
    ('Failed to create pod sandbox: runtimeclass.node.k8s.io "nvidia" not found', "runtimeclass-not-found",
     "runtimeclass-404", {"rc": "nvidia"}),
    ("Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: could not apply "
     "required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: unresolvable "
     "CDI devices management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead: unknown",
     "cdi-device-unresolvable", "cdi-unresolvable",
     {"devices": "management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead"}),
    ('CDI device injection failed: failed to stat "/dev/nvidia-modeset": no such file or directory',
     "cdi-device-unresolvable", "cdi-injection-failed", {}),
    (RUNC11 + "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown",
     "nvidia-container-cli-error", "cli-driver-not-loaded", {}),
    ("stderr: nvidia-container-cli.real: initialization error: load library failed: libnvidia-ml.so.1: cannot open "
     "shared object file: no such file or directory: unknown", "nvidia-container-cli-error", "cli-load-library",
     {"detail": "initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such "
                "file or directory"}),
    (RUNC11 + "nvidia-container-cli: ldcache error: process /sbin/ldconfig.real failed with error code: 1: unknown",
     "nvidia-container-cli-error", "cli-ldcache", {}),
    (RUNC11 + "nvidia-container-cli: mount error: stat failed: /run/nvidia/driver/proc/driver/nvidia/gpus/0000:47:00.0: "
     "no such file or directory: unknown", "nvidia-container-cli-error", "cli-mount", {}),
    (RUNC11 + "nvidia-container-cli: device error: GPU-23a1320e-7dad-e76a-1d08-50ac3be37cbc: unknown device: unknown",
     "nvidia-container-cli-error", "cli-device", {}),
    ("stderr: nvidia-container-cli: container error: cgroup subsystem devices not found: unknown",
     "nvidia-container-cli-error", "cli-other", {}),
    (RUNC11 + "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to "
     "a newer version, or use an earlier cuda container: unknown", "cuda-requirement-unsatisfied", "cli-requirement",
     {"condition": "cuda>=12.4"}),
    ('process_linux.go:432: running prestart hook 1 caused \\"error running hook: exit status 1, stdout: , stderr: '
     'nvidia-container-cli: requirement error: unsatisfied condition: cuda>=10.2, please update your driver to a newer '
     'version, or use an earlier cuda container\\\\n\\""', "cuda-requirement-unsatisfied", "cli-requirement",
     {"condition": "cuda>=10.2"}),
    ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, "
     "which is unexpected", "device-allocation-failed", "alloc-unavailable",
     {"resource": "nvidia.com/gpu", "requested": "1", "available": "0"}),
    ("Pod was rejected: Allocate failed due to no healthy devices present; cannot allocate unhealthy devices "
     "amd.com/gpu, which is unexpected", "device-allocation-failed", "alloc-unhealthy", {"resource": "amd.com/gpu"}),
    ("Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = Unknown "
     "desc = Unable to retrieve list of available devices: error creating nvml.Device 5: nvml: GPU is lost, which is "
     "unexpected", "device-allocation-failed", "alloc-rpc", {}),
    ('MountVolume.MountDevice failed for volume "pvc-2a9e" : kubernetes.io/csi: attacher.MountDevice failed to create '
     'newCsiDriverClient: driver name efs.csi.aws.com not found in the list of registered CSI drivers',
     "volume-mount-failed", "mount-op", {"volume": "pvc-2a9e", "op": "MountVolume.MountDevice"}),
    ('AttachVolume.Attach failed for volume "data-rclone-example" : attachdetachment timeout for volume data-id',
     "volume-mount-failed", "mount-op", {"volume": "data-rclone-example"}),
    ('Multi-Attach error for volume "pvc-8837" Volume is already used by pod(s) sso-mysql-1-ns6b4',
     "volume-mount-failed", "multi-attach", {"volume": "pvc-8837"}),
    ("Unable to attach or mount volumes: unmounted volumes=[models data], unattached volumes=[models data x]: "
     "context deadline exceeded", "volume-mount-failed", "unmounted", {"volumes": "models data"}),
    # runc/crun: the runtime's init killed by the memory limit before the command ran (aws/amazon-ecs-agent#3021,
    # containers/crun#635)
    ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "
     "unable to start container process: container init was OOM-killed (memory limit too low?): unknown",
     "oom-killed", "init-oom", {}),
    ("CannotStartContainerError: Error response from daemon: OCI runtime create failed: container_linux.go:380: "
     "starting container process caused: container init was OOM-killed (memory limit too low?): unknown",
     "oom-killed", "init-oom", {}),
    ("Error: container create failed: OOM: the memory limit could be too low", "oom-killed", "init-oom", {}),
    # CRI-O/crun running the legacy NVIDIA hook (NVIDIA/gpu-operator#1598)
    ("Error: container create failed: error executing hook `/usr/local/nvidia/toolkit/nvidia-container-runtime-hook` "
     "(exit code: 1)", "nvidia-container-cli-error", "hook-failed",
     {"detail": "error executing hook `/usr/local/nvidia/toolkit/nvidia-container-runtime-hook` (exit code: 1)"}),
]


@pytest.mark.parametrize("text,rule,sig_id,groups", WORDING, ids=[w[2] + "-" + str(i) for i, w in enumerate(WORDING)])
def test_real_wording_maps_to_its_family(text, rule, sig_id, groups):
    hit = sigs.search(text, rule)
    assert hit is not None, f"{rule} does not recognise: {text}"
    sig, m = hit
    assert sig.id == sig_id
    for key, value in groups.items():
        assert (m.group(key) or "").strip() == value


def test_requirement_error_is_not_a_cli_error():
    """`requirement error: unsatisfied condition` is the CUDA rule's, never nvidia-container-cli-error's."""
    text = RUNC11 + "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver"
    assert sigs.search(text, "nvidia-container-cli-error") is None


def test_cni_sandbox_failure_is_not_a_runtime_handler_problem():
    text = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "b63": '
            'plugin type="calico" failed (add): error getting ClusterInformation: connection is unauthorized')
    assert sigs.search(text, "runtime-handler-not-configured") is None


@pytest.mark.parametrize("reason,expected", [("OutOfnvidia.com/gpu", "nvidia.com/gpu"), ("OutOfcpu", "cpu"),
                                             ("NodeAffinity", "labels"), ("TopologyAffinityError", "NUMA")])
def test_admission_reasons_have_a_meaning(reason, expected):
    import re
    meaning = next(m.format(**match.groupdict()) for pattern, m in sigs.ADMISSION_REASONS
                   for match in [re.match(pattern, reason)] if match)
    assert expected in meaning


def _pod(owner_kind, owner_name, api="apps/v1", ns="serving"):
    return {"metadata": {"name": "p", "namespace": ns, "ownerReferences": [
        {"apiVersion": api, "kind": owner_kind, "name": owner_name, "controller": True}]}}


def test_controller_chain_requests_are_by_name_and_scoped():
    rs = workload.owner_request(_pod("ReplicaSet", "llm-api-6c8f7d9b54"))
    assert (rs.source, rs.verb, rs.path) == ("replicasets", "get",
                                             "/apis/apps/v1/namespaces/serving/replicasets/llm-api-6c8f7d9b54")
    cp = workload.owner_request(_pod("ClusterPolicy", "cluster-policy", "nvidia.com/v1", "gpu-operator"))
    assert cp.path == "/apis/nvidia.com/v1/clusterpolicies/cluster-policy" and cp.kind == "ClusterPolicy"
    job = workload.owner_request(_pod("Job", "bench", "batch/v1"))
    assert job.path == "/apis/batch/v1/namespaces/serving/jobs/bench"
    isvc = workload.owner_request(_pod("InferenceService", "llama", "serving.kserve.io/v1beta1"))
    assert (isvc.source, isvc.path) == ("inferenceservices.serving.kserve.io",
                                        "/apis/serving.kserve.io/v1beta1/namespaces/serving/inferenceservices/llama")
    vc = workload.owner_request(_pod("Job", "mpi", "batch.volcano.sh/v1alpha1"))
    assert vc.source == "jobs.batch.volcano.sh"   # not "jobs": a refused Volcano read says nothing of batch Jobs
    assert workload.owner_request(_pod("PodClique", "x", "grove.io/v1alpha1")) is None   # unknown scope: not read
    assert workload.owner_request({"metadata": {"name": "bare"}}) is None
