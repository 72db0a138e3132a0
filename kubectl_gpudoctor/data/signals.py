"""Container exit codes: shell conventions (126, 127) and 128+N for death by signal N on Linux."""

SIGNALS = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
    8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
    14: "SIGALRM", 15: "SIGTERM",
}

# What a death by this signal usually means inside a Kubernetes container.
SIGNAL_MEANING = {
    "SIGKILL": ("killed with SIGKILL without an OOM record: a failed liveness probe after the grace period, "
                "the kernel OOM killer acting on a child process, or an external kill"),
    "SIGTERM": ("stopped with SIGTERM: the kubelet stopped it (liveness/startup probe failure, eviction, "
                "pod deletion or a rollout) or the process signalled itself"),
    "SIGSEGV": "segmentation fault: a native-code crash (CUDA/driver library mismatch, a bad extension, stack overflow)",
    "SIGABRT": "aborted: a failed assertion or a C++ exception (CUDA/NCCL errors often end this way)",
    "SIGBUS": "bus error: usually shared memory (/dev/shm) exhausted or a truncated memory-mapped file",
    "SIGILL": "illegal instruction: the binary needs CPU features this node lacks (e.g. AVX-512)",
    "SIGFPE": "arithmetic exception in native code",
    "SIGINT": "interrupted",
    "SIGHUP": "hang-up",
    "SIGPIPE": "wrote to a closed pipe or socket",
}

SHELL_EXIT = {
    126: "command found but not executable (permission denied or not a binary)",
    127: "command not found (not in $PATH or the file does not exist)",
    128: "the runtime could not start the process (StartError)",
}


def signal_of(exit_code) -> str:
    """The signal name for a 128+N exit code, or ''."""
    try:
        n = int(exit_code) - 128
    except (TypeError, ValueError):
        return ""
    return SIGNALS.get(n, "")

# Kubelet event wording around container kills. `Killing` after failed probes, since Kubernetes 1.14:
# `Container server failed liveness probe, will be restarted` (llm-d/llm-d-inference-sim#45) and
# `... failed startup probe, will be restarted`; older kubelets: `Killing container with id docker://server:
# Container failed liveness probe.. Container will be killed and recreated.` / `container "x" is unhealthy,
# it will be killed and re-created`. `Stopping container <name>` is a deletion, rollout or preemption.
PROBE_KILL = (r"(?i)failed (?P<probe>liveness|startup) probe|Container failed (?P<old>liveness) probe"
              r"|unhealthy, it will be killed and re-created")
# `Unhealthy` messages: `Liveness probe failed: Get "http://10.244.1.5:8000/health": dial tcp 10.244.1.5:8000:
# connect: connection refused`, `Startup probe failed: HTTP probe failed with statuscode: 503`, `... errored: ...`.
PROBE_FAILED = r"^(?P<probe>Liveness|Startup) probe (?:failed|errored)"
READINESS_FAILED = r"^Readiness probe (?:failed|errored)"
# What a failed probe says about the server, from the Unhealthy message's tail. No answer within timeoutSeconds:
# httpGet `context deadline exceeded (Client.Timeout exceeded while awaiting headers)` (kubernetes/kubernetes#115469,
# #89898), older kubelets `net/http: request canceled (Client.Timeout ...)`, tcpSocket `i/o timeout`, grpc
# `timeout: failed to connect service ... within 1s`, exec `rpc error: code = DeadlineExceeded desc = context deadline
# exceeded` (kubernetes/kubernetes#82987) or, since 1.20 enforces exec timeouts, an empty reason (`Liveness probe
# failed: `, kubernetes/kubernetes#106111). Nothing listening: `connect: connection refused`, `connection reset by
# peer`, `EOF`. An answer that says unhealthy: `HTTP probe failed with statuscode: 503`.
PROBE_TIMEOUT = (r"(?i)context deadline exceeded|Client\.Timeout|request canceled|i/o timeout|timed out"
                 r"|timeout: failed to connect|DeadlineExceeded")
PROBE_REFUSED = r"(?i)connection refused|connection reset|: EOF\b|no route to host"
PROBE_STATUS = r"statuscode: (?P<code>\d{3})\b"
# The probe reached a running server that answered "no such endpoint": a wrong path, not a slow start.
PROBE_WRONG_TARGET = r"statuscode: (?:404|405|401|403)\b"
STOPPING = r"^Stopping container "

# Signals that mean native code crashed: the last log lines say where.
NATIVE_CRASH = ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE")
# Where a native crash announces itself in the log: CPython's faulthandler ("Fatal Python error: Segmentation
# fault", then "Current thread ... (most recent call first):" and the crashing frame), libstdc++'s "terminate
# called after throwing an instance of ..." / "  what():  ...", glibc's "free(): invalid pointer" and the shell's
# "Segmentation fault (core dumped)", Triton's "Signal (11) received." before its stack frames.
NATIVE_CRASH_LINE = (r"Fatal Python error|Segmentation fault|terminate called|what\(\):|Aborted|core dumped|Bus error"
                     r"|Illegal instruction|\*\*\* (?:Error in|stack smashing)|free\(\): invalid|double free|corrupted (?:size|double)"
                     r"|^SIG(?:SEGV|ABRT|BUS|ILL)\b|Caught signal \d+|received signal SIG|Signal \((?:4|6|7|8|11)\) received")

# What a process prints because it was told to stop (the kubelet's SIGTERM before a probe kill, an eviction or a
# deletion; SIGKILL after the grace period): the kill's own noise, never the application's error. vLLM "Received
# SIGTERM, shutting down." / "KeyboardInterrupt: MQLLMEngine terminated" / "Worker ... died, exit code: -15"
# (kserve/kserve#5063 thread), uvicorn "Shutting down" / "Waiting for application shutdown." / "Finished server
# process", torchrun "Received 15 death signal, shutting down workers" / "SignalException: Process 1 got signal: 15",
# Ray "received SIGTERM", Triton "Signal (15) received.", Go/Java "signal: terminated", "got signal terminated".
SHUTDOWN_NOISE = (r"(?i)received (?:signal )?SIGTERM|SIGTERM received|Received \d+ death signal|got signal:? (?:15|9|"
                  r"terminated)|Signal \((?:15|2)\) received|KeyboardInterrupt|terminated by signal|"
                  r"(?:^|\] )Shutting down(?:\.|$| gracefully| server)|Waiting for application shutdown|"
                  r"Finished server process|graceful(?:ly)? shut ?down|died, exit code: -(?:15|9)\b|"
                  r"SignalException: Process \d+ got signal|signal: terminated")

# The kernel's OOM-kill line, as node-problem-detector's kernel monitor reports it in an `OOMKilling` event on the
# Node: `Memory cgroup out of memory: Killed process 3504804 (kubectl) total-vm:753508kB, anon-rss:58776kB,
# file-rss:29400kB, shmem-rss:0kB, UID:0 pgtables:288kB oom_score_adj:999` (kubernetes/node-problem-detector#766);
# `Out of memory: Killed process …` when the node itself ran out; older kernels `Killed process 799153 (node), UID 1000,
# total-vm:606096kB, anon-rss:68308kB, file-rss:13648kB, shmem-rss:0kB` (kubernetes/kubernetes#50632). The resident
# set at the kill (anon + file + shmem) is what the process held when the kernel chose it.
KERNEL_OOM_KILL = (r"(?P<scope>Memory cgroup out of memory|Out of memory)?:? ?Killed process (?P<pid>\d+) "
                   r"\((?P<comm>[^)]{1,64})\),? (?:UID \d+, )?total-vm:(?P<vm>\d+)kB, anon-rss:(?P<anon>\d+)kB, "
                   r"file-rss:(?P<file>\d+)kB(?:, shmem-rss:(?P<shmem>\d+)kB)?")
KERNEL_OOM_REASONS = ("OOMKilling",)

# A child process of the container killed by SIGKILL while its parent lived on to say so. On cgroup v1 nodes, and on
# cgroup v2 with the kubelet's singleProcessOOMKill (Kubernetes 1.32+; before 1.28 it was the default), the kernel's
# OOM killer at the container's memory limit kills the largest process only, so the container is not OOMKilled: its
# main process reports the child and exits on its own (exit 1). PyTorch's DataLoader: `RuntimeError: DataLoader worker
# (pid 4123) is killed by signal: Killed.` (strsignal(SIGKILL); pytorch/pytorch#8976, open-mmlab/mmdetection#3495,
# NVIDIA/Megatron-LM#1657: "memory insufficient"); torchrun's failure report `Signal 9 (SIGKILL) received by PID 4123`.
# Each: (pattern with the child's pid, what the child is, the names the kernel gives such a child (its comm: PyTorch
# names DataLoader workers pt_data_worker), which an OOMKilling event names even where pids differ: the log counts
# pids in the container's namespace, the kernel in the node's).
CHILD_SIGKILL = (
    (r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: Killed\b", "DataLoader worker", ("pt_data_worker",)),
    (r"Signal 9 \(SIGKILL\) received by PID (?P<pid>\d+)", "torchrun worker", ()),
)
