"""Extra reads for the network rules of a pod diagnosis (GET/LIST only, bounded, field/label selectors)."""
from __future__ import annotations

from typing import List

from ..kube import multus, podstate
from ..evidence import Evidence
from ..kube.objects import namespace, spec
from .api import Request, quote

NAD_API = "/apis/k8s.cni.cncf.io/v1"
MAX_FOREIGN_NADS = 8        # attachments the pod names in other namespaces, read one by one
DNS_NAMESPACE = "kube-system"


def first_round(pod: dict) -> List[Request]:
    """The pod's namespace's NetworkPolicies (once it is scheduled: they isolate a pod that has a network); the
    NetworkAttachmentDefinitions its Multus annotation names."""
    ns = namespace(pod)
    reqs = []
    if podstate.is_scheduled(pod):
        reqs.append(Request("networkpolicies", "list",
                            f"/apis/networking.k8s.io/v1/namespaces/{quote(ns)}/networkpolicies", kind="NetworkPolicy"))
    wanted = multus.requested(pod)
    if wanted:
        # A 404 on this list means the Multus CRD is not installed: then no attachment can exist.
        reqs.append(Request("network-attachment-definitions", "list",
                            f"{NAD_API}/namespaces/{quote(ns)}/network-attachment-definitions",
                            kind="NetworkAttachmentDefinition", optional_api=True))
    foreign = sorted({(a.namespace, a.name) for a in wanted if a.namespace != ns})[:MAX_FOREIGN_NADS]
    reqs += [Request("network-attachment-definitions", "get",
                     f"{NAD_API}/namespaces/{quote(other)}/network-attachment-definitions/{quote(nad)}",
                     kind="NetworkAttachmentDefinition") for other, nad in foreign]
    return reqs


def second_round(ev: Evidence) -> List[Request]:
    """Namespace labels, only when a policy chooses peers by namespaceSelector: the pod's own namespace and
    kube-system (DNS). A 403 leaves them a gap; the policy check then says unknown where it depends on them."""
    pod = ev.pod
    if pod is None or not any(_has_namespace_selector(p) for p in ev.all("NetworkPolicy")):
        return []
    wanted = [namespace(pod)] + ([DNS_NAMESPACE] if namespace(pod) != DNS_NAMESPACE else [])
    return [Request("namespaces", "get", f"/api/v1/namespaces/{quote(ns)}", kind="Namespace")
            for ns in wanted if ev.get("Namespace", ns) is None]


def _has_namespace_selector(policy: dict) -> bool:
    rules = (spec(policy).get("ingress") or []) + (spec(policy).get("egress") or [])
    return any("namespaceSelector" in peer for r in rules for peer in (r.get("from") or []) + (r.get("to") or []))
