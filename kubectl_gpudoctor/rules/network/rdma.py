"""Network-phase rules about RDMA/SR-IOV devices and Multus secondary networks."""
from __future__ import annotations


from ...logs import scan as logscan
from ...kube import multus, podstate
from ...kube.objects import (allocatable, annotations, capacity, containers, is_netdev_resource, labels, name,
                             namespace, node_resources, pod_requests, spec, status)
from .._common import scheduled
from ..registry import SPECIFIC, Hit, Line, Unknown, rule
from ... import lazyre

INFINIBAND = "/dev/infiniband"
# Device resources that carry RDMA besides the catalogue's rdma/*, hostdev and SR-IOV names: AWS EFA, the
# SR-IOV network device plugin's default intel.com/ prefix and the older mellanox.com/ one.
EXTRA_RDMA = lazyre.compile(r"^(vpc\.amazonaws\.com/efa|intel\.com/.+|mellanox\.com/.+)$")
NFD_RDMA = ("feature.node.kubernetes.io/rdma.capable", "feature.node.kubernetes.io/rdma.available")


def _rdma_resource(res: str) -> bool:
    return is_netdev_resource(res) or bool(EXTRA_RDMA.match(res))


def _mounts_infiniband(pod) -> bool:
    return any(((v.get("hostPath") or {}).get("path") or "").rstrip("/").startswith(INFINIBAND)
               for v in spec(pod).get("volumes") or [])


def _wants_devices(ev):
    pod = ev.pod
    return (scheduled(ev) and status(pod).get("phase") != "Succeeded"
            and bool(_mounts_infiniband(pod) or multus.requested(pod) or any(_rdma_resource(r) for r in _requests(pod))))


def _requests(pod):
    return {r: int(v) for r, v in pod_requests(pod).items() if v > 0}


@rule("rdma-device-missing", phase="network", severity="critical", rank=SPECIFIC, applies=_wants_devices,
      title="RDMA device or secondary network missing for the pod",
      remediation="Make node $node offer the device (NVIDIA network operator: RDMA shared device plugin or SR-IOV "
                  "device plugin pods on that node, MOFED driver), or create the NetworkAttachmentDefinition the "
                  "pod names.")
def rdma_device_missing(ev):
    """The pod's RDMA/SR-IOV device or Multus network is missing: no device on its node, or no such attachment.

    Fires when a k8s.v1.cni.cncf.io/networks attachment does not exist, when an attachment's resourceName is not
    requested, or when the pod requests rdma/*, nvidia.com/hostdev or SR-IOV resources (or mounts /dev/infiniband)
    that its node does not advertise."""
    pod = ev.pod
    found = _missing_attachments(ev, pod)
    if isinstance(found, Hit):
        return found
    unrequested = _unrequested(ev, pod)
    if unrequested:
        return unrequested
    node = ev.node
    if node is None:
        return Unknown.from_gap(ev.gap("nodes")) if ev.gap("nodes") else found
    return _missing_devices(ev, pod, node) or found


def _missing_attachments(ev, pod):
    """A Hit for the first missing NAD, an Unknown when one could not be read, else None."""
    unknown = None
    for att in multus.requested(pod):
        if ev.get("NetworkAttachmentDefinition", att.name, att.namespace) is not None:
            continue
        if ev.is_absent("NetworkAttachmentDefinition", att.name, att.namespace):
            return _absent_attachment(ev, pod, att)
        gap = ev.gap_in("network-attachment-definitions", att.namespace)
        unknown = unknown or (Unknown.from_gap(gap) if gap else None)
    return unknown


def _absent_attachment(ev, pod, att):
    nads = ev.all("NetworkAttachmentDefinition")
    there = sorted(name(n) for n in nads if namespace(n) == att.namespace)
    elsewhere = sorted(f"{namespace(n)}/{att.name}" for n in nads if name(n) == att.name)
    known = f"in {att.namespace}: {', '.join(there)}" if there else \
        f"none in {att.namespace}" + ("" if nads else ", or the k8s.cni.cncf.io API is not installed")
    also = f"; {' and '.join(elsewhere)} exists" if elsewhere else ""
    return Hit(f"The pod's {att.annotation} annotation names NetworkAttachmentDefinition {att.namespace}/{att.name}, "
               f"which does not exist ({known}{also}): Multus cannot attach {att.interface or 'the network'} and the "
               f"pod sandbox is not created.",
               [Line("spec", f"metadata.annotations[{att.annotation}]", annotations(pod).get(att.annotation, "")),
                Line("object", "network-attachment-definitions", f"{att.namespace}/{att.name} not found")],
               fix=f"Create NetworkAttachmentDefinition {att.name} in namespace {att.namespace}"
                   + (f", or point the annotation at {' or '.join(elsewhere)}." if elsewhere else "."),
               summary=f"NetworkAttachmentDefinition {att.namespace}/{att.name} does not exist")


def _unrequested(ev, pod):
    """Attached NADs whose resourceName (an SR-IOV VF, an RDMA device) the pod does not request enough of."""
    need = {}
    for att in multus.requested(pod):
        res = multus.resource_name(ev.get("NetworkAttachmentDefinition", att.name, att.namespace) or {})
        if res:
            need.setdefault(res, []).append(att.name)
    have = _requests(pod)
    short = {r: names for r, names in need.items() if have.get(r, 0) < len(names)}
    if not short or podstate.health(pod) == "healthy":
        return None
    text = "; ".join(f"attachment{'s' if len(n) > 1 else ''} {', '.join(sorted(set(n)))} need{'' if len(n) > 1 else 's'} "
                     f"{len(n)} x {r} (k8s.v1.cni.cncf.io/resourceName) but the pod requests {have.get(r, 0)}"
                     for r, n in short.items())
    limits = "".join(f"    {r}: \"{len(n)}\"\n" for r, n in short.items())
    return Hit(f"The pod's Multus {text}: the CNI gets no device to configure (sriov-cni: "
               f"\"VF pci addr is required\").", [Line("spec", "resources", f"{r}: {have.get(r, 0)} requested")
                                                   for r in short],
               fix="Request the NetworkAttachmentDefinition's resource in every container that needs the network "
                   "(limits; requests follow), or deploy the network-resources-injector, which adds it.",
               snippet=f"resources:\n  limits:\n{limits}  requests:\n{limits}".rstrip(),
               summary=f"The pod does not request {', '.join(short)} for its Multus network(s)")


def _missing_devices(ev, pod, node):
    """Requested RDMA resources (the pod's, and those of its NADs) the node does not advertise; /dev/infiniband
    mounted on a node with no RDMA resource while NCCL finds no IB device (or NFD finds no RDMA hardware)."""
    wanted = {r for r in _requests(pod) if _rdma_resource(r)}
    for att in multus.requested(pod):
        nad = ev.get("NetworkAttachmentDefinition", att.name, att.namespace)
        wanted |= {multus.resource_name(nad)} - {""} if nad else set()
    missing = sorted(r for r in wanted if allocatable(node, r) <= 0)
    ib_log = logscan.first(ev, pod, [c["name"] for c in containers(pod)], "rdma-device-missing")
    lines = [Line("node", f"nodes/{name(node)}.status.allocatable[{r}]",
                  f"capacity {capacity(node, r)}, allocatable {allocatable(node, r)}") for r in missing]
    lines += [ib_log.as_line(name(pod))] if ib_log else []
    healthy = podstate.health(pod) == "healthy"
    slower = " NCCL falls back to TCP sockets: the job runs, far slower." if healthy else ""
    if missing and (not healthy or ib_log):
        return Hit(f"The pod needs {', '.join(missing)} but node {name(node)} advertises none (the RDMA/SR-IOV device "
                   f"plugin there is not running or found no devices).{slower}", lines,
                   severity="warning" if healthy else None,
                   summary=f"Node {name(node)} advertises no {', '.join(missing)}")
    no_hw = any(k.startswith("feature.node.kubernetes.io/") for k in labels(node)) and \
        not any(labels(node).get(k) == "true" for k in NFD_RDMA)
    if _mounts_infiniband(pod) and not node_resources(node, _rdma_resource) and (ib_log or (no_hw and not healthy)):
        why = f"NCCL finds no InfiniBand device ({ib_log.line.strip()[:120]})" if ib_log else \
            "node feature discovery reports no RDMA-capable device on it"
        return Hit(f"The pod mounts {INFINIBAND} from node {name(node)}, which advertises no RDMA resource, and {why}."
                   f"{slower}", lines + [Line("spec", "spec.volumes[hostPath]", INFINIBAND)],
                   severity="warning" if healthy else None,
                   summary=f"No RDMA device for the pod on node {name(node)}")
    return None
