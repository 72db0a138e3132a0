"""Evaluates NetworkPolicies against one pod: which select it and whether they let a given peer through; pure.

Semantics of networking.k8s.io/v1: a pod is isolated for a direction when any policy selecting it lists that
direction in policyTypes (default: Ingress, plus Egress when spec.egress is set); allowed traffic is the union
of the rules of those policies. A rule without from/to matches every peer, without ports every port. A peer's
podSelector alone means the policy's namespace; namespaceSelector chooses namespaces by their labels; ipBlock
matches addresses. Results are three-valued: None means it depends on labels that were not read.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Dict, Iterable, List, Optional, Union

from ..record import field, record
from .objects import containers, labels, name, namespace, spec
from .. import lazyre

ALL = "*"   # every label key is unknown (a namespace whose object was not read)
NS_NAME_LABEL = "kubernetes.io/metadata.name"   # set on every namespace since 1.21
# Labels a job's pods do not share (pod identity, role, revision): a peer of this pod may differ in them.
PER_POD_LABELS = frozenset({
    "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "batch.kubernetes.io/job-completion-index",
    "controller-revision-hash", "pod-template-hash", "pod-template-generation",
    "training.kubeflow.org/replica-index", "training.kubeflow.org/replica-type", "training.kubeflow.org/job-role",
    "jobset.sigs.k8s.io/job-index", "jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-key",
    "jobset.sigs.k8s.io/job-global-index", "leaderworkerset.sigs.k8s.io/worker-index", "ray.io/node-type",
    "ray.io/group", "ray.io/is-ray-node",
})
# The label that best names "this job's pods", in order of preference (training operators, JobSet, LWS, Ray, Job).
GROUP_LABELS = ("training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name", "leaderworkerset.sigs.k8s.io/name",
                "ray.io/cluster", "batch.kubernetes.io/job-name", "job-name", "app.kubernetes.io/instance",
                "app.kubernetes.io/name", "app")
# Signs that a pod talks to peer pods (multi-node training or serving).
DISTRIBUTED_LABELS = ("training.kubeflow.org/", "jobset.sigs.k8s.io/", "leaderworkerset.sigs.k8s.io/", "ray.io/")
LOCAL = ("", "localhost", "127.0.0.1", "::1")
# Launchers that span several pods (a single-node torchrun talks over localhost, which policies do not touch).
DISTRIBUTED_CMD = lazyre.compile(r"--nnodes[= ]+(?:[2-9]|\d\d|\d+:\d+)|--num[_-](?:machines|nodes)[= ]+(?:[2-9]|\d\d)|"
                             r"\b(?:mpirun|mpiexec|horovodrun)\b|\bray start\b|--hostfile\b")
# The DNS service's pods (CoreDNS and kube-dns both carry k8s-app=kube-dns) and their named ports.
DNS_LABELS = {"k8s-app": "kube-dns"}
DNS_PORTS = {"dns": ("UDP", 53), "dns-tcp": ("TCP", 53)}
# An allowed port range counts as "every port" when it covers Linux's ephemeral range (NCCL/torch listeners).
EPHEMERAL = (32768, 60999)

Tri = Optional[bool]


def _all(results: Iterable[Tri]) -> Tri:
    results = list(results)
    return False if False in results else (None if None in results else True)


def _any(results: Iterable[Tri]) -> Tri:
    results = list(results)
    return True if True in results else (None if None in results else False)


def match(selector: Optional[dict], have: Dict[str, str], unknown: Union[frozenset, str] = frozenset()) -> Tri:
    """A label selector against labels; keys in `unknown` (or every key, ALL) that are absent make it None."""
    if selector is None:
        return True
    out: List[Tri] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        out.append(None if key not in have and (unknown == ALL or key in unknown) else have.get(key) == value)
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if key not in have and (unknown == ALL or key in unknown):
            out.append(None)
            continue
        out.append({"In": key in have and have.get(key) in values, "NotIn": have.get(key) not in values,
                    "Exists": key in have, "DoesNotExist": key not in have}.get(op))
    return _all(out)


def policy_types(policy: dict) -> List[str]:
    types = spec(policy).get("policyTypes")
    if types:
        return list(types)
    return ["Ingress"] + (["Egress"] if spec(policy).get("egress") else [])


def selects(policy: dict, pod: dict) -> bool:
    return namespace(policy) == namespace(pod) and match(spec(policy).get("podSelector") or {}, labels(pod)) is True


@record
class Peer:
    """One end of the traffic to test: who it is, where it lives, which port."""
    what: str
    namespace: str
    ns_labels: Dict[str, str]
    ns_known: bool                     # the Namespace object was read (its labels are complete)
    labels: Dict[str, str]
    unknown_keys: frozenset = frozenset()
    ip: Optional[str] = None
    protocol: str = "TCP"
    port: Optional[int] = None         # None: every port (NCCL and torch.distributed use ephemeral ports)
    named_ports: Dict[str, tuple] = field(default_factory=dict)


def peer_matches(item: dict, policy_ns: str, peer: Peer) -> Tri:
    """One entry of from/to against the peer."""
    if "ipBlock" in item:
        return _ip_match(item["ipBlock"], peer.ip)
    ns_sel = item.get("namespaceSelector")
    ns_ok = (peer.namespace == policy_ns) if ns_sel is None else \
        match(ns_sel, peer.ns_labels, frozenset() if peer.ns_known else ALL)
    return _all([ns_ok, match(item.get("podSelector"), peer.labels, peer.unknown_keys)])


def _ip_match(block: dict, ip: Optional[str]) -> Tri:
    try:
        net = ipaddress.ip_network(block.get("cidr", ""), strict=False)
        if ip is None:
            return True if net.prefixlen == 0 and not block.get("except") else None
        addr = ipaddress.ip_address(ip)
        return addr in net and not any(addr in ipaddress.ip_network(x, strict=False) for x in block.get("except") or [])
    except ValueError:
        return None


def ports_match(ports: Optional[list], peer: Peer) -> Union[bool, str]:
    """True (the port, or every port, is allowed), "some" (only some ports of every-port traffic) or False."""
    if not ports:
        return True
    mine = [p for p in ports if (p.get("protocol") or "TCP") == peer.protocol]
    if not mine:
        return False
    for p in mine:
        port, end = p.get("port"), p.get("endPort")
        if port is None:
            return True
        if peer.port is None:
            if isinstance(port, int) and end and port <= EPHEMERAL[0] and end >= EPHEMERAL[1]:
                return True
            continue
        if isinstance(port, str):
            port = (peer.named_ports.get(port) or (None, None))[1]
        if port == peer.port or (isinstance(port, int) and end and port <= peer.port <= end):
            return True
    return "some" if peer.port is None else False


@record
class Verdict:
    direction: str
    peer: Peer
    isolated: bool = False
    result: str = "allowed"            # allowed | partial | denied | unknown
    policies: List[str] = field(default_factory=list)
    default_deny: List[str] = field(default_factory=list)
    ports: List[str] = field(default_factory=list)   # what a partial result allows

    @property
    def blocked(self) -> bool:
        return self.result in ("denied", "partial")


def evaluate(pod: dict, policies: List[dict], direction: str, peer: Peer) -> Verdict:
    """Does the union of the policies that isolate the pod in this direction let the peer through?"""
    v = Verdict(direction, peer)
    isolating = [p for p in policies if selects(p, pod) and direction in policy_types(p)]
    if not isolating:
        return v
    v.isolated, v.policies = True, [name(p) for p in isolating]
    key, side = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    unknown = False
    for pol in isolating:
        rules = spec(pol).get(key) or []
        if not rules and not (spec(pol).get("podSelector") or {}):
            v.default_deny.append(name(pol))
        for r in rules:
            who = _any(peer_matches(i, namespace(pol), peer) for i in r.get(side) or []) if r.get(side) else True
            ports = ports_match(r.get("ports"), peer)
            if who is True and ports is True:
                v.result = "allowed"
                return v
            unknown = unknown or (who is None and ports is not False)
            if who is True and ports == "some":
                v.ports += [_port_text(p) for p in r.get("ports") or []]
    v.result = "unknown" if unknown else ("partial" if v.ports else "denied")
    return v


def _port_text(p: dict) -> str:
    port = f"{p.get('port')}-{p['endPort']}" if p.get("endPort") else str(p.get("port", "all"))
    return f"{port}/{p.get('protocol') or 'TCP'}"


# --- the peers a GPU pod needs ---------------------------------------------------------------

def _ns(ns_name: str, ns_obj: Optional[dict]):
    have = dict(labels(ns_obj)) if ns_obj else {}
    have.setdefault(NS_NAME_LABEL, ns_name)
    return have, ns_obj is not None


def group_selector(pod: dict) -> Dict[str, str]:
    """The label that names this pod's job or app ({} when none does: the whole namespace)."""
    mine = labels(pod)
    return next(({k: mine[k]} for k in GROUP_LABELS if k in mine), {})


def job_peer(pod: dict, ns_obj: Optional[dict]) -> Peer:
    """The other pods of the pod's job: same namespace, same labels except per-pod ones, every TCP port."""
    ns_labels, known = _ns(namespace(pod), ns_obj)
    shared = {k: v for k, v in labels(pod).items() if k not in PER_POD_LABELS}
    sel = group_selector(pod)
    what = f"the other pods of {', '.join(f'{k}={v}' for k, v in sel.items())}" if sel else "the other pods"
    named = {p["name"]: (p.get("protocol") or "TCP", p.get("containerPort"))
             for c in containers(pod) for p in c.get("ports") or [] if p.get("name")}
    return Peer(what, namespace(pod), ns_labels, known, shared, PER_POD_LABELS,
                ip=(pod.get("status") or {}).get("podIP"), named_ports=named)


def pod_peer(pod: dict, ns_obj: Optional[dict], port: Optional[int], what: str = "", protocol: str = "TCP",
             labels_only: Optional[Dict[str, str]] = None) -> Peer:
    """One pod as the other end of a connection on `port`: its labels, namespace labels and IP (a pod not read is
    given as the labels known to be on it, e.g. a Service's selector, the others unknown)."""
    ns_labels, known = _ns(namespace(pod) if pod else "", ns_obj)
    if labels_only is not None:
        return Peer(what or "the Service's pods", namespace(pod), ns_labels, known, dict(labels_only), ALL,
                    protocol=protocol, port=port)
    named = {p["name"]: (p.get("protocol") or "TCP", p.get("containerPort"))
             for c in containers(pod) for p in c.get("ports") or [] if p.get("name")}
    return Peer(what or f"pod {name(pod)}", namespace(pod), ns_labels, known, dict(labels(pod)),
                ip=(pod.get("status") or {}).get("podIP"), protocol=protocol, port=port, named_ports=named)


def dns_peer(ns_obj: Optional[dict]) -> Peer:
    ns_labels, known = _ns("kube-system", ns_obj)
    return Peer("DNS (kube-dns in kube-system, UDP 53)", "kube-system", ns_labels, known, dict(DNS_LABELS),
                protocol="UDP", port=53, named_ports=DNS_PORTS)


def is_distributed(pod: dict) -> bool:
    """The pod talks to peer pods: a training-operator/JobSet/LWS/Ray pod, a multi-node launcher, MASTER_ADDR set to
    another host, WORLD_SIZE/PET_NNODES above 1, MPI or Ray addresses."""
    if any(k.startswith(DISTRIBUTED_LABELS) for k in labels(pod)):
        return True
    for c in containers(pod):
        env = {e.get("name") or "": e.get("value") or "" for e in c.get("env") or []}
        if env.get("MASTER_ADDR", "") not in LOCAL or _first_int(env.get("WORLD_SIZE")) > 1 \
                or _first_int(env.get("PET_NNODES")) > 1:
            return True
        if "LWS_LEADER_ADDRESS" in env or "RAY_ADDRESS" in env or any(k.startswith("OMPI_") for k in env):
            return True
        if DISTRIBUTED_CMD.search(" ".join((c.get("command") or []) + (c.get("args") or []))):
            return True
    return False


def _first_int(text) -> int:
    m = re.match(r"\s*(\d+)", text or "")
    return int(m.group(1)) if m else 0


def bootstrap_port(pod: dict) -> Optional[str]:
    for c in containers(pod):
        for e in c.get("env") or []:
            if e.get("name") == "MASTER_PORT" and e.get("value"):
                return e["value"]
    return None


def describe(policy: dict) -> str:
    """`name (podSelector {..}, policyTypes X, Y)` as a person reads a policy."""
    sel = spec(policy).get("podSelector") or {}
    shown = ", ".join(f"{k}={v}" for k, v in (sel.get("matchLabels") or {}).items()) or ("{}" if not sel else "expressions")
    return f"{name(policy)} (podSelector {shown}, policyTypes {', '.join(policy_types(policy))})"


def _pod_selector(sel: Dict[str, str], indent: int) -> List[str]:
    pad = " " * indent
    if not sel:
        return [f"{pad}podSelector: {{}}"]
    return [f"{pad}podSelector:", f"{pad}  matchLabels:"] + [f"{pad}    {k}: {v}" for k, v in sel.items()]


def _list_item(lines: List[str]) -> List[str]:
    """Turn the first line of a 6-space-indented block into a `    - ` list item."""
    return [lines[0][:4] + "- " + lines[0][6:]] + lines[1:]


def allow_snippet(pod: dict, ingress: bool, egress: bool, dns: bool) -> str:
    """A NetworkPolicy that lets the job's pods reach each other (every port) and, if needed, DNS."""
    sel = group_selector(pod)
    types = [t for t, on in (("Ingress", ingress), ("Egress", egress or dns)) if on]
    note = (f"    # no ports: torch.distributed's store listens on MASTER_PORT ({bootstrap_port(pod) or '29500'}) "
            f"and NCCL opens ephemeral ports between ranks")
    out = ["apiVersion: networking.k8s.io/v1", "kind: NetworkPolicy", "metadata:",
           f"  name: allow-{(list(sel.values()) or ['namespace'])[0]}-{'peers' if ingress or egress else 'dns'}",
           f"  namespace: {namespace(pod)}", "spec:"]
    out += _pod_selector(sel, 2) + [f"  policyTypes: [{', '.join(types)}]"]
    if ingress:
        out += ["  ingress:", "  - from:"] + _list_item(_pod_selector(sel, 6)) + [note]
    if egress or dns:
        out.append("  egress:")
    if egress:
        out += ["  - to:"] + _list_item(_pod_selector(sel, 6)) + [note]
    if dns:
        out += ["  - to:", "    - namespaceSelector:", "        matchLabels:", f"          {NS_NAME_LABEL}: kube-system",
                "      podSelector:", "        matchLabels:", "          k8s-app: kube-dns", "    ports:",
                "    - {protocol: UDP, port: 53}", "    - {protocol: TCP, port: 53}"]
    return "\n".join(out)
