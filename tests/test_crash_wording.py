"""Real-world wording of crash causes maps to the right rule, and the failure region of a log is the crash's own."""
import pytest

from kubectl_gpudoctor.logs.crashrun import block_matches, failure_block, native_crash_lines, not_wrapper, unprefixed

# (line as printed by the runtime/library, rule it must support); sources in data/signatures_app.py and signatures_remote.py.
WORDING = [
    ("/bin/sh: 1: python: not found", "command-not-found"),
    ("/bin/bash: line 1: torchrun: command not found", "command-not-found"),
    ("/opt/llm/entrypoint.sh: line 12: vllm: command not found", "command-not-found"),
    ("sh: python3: not found", "command-not-found"),
    ("env: 'python': No such file or directory", "command-not-found"),
    ("/bin/sh: 1: /opt/ocr/start.sh: Permission denied", "not-executable"),
    ("exec /app/run.sh: permission denied", "not-executable"),
    ('standard_init_linux.go:211: exec user process caused "permission denied"', "not-executable"),
    ("Error: crun: open executable: Permission denied: OCI permission denied", "not-executable"),
    ("exec /usr/bin/python3: exec format error", "exec-format-error"),
    ("standard_init_linux.go:228: exec user process caused: exec format error", "exec-format-error"),
    ('standard_init_linux.go:207: exec user process caused "exec format error"', "exec-format-error"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/models/x/config.json'", "missing-model-files"),
    ("OSError: /models/x does not appear to have a file named config.json. Checkout 'https://huggingface.co//models/x/tree/None' "
     "for available files.", "missing-model-files"),
    ("(APIServer pid=1) ValueError: Invalid repository ID or local directory specified: '/models/x'.", "missing-model-files"),
    ("huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
     "'/data/models/Qwen2.5-7B-Instruct'. Use `repo_type` argument if needed.", "missing-model-files"),
    ("error: creating server: Internal - failed to stat file /models/repo", "missing-model-files"),
    ("E1010 00:39:51.711103 1 model_lifecycle.cc:596] failed to load 'yolox_onnx' version 1: Internal: unable to find "
     "'/models/yolox_onnx/1/model.onnx' for model instance 'yolox_onnx'", "missing-model-files"),
    ("OSError: [Errno 30] Read-only file system: '/.cache'", "model-cache-read-only"),
    ("PermissionError: [Errno 13] Permission denied: '/.cache'", "model-cache-read-only"),
    ("mkdir /.cache: read-only file system", "model-cache-read-only"),
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-66f4b037)", "auth-failure"),
    ("Access to model google/gemma-2-9b-it is restricted and you are not in the authorized list. Visit "
     "https://huggingface.co/google/gemma-2-9b-it to ask for access.", "auth-failure"),
    ("Invalid credentials in Authorization header", "auth-failure"),
    ("botocore.exceptions.ClientError: An error occurred (403) when calling the HeadObject operation: Forbidden", "auth-failure"),
    ("botocore.exceptions.NoCredentialsError: Unable to locate credentials", "auth-failure"),
    ('pods is forbidden: User "system:serviceaccount:ml:runner" cannot list resource "pods" in API group "" in the '
     'namespace "ml"', "auth-failure"),
    ("redis.exceptions.ConnectionError: Error 111 connecting to redis-master:6379. Connection refused.", "dependency-unreachable"),
    ("dial tcp: lookup redis on 10.96.0.10:53: no such host", "dependency-unreachable"),
    ("dial tcp 10.96.12.7:5432: connect: connection refused", "dependency-unreachable"),
    ('psycopg2.OperationalError: could not translate host name "postgres" to address: Name or service not known',
     "dependency-unreachable"),
    ("Error: connect ECONNREFUSED 10.96.44.3:6379", "dependency-unreachable"),
    ("Error: getaddrinfo ENOTFOUND mongodb", "dependency-unreachable"),
    ("curl: (6) Could not resolve host: embedder", "dependency-unreachable"),
    ("java.net.UnknownHostException: kafka", "dependency-unreachable"),
    ('details = "failed to connect to all addresses; last error: UNKNOWN: ipv4:10.96.1.2:8001: Failed to connect to remote '
     'host: Connection refused"', "dependency-unreachable"),
    ("aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host vllm:8000 ssl:default [Connect call failed "
     "('10.96.3.4', 8000)]", "dependency-unreachable"),
    ('pymysql.err.OperationalError: (2003, "Can\'t connect to MySQL server on \'mysql\' ([Errno 111] Connection refused)")',
     "dependency-unreachable"),
    ("gguf_init_from_file: failed to open '/models/llama-3-8b.Q4_K_M.gguf': 'No such file or directory'", "missing-model-files"),
    ("E0126 09:12:01.002 1 model_repository_manager.cc:1233] Poll failed for model directory 'ensemble': failed to open text "
     "file for read /models/ensemble/config.pbtxt: No such file or directory", "missing-model-files"),
    ("openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided'}}", "auth-failure"),
    ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to "
     "start container process: error during container init: exec format error: unknown", "exec-format-error"),
    # old torch TCPStore (kubeflow/pytorch-operator#125, pytorch/pytorch#64990, #67581)
    ("ValueError: host not found: Name or service not known", "nccl-failure"),
    ("ValueError: host not found: Temporary failure in name resolution", "nccl-failure"),
    ("RuntimeError: connect() timed out. Original timeout was 60000 ms.", "nccl-failure"),
    # NVIDIA driver module builds (NVIDIA/gpu-operator#751, #18; nvidia-installer)
    ("ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol 'rcu_read_unlock_strict'", "driver-kernel-mismatch"),
    ("ERROR: Unable to build the NVIDIA kernel module.", "driver-kernel-mismatch"),
    ("   nvidia.ko failed to build!", "driver-kernel-mismatch"),
    ("make[1]: *** [_module_/usr/src/nvidia-418.40.04/kernel] Error 2", "driver-kernel-mismatch"),
    ("make[2]: *** [/usr/src/linux-headers-6.5.0-41-generic/Makefile:1991: modpost] Error 2", "driver-kernel-mismatch"),
    # the dynamic loader (glibc, musl) without the injected driver library
    ("/bin/bash: error while loading shared libraries: libcuda.so.1: cannot open shared object file: No such file or directory",
     "driver-libraries-missing"),
    ("Error loading shared library libcuda.so.1: No such file or directory (needed by /app/llama-server)", "driver-libraries-missing"),
    # ROCm/HIP: no code object for this AMD GPU (ROCm/legacy-rocm-build#4909, pytorch/pytorch#164346, #73534)
    ("RuntimeError: HIP error: invalid device function", "no-kernel-image-for-gpu"),
    ("ERROR 06-10 07:37:15 [engine.py:458] HIP error: invalid device function", "no-kernel-image-for-gpu"),
    ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", "no-kernel-image-for-gpu"),
    ('hip_code_object.cpp:92: guarantee(false && "hipErrorNoBinaryForGpu: Coudn\'t find binary for current devices!")',
     "no-kernel-image-for-gpu"),
    # HAMi-core's vGPU memory slice (Project-HAMi/HAMi#662)
    ("[HAMI-core ERROR (pid:30 thread=140382094939712 allocator.c:53)]: Device 0 OOM 3171158016 / 3145728000",
     "gpu-out-of-memory"),
    # a hub answering 5xx at start (runpod-workers/worker-vllm#46, huggingface/huggingface_hub#1516)
    ("huggingface_hub.utils._errors.HfHubHTTPError: 504 Server Error: Gateway Time-out for url: "
     "https://huggingface.co/api/models/TheBloke/Nous-Capybara-34B-GPTQ", "dependency-unreachable"),
    ("requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: "
     "https://huggingface.co/api/models/meta-llama/Llama-2-7b-hf", "dependency-unreachable"),
    ("requests.exceptions.ReadTimeout: (ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed "
     "out. (read timeout=10)\"), '(Request ID: 6a3c1f0e)')", "dependency-unreachable"),
    # gated repos in Triton's one-line escaped form (awslabs/data-on-eks#605)
    ('E0806 21:52:46.290115 1 backend_model.cc:692] "ERROR: Failed to create instance: OSError: You are trying to access '
     'a gated repo.\\nMake sure to have access to it at https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct.\\n403 '
     'Client Error. (Request ID: Root=1-66b29b2d)"', "auth-failure"),
    ("Cannot access gated repo for url https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/config.json."
     "\\nAccess to model meta-llama/Meta-Llama-3-8B-Instruct is restricted. You must have access to it", "auth-failure"),
    # the empty command, as the runtime reports it (Go's exec of "")
    ('failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable '
     'to start container process: error during container init: exec: "": executable file not found in $PATH',
     "command-not-found"),
]


# Issue 21: wording families. Exceptions whose class does not end in Error/Exception (torch.compile, Triton, Ray);
# NCCL failures in each wrapper's words; library architecture errors; the NVSwitch fabric's error 802.
WORDING += [
    ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:", "app-error"),
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 114688, Hardware limit: 101376. "
     "Reducing block sizes or `num_stages` may help.", "app-error"),
    ("ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerWrapper.execute_method() (pid=854, ip=10.0.0.4)", "app-error"),
    ("RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)", "nccl-failure"),
    ("tensorflow.python.framework.errors_impl.UnknownError: ncclCommInitRank failed: unhandled system error", "nccl-failure"),
    ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error", "nccl-failure"),
    ("[15]worker-23:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from 100.96.188.199<41468> failed : "
     "Connection timed out", "nccl-failure"),
    ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "no-kernel-image-for-gpu"),
    ("    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)", "no-kernel-image-for-gpu"),
    ("AssertionError: fp8e4nv data type is not supported on CUDA arch < 89", "no-kernel-image-for-gpu"),
    ("RuntimeError: GPUs with compute capability below 7.0 are not supported.", "no-kernel-image-for-gpu"),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized", "fabric-manager-not-running"),
    ("Failed to allocate device vector A (error code system not yet initialized)!", "fabric-manager-not-running"),
]


@pytest.mark.parametrize("line,rule_id", WORDING)
def test_real_wording_supports_its_rule(line, rule_id):
    assert any(True for _ in block_matches([(1, line)], rule_id)), (rule_id, line)


NOT_THESE = [
    ("python: can't open file '/app/serve.py': [Errno 2] No such file or directory", "missing-model-files"),
    ("PermissionError: [Errno 13] Permission denied: '/results/run-1130'", "model-cache-read-only"),
    ("PermissionError: [Errno 13] Permission denied: '/results/run-1130'", "not-executable"),
    ("Could not cache non-existence of file. Will ignore error and continue. Error: [Errno 13] Permission denied: "
     "'/.cache/huggingface/hub/x'", None),
    # a dtype setting (--dtype=half), not missing kernels (vllm-project/vllm#1157)
    ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
     "compute capability 7.5.", "no-kernel-image-for-gpu"),
    # NCCL's wording of a network failure is not a shared-memory one
    ("ncclCommInitRank failed: unhandled system error", "shm-too-small"),
]


@pytest.mark.parametrize("line,rule_id", NOT_THESE)
def test_near_misses_stay_silent(line, rule_id):
    block = [(1, "ERROR something else failed"), (2, line)] + [(i, f"Traceback line {i}") for i in range(3, 8)]
    rules = [rule_id] if rule_id else ["model-cache-read-only", "missing-model-files", "auth-failure"]
    for r in rules:
        if rule_id is None:
            assert not list(block_matches(block, r)), (r, line)
        else:
            matches = [m for m in block_matches([(1, line)], r)
                       if r != "missing-model-files" or m[3].group("path").startswith("/models")]
            assert not matches, (r, line)


def test_failure_region_stops_at_a_successful_reconnect():
    log = "\n".join([
        "level=warn msg=\"dial tcp 10.96.0.5:6379: connect: connection refused\"",
        "level=info msg=\"connected to redis\"",
        "level=fatal msg=\"invalid config: missing field routes\"",
    ])
    block = failure_block(log)
    assert [l for _, l in block] == ["level=fatal msg=\"invalid config: missing field routes\""]
    assert not list(block_matches(block, "dependency-unreachable"))


def test_failure_region_keeps_the_root_traceback_of_a_multi_process_crash():
    log = "\n".join([
        "INFO 11-30 09:12:26 api_server.py:199] Started engine process with PID 77",
        "ERROR 11-30 09:12:58 engine.py:366] FileNotFoundError: [Errno 2] No such file or directory: '/models/x/tokenizer.json'",
        "Process SpawnProcess-1:",
        "Traceback (most recent call last):",
        "  File \"/usr/lib/python3.12/multiprocessing/process.py\", line 314, in _bootstrap",
        "INFO 11-30 09:12:59 multiproc_worker_utils.py:124] Killing local vLLM worker processes",
        "Traceback (most recent call last):",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
        "/usr/lib/python3.12/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: leaked shared_memory",
        "  warnings.warn('resource_tracker: There appear to be %d '",
    ])
    assert list(block_matches(failure_block(log), "missing-model-files"))


def test_a_log_that_just_stops_has_no_failure_region():
    log = "\n".join(["INFO: 10.0.0.1 - \"GET /health HTTP/1.1\" 200 OK"] * 3 +
                    ["WARNING redis: Connection refused, retrying in 2s"] + ["INFO: 10.0.0.1 - \"GET /health HTTP/1.1\" 200 OK"] * 3)
    assert not list(block_matches(failure_block(log), "dependency-unreachable"))


def test_native_crash_lines_show_the_crashing_frame():
    log = "\n".join(["Fatal Python error: Segmentation fault", "", "Thread 0x1 (most recent call first):",
                     "  File \"a.py\", line 1 in wait", "", "Current thread 0x2 (most recent call first):",
                     "  File \"faiss/swigfaiss.py\", line 12247 in index_cpu_to_gpu", "  File \"main.py\", line 3 in main"])
    assert native_crash_lines(log)[:2] == ["Fatal Python error: Segmentation fault",
                                           "File \"faiss/swigfaiss.py\", line 12247 in index_cpu_to_gpu"]


# vLLM V1 puts a process tag before its logger tag (vllm-project/vllm#47415, #15469); the dynamic loader's 127.
APP_ERROR_WORDING = [
    "(Worker_TP0 pid=321) ERROR 04-23 09:57:19 [multiproc_executor.py:671] RuntimeError: Unexpected error from "
    "cudaGetDeviceCount(). Error 802: system not yet initialized",
    "(VllmWorker rank=1 pid=12231) ERROR 03-25 21:13:53 multiproc_executor.py:374] ValueError: To serve at least one request",
    "(EngineCore_DP0 pid=188) ERROR 04-23 09:57:21 [core.py:708] Exception: WorkerProc initialization failed",
    "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
    "/server: error while loading shared libraries: libgomp.so.1: cannot open shared object file: No such file or directory",
    "Error loading shared library libstdc++.so.6: No such file or directory (needed by /app/server)",
]


@pytest.mark.parametrize("line", APP_ERROR_WORDING)
def test_prefixed_and_loader_errors_are_app_errors(line):
    assert any(True for _ in block_matches([(1, line)], "app-error")), line


WRAPPERS = [
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.",
    "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    "RuntimeError: ('Worker failed with error %s, please check the stack trace above for the root cause', 'CUDA error')",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 3 "
    "(pid: 33054) of binary: /usr/bin/python3",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 1622990) of binary: /usr/bin/python",
]


@pytest.mark.parametrize("line", WRAPPERS)
def test_wrapper_exceptions_are_recognised(line):
    assert not not_wrapper(None, line)
    assert not_wrapper(None, "[rank0]: ValueError: expected sequence of length 512 at dim 1 (got 317)")


def test_failure_region_reaches_over_the_torchrun_report():
    table = ["=" * 60, "train.py FAILED", "-" * 60, "Failures:"]
    for rank in (1, 2, 3):
        table += [f"[{rank}]:", "  time      : 2023-09-04_10:10:23", "  host      : ubuntu", f"  rank      : {rank} (local_rank: {rank})",
                  f"  exitcode  : 1 (pid: 366903{rank})", "  error_file: <N/A>",
                  "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]
    log = "\n".join(["[rank0]: KeyError: 'backend'", "Traceback (most recent call last):", "    raise ChildFailedError(",
                     "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "] + table + ["=" * 60])
    assert "[rank0]: KeyError: 'backend'" in [l for _, l in failure_block(log)]


def test_unprefixed_drops_process_and_logger_tags():
    assert unprefixed(APP_ERROR_WORDING[0]).startswith("RuntimeError: Unexpected error")
    assert unprefixed("[rank0]: RuntimeError: x") == "RuntimeError: x"
