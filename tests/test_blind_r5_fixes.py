"""Blind r5 misses: the cuda-driver-too-old fix names the node and its driver and its node affinity selects the nodes
whose driver runs the image (not the ones above the next CUDA major); Cilium/Calico/AWS/Azure/flannel IP-pool
exhaustion is its own cni-failure explanation, never an agent restart."""
import copy
import os
import string

import pytest
import yaml

from kubectl_gpudoctor.kube import affinity
from kubectl_gpudoctor.offline import load as _offline
from kubectl_gpudoctor.rules import RULES, Hit
from tests.conftest import ROOT
from tests.test_eviction_network_wording import SANDBOX, evidence

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


# --- cni-failure: IP pool exhaustion -------------------------------------------------------------------------------

CILIUM_FULL = os.path.join(FAILING, "r5-cni-cilium-ipam-full-agent-ok")
SETUP = SANDBOX + 'failed to setup network for sandbox "ab12": '


def _cni(ev):
    """The cni-failure hit with its fix filled in as the report fills it ($node from the pod, the hit's values)."""
    hit = RULES["cni-failure"].check(ev)
    assert isinstance(hit, Hit), hit
    values = dict({"node": ev.pod["spec"]["nodeName"]}, **{k: str(v) for k, v in hit.values.items()})
    hit.fix = string.Template(hit.fix or "").safe_substitute(values)
    return hit


# Real wording, per plugin (the threads are cited in data/cni.py); the fix word is that plugin's way to get addresses.
@pytest.mark.parametrize("message,plugin,fix_word", [
    (SETUP + 'plugin type="cilium-cni" failed (add): unable to allocate IP via local cilium agent: [POST /ipam][502] '
             "postIpamFailure  range is full", "cilium", "clusterPoolIPv4MaskSize"),
    (SANDBOX + 'failed to set up sandbox container "ab12" network for pod "p": networkPlugin cni failed to set up pod '
               '"p_ml" network: unable to allocate IP via local cilium agent: [POST /ipam][502] postIpamFailure  range '
               "is full", "cilium", "cilium-dbg endpoint list"),
    (SETUP + 'plugin type="flannel" failed (add): failed to allocate for range 0: no IP addresses available in range '
             "set: 192.168.63.161-192.168.63.190", "flannel", "/var/lib/cni/networks/"),
    (SETUP + 'plugin type="calico" failed (add): failed to request 1 IPv4 addresses. IPAM allocated only 0', "calico",
     "calicoctl ipam check"),
    (SANDBOX + 'failed to create pod network sandbox k8s_p_ml_u-1_0(ab12): error adding pod ml_p to CNI network '
               '"k8s-pod-network": plugin type="calico" failed (add): cannot allocate new block due to per host block '
               "limit", "calico", "maxBlocksPerHost"),
    (SETUP + 'plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container',
     "aws-vpc-cni", "ENABLE_PREFIX_DELEGATION"),
    (SETUP + 'plugin type="azure-vnet" failed (add): IPAM Invoker Add failed with error: failed to add ipam invoker: '
             "Failed to get IP address from CNS: AllocateIPConfig failed: not enough IPs available, waiting on Azure "
             "CNS to allocate more", "azure", "NodeNetworkConfig"),
    (SANDBOX + 'failed to set up sandbox container "ab12" network for pod "p": networkPlugin cni failed to set up pod '
               '"p_ml" network: Failed to allocate pool: Failed to delegate: Failed to allocate address: No available '
               "addresses", "cluster", "spec.podCIDR"),
])
def test_ip_pool_exhaustion_is_its_own_cause(message, plugin, fix_word):
    ev = evidence({"phase": "Pending", "conditions": [{"type": "PodReadyToStartContainers", "status": "False"}]},
                  events=[{"reason": "FailedCreatePodSandBox", "message": message, "count": 7}])
    hit = _cni(ev)
    assert f"The {plugin} CNI plugin" in hit.message
    assert "No free pod IPs are left in the pool node gpu-node-01 allocates from" in hit.fix
    assert fix_word in hit.fix and "restarting the CNI agent frees nothing" in hit.fix
    assert "IP pool exhausted" in hit.summary and "agent down" not in hit.summary


def test_the_case_says_the_pool_is_full_with_the_agent_ready():
    hit = _cni(offline(CILIUM_FULL))
    assert hit.summary.endswith("IP pool exhausted, agent pod Ready")
    assert "node gpu-node-j" in hit.fix and "read its log and restart" not in hit.fix
    assert "kubectl get node gpu-node-j -o jsonpath='{.spec.podCIDRs}'" in hit.next


def test_pool_facts_are_the_nodes_pod_cidr_and_its_pods():
    ev = offline(CILIUM_FULL)
    ev.get("Node", "gpu-node-j")["spec"]["podCIDR"] = "10.0.3.0/26"
    gone = copy.deepcopy(next(p for p in ev.pods_on("gpu-node-j") if p["metadata"]["namespace"] == "speech"))
    gone["metadata"].update(name="asr-batch-2026-11-26-old", uid="u-old", deletionTimestamp="2026-11-27T06:00:00Z")
    gone["status"]["phase"] = "Running"
    ev.add(gone)
    hit = _cni(ev)
    pods = sum(1 for p in ev.pods_on("gpu-node-j") if not p["spec"].get("hostNetwork"))
    assert f"(spec.podCIDR 10.0.3.0/26, 64 addresses; {pods} pods on the pod network on it among the pods read, " \
           "1 Terminating; far fewer pods than addresses, so addresses of pods that are gone are still reserved)" in hit.fix


def test_a_pool_as_big_as_its_pods_blames_no_leak():
    ev = offline(CILIUM_FULL)
    ev.get("Node", "gpu-node-j")["spec"]["podCIDR"] = "10.0.3.0/30"
    hit = _cni(ev)
    assert "(spec.podCIDR 10.0.3.0/30, 4 addresses; " in hit.fix and "still reserved" not in hit.fix


def test_an_agent_socket_error_is_still_not_exhaustion():
    ev = evidence({"phase": "Pending"}, events=[{"reason": "FailedCreatePodSandBox", "message": SETUP +
                  'plugin type="cilium-cni" failed (add): unable to connect to Cilium daemon: failed to create cilium '
                  "agent client after 30.000000 seconds timeout: Get \"http:///var/run/cilium/cilium.sock/v1/config\": "
                  "dial unix /var/run/cilium/cilium.sock: connect: no such file or directory"}])
    hit = _cni(ev)
    assert "IP pool" not in hit.summary and "No free pod IPs" not in (hit.fix or "")
    assert not any("podCIDRs" in n for n in hit.next)
