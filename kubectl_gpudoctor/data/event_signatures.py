"""Event and container-status message signatures as data: regex -> meaning -> the rule it supports.

These match what the kubelet, the container runtime (containerd 1.6/1.7/2.x, CRI-O, cri-dockerd) and the
NVIDIA container stack (nvidia-container-toolkit 1.13-1.17, legacy hook and CDI mode) write into pod events and
container state messages. Container *logs* are matched by data/log_signatures.py, not here.

The families live in one module per sub-phase (events_runtime, events_devices, events_volumes, events_images,
events_admission, events_start); import them from here, the one surface the rules use.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional, Tuple

from ..logs.lines import fold
from .signature import EventSignature
from .events_runtime import RUNTIME
from .events_devices import DEVICES
from .events_volumes import VOLUMES
from .events_start import START
from .events_images import PULL_CAUSES  # noqa: F401
from .events_admission import ADMISSION_REASONS, NOT_ADMISSION, REJECTED_MESSAGE  # noqa: F401


# Event reasons under which the families below appear (kubelet events.go; attachdetach-controller).
SANDBOX_REASONS = ("FailedCreatePodSandBox",)
CONTAINER_REASONS = ("Failed", "FailedCreatePodContainer", "FailedStartContainer")
MOUNT_REASONS = ("FailedMount", "FailedAttachVolume", "FailedMapVolume")
# DRA: the kubelet prepares a pod's claimed devices before its sandbox (kubernetes/kubernetes#114364, #118578).
PREPARE_REASONS = ("FailedPrepareDynamicResources",)
# Everything the kubelet and runtime report while they build a pod (sandbox, DRA prepare, containers): a runtime
# raises device-injection, hook and OOM errors inside any of them (Kata and confidential runtimes build the
# devices into the sandbox VM), so every creation rule reads all of them.
CREATION_REASONS = SANDBOX_REASONS + PREPARE_REASONS + CONTAINER_REASONS

SIGNATURES: Tuple[EventSignature, ...] = RUNTIME + DEVICES + VOLUMES + START


def by_id(sig_id: str) -> EventSignature:
    return next(s for s in SIGNATURES if s.id == sig_id)


def for_rule(rule: str) -> Tuple[EventSignature, ...]:
    return tuple(s for s in SIGNATURES if s.rule == rule)


@lru_cache(maxsize=None)
def _rx(pattern: str):
    return re.compile(pattern, re.I)


def search(text: str, rule: str) -> Optional[Tuple[EventSignature, "re.Match"]]:
    """The first signature of `rule` found in `text`, with its match (signatures are tried in order). The text is
    read with its whitespace folded, so a message wrapped over lines or padded with extra spaces still matches."""
    text = fold(text)
    for sig in for_rule(rule):
        m = _rx(sig.pattern).search(text)
        if m:
            return sig, m
    return None
