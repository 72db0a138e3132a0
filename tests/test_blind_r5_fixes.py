"""Blind r5 misses: the cuda-driver-too-old fix names the node and its driver and its node affinity selects the nodes
whose driver runs the image (not the ones above the next CUDA major); Cilium/Calico/AWS/Azure/flannel IP-pool
exhaustion is its own cni-failure explanation, never an agent restart."""
import copy
import os

import pytest
import yaml

from kubectl_gpudoctor.kube import affinity
from kubectl_gpudoctor.offline import load as _offline
from kubectl_gpudoctor.rules import RULES, Hit
from tests.conftest import ROOT

offline = lambda path: _offline.load(path)
FAILING = os.path.join(ROOT, "tests", "realworld", "failing")
SHARED = os.path.join(FAILING, "r5-cuda-driver-too-old-shared-node")

OLD_535 = {"nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "183", "nvidia.com/cuda.driver.rev": "01",
           "nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "2"}


def _cuda_hit(ev):
    hit = RULES["cuda-driver-too-old"].check(ev)
    assert isinstance(hit, Hit), hit
    return hit


def _selects(snippet, node_labels) -> bool:
    """Whether the snippet's required node affinity admits a node with these labels (the scheduler's semantics:
    terms ORed, expressions inside a term ANDed)."""
    doc = yaml.safe_load("\n".join(l for l in snippet.splitlines() if not l.lstrip().startswith("#")))
    terms = doc["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    node = {"kind": "Node", "metadata": {"name": "n", "labels": node_labels}}
    return any(not affinity.term_failures(node, t) for t in terms)


def _node(ev):
    return ev.get("Node", "gpu-node-k")


def test_shared_node_fix_names_the_node_and_its_driver():
    hit = _cuda_hit(offline(SHARED))
    assert "Node gpu-node-k runs NVIDIA driver 535.183.01 (CUDA up to 12.2)" in hit.fix
    assert "upgrade the driver on gpu-node-k" in hit.fix and "CUDA 12.2 or older" in hit.fix


def test_shared_node_affinity_selects_newer_drivers_on_the_label_the_node_carries():
    hit = _cuda_hit(offline(SHARED))
    assert "nvidia.com/cuda.driver.major" in hit.snippet and "runtime-version" not in hit.snippet
    assert not _selects(hit.snippet, OLD_535)                                   # the failing node itself
    assert _selects(hit.snippet, dict(OLD_535, **{"nvidia.com/cuda.driver.major": "570",
                                                  "nvidia.com/cuda.runtime.minor": "8"}))   # a CUDA 12.8 node


def test_nodes_read_with_a_newer_driver_are_named():
    ev = offline(SHARED)
    other = copy.deepcopy(_node(ev))
    other["metadata"]["name"] = "gpu-node-m"
    other["metadata"]["labels"].update({"nvidia.com/cuda.driver.major": "570", "nvidia.com/cuda.driver.minor": "133",
                                        "nvidia.com/cuda.driver.rev": "20", "kubernetes.io/hostname": "gpu-node-m"})
    ev.add(other)
    assert "nodes read with such a driver: gpu-node-m" in _cuda_hit(ev).fix
    assert "nodes read with such a driver" not in _cuda_hit(offline(SHARED)).fix


def test_runtime_labels_only_select_a_higher_cuda_minor_not_only_the_next_major():
    # GFD's cuda.runtime-version is the CUDA the driver supports; the old snippet said `major Gt 12`, which keeps
    # every CUDA 12.8 node out. "Above 12.2" is major Gt 12, or major 12 and minor Gt 2.
    ev = offline(SHARED)
    lbls = _node(ev)["metadata"]["labels"]
    for k in [k for k in lbls if k.startswith("nvidia.com/cuda.")]:
        del lbls[k]
    lbls.update({"nvidia.com/cuda.runtime-version.major": "12", "nvidia.com/cuda.runtime-version.minor": "2"})
    hit = _cuda_hit(ev)
    rt = lambda major, minor: {"nvidia.com/cuda.runtime-version.major": major, "nvidia.com/cuda.runtime-version.minor": minor}
    assert _selects(hit.snippet, rt("12", "8")) and _selects(hit.snippet, rt("13", "0"))
    assert not _selects(hit.snippet, rt("12", "2")) and not _selects(hit.snippet, rt("11", "8"))


def test_image_cuda_known_selects_its_corresponding_driver():
    ev = offline(SHARED)
    pod = ev.get("Pod", "vllm-new-9d8c7b6f5-l4xzt", "llm")
    pod["spec"]["containers"][0]["image"] = "ghcr.io/acme/vllm:0.9.2-cu128"
    hit = _cuda_hit(ev)
    assert "the image's CUDA 12.8 (driver 570 or newer)" in hit.fix
    assert _selects(hit.snippet, dict(OLD_535, **{"nvidia.com/cuda.driver.major": "570"}))
    assert not _selects(hit.snippet, dict(OLD_535, **{"nvidia.com/cuda.driver.major": "565"}))
