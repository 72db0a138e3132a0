"""Extra reads for the network rules of a pod diagnosis (GET/LIST only, bounded, field/label selectors)."""
from __future__ import annotations

from typing import List

from ..kube import initwait, multus, podstate
from ..evidence import Evidence
from ..kube.objects import controller_of, name, namespace, spec
from .api import Request, quote, scoped

NAD_API = "/apis/k8s.cni.cncf.io/v1"
MAX_FOREIGN_NADS = 8        # attachments the pod names in other namespaces, read one by one
DNS_NAMESPACE = "kube-system"


def first_round(pod: dict) -> List[Request]:
    """The pod's namespace's NetworkPolicies (once it is scheduled: they isolate a pod that has a network); the
    NetworkAttachmentDefinitions its Multus annotation names."""
    ns = namespace(pod)
    reqs = []
    if podstate.is_scheduled(pod):
        reqs.append(_policies(ns, ns))
    wanted = multus.requested(pod)
    if wanted:
        # A 404 on this list means the Multus CRD is not installed: then no attachment can exist.
        reqs.append(scoped(Request("network-attachment-definitions", "list",
                                   f"{NAD_API}/namespaces/{quote(ns)}/network-attachment-definitions",
                                   kind="NetworkAttachmentDefinition", optional_api=True), ns, ns))
    # another namespace's attachment, refused, is unknown there only: the own namespace's list still decides
    foreign = sorted({(a.namespace, a.name) for a in wanted if a.namespace != ns})[:MAX_FOREIGN_NADS]
    reqs += [scoped(Request("network-attachment-definitions", "get",
                            f"{NAD_API}/namespaces/{quote(other)}/network-attachment-definitions/{quote(nad)}",
                            kind="NetworkAttachmentDefinition"), other, ns) for other, nad in foreign]
    return reqs


def second_round(ev: Evidence) -> List[Request]:
    """Namespace labels, only when a policy chooses peers by namespaceSelector: the pod's own namespace and
    kube-system (DNS). A 403 leaves them a gap; the policy check then says unknown where it depends on them."""
    pod = ev.pod
    if pod is None:
        return []
    reqs = waited_services(ev)
    if not any(_has_namespace_selector(p) for p in ev.all("NetworkPolicy")):
        return reqs
    wanted = [namespace(pod)] + ([DNS_NAMESPACE] if namespace(pod) != DNS_NAMESPACE else [])
    return reqs + [Request("namespaces", "get", f"/api/v1/namespaces/{quote(ns)}", kind="Namespace")
                   for ns in wanted if ev.get("Namespace", ns) is None]


# --- the peers a waiting init container dials ----------------------------------------------------------------------
DISCOVERY = "/apis/discovery.k8s.io/v1"
MAX_PODS = 50           # pods read per label-selected sample (a peer Service's, the controller's siblings): one page


def _waiting(ev: Evidence):
    """The pod's running init container, once it has run long enough to be worth the reads, or the init container
    whose last run failed while its log waited for a peer; with its peers."""
    if ev.pod is None:
        return None
    w = initwait.reading(ev, ev.pod)
    if w is not None:
        return w if w.peers and (w.running_for or 0) >= initwait.MIN_RUN_S else None
    for c, cs, init in podstate.all_container_states(ev.pod):
        if init and c.get("restartPolicy") != "Always" and _failed_run(cs):
            w = initwait.failed_reading(ev, ev.pod, c, cs)
            return w if w.peers and w.lines else None
    return None


def _failed_run(cs: dict) -> bool:
    rec = podstate.terminated(cs) or (podstate.last_terminated(cs) if podstate.waiting(cs) else {})
    return bool(rec) and rec.get("exitCode", 0) != 0


def waited_services(ev: Evidence) -> List[Request]:
    """The Services a waiting init container names (GET by name: a 404 says it does not exist), the pod
    namespace's Services when it dials an IP (a clusterIP names one), their EndpointSlices (by the
    kubernetes.io/service-name label), and the NetworkPolicies of a peer's other namespace."""
    w = _waiting(ev)
    if w is None:
        return []
    own, reqs, by_ns = namespace(ev.pod), _siblings(ev), {}
    for p in w.peers:
        if p.service:
            reqs.append(_elsewhere(Request("services", "get", f"/api/v1/namespaces/{quote(p.namespace)}/services/"
                                                              f"{quote(p.service)}", kind="Service"), p.namespace, own))
            by_ns.setdefault(p.namespace, set()).add(p.service)
    if any(p.ip for p in w.peers):
        reqs.append(Request("services", "list", f"/api/v1/namespaces/{quote(own)}/services", kind="Service"))
    for ns, names in sorted(by_ns.items()):
        reqs.append(_elsewhere(_slices(ns, names), ns, own))
        if ns != own:
            reqs.append(_policies(ns, own))
    return reqs


def _elsewhere(req: Request, ns: str, own: str) -> Request:
    """A read of a peer's namespace other than the pod's: its gap is that namespace's own (Evidence.gap_in)."""
    return scoped(req, ns, own) if ns != own else req


def _policies(ns: str, own: str) -> Request:
    """A namespace's NetworkPolicies; refused, the gap names that namespace: a 403 on the peer's namespace leaves
    the pod's own namespace's policies, read fine, decided (and the reverse)."""
    return scoped(Request("networkpolicies", "list", f"/apis/networking.k8s.io/v1/namespaces/{quote(ns)}/networkpolicies",
                          kind="NetworkPolicy"), ns, own)


# Labels that differ between the pods of one controller (their index or name): left out of the sibling selector.
_OWN_LABELS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                         "batch.kubernetes.io/job-completion-index", "training.kubeflow.org/replica-index",
                         "jobset.sigs.k8s.io/job-index", "leaderworkerset.sigs.k8s.io/worker-index"})


def _siblings(ev: Evidence) -> List[Request]:
    """The other pods of a running init container's controller (its labels less the per-pod ones, a label-selected
    list): how long their run of the same init container took is the history it is compared with."""
    if initwait.running_init(ev.pod) is None or controller_of(ev.pod) is None:
        return []
    sel = {k: v for k, v in (ev.pod["metadata"].get("labels") or {}).items() if k not in _OWN_LABELS}
    if not sel:
        return []
    query = {"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(sel.items())), "limit": str(MAX_PODS)}
    return [Request("pods", "list", f"/api/v1/namespaces/{quote(namespace(ev.pod))}/pods", query, kind="Pod")]


def _slices(ns: str, names) -> Request:
    sel = f"{initwait.SERVICE_NAME} in ({','.join(sorted(names))})"
    return Request("endpointslices", "list", f"{DISCOVERY}/namespaces/{quote(ns)}/endpointslices",
                   {"labelSelector": sel}, kind="EndpointSlice")


def third_round(ev: Evidence) -> List[Request]:
    """The pods behind each Service a waiting init container dials (by the Service's selector, bounded), the
    EndpointSlices of a Service found by its clusterIP, and the labels of the pod's own namespace when a policy of
    a peer's namespace chooses clients by namespaceSelector."""
    w = _waiting(ev)
    if w is None:
        return []
    reqs, own = [], namespace(ev.pod)
    svcs = [s for s in (initwait.service_for(ev, p, own) for p in w.peers) if s is not None]
    for svc in {(namespace(s), name(s)): s for s in svcs}.values():
        sel = spec(svc).get("selector") or {}
        if sel and isinstance(sel, dict):
            # a label-selected sample of the Service's own pods: their state and labels
            query = {"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(sel.items())), "limit": str(MAX_PODS)}
            reqs.append(_elsewhere(Request("pods", "list", f"/api/v1/namespaces/{quote(namespace(svc))}/pods", query,
                                           kind="Pod"), namespace(svc), own))
    found_by_ip = [s for p in w.peers if p.ip and not p.service for s in [initwait.service_for(ev, p, own)] if s]
    for svc in found_by_ip:
        reqs.append(_slices(namespace(svc), {name(svc)}))
    peer_ns = {namespace(s) for s in svcs} - {own}
    # a policy choosing peers by namespaceSelector needs the other side's namespace labels: of this pod's namespace
    # for the peer's policies, of the peer's namespace for this pod's
    wanted = ({own} if any(_has_namespace_selector(p) for p in ev.all("NetworkPolicy") if namespace(p) in peer_ns)
              else set())
    wanted |= peer_ns if any(_has_namespace_selector(p) for p in ev.all("NetworkPolicy") if namespace(p) == own) else set()
    reqs += [Request("namespaces", "get", f"/api/v1/namespaces/{quote(ns)}", kind="Namespace")
             for ns in sorted(wanted) if ev.get("Namespace", ns) is None]
    return reqs


def _has_namespace_selector(policy: dict) -> bool:
    rules = (spec(policy).get("ingress") or []) + (spec(policy).get("egress") or [])
    return any("namespaceSelector" in peer for r in rules for peer in (r.get("from") or []) + (r.get("to") or []))
