"""Log signatures of shared-memory (/dev/shm) and NCCL/torch.distributed failures, with the hints that read an
NCCL failure's cause from its wording; data only, imported through log_signatures (never directly).

Lines that are warnings in healthy runs (Ray "object store is using /tmp instead of /dev/shm", NGC "SHMEM
allocation limit is set to the default of 64MB") are deliberately not matched.
"""
from .signature import Signature

DISTRIBUTED = (
    # --- shared memory (/dev/shm) ------------------------------------------------------------------
    # torch/utils/data/_utils/signal_handling.py and dataloader.py wording
    Signature("dataloader-shm", "shm-too-small",
              r"insufficient shared memory \(shm\)|is killed by signal: Bus error|out of shared memory\. Please try to raise",
              "a PyTorch DataLoader worker died of a bus error: /dev/shm is too small"),
    # NCCL shmutils.cc: "Error while creating shared memory segment /dev/shm/nccl-XXXX (size N)"
    Signature("nccl-shm", "shm-too-small",
              r"Error while creating shared memory segment /dev/shm|posix_fallocate failed\s*:\s*No space left on device",
              "NCCL could not create its shared-memory segment in /dev/shm"),
    Signature("shm-no-space", "shm-too-small",
              r"/dev/shm[^\n]*No space left on device|No space left on device[^\n]*/dev/shm"
              r"|unable to write to file </torch_\w+>: No space left on device",
              "/dev/shm (shared memory) is full"),
    Signature("bus-error", "shm-too-small", r"\bBus error\b", "a process died of SIGBUS (typically /dev/shm exhausted)"),

    # Context, not a finding on its own (healthy runs print it): an explicit warning that /dev/shm is the runtime's
    # 64 MB default, which makes a generic NCCL system error a shared-memory one. NGC entrypoint: "The SHMEM allocation
    # limit is set to the default of 64MB. This may be insufficient for PyTorch." (docker --shm-size advice).
    Signature("shm-default-warning", "shm-context",
              r"SHMEM allocation limit is set to the default of 64MB|shared memory \(/dev/shm\) (?:size )?is (?:too small|"
              r"only \d+)",
              "the container's /dev/shm is the 64 MB default"),

    # --- NCCL / torch.distributed ------------------------------------------------------------------
    Signature("nccl-error", "nccl-failure",
              r"NCCL error in: |\bncclSystemError\b|\bncclInternalError\b|\bncclRemoteError\b|\bncclUnhandledCudaError\b"
              r"|\bncclInvalidUsage\b|NCCL communicator was aborted|DistBackendError:",
              "an NCCL collective failed"),
    # The wrappers' wording of an NCCL return code: vLLM pynccl `RuntimeError: NCCL error: unhandled system error (run
    # with NCCL_DEBUG=INFO for details)` (akash-network/awesome-akash#543, xorbitsai/inference#1622), Horovod
    # `HorovodInternalError: ncclCommInitRank failed: unhandled system error` (horovod/horovod#3611-style), cupy/Ray
    # `NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error`, DeepSpeed/torch `ProcessGroupNCCL ... ncclSystemError`.
    Signature("nccl-wrapped", "nccl-failure",
              r"NCCL error:? (?:unhandled (?:system|cuda) error|internal error|remote process exited|invalid usage)"
              r"|\bnccl\w+ failed: (?:unhandled (?:system|cuda) error|internal error|remote process|invalid)"
              r"|NCCL_ERROR_(?:SYSTEM|INTERNAL|UNHANDLED_CUDA|REMOTE)_ERROR|NcclError:",
              "an NCCL call failed (the wrapper's wording of an NCCL return code)"),
    Signature("nccl-watchdog", "nccl-failure", r"Watchdog caught collective operation timeout",
              "a collective did not complete before the process-group timeout (a peer is stuck, dead or unreachable)"),
    # Older torch wording from the TCPStore constructor: "ValueError: host not found: Name or service not known"
    # (torch <= 1.9; kubeflow/pytorch-operator#125, pytorch/examples#540, "Temporary failure in name resolution"
    # pytorch/pytorch#64990) and "RuntimeError: connect() timed out. Original timeout was 60000 ms." (pytorch/pytorch#67581).
    Signature("c10d-bootstrap", "nccl-failure",
              r"DistNetworkError|DistStoreError|RendezvousConnectionError|RendezvousTimeoutError"
              r"|The client socket has (?:failed to connect|timed out)"
              r"|host not found: (?:Name or service not known|Temporary failure in name resolution|No address associated)"
              r"|connect\(\) timed out\. Original timeout was \d+",
              "the torch.distributed rendezvous (TCPStore) could not reach its peers"),
    Signature("nccl-warn", "nccl-failure", r"\bNCCL WARN\b(?!.*(?:/dev/shm|shared memory|posix_fallocate))",
              "NCCL reported a warning (socket, IB/RDMA, bootstrap)"),
)

# What an NCCL/torch.distributed failure most likely means, from the wording of its lines (first match wins).
# Not NCCL's generic ncclSystemError text "System call (e.g. socket, malloc) ...", which names no cause.
NCCL_HINTS = (
    (r"/dev/shm|shared memory|posix_fallocate",
     "shared memory: NCCL's intra-node transport needs a large /dev/shm (see shm-too-small)"),
    (r"no socket interface found|NCCL_SOCKET_IFNAME",
     "no usable network interface: NCCL_SOCKET_IFNAME (or NCCL's interface autodetection) names an interface the "
     "pod does not have; pods usually have only eth0 (plus Multus interfaces)"),
    # `misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory`: pinning memory
    # for RDMA hit RLIMIT_MEMLOCK (NVIDIA/nccl-tests#206, sjeaugey: raise the memlock limit); the kernel lifts the limit
    # for CAP_IPC_LOCK (ib_umem_get), which containers do not have by default.
    (r"ibv_reg_mr\w*\b.*(?:Cannot allocate memory|error 12\b|ENOMEM)",
     "the memory-lock limit: registering memory for InfiniBand/RDMA (ibv_reg_mr) failed with ENOMEM, which means "
     "RLIMIT_MEMLOCK in the container is too low, not that RAM ran out; add the IPC_LOCK capability to the container "
     "(or run the runtime with an unlimited memlock limit, containerd's LimitMEMLOCK=infinity)"),
    (r"\bNET/IB\b|\bibv_\w+|\bmlx5|\bIB\b|RoCE|\bGID\b|rdma",
     "InfiniBand/RDMA: the IB devices or rdma resources are not available to the pod, or the fabric is down"),
    (r"host not found|Name or service not known|Temporary failure in name resolution|No address associated with hostname",
     "name resolution: the rendezvous host (MASTER_ADDR) does not resolve; a headless Service's name resolves only once "
     "a ready pod backs it, so this is what workers print while the master pod is not running yet (or the name or "
     "namespace is wrong)"),
    (r"Connection refused|connect\w*\b.*(?:failed|timed out|timeout)|No route to host|Bootstrap|bootstrap"
     r"|socket(?:Start|Poll)Connect|Socket (?:Timeout|recv failed)|DistNetworkError|DistStoreError|Rendezvous|client socket",
     "network reachability: the ranks cannot reach each other or the rendezvous endpoint (NetworkPolicy, headless "
     "Service/DNS, MASTER_ADDR/MASTER_PORT, a peer pod not running)"),
    (r"Watchdog caught collective operation timeout|timed out|Timeout",
     "a collective timed out: a peer rank died, hung, or cannot be reached"),
    (r"unhandled cuda error|ncclUnhandledCudaError",
     "a CUDA error inside NCCL (often a GPU fault/Xid on one of the nodes)"),
    (r"Duplicate GPU detected|ncclInvalidUsage",
     "invalid usage: e.g. two ranks on the same GPU (check the GPU request per pod and LOCAL_RANK mapping)"),
)

# The fix that goes with the memory-lock hint: the capability that lifts RLIMIT_MEMLOCK for RDMA registration.
MEMLOCK_SNIPPET = "# container $container\nsecurityContext:\n  capabilities:\n    add: [\"IPC_LOCK\"]"
