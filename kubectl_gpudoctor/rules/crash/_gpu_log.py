"""Which crashed run and which log line explain a GPU crash, and how to quote it: helpers for the GPU crash
rules, which must hold no rule and do no I/O."""
from __future__ import annotations

import re
from typing import Iterable, Optional

from ...logs import scan as logscan
from ...kube import podstate
from ...logs.crashrun import stopped_sidecar
from ...data.log_signatures import SIGNATURES
from ...data.signatures_gpu import NOTICE
from ...data.signatures_distributed import NCCL_HINTS
from ...kube.objects import container_gpus, name
from ...kube.timeutil import seconds_between
from .._common import status_line
from ..registry import Hit, Line
from ... import lazyre

# Signature families that several GPU crash rules read the same way.
NO_GPU_RULES = ("gpu-not-visible", "driver-libraries-missing")
# A driver/library version mismatch proves a driver is there: not a missing request or another vendor's node.
DRIVER_PRESENT = ("nvml-version-mismatch",)
# cudart reports cudaErrorInsufficientDriver both for an old driver and for no libcuda at all.
AMBIGUOUS = "cuda-insufficient-driver"

# A matched line belongs to the crash when at most this many ordinary lines follow it; a server that caught a
# per-request error and kept serving prints many more (access logs, throughput lines).
CRASH_TAIL_LINES = 15
_JSON_INFO = lazyre.compile(r'"(?:level|severity|lvl)"\s*:\s*"(?:info|debug|trace|notice)"', re.I)
# Error lines that still speak about the GPU, or that only wrap the root cause printed above them.
_GPU_WORDS = lazyre.compile(r"(?i)gpu|cuda|nvidia|nvml|nccl|device|driver|root cause|ChildFailedError|exitcode")
# The kubelet resets the crash-loop back-off after 10 minutes of running: an older crash of a Ready container is history.
RECOVERED_AFTER_S = 600
# Per-process prefixes that come before a traceback's indentation: kubectl --timestamps, vLLM's
# "(APIServer pid=1) " / "(EngineCore_0 pid=57) ", torch.distributed's "[rank0]: ".
_PREFIX = lazyre.compile(r"^(?:\d{4}-\d\d-\d\dT\S+\s)?(?:\([^)]*pid=\d+[^)]*\)\s?|\[rank\d+\]:\s?)?")
# Not ordinary output: indented traceback/stack lines, error vocabulary, and dumped code (PTX/JSON) after an error.
_NOT_ORDINARY = lazyre.compile(r"^\s|^[.{}/\]\[]|;\s*$|error|exception|traceback|warn|fatal|fail|abort|killed|terminat"
                           r"|shut|exit|raise|signal|core dump|stack|frame", re.I)


_ORDER = {sig.id: i for i, sig in enumerate(SIGNATURES)}


def crashed(ev):
    """(container, status, termination, log key) for containers (init ones too) whose latest run exited non-zero
    and still matters (not a native sidecar the kubelet stopped when the pod finished); the log key says which
    log (previous or not) holds that run, None when none was read."""
    for c, cs, init in podstate.all_container_states(ev.pod):
        term = podstate.latest_termination(cs)
        if term and term.get("exitCode", 0) != 0 and not _recovered(ev, cs) and not stopped_sidecar(ev.pod, c, init):
            yield c, cs, term, _run_log(ev, c["name"], cs, term)


def _recovered(ev, cs) -> bool:
    """Running and Ready for longer than the kubelet's 10-minute back-off reset: the old crash is history."""
    running = (cs.get("state") or {}).get("running")
    up = seconds_between((running or {}).get("startedAt"), ev.now())
    return bool(running is not None and cs.get("ready") and up is not None and up >= RECOVERED_AFTER_S)


def _run_log(ev, cname, cs, term) -> Optional[bool]:
    """The kubelet serves the terminated run as the current log while the container is terminated or waits in
    back-off (and also as `previous` once it restarted); a newer running instance owns the current log."""
    if podstate.terminated(cs) is term:
        order = (False, True)
    elif (cs.get("state") or {}).get("running") is not None:
        order = (True,)
    else:
        order = (True, False)
    return next((prev for prev in order if ev.log(ev.pod, cname, prev)), None)


def crash_match(ev, cname: str, prev: Optional[bool], rules: Iterable[str], accept=None) -> Optional[logscan.Match]:
    """The line of these rules' signatures in the failed run's log that belongs to the crash, or None: the
    earliest-listed signature (data order = preference), its newest line."""
    if prev is None:
        return None
    found = [m for r in rules for m in logscan.scan(ev, ev.pod, cname, r) if m.previous == prev
             and (accept is None or accept(m)) and _in_crash_tail(ev, m)
             and not (m.signature.id in NOTICE and _unrelated_error_after(ev, m))]
    return min(found, key=lambda m: (_ORDER.get(m.signature.id, 0), -m.lineno)) if found else None


def matches(ev, cname: str, prev: Optional[bool], rule_id: str) -> list:
    """Every line of a rule's signatures in the failed run's log, newest first."""
    return [m for m in logscan.scan(ev, ev.pod, cname, rule_id) if m.previous == prev] if prev is not None else []


def _unrelated_error_after(ev, m) -> bool:
    """An error line after a notice that is about something else (the program carried on and failed later)."""
    return any(x.previous == m.previous and x.lineno > m.lineno and not _GPU_WORDS.search(x.line)
               for x in logscan.scan(ev, ev.pod, m.container, "app-error"))


def _in_crash_tail(ev, m) -> bool:
    rest = logscan.clean(ev.log(ev.pod, m.container, m.previous) or "").split("\n")[m.lineno:]
    return sum(1 for line in rest if _ordinary(_PREFIX.sub("", line, count=1))) <= CRASH_TAIL_LINES


def _ordinary(line: str) -> bool:
    """Normal output of a running program; structured (JSON) lines by their level."""
    if line.startswith("{"):
        return bool(_JSON_INFO.search(line))
    return bool(line.strip()) and not _NOT_ORDINARY.search(line)


def status_of(c, cs, term) -> Line:
    return status_line(c["name"], "state" if podstate.terminated(cs) is term else "lastState", term)


def crash_hit(ev, c, cs, term, m, message, extra=(), **kw) -> Hit:
    lines = [status_of(c, cs, term)] + ([m.as_line(name(ev.pod))] if m else []) + list(extra)
    kw.setdefault("values", {})["container"] = c["name"]
    return Hit(message, lines, **kw)


def quote(m, c, term) -> str:
    """The matched log line without its process prefix (shortened), or the exit code of an nvidia-smi command."""
    if m:
        line = _PREFIX.sub("", m.line.strip(), count=1).strip()
        if len(line) > 200:   # long library messages: keep their first sentence
            end = line.find(". ", 60)
            line = line[:end + 1] if 0 < end < 300 else line
        return (line if len(line) <= 320 else line[:317] + "...").rstrip(".")
    return f"exit code {term.get('exitCode')} from `{' '.join((c.get('command') or []) + (c.get('args') or []))}`"


# NCCL's own words for a failure that names no cause: with several GPUs in one container and the 64Mi /dev/shm
# default, the intra-node SHM transport is the usual cause (xorbitsai/inference#1622, akash-network/awesome-akash#543).
_GENERIC_NCCL = r"unhandled system error|ncclSystemError|NCCL_ERROR_SYSTEM_ERROR"


def shm_inferred(ev, c, prev):
    """The NCCL line of a generic system error, when the container holds several GPUs (or a warning says /dev/shm
    is the 64 MB default) and mounts nothing at /dev/shm; else None."""
    m = crash_match(ev, c["name"], prev, ("nccl-failure",), accept=lambda x: bool(re.search(_GENERIC_NCCL, x.line, re.I)))
    others = [x.line for x in matches(ev, c["name"], prev, "nccl-failure")[:20]]
    if m and any(re.search(rx, line) for rx, _ in NCCL_HINTS[1:] for line in others if rx != _GENERIC_NCCL):
        return None   # another NCCL line names the cause (an interface, a refused connection, IB)
    return m if m and (sum(container_gpus(c).values()) >= 2 or matches(ev, c["name"], prev, "shm-context")) else None
