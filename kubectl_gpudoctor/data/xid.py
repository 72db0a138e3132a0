"""NVIDIA Xid errors as data: what each number means, whether it points at the GPU (not the application), and the
action NVIDIA's Xid catalogue gives for it."""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional


class Xid(NamedTuple):
    meaning: str      # dcgm-exporter's err_msg wording (internal/pkg/collector xidErrCodeToText)
    gpu_fault: bool   # True: the GPU or its memory is at fault; False: usually the application (or its driver use)
    action: str       # the catalogue's immediate action (RESTART_APP, RESET_GPU, RESTART_BM, ...) in words


# Sources: NVIDIA "Xid Errors" / "Analyzing Xid Errors with the Xid Catalog"
# (docs.nvidia.com/deploy/xid-errors/), its Resolution Bucket (Immediate Action) column; meanings as dcgm-exporter
# labels them (err_msg).
RESTART_APP = "restart the application; if it recurs on the same GPU, look at the GPU"
RESET_GPU = "reset the GPU (nvidia-smi -r) or reboot the node"
REBOOT = "reboot the node; replace the GPU if it recurs"

XIDS: Dict[int, Xid] = {
    8: Xid("GPU stopped processing", False, RESTART_APP),
    13: Xid("Graphics Engine Exception", False, RESTART_APP + " (often an out-of-bounds access in a kernel)"),
    31: Xid("GPU memory page fault", False, RESTART_APP + " (usually an illegal memory access in the application)"),
    32: Xid("Invalid or corrupted push buffer stream", False, RESTART_APP),
    38: Xid("Driver firmware error", True, RESET_GPU),
    43: Xid("GPU stopped processing", False, RESTART_APP + " (the application hit a fault; the GPU is fine)"),
    44: Xid("Graphics Engine fault during context switch", True, RESET_GPU),
    45: Xid("Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda", False,
            "look at the Xid before it; this one is the driver cleaning up after it"),
    46: Xid("GPU stopped processing", True, RESET_GPU),
    48: Xid("Double Bit ECC Error", True, RESET_GPU + "; the row is remapped (or the page retired) at the reset"),
    54: Xid("Auxiliary power is not connected to the GPU board", True, REBOOT),
    56: Xid("Display Engine error", True, RESET_GPU),
    57: Xid("Error programming video memory interface", True, REBOOT),
    58: Xid("Unstable video memory interface detected", True, REBOOT),
    59: Xid("Internal micro-controller error", True, RESET_GPU),
    61: Xid("Internal micro-controller breakpoint/warning", True, RESET_GPU),
    62: Xid("Internal micro-controller halt", True, RESET_GPU),
    63: Xid("ECC page retirement or row remapping recording event", True,
            "reset the GPU when convenient so that the pending remap or retirement takes effect"),
    64: Xid("ECC page retirement or row remapper recording failure", True, REBOOT),
    68: Xid("NVDEC0 Exception", False, RESTART_APP),
    69: Xid("Graphics Engine class error", False, RESTART_APP),
    74: Xid("NVLINK Error", True, RESET_GPU + "; check the NVLink/NVSwitch fabric if it recurs"),
    79: Xid("GPU has fallen off the bus", True, REBOOT + " (check PCIe seating, power and cooling)"),
    92: Xid("High single-bit ECC error rate", True, "watch the GPU; reset it when convenient"),
    94: Xid("Contained ECC error", True, RESTART_APP + "; reset the GPU so the affected row is remapped"),
    95: Xid("Uncontained ECC error", True, RESET_GPU + "; every process on the GPU was stopped"),
    109: Xid("Context Switch Timeout Error", False, RESTART_APP),
    119: Xid("GSP RPC Timeout", True, RESET_GPU + " (GPU System Processor firmware stopped answering)"),
    120: Xid("GSP Error", True, RESET_GPU),
    121: Xid("C2C Link Error", True, REBOOT),
    140: Xid("Unrecovered ECC Error", True, RESET_GPU),
    154: Xid("GPU Recovery Action Changed", True, "do what the driver asks (reset or reboot)"),
}


def lookup(xid: int) -> Optional[Xid]:
    return XIDS.get(xid)


# GPU-side Xids that warn rather than fail: a remap recorded for the next reset, a rising single-bit error rate
# (gpu-memory-errors reads the remap state itself).
WARNING_ONLY = frozenset({63, 92})


def is_critical(xid: int) -> bool:
    """An Xid that says the GPU itself failed (an application's fault Xids such as 13, 31, 43 do not)."""
    entry = XIDS.get(xid)
    return bool(entry and entry.gpu_fault) and xid not in WARNING_ONLY


def meaning(xid: int, err_msg: Optional[str] = None) -> str:
    entry = XIDS.get(xid)
    if entry:
        return entry.meaning
    return err_msg if err_msg and err_msg != "Unknown Error" else "not in the catalogue table"
