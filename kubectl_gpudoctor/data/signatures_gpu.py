"""Log signatures of GPU failures (GPU memory, no GPU, NVIDIA driver/toolkit, CUDA compatibility, kernels, a busy
GPU) in PyTorch/vLLM/TGI/TensorFlow/JAX/Triton wording; data only, and /dev/shm and NCCL lines belong in
signatures_distributed.py.

Each signature names the rule it supports. Lines that are warnings in healthy runs (NGC minor-version
compatibility banner, TensorFlow "jit-compiled from PTX", JAX "driver is older than the ptxas version") are
deliberately not matched.
"""
from .signature import Signature

_NOT_BANNER = r"^(?!\s*\[\[)"   # NGC entrypoints quote the compat status in [[...]] inside a healthy warning

GPU = (
    # --- GPU memory (not the container's memory limit) ---------------------------------------------
    # vLLM worker.py / kv_cache_utils.py (V0 and V1 engines), vllm-project/vllm#6180-style reports.
    Signature("vllm-kv-cache", "gpu-out-of-memory",
              r"No available memory for the cache blocks|is larger than the maximum number of tokens that can be stored in KV cache"
              r"|KV cache is needed, which is larger than the available KV cache memory",
              "vLLM: the KV cache for --max-model-len does not fit in the GPU memory left after the weights"),
    Signature("vllm-free-memory", "gpu-out-of-memory",
              r"Free memory on device .* on startup is less than desired GPU memory utilization",
              "vLLM: less GPU memory is free at start than --gpu-memory-utilization asks for (another process holds it)"),
    # text-generation-inference warmup: huggingface/text-generation-inference#755, #710
    Signature("tgi-warmup", "gpu-out-of-memory",
              r"Not enough memory to handle \d+ (?:prefill|total) tokens",
              "TGI warmup: the batch token budget does not fit in GPU memory"),

    # PyTorch >= 2.5 torch.OutOfMemoryError, 1.13-2.4 torch.cuda.OutOfMemoryError, older RuntimeError;
    # TGI wraps it: Error: WebServer(Warmup(Generation("CUDA out of memory. Tried to allocate ...")))
    Signature("torch-cuda-oom", "gpu-out-of-memory",
              r"CUDA out of memory\. Tried to allocate|(?:OutOfMemoryError|RuntimeError|Error)\b[:(\"' ]+.*CUDA out of memory"
              r"|CUDA out of memory occurred when warming up",
              "the process ran out of GPU memory (PyTorch caching allocator)"),
    Signature("cuda-error-oom", "gpu-out-of-memory",
              r"CUDA error: out of memory|(?<!`)cudaErrorMemoryAllocation|CUDA failure 2: out of memory"
              r"|CUDA runtime error in \S+: out of memory|Error Code \d+: (?:Cuda Runtime \(out of memory\)|OutOfMemory)"
              r"|CUBLAS_STATUS_ALLOC_FAILED",
              "a CUDA/cuBLAS/TensorRT/onnxruntime allocation on the GPU failed: out of memory"),
    # HAMi vGPU: HAMi-core refuses an allocation above the pod's nvidia.com/gpumem slice, `[HAMI-core ERROR (pid:30
    # thread=… allocator.c:53)]: Device 0 OOM 3171158016 / 3145728000` (Project-HAMi/HAMi#662, #1003); the framework
    # then reports an odd CUDA error rather than "out of memory" (Project-HAMi/HAMi-core#55).
    Signature("hami-device-oom", "gpu-out-of-memory", r"\bDevice \d+ OOM \d+ ?/ ?\d+",
              "HAMi-core refused a GPU allocation above the pod's vGPU memory slice (nvidia.com/gpumem)"),
    # TensorFlow and JAX/XLA; an allocation "by allocator cpu" is host memory, not GPU memory.
    Signature("xla-tf-oom", "gpu-out-of-memory",
              r"^(?!.*allocator cpu).*(?:OOM when allocating tensor|RESOURCE_EXHAUSTED: Out of memory"
              r"|CUDA_ERROR_OUT_OF_MEMORY)",
              "TensorFlow/JAX ran out of GPU memory"),
    # --- no GPU device in the container -----------------------------------------------------------
    Signature("torch-no-gpus", "gpu-not-visible", r"No CUDA GPUs are available",
              "PyTorch found the CUDA driver but no GPU device"),
    Signature("cuda-no-device", "gpu-not-visible",
              r"no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE|(?<!`)cudaErrorNoDevice|No visible GPU devices",
              "the CUDA driver sees no GPU device"),
    Signature("nvidia-smi-no-devices", "gpu-not-visible", r"^\s*No devices were found\s*$",
              "nvidia-smi found no GPU device"),
    Signature("nvidia-smi-no-driver", "gpu-not-visible",
              r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
              "nvidia-smi cannot reach the driver (no device nodes in the container, or the driver is not loaded)"),
    # The container lost its device-cgroup access after it started (systemd reloaded the unit's device rules):
    # NVIDIA/nvidia-docker#1730 (notice), NVIDIA/nvidia-container-toolkit#48, #251.
    Signature("nvml-unknown-error", "gpu-not-visible", r"Failed to initialize NVML: Unknown Error",
              "NVML cannot open the GPU device nodes although they were injected"),
    # PyTorch UserWarning "CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up
    # environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available
    # devices to be zero." (error 999: no /dev/nvidia-uvm, a GPU in a bad state after an Xid, lost device access).
    Signature("cuda-unknown-error", "gpu-not-visible", r"CUDA initialization: CUDA unknown error|CUDA driver initialization failed",
              "CUDA failed to initialise the GPU and reports zero devices"),
    # vLLM: "No platform detected, vLLM is running on UnspecifiedPlatform" then this (vllm-project/vllm#12847, #8885)
    Signature("vllm-no-platform", "gpu-not-visible", r"RuntimeError: Failed to infer device type",
              "vLLM detected no CUDA platform"),
    Signature("device-count-zero", "gpu-not-visible",
              r"device_count\(\)\s*(?:==|=|:|->|returned|is)\s*0\b|cuda\.is_available\(\)\s*(?:==|=|:|->|returned|is)\s*False\b",
              "the application saw zero CUDA devices"),

    # --- NVSwitch fabric not initialised ---------------------------------------------------------------
    # CUDA error 802 (cudaErrorSystemNotReady / CUDA_ERROR_SYSTEM_NOT_READY) on NVSwitch systems (HGX/DGX A100-SXM,
    # H100/H200, B200) whose fabric manager is not running: pytorch/pytorch#35710 ("cuda runtime error (802) :
    # system not yet initialized"), huggingface/huggingface_hub#4134 ("Unexpected error from cudaGetDeviceCount()
    # ... Error 802: system not yet initialized"), kata-containers/kata-containers#11730 (DGX H100),
    # ollama/ollama#12136 ("ggml_cuda_init: failed to initialize CUDA: system not yet initialized").
    Signature("cuda-system-not-ready", "fabric-manager-not-running",
              r"(?<![\w-])system not yet initiali[sz]ed|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY",
              "CUDA error 802: the GPUs' NVSwitch fabric is not initialised (fabric manager not running)"),
    # --- driver libraries not injected --------------------------------------------------------------
    Signature("libcuda-missing", "driver-libraries-missing", r"libcuda\.so(?:\.1)?: (?:cannot open shared object file|No such file)",
              "libcuda.so.1 (driver library, injected by the NVIDIA container toolkit) is absent"),
    Signature("nvml-missing", "driver-libraries-missing",
              r"libnvidia-ml\.so(?:\.1)?: (?:cannot open shared object file|No such file)|NVML Shared Library Not Found",
              "libnvidia-ml.so.1 (NVML, injected by the NVIDIA container toolkit) is absent"),
    # torch raises this for (?<!`)cudaErrorInsufficientDriver with driver version 0, i.e. no libcuda at all
    Signature("torch-no-driver", "driver-libraries-missing", r"Found no NVIDIA driver on your system",
              "PyTorch found no NVIDIA driver library"),
    Signature("tf-no-driver", "driver-libraries-missing", r"Could not find cuda drivers on your machine",
              "TensorFlow found no CUDA driver library"),
    # The driver was upgraded on the node without a reboot: the injected libraries no longer match the kernel module.
    Signature("nvml-version-mismatch", "driver-libraries-missing", r"Failed to initialize NVML: Driver/library version mismatch",
              "the driver libraries do not match the NVIDIA kernel module loaded on the node"),
    Signature("nvidia-smi-not-found", "driver-libraries-missing",
              r"nvidia-smi: (?:command )?not found|exec: \"nvidia-smi\": executable file not found"
              r"|nvidia-smi: No such file or directory",
              "nvidia-smi (injected by the NVIDIA container toolkit) is absent"),

    # --- driver older than the CUDA in the image ---------------------------------------------------
    Signature("torch-driver-too-old", "cuda-driver-too-old",
              r"The NVIDIA driver on your system is too old \(found version \d+\)",
              "PyTorch: the driver is older than the CUDA it was built with"),
    Signature("cuda-insufficient-driver", "cuda-driver-too-old",
              r"CUDA driver version is insufficient for CUDA runtime version|(?<!`)cudaErrorInsufficientDriver",
              "the CUDA runtime in the image needs a newer driver"),
    Signature("cuda-compat-mismatch", "cuda-driver-too-old",
              _NOT_BANNER + r".*(?:CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|system has unsupported display driver / cuda driver combination"
              r"|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE|forward compatibility was attempted on non supported HW)",
              "the forward-compatibility libcuda in the image does not work with this node's driver/GPU"),
    Signature("ptx-unsupported", "cuda-driver-too-old",
              r"the provided PTX was compiled with an unsupported toolchain|CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
              r"|(?<!`)cudaErrorUnsupportedPtxVersion",
              "PTX from a newer CUDA cannot be JIT-compiled by this older driver (minor-version compatibility limit)"),
    # NGC entrypoint (nvidia_entrypoint.sh); only decisive when the detected driver is below the major's floor.
    Signature("ngc-driver-unavailable", "cuda-driver-too-old",
              r"version (\d+\.\d+(?:\.\d+)?) was detected and compatibility mode is UNAVAILABLE",
              "the NGC container was built for a newer driver"),

    # --- kernels not built for this GPU ------------------------------------------------------------
    Signature("no-kernel-image", "no-kernel-image-for-gpu",
              r"no kernel image is available for execution on the device|(?<!`)cudaErrorNoKernelImageForDevice"
              r"|CUDA_ERROR_NO_BINARY_FOR_GPU|device kernel image is invalid",
              "the binary has no kernels for this GPU's architecture"),
    Signature("ptxas-unknown-arch", "no-kernel-image-for-gpu", r"Value 'sm_\d+\w*' is not defined for option 'gpu-name'",
              "the bundled ptxas (Triton/torch.compile) does not know this GPU's architecture"),

    # ROCm/HIP, the same failure on AMD GPUs: `RuntimeError: HIP error: invalid device function` (ROCm/legacy-rocm-build#4909,
    # pytorch/pytorch#164346 on gfx1151), `hipErrorNoBinaryForGpu: Unable to find code object for all current devices!`
    # (ROCm/tensorflow-upstream#1800, pytorch/pytorch#73534), older `Coudn't find binary for current devices!` (#1106).
    Signature("hip-no-code-object", "no-kernel-image-for-gpu",
              r"\bHIP error: invalid device function|(?<!`)hipErrorInvalidDeviceFunction|(?<!`)hipErrorNoBinaryForGpu"
              r"|Unable to find code object for all current devices|Cou(?:l)?dn'?t find binary for current devices",
              "the ROCm/HIP build has no code object for this AMD GPU's ISA (gfx target); HSA_OVERRIDE_GFX_VERSION or an "
              "image built for it"),

    # Libraries that ship kernels for some architectures only and say so before any kernel launch:
    # FlashAttention-2 `RuntimeError: FlashAttention only supports Ampere GPUs or newer.` (Dao-AILab/flash-attention
    # #762), xformers `requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)`
    # (camenduru/DeepCache-colab#2, facebookresearch/xformers#1263), Triton `fp8e4nv data type is not supported on
    # CUDA arch < 89` (triton-lang/triton#4319) / `type fp8e4nv not supported in this architecture`, `Conversion
    # from/to f8e4m3nv is only supported on compute capability >= 90` (kvcache-ai/ktransformers#696), vLLM
    # `GPUs with compute capability below 7.0 are not supported` (vllm-project/vllm#1284). vLLM's "Bfloat16 is only
    # supported on GPUs with compute capability of at least 8.0" (#1157) is a dtype setting (--dtype=half), not this.
    Signature("library-arch-unsupported", "no-kernel-image-for-gpu",
              r"FlashAttention (?:\S+ )?only supports (?:\w+ )?GPUs or newer|only supports Ampere (?:GPUs )?or newer"
              r"|requires device with capability [<>=]+ \(\d+, \d+\) but your GPU has capability \(\d+, \d+\) \(too old\)"
              r"|data type is not supported on CUDA arch < ?\d+|type fp8\w* not supported in this architecture"
              r"|is only supported on compute capability >= ?\d+"
              r"|GPUs with compute capability below \d+\.\d+ are not supported"
              r"|compute capability \d+\.\d+ is not supported"
              # kernl: "GPU compute capability 8.0 (Ampere) or higher is required to install kernl" (ELS-RD/kernl)
              r"|compute capability (?:of )?(?:at least )?\d+\.\d+(?: \(\w+\))? or (?:higher|newer|above) is required"
              r"|requires (?:a )?GPUs? with compute capability (?:>= ?|of at least )?\d",
              "a library (FlashAttention, xformers, Triton, vLLM) has no kernels or dtype support for this GPU's "
              "compute capability"),
    Signature("torch-arch-unsupported", "no-kernel-image-for-gpu",
              r"with CUDA capability sm_\d+\w* is not compatible with the current PyTorch installation",
              "the PyTorch build does not include this GPU's architecture"),
    # --- GPU held by another process ---------------------------------------------------------------
    Signature("devices-busy", "gpu-busy-exclusive-mode",
              r"all CUDA-capable devices are busy or unavailable|CUDA-capable device\(s\) is/are busy or unavailable"
              r"|(?<!`)cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE",
              "the GPU is in exclusive-process mode and another process holds it (or it is prohibited)"),
)

# Lines a framework prints only once the CUDA runtime initialised on the GPU, so the node's driver runs the image's
# CUDA whatever its tag suggests: Triton cuda_memory_manager "CUDA memory pool is created on device 0 with size 67108864",
# TensorFlow "Created device /job:localhost/replica:0/task:0/device:GPU:0 with 14626 MB memory", vLLM "Model loading
# took 14.99 GiB" / V0 "Loading model weights took 14.99 GB", "# GPU blocks: 2048", V1 "GPU KV cache size: 123,456 tokens".
CUDA_INITIALISED = (r"CUDA memory pool is created on device|Created device /job:\S+/device:GPU:\d+ with \d+ MB memory"
                    r"|Model loading took [\d.]+ ?GiB|Loading model weights took [\d.]+ ?GB|# GPU blocks: \d+|GPU KV cache size: [\d,]+")

# Lines that frameworks print and then carry on (TensorFlow/XLA and llama.cpp fall back to CPU, nvidia-smi in a
# script before the real command, NCCL/c10d warnings and retries, PyTorch's arch UserWarning): they explain a crash
# only when no unrelated error follows them in the log.
NOTICE = frozenset({"tf-no-driver", "cuda-no-device", "nvidia-smi-no-devices", "nvidia-smi-no-driver", "cuda-unknown-error",
                    "device-count-zero", "libcuda-missing", "xla-tf-oom", "torch-arch-unsupported",
                    "c10d-bootstrap", "nccl-warn"})

# Causes that the log line itself establishes, ahead of the ranked pod/node checks: (cause, fix, snippet).
SIGNATURE_CAUSES = {
    "nvml-unknown-error": (
        "the container lost access to its GPU device nodes after it started: systemd reloaded the cgroup device "
        "rules (e.g. systemctl daemon-reload) and runc found no /dev/char symlinks for the NVIDIA devices",
        "Delete the pod so its container is recreated with device access; on node $node create the /dev/char "
        "symlinks (nvidia-ctk system create-dev-char-symlinks --create-all; the GPU operator's toolkit does this "
        "from v1.12) so a daemon-reload no longer detaches running GPU containers.",
        "kubectl delete pod $pod -n $namespace\n"
        "kubectl debug node/$node -it --image=busybox -- chroot /host nvidia-ctk system create-dev-char-symlinks --create-all"),
    "nvml-version-mismatch": (
        "the NVIDIA driver on node $node was upgraded without a reboot: the injected libraries no longer match the "
        "loaded kernel module",
        "Drain node $node and reboot it (or reload the nvidia kernel modules; with the GPU operator, restart its "
        "driver DaemonSet pod) so the kernel module matches the driver libraries.",
        "kubectl drain $node --ignore-daemonsets --delete-emptydir-data\n# reboot the node, then:\nkubectl uncordon $node"),
}
