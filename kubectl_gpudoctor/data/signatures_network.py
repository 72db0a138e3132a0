"""Log signatures of blocked pod networking: peers (NCCL, torch.distributed), DNS, connections, InfiniBand."""
from .signature import Signature

# Ids start with the traffic they show: peer- (the job's other pods), dns-, conn- (any outbound connection),
# ib- (no RDMA device inside the pod). networkpolicy-blocks-traffic pairs them with what a policy blocks.
NETWORK = (
    # NCCL socket bootstrap/transport: "include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed :
    # Connection refused" (espnet/espnet#1940, NCCL 2.4-2.7), "misc/socket.cc:483 NCCL WARN socketStartConnect:
    # Connect to 10.0.0.2<45763> failed : Software caused connection abort" (NVIDIA/nccl-tests#166),
    # "NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host)"
    # (sgl-project/sglang#3820), "NCCL INFO Call to connect returned Connection refused, retrying".
    Signature("peer-nccl-connect", "networkpolicy-blocks-traffic",
              r"NCCL WARN .*(?:[Cc]onnect(?:ion)? to \S+ (?:failed|returned)|socket(?:Start|Poll)Connect|"
              r"Connection (?:refused|timed out|reset)|No route to host)"
              r"|NCCL INFO Call to connect returned (?:Connection refused|Connection timed out|No route to host)",
              "NCCL could not open a TCP connection to another rank"),
    # torch.distributed c10d store / rendezvous: "[c10d] The client socket has timed out after 600000ms while trying
    # to connect to (172.17.0.9, 46229)." (vllm-project/vllm#19670), "[c10d] The client socket has failed to connect
    # to [::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out)." (ofsoundof/GRL-Image-Restoration#27),
    # torch.distributed.DistNetworkError, RendezvousConnectionError, older "connect() timed out".
    Signature("peer-c10d-connect", "networkpolicy-blocks-traffic",
              r"\[c10d\] The client socket has (?:timed out after|failed to connect)|DistNetworkError|"
              r"RendezvousConnectionError|TCPStore.*(?:timed out|failed to connect)|RuntimeError: connect\(\) timed out",
              "torch.distributed could not reach the rendezvous store (MASTER_ADDR:MASTER_PORT)"),
    Signature("peer-nccl-watchdog", "networkpolicy-blocks-traffic",
              r"Watchdog caught collective operation timeout|NCCL (?:communicator was aborted|timeout)",
              "a collective timed out waiting for other ranks"),
    # Name resolution from Python (socket.gaierror), Go ("lookup x on 10.96.0.10:53: ... i/o timeout") and curl.
    Signature("dns-resolution", "networkpolicy-blocks-traffic",
              r"Temporary failure in name resolution|Name or service not known|getaddrinfo (?:failed|ENOTFOUND|EAI_AGAIN)|"
              r"lookup \S+ on [\d.:\[\]]+:53: .*(?:i/o timeout|no such host)|Could not resolve host|"
              r"NameResolutionError|Failed to resolve '",
              "DNS lookups fail"),
    Signature("conn-refused-timeout", "networkpolicy-blocks-traffic",
              r"[Cc]onnection refused|[Cc]onnection timed out|connect: connection (?:refused|timed out)|"
              r"dial tcp \S+: (?:i/o timeout|connect: no route to host)|Max retries exceeded with url|"
              r"ConnectTimeout(?:Error)?|No route to host",
              "outbound connections are refused or time out"),
    # NCCL finds no InfiniBand/RoCE device inside the container and falls back to sockets:
    # "NCCL INFO NET/IB : No device found." then "NCCL INFO Using network Socket"; "misc/ibvwrap.cc:63 NCCL WARN
    # Failed to open libibverbs.so[.1]" (pytorch/pytorch#68893).
    Signature("ib-no-device", "rdma-device-missing",
              r"NET/IB ?: No device found|NCCL WARN Failed to open libibverbs|No IB devices found",
              "NCCL sees no InfiniBand/RoCE device in the container"),
)
