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
