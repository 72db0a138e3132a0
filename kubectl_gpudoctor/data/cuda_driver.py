"""CUDA toolkit -> minimum Linux driver (NVIDIA's tables), CUDA versions from image tags, GFD driver labels; pure data.

Sources (NVIDIA CUDA Toolkit Release Notes, https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html):
- Table 3 "CUDA Toolkit and Corresponding Driver Versions" (Linux x86_64), as published with CUDA 13.2 Update 2;
  CUDA 13.3 from the 13.3 release notes (>=610.43.02).
- Table 2 "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version Compatibility":
  13.x >= 580, 12.x >= 525 (< 580), 11.x >= 450 (< 525); footnote: 11.x needs 450.80.02 for minor-version
  compatibility across the family.

What "too old" means here: since CUDA 11 a driver at or above the *major's* floor (Table 2) runs every minor
release of that major in minor-version-compatibility mode (PTX JIT of newer PTX and a few new APIs fail, the
rest works), so a driver is reported too old for an image only when it is below that floor (for 10.x, which
has no minor-version compatibility, below the toolkit's own minimum). Between the floor and the toolkit's
corresponding driver the image runs "with caveats" and is not reported.
"""
from __future__ import annotations

import re
from typing import Dict, Optional, Tuple
from .. import lazyre

Version = Tuple[int, ...]

# CUDA major.minor -> corresponding Linux x86_64 driver of its GA release (updates need slightly newer
# drivers, e.g. 12.4 Update 1 >= 550.54.15, 13.0 Update 2 >= 580.95.05; the GA value is the lenient bound).
TOOLKIT_DRIVER: Dict[Tuple[int, int], str] = {
    (13, 3): "610.43.02", (13, 2): "595.45.04", (13, 1): "590.44.01", (13, 0): "580.65.06",
    (12, 9): "575.51.03", (12, 8): "570.26", (12, 6): "560.28.03", (12, 5): "555.42.02",
    (12, 4): "550.54.14", (12, 3): "545.23.06", (12, 2): "535.54.03", (12, 1): "530.30.02",
    (12, 0): "525.60.13", (11, 8): "520.61.05", (11, 7): "515.43.04", (11, 6): "510.39.01",
    (11, 5): "495.29.05", (11, 4): "470.42.01", (11, 3): "465.19.01", (11, 2): "460.27.03",
    (11, 1): "455.23", (11, 0): "450.36.06", (10, 2): "440.33", (10, 1): "418.39", (10, 0): "410.48",
}

# Table 2 (and its footnote for 11.x): the driver floor of each major's minor-version compatibility.
MINOR_COMPAT_FLOOR: Dict[int, str] = {13: "580", 12: "525", 11: "450.80.02"}

# NGC framework containers (nvcr.io/nvidia/<framework>:YY.MM-...) follow one monthly release train; the CUDA
# major of a release, from the NGC release notes: 20.06 was the first CUDA 11 release, 23.01 the first CUDA 12,
# 25.08 the first CUDA 13 (e.g. "Release 25.02 is based on CUDA 12.8.0", "Release 25.10 is based on CUDA 13.0.2",
# "Release 25.12 is based on CUDA 13.1.0"; lablup/backend.ai-kernels#315 "ngc-pytorch:25.08 ... CUDA 13.0").
NGC_FRAMEWORKS = ("pytorch", "tritonserver", "tensorflow", "jax", "pyg", "dgl")
NGC_MAJOR_FROM = (((25, 8), 13), ((23, 1), 12), ((20, 6), 11))
# Releases whose exact CUDA minor is stated in their release notes.
NGC_KNOWN: Dict[Tuple[int, int], Tuple[int, int]] = {
    (24, 5): (12, 4), (25, 2): (12, 8), (25, 10): (13, 0), (25, 12): (13, 1), (26, 5): (13, 2),
}

# Lowest CUDA toolkit that can build native code (SASS) for a compute capability (CUDA release notes /
# CUDA C++ Programming Guide): V100 7.0, T4 7.5, A100 8.0, A10/A40 8.6, L4/L40 8.9, H100 9.0,
# B200 10.0, B300 10.3, RTX PRO 6000 / RTX 50 12.0.
COMPUTE_MIN_CUDA: Dict[Tuple[int, int], Tuple[int, int]] = {
    (7, 0): (9, 0), (7, 5): (10, 0), (8, 0): (11, 0), (8, 6): (11, 1), (8, 7): (11, 4), (8, 9): (11, 8),
    (9, 0): (11, 8), (10, 0): (12, 8), (10, 3): (12, 9), (12, 0): (12, 8), (12, 1): (12, 9),
}

# GPU feature discovery labels (NVIDIA/k8s-device-plugin, internal/lm): new names first, deprecated after.
DRIVER_LABELS = (("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor",
                  "nvidia.com/cuda.driver-version.revision"),
                 ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"))
DRIVER_FULL_LABEL = "nvidia.com/cuda.driver-version.full"
RUNTIME_LABELS = (("nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor"),
                  ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"))


def parse_version(text) -> Optional[Version]:
    """'550.54.14' -> (550, 54, 14); None when it does not start with a number."""
    m = re.match(r"\s*(\d+(?:\.\d+)*)", str(text or ""))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def fmt(version) -> str:
    """(450, 80, 2) -> '450.80.02': NVIDIA driver revisions are printed with two digits."""
    if not version:
        return "?"
    parts = [str(p) for p in version[:2]] + [f"{p:02d}" for p in version[2:3]]
    return ".".join(parts)


def toolkit_driver(cuda: Tuple[int, Optional[int]]) -> Optional[Version]:
    """The corresponding driver of a CUDA release (None for a major-only or unknown release)."""
    if cuda[1] is None:
        return None
    text = TOOLKIT_DRIVER.get((cuda[0], cuda[1]))
    return parse_version(text) if text else None


def driver_floor(cuda: Tuple[int, Optional[int]]) -> Optional[Version]:
    """The oldest driver that runs this CUDA release at all (minor-version compatibility from 11.x on). For a release
    known only by its major (an NGC tag, `cu11`), the oldest driver of any release of that major: its x.0 GA driver
    when that is below the family floor (11.0 runs on 450.36.06, below 11.x's 450.80.02)."""
    floor = parse_version(MINOR_COMPAT_FLOOR[cuda[0]]) if cuda[0] in MINOR_COMPAT_FLOOR else toolkit_driver(cuda)
    if cuda[1] is None:
        first = toolkit_driver((cuda[0], 0))
        floor = min(v for v in (floor, first) if v) if (floor or first) else None
    return floor


def driver_max_cuda(driver: Version) -> Optional[Tuple[int, int]]:
    """The newest CUDA release whose corresponding driver this driver satisfies (what nvidia-smi shows)."""
    fits = [cuda for cuda, text in TOOLKIT_DRIVER.items() if parse_version(text)[:2] <= tuple(driver[:2])]
    return max(fits) if fits else None


def compare(cuda: Tuple[int, Optional[int]], driver: Version) -> str:
    """'ok' | 'minor-compat' (runs with caveats) | 'too-old' (below the major's floor) | 'unknown'."""
    floor = driver_floor(cuda)
    if floor is None:
        return "unknown"
    if tuple(driver) < floor:
        return "too-old"
    exact = toolkit_driver(cuda)
    return "minor-compat" if exact and tuple(driver) < exact else "ok"


def cuda_from_driver_api(number) -> Optional[Tuple[int, int]]:
    """cudaDriverGetVersion's number (PyTorch: 'found version 11040') -> (11, 4)."""
    try:
        n = int(number)
    except (TypeError, ValueError):
        return None
    return (n // 1000, (n % 1000) // 10) if n > 0 else None


# --- node labels ------------------------------------------------------------------------------------

def node_driver(labels: Dict[str, str]) -> Optional[Version]:
    """The node's driver version from GPU feature discovery labels, or None."""
    full = parse_version(labels.get(DRIVER_FULL_LABEL))
    if full:
        return full
    for keys in DRIVER_LABELS:
        parts = [labels.get(k) for k in keys]
        if parts[0] and str(parts[0]).isdigit():
            return tuple(int(p) for p in parts if p and str(p).isdigit())
    return None


def node_driver_text(labels: Dict[str, str]) -> Optional[str]:
    """The node's driver version as the labels spell it ('470.256.02'), or None."""
    if labels.get(DRIVER_FULL_LABEL):
        return labels[DRIVER_FULL_LABEL]
    for keys in DRIVER_LABELS:
        parts = [str(labels.get(k) or "") for k in keys]
        if parts[0].isdigit():
            return ".".join(p for p in parts if p)
    return None


def node_cuda(labels: Dict[str, str]) -> Optional[Tuple[int, int]]:
    """The newest CUDA the node's driver supports (cuda.runtime-version labels), or None."""
    for major, minor in RUNTIME_LABELS:
        if str(labels.get(major, "")).isdigit():
            minor_text = str(labels.get(minor) or "0")
            return int(labels[major]), int(minor_text) if minor_text.isdigit() else 0
    return None


def driver_major_label(labels: Dict[str, str]) -> str:
    """The driver-major label this node carries (for a node-affinity snippet)."""
    for keys in DRIVER_LABELS:
        if keys[0] in labels:
            return keys[0]
    return DRIVER_LABELS[0][0]


def runtime_labels(labels: Dict[str, str]) -> Tuple[str, str]:
    """The (major, minor) CUDA-version label names this node carries (new names when it has none)."""
    return next((pair for pair in RUNTIME_LABELS if pair[0] in labels), RUNTIME_LABELS[0])


def version_label_text(labels: Dict[str, str]) -> str:
    """The node's driver and CUDA version labels, the new label names when the node has them."""
    full = [k for k in (DRIVER_FULL_LABEL, "nvidia.com/cuda.runtime-version.full") if k in labels]
    keys = full or [k for group in (DRIVER_LABELS[1], RUNTIME_LABELS[1]) for k in group if k in labels]
    return ", ".join(f"{k}={labels[k]}" for k in keys)


def runs_on(image: str, labels: Dict[str, str]) -> bool:
    """The node's labelled driver runs the image's CUDA (at least in minor-version compatibility); False if unknown."""
    img, driver, top = image_cuda(image), node_driver(labels), node_cuda(labels)
    if img and driver:
        return compare(img[0], driver) != "too-old"
    return bool(img and top and top[0] >= img[0][0])


# --- images -----------------------------------------------------------------------------------------

_CUDA_IN_TAG = lazyre.compile(r"(?:^|[-_.])cuda[-_]?(1[0-3])(?:\.(\d))?(?=$|[-_.a-z])", re.I)
_CU_IN_TAG = lazyre.compile(r"(?:^|[-_.+])cu(1[0-3])(\d)?(?=$|[-_.])", re.I)
_NGC = lazyre.compile(r"(?:^|/)nvcr\.io/nvidia/(?:[\w-]+/)?(" + "|".join(NGC_FRAMEWORKS) + r"):(\d\d)\.(\d\d)\b")


def split_image(image: str) -> Tuple[str, str]:
    """(repository, tag) of an image reference; the tag is '' for a digest-only reference."""
    ref = (image or "").split("@", 1)[0]
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1:]
    return ref, ""


def image_cuda(image: str) -> Optional[Tuple[Tuple[int, Optional[int]], str]]:
    """The CUDA release an image is built for, from its reference: ((major, minor|None), how), or None."""
    repo, tag = split_image(image)
    if not tag:
        return None
    m = _NGC.search(repo + ":" + tag)
    if m:
        release = (int(m.group(2)), int(m.group(3)))
        if release in NGC_KNOWN:
            return NGC_KNOWN[release], f"NGC release {m.group(2)}.{m.group(3)}"
        for start, major in NGC_MAJOR_FROM:
            if release >= start:
                return (major, None), f"NGC release {m.group(2)}.{m.group(3)}"
        return None
    if repo.rsplit("/", 1)[-1] == "cuda":
        m = re.match(r"(1[0-3])\.(\d)", tag)
        if m:
            return (int(m.group(1)), int(m.group(2))), "nvidia/cuda tag"
    for rx in (_CUDA_IN_TAG, _CU_IN_TAG):
        m = rx.search(tag)
        if m:
            return (int(m.group(1)), int(m.group(2)) if m.group(2) else None), f"tag {tag}"
    return None


def is_ngc(image: str) -> bool:
    return bool(_NGC.search(image or ""))


def cuda_str(cuda: Tuple[int, Optional[int]]) -> str:
    return f"{cuda[0]}.{cuda[1]}" if cuda[1] is not None else f"{cuda[0]}.x"
