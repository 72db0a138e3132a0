"""A node's GPU picture for the node view: GPU vendors and facts from labels, the tables of -o json; pure, no I/O."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional, Set, Tuple

from ..kube import affinity, podstate
from ..data import gpu_operator as go, gpu_resources as gr
from ..evidence import Evidence
from .stack import all_pods_known, component_pods, device_plugin_pods, pods_known, ready_count
from ..kube.objects import (allocatable, annotations, capacity, container_gpus, containers, gpu_request,
                            is_gpu_resource, is_terminated, labels, name, namespace, pod_requests, status, taints)
from ..kube.timeutil import format_time, parse_time


# --- the node's GPUs ------------------------------------------------------------------------------------

def _truthy(value) -> bool:
    return str(value).strip().lower() not in go.FALSE_VALUES


_LABEL_VENDORS: Dict[str, Tuple[str, ...]] = {}
for _vendor, _keys in go.GPU_NODE_LABELS.items():
    for _key in _keys:
        _LABEL_VENDORS[_key] = _LABEL_VENDORS.get(_key, ()) + (_vendor,)


def labelled_vendors(node: dict) -> Set[str]:
    """Vendors whose GPUs the node's labels announce (GFD, NFD PCI ids, cloud node pools)."""
    lab = labels(node)   # asked of every node of a cluster: one pass over its labels
    found = {v for k, value in lab.items() if k in _LABEL_VENDORS and _truthy(value) for v in _LABEL_VENDORS[k]}
    kind = next((lab[k] for k in go.INSTANCE_TYPE_LABELS if lab.get(k)), "")
    return found | {v for rx, v in go.INSTANCE_TYPE_VENDORS if kind and re.match(rx, kind)}


@lru_cache(maxsize=1024)   # asked for every resource of every node, per vendor
def _counts_vendor_gpus(vendor: str, res: str) -> bool:
    return re.match(gr.VENDOR_RESOURCES[vendor], res) is not None


def vendor_resources(node: dict, vendor: str) -> List[str]:
    st = status(node)
    return sorted(r for r in set(st.get("capacity") or {}) | set(st.get("allocatable") or {})
                  if _counts_vendor_gpus(vendor, r))


@lru_cache(maxsize=1024)
def _vendors_counted(res: str) -> Tuple[str, ...]:
    return tuple(v for v in gr.VENDOR_RESOURCES if _counts_vendor_gpus(v, res))


def gpu_vendors(node: dict) -> Set[str]:
    """Vendors whose GPUs the node has: labelled, or with a GPU resource in its capacity."""
    # Asked of every node of the cluster, several times: each capacity entry is read once, not once per vendor.
    found = labelled_vendors(node)
    for res in status(node).get("capacity") or {}:
        vendors = _vendors_counted(res)
        if vendors and capacity(node, res) > 0:
            found.update(vendors)
    return found


def is_gpu_node(node: Optional[dict]) -> bool:
    return bool(node) and bool(gpu_vendors(node))


def counts_gpus(res: str) -> bool:
    """The resource counts GPUs or GPU slices (not a share of one: Intel millicores, memory.max, monitoring)."""
    entry = gr.lookup(res)
    return bool(entry and entry.counts)


def request_vendors(pod: dict) -> Set[str]:
    """The GPU vendors a pod's request names."""
    return {gr.lookup(r).vendor for r in gpu_request(pod)}


# GPU nodes whose own stack is judged for one waiting pod (each costs a pod list and a few log tails live).
MAX_STACK_NODES = 8


def stack_nodes(ev: Evidence, pod: dict) -> List[dict]:
    """The GPU nodes an unscheduled GPU pod waits for, whose own stack (device plugin, operator, GPU health) may be
    why: nodes of the requested vendor by labels or capacity; only when there are none, the nodes where a device
    plugin for it runs (the plain plugin DaemonSet also runs on CPU nodes). Those the pod's node selector picks
    when it picks any (a selector on a label GFD would set can fail because GFD is broken); bounded."""
    # Pure, and asked by several rules and collection rounds: remembered while the nodes held are the same, and
    # the pods too when they decided (no node is a GPU node by labels or capacity).
    key = ("stack_nodes", (pod.get("metadata") or {}).get("uid"), name(pod), len(ev.all("Node")))
    pods, nodes = ev.memo.get(key, (-1, None))
    if nodes is None or pods not in (None, len(ev.all("Pod"))):
        pods, nodes = ev.memo[key] = _stack_nodes(ev, pod)
    return list(nodes)


def _stack_nodes(ev: Evidence, pod: dict) -> Tuple[Optional[int], List[dict]]:
    """(how many pods decided, or None when the nodes alone did; the nodes)."""
    wanted = request_vendors(pod)
    nodes = vendor_nodes(ev, pod)
    pods = None
    if not nodes:
        pods = len(ev.all("Pod"))
        hosting = {name(n) for n in ev.all("Node") if device_plugin_pods(ev, n, wanted)}
        nodes = [n for n in ev.all("Node") if name(n) in hosting]
    picked = [n for n in nodes if not affinity.selector_failures(pod, n)]
    advertising = lambda n: any(not wanted.isdisjoint(_vendors_counted(r)) and allocatable(n, r) > 0
                                for r in status(n).get("allocatable") or {})
    return pods, sorted(picked or nodes, key=lambda n: (advertising(n), name(n)))[:MAX_STACK_NODES]


def vendor_nodes(ev: Evidence, pod: dict) -> List[dict]:
    """Nodes whose labels or capacity say they have GPUs of a vendor the pod requests (remembered per node set)."""
    key = ("vendor_nodes", (pod.get("metadata") or {}).get("uid"), name(pod), len(ev.all("Node")))
    if key not in ev.memo:
        wanted = request_vendors(pod)
        ev.memo[key] = [n for n in ev.all("Node") if gpu_vendors(n) & wanted]
    return list(ev.memo[key])


def node_gpu_resources(node: dict) -> List[str]:
    """The node's resources that count GPUs."""
    st = status(node)
    return sorted(r for r in set(st.get("capacity") or {}) | set(st.get("allocatable") or {})
                  if is_gpu_resource(r) and counts_gpus(r))


def mig_state(node: dict) -> Optional[Tuple[str, str]]:
    """(nvidia.com/mig.config.state, nvidia.com/mig.config) when the MIG manager manages the node."""
    lab = labels(node)
    state, config = lab.get(go.GFD["migConfigState"]), lab.get(go.GFD["migConfig"])
    return (state or "", config or "") if state or config else None


def mig_reconfiguring(node: dict) -> bool:
    """The MIG manager is changing the GPUs' MIG layout: the device plugin is paused on purpose."""
    lab = labels(node)
    state = mig_state(node)
    return bool(state and state[0] in go.MIG_STATES_IN_PROGRESS) or go.PAUSED_FOR_MIG in lab.values()


def advertised(node: dict, vendor: str) -> Dict[str, int]:
    return {r: allocatable(node, r) for r in vendor_resources(node, vendor) if allocatable(node, r) > 0}


def dra_slices(ev: Evidence, node: dict, vendor: str) -> List[dict]:
    """ResourceSlices in which the vendor's GPU DRA driver publishes this node's devices."""
    driver = go.DRA_GPU_DRIVERS.get(vendor)
    return [s for s in ev.all("ResourceSlice")
            if (s.get("spec") or {}).get("nodeName") == name(node) and (s.get("spec") or {}).get("driver") == driver]


def dra_devices(ev: Evidence, node: dict, vendor: str) -> int:
    """How many GPUs (or GPU partitions) the vendor's DRA driver publishes for this node: with DRA the GPUs
    are not an extended resource, so allocatable shows none while they are schedulable."""
    return sum(len((s.get("spec") or {}).get("devices") or []) for s in dra_slices(ev, node, vendor))


def _dra_claims(ev: Evidence, node: dict, vendor: str) -> List[Tuple[dict, int]]:
    """(ResourceClaim, devices it holds) for claims allocated devices of those slices (status.allocation)."""
    mine = {((s.get("spec") or {}).get("pool") or {}).get("name") for s in dra_slices(ev, node, vendor)}
    driver = go.DRA_GPU_DRIVERS.get(vendor)
    out = []
    for c in ev.all("ResourceClaim"):
        results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        held = sum(1 for r in results if r.get("driver") == driver and r.get("pool") in mine)
        if held:
            out.append((c, held))
    return out


def dra_allocated(ev: Evidence, node: dict, vendor: str) -> int:
    """Devices of those slices that ResourceClaims hold."""
    return sum(n for _, n in _dra_claims(ev, node, vendor))


def dra_holders(ev: Evidence, node: dict, vendor: str) -> Set[Tuple[str, str]]:
    """(namespace, pod) the claims holding those devices are reserved for."""
    return {(namespace(c), r.get("name")) for c, _ in _dra_claims(ev, node, vendor)
            for r in (c.get("status") or {}).get("reservedFor") or [] if r.get("resource") == "pods"}


def gpu_facts(node: dict) -> Dict[str, object]:
    """GPU feature discovery's labels: product, count, memory, driver and CUDA versions, MIG strategy and state."""
    lab = labels(node)
    facts: Dict[str, object] = {k: lab.get(v) for k, v in go.GFD.items()}
    if not facts.get("product"):
        facts["product"] = next((lab[k] for k in go.PRODUCT_FALLBACK_LABELS if lab.get(k)), None)
    facts["memory"] = f"{lab[go.GFD['memory']]} MiB" if lab.get(go.GFD["memory"]) else None
    facts["driver"] = _version(lab, go.DRIVER_VERSION_LABELS)
    facts["cuda"] = _version(lab, go.CUDA_VERSION_LABELS)
    return facts


def _version(lab: dict, choices) -> Optional[str]:
    for keys in choices:
        parts = [lab.get(k) for k in keys]
        if parts[0]:
            return ".".join(p for p in parts if p)
    return None


# --- tables (Diagnosis.extra) -----------------------------------------------------------------------------

def _device_resource(res: str) -> bool:
    """Extended resources (device plugins, rdma, ...) carry a domain; cpu/memory/pods/hugepages do not."""
    return "/" in res


def resource_rows(ev: Evidence, node: dict) -> List[dict]:
    known = all_pods_known(ev, name(node))
    pods = [p for p in ev.pods_on(name(node)) if not is_terminated(p)]
    st = status(node)
    names = sorted(r for r in set(st.get("capacity") or {}) | set(st.get("allocatable") or {}) if _device_resource(r))
    for vendor in gpu_vendors(node):   # a GPU node that advertises nothing still shows its GPU resource, at 0
        if not vendor_resources(node, vendor) and not dra_devices(ev, node, vendor):
            names.append(gr.VENDOR_DEFAULT_RESOURCE[vendor])
    names.sort(key=lambda r: (not is_gpu_resource(r), not r.startswith("rdma/"), r))
    rows = []
    for res in names:
        req = int(sum(pod_requests(p).get(res, 0) for p in pods)) if known else None
        alloc = allocatable(node, res)
        rows.append({"resource": res, "capacity": capacity(node, res), "allocatable": alloc,
                     "requested": req, "free": alloc - req if req is not None else None})
    for vendor in sorted(gpu_vendors(node)):   # GPUs a DRA driver publishes: devices, and those claims hold
        count = dra_devices(ev, node, vendor)
        if count:
            held = dra_allocated(ev, node, vendor) if ev.readable("resourceclaims") else None
            rows.append({"resource": f"{go.DRA_GPU_DRIVERS[vendor]} (DRA)", "capacity": count, "allocatable": count,
                         "requested": held, "free": count - held if held is not None else None})
    return rows


def gpu_rows(node: dict) -> List[dict]:
    facts = gpu_facts(node)
    if not any(facts.values()):
        return []
    keys = ("product", "count", "memory", "driver", "cuda", "migStrategy", "migConfig", "migConfigState")
    return [{k: facts.get(k) for k in keys}]


def gpu_pod_rows(ev: Evidence, node: dict) -> List[dict]:
    rows = []
    for p in sorted(ev.pods_on(name(node)), key=lambda p: (namespace(p), name(p))):
        if is_terminated(p):
            continue
        for init in (True, False):
            for c in containers(p, init=init):
                for res, n in sorted(container_gpus(c).items()):
                    rows.append({"namespace": namespace(p), "pod": name(p), "container": c.get("name"),
                                 "resource": res, "gpus": n, "phase": podstate.display_status(p)})
    return rows


def operator_pod_rows(ev: Evidence, node: dict) -> List[dict]:
    return [{"component": c.key, "namespace": namespace(p), "pod": name(p), "status": podstate.display_status(p),
             "ready": ready_count(p), "restarts": podstate.restarts(p)} for c, p in component_pods(ev, node)]


def taint_rows(node: dict) -> List[dict]:
    return [{"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect"), "timeAdded": t.get("timeAdded")}
            for t in taints(node)]


def condition_rows(node: dict) -> List[dict]:
    return [{"type": c.get("type"), "status": c.get("status"), "reason": c.get("reason"),
             "since": format_time(parse_time(c.get("lastTransitionTime"))), "message": (c.get("message") or "")[:120]}
            for c in status(node).get("conditions") or []]


def tables(ev: Evidence) -> Dict[str, List[dict]]:
    """The node view's tables, keyed as they appear in -o json (camelCase, always present)."""
    node = ev.node
    if node is None:
        return {k: [] for k in ("resources", "gpu", "gpuPods", "operatorPods", "gpuHealth", "taints", "conditions")}
    known = pods_known(ev, name(node))
    from . import dcgm   # the per-GPU health table from dcgm-exporter's metrics, when they were read
    return {"resources": resource_rows(ev, node), "gpu": gpu_rows(node),
            "gpuPods": gpu_pod_rows(ev, node) if all_pods_known(ev, name(node)) else [],
            "operatorPods": operator_pod_rows(ev, node) if known else [],
            "gpuHealth": dcgm.gpu_rows(ev, node) if known else [],
            "taints": taint_rows(node), "conditions": condition_rows(node)}


def driver_upgrade_state(node: dict) -> Optional[str]:
    state = labels(node).get(go.DRIVER_UPGRADE_LABEL) or annotations(node).get(go.DRIVER_UPGRADE_LABEL)
    return state if state not in go.DRIVER_UPGRADE_DONE else None


def physical_gpus(node: dict) -> Optional[int]:
    """The node's physical GPU cards when a label or a sharing plugin's registration says (sharing schemes
    advertise more units than cards: HAMi's split count, Volcano vGPUs, time-slicing replicas)."""
    for key in gr.PHYSICAL_GPU_ANNOTATIONS:
        found = re.findall(gr.GPU_UUID, annotations(node).get(key) or "")
        if found:
            return len(found)
    value = labels(node).get(gr.PHYSICAL_GPU_LABEL)
    return int(value) if value and value.isdigit() else None
