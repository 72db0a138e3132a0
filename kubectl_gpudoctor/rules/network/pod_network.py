"""Network-phase rules: CNI, NetworkPolicy and RDMA/Multus problems."""
from __future__ import annotations

import ipaddress
import re

from ...gpu import stack as gpustack
from ...logs import scan as logscan
from ...kube import netpolicy, podstate
from ...data import cni
from ...kube.objects import condition, containers, name, namespace, spec, status
from .._common import event_line, first_match, pod_events, scheduled
from ..registry import DEFAULT, SPECIFIC, Hit, Line, Unknown, rule



def _pod_network(ev):
    """Scheduled, not finished, and on the pod network (hostNetwork pods use no CNI)."""
    pod = ev.pod
    return (scheduled(ev) and status(pod).get("phase") not in ("Succeeded", "Failed")
            and not spec(pod).get("hostNetwork"))


def _sandbox_ready(pod) -> bool:
    """The current sandbox has its network (PodReadyToStartContainers; PodHasNetwork in 1.25-1.27; before that,
    a pod IP and a container that started)."""
    cond = condition(pod, "PodReadyToStartContainers") or condition(pod, "PodHasNetwork")
    if cond is not None:
        return cond.get("status") == "True"
    return bool(status(pod).get("podIP")) and any(
        cs.get("started") or (cs.get("state") or {}).get("running") or podstate.latest_termination(cs)
        for _, cs, _ in podstate.all_container_states(pod))


@rule("cni-failure", phase="network", severity="critical", rank=SPECIFIC, applies=_pod_network,
      title="Pod network setup failed (CNI)",
      remediation="Fix the CNI agent on node $node ($agent): read its log and restart it; the kubelet retries the "
                  "sandbox by itself.")
def cni_failure(ev):
    """FailedCreatePodSandBox says the CNI plugin could not set up the pod's network, or the pod runs without an IP.

    Also the kubelet's NetworkNotReady event. The plugin (Calico, Cilium, AWS VPC CNI, flannel, Multus, SR-IOV...)
    and the cause (IP exhaustion, rejected credentials, API server unreachable, missing attachment) come from the
    message; an empty IP pool names the node's podCIDR and pods, never the agent; "agent down" only from the agent's
    own pod on the node, read and not Ready (a Ready agent: its files; none listed there: its DaemonSet; the node's
    pods unread: not checked)."""
    pod, node = ev.pod, spec(ev.pod).get("nodeName")
    if _sandbox_ready(pod) and status(pod).get("podIP"):
        return None
    events = pod_events(ev, ("FailedCreatePodSandBox", "NetworkNotReady"))
    event, _ = first_match(events, f"{cni.NETWORK_SETUP}|{cni.NETWORK_NOT_READY}")
    if event is None:
        if status(pod).get("phase") == "Running" and not status(pod).get("podIP"):
            return Hit(f"The pod is Running on node {node} but has no pod IP: the CNI plugin did not report an "
                       f"address for its sandbox.", [Line("status", "status.podIP", "(empty)")],
                       values={"agent": "the CNI agent"})
        return None
    text = event.get("message") or ""
    key, agent, selector = _plugin(text)
    cause, fix = next(((c, f) for c, rx, f in cni.CAUSES if re.search(rx, text)), ("unknown", None))
    m = next((m for m in (re.search(rx, text, re.S) for rx in cni.DETAILS) if m), None)
    detail = " ".join((m.group(1) if m else text).split()).rstrip("]'").strip()[:300]
    count = sum(int(e.get("count") or 1) for e in events)
    msg = (f"The {key} CNI plugin could not set up the pod's network on node {node} ({event.get('reason')}, "
           f"{count} attempt(s)): {detail}" + ("" if detail.endswith((".", "?")) else "."))
    values, lines = {"agent": agent}, [event_line(event)]
    msg, fix, summary = _agent_says(ev, node, key, text, cause, fix, msg, values, lines)
    # a missing or unrequested attachment: rdma-device-missing names the NetworkAttachmentDefinition
    rank = DEFAULT if cause in ("attachment-missing", "device-not-requested") else None
    return Hit(msg, lines, values=values, fix=fix, rank=rank,
               summary=f"CNI ({key}) cannot set up the pod network on {node}: {summary}",
               next=([f"kubectl get pods -A -l {selector} --field-selector spec.nodeName={node} -o wide"] if selector else [])
               + ([f"kubectl get pods -A --field-selector spec.nodeName={node} -o wide",   # who holds the addresses
                   f"kubectl get node {node} -o jsonpath='{{.spec.podCIDRs}}'"] if cause == "ip-exhausted" else []))


def _agent_says(ev, node, key, text, cause, fix, msg, values, lines):
    """(message, fix, summary's cause) with the CNI agent's pod on the node as read: its state quoted, and for an
    error naming the agent's socket or files, "agent down" only when that pod is not Ready."""
    state, agent_pod = _agent_state(ev, node, key)
    if agent_pod is not None:
        shown = f"{podstate.display_status(agent_pod)}, ready {gpustack.ready_count(agent_pod)}"
        values.update(agentpod=f"{namespace(agent_pod)}/{name(agent_pod)}", agentstate=shown)
        lines.append(Line("object", f"pods/{namespace(agent_pod)}/{name(agent_pod)}", shown))
        msg += f" CNI agent pod {namespace(agent_pod)}/{name(agent_pod)} on the node: {shown}."
    if cause == "ip-exhausted":   # the IPAM answered: the pool is empty, whatever the agent pod shows
        free, grow = cni.IP_POOL_ADVICE.get(key, cni.IP_POOL_ADVICE["default"])
        values.update(pool=_pool_facts(ev, node), free=free, grow=grow)
        return msg, cni.IP_POOL, "IP pool exhausted" + (", agent pod Ready" if state == "healthy" else "")
    if cause != "agent-down":
        return msg, fix, cause.replace("-", " ")
    gap = ev.gap("pods")
    values["gap"] = f"{gap.reason}, needs {gap.verb} {gap.source}" if gap else "the node's pods were not listed"
    unmounted = _unmounted(agent_pod, text) if state == "healthy" else None
    if unmounted:   # a Ready agent that cannot write the file: its manifest lacks the host mount
        values.update(path=unmounted, mounts=", ".join(_host_paths(agent_pod)) or "none")
        return msg, cni.AGENT_UNMOUNTED, cni.AGENT_SUMMARY[state]
    return msg, cni.AGENT_FIXES[state], cni.AGENT_SUMMARY[state]


def _pool_facts(ev, node):
    """' (spec.podCIDR 10.0.3.0/24, 256 addresses; 254 pods on the pod network on it among the pods read, 3
    Terminating)', or '' for what was not read. hostNetwork pods and finished pods hold no pod IP; a Terminating one
    holds its address until the kubelet tears its sandbox down. With every pod on the node read and fewer than half
    the CIDR's addresses in use, the rest are reservations of pods that are gone."""
    obj = ev.get("Node", node) if node else None
    cidrs = [c for c in (spec(obj).get("podCIDRs") or [spec(obj).get("podCIDR")] if obj else []) if isinstance(c, str)]
    parts, size = [], 0
    for cidr in cidrs[:2]:
        try:
            count = ipaddress.ip_network(cidr, strict=False).num_addresses
        except ValueError:
            parts.append(f"spec.podCIDR {cidr}")
            continue
        size = size or count
        parts.append(f"spec.podCIDR {cidr}, {count} addresses")
    if node and gpustack.pods_known(ev, node):
        held = [p for p in ev.pods_on(node) if not spec(p).get("hostNetwork")
                and status(p).get("phase") not in ("Succeeded", "Failed")]
        gone = sum(1 for p in held if (p.get("metadata") or {}).get("deletionTimestamp"))
        parts.append(f"{len(held)} pods on the pod network on it among the pods read"
                     + (f", {gone} Terminating" if gone else ""))
        if size and gpustack.all_pods_known(ev, node) and 2 * len(held) < size:
            parts.append("far fewer pods than addresses, so addresses of pods that are gone are still reserved")
    return f" ({'; '.join(parts)})" if parts else ""


def _host_paths(pod):
    paths = [v["hostPath"].get("path") for v in spec(pod).get("volumes") or [] if isinstance(v.get("hostPath"), dict)]
    return [p for p in paths if isinstance(p, str) and p]


def _unmounted(pod, text):
    """The host file the plugin misses (`stat /var/lib/calico/nodename: no such file`), when the agent's pod mounts no
    host directory holding it: the agent writes it there, so a pod without that mount never does."""
    m = re.search(r"(?:stat|open) (/[\w./-]+): no such file or directory", text)
    if not m or not _host_paths(pod):
        return None
    path = m.group(1)
    held = any(path == h or path.startswith(h.rstrip("/") + "/") for h in _host_paths(pod))
    return None if held else path


def _agent_state(ev, node, key):
    """(down | healthy | absent | unknown, the agent pod): the CNI agent's pod on the node, as read. A plugin the
    message does not name is any known agent."""
    if not node or not gpustack.pods_known(ev, node):
        return "unknown", None
    wanted = [rx for k, rx in cni.AGENT_PODS.items() if k == key] or list(cni.AGENT_PODS.values())
    pods = [p for p in ev.pods_on(node) if any(re.search(rx, s) for rx in wanted for s in gpustack.identity(p))]
    if not pods:
        return "absent", None
    down = [p for p in pods if not gpustack.is_ready(p)]
    return ("down", down[0]) if down else ("healthy", pods[0])


def _plugin(text):
    """(plugin, agent, label selector): an explicit delegate type wins over the Multus wrapper around it."""
    if "network-attachment-definition" in text:
        return next((k, a, s) for k, _, a, s in cni.PLUGINS if k == "multus")
    types = [t for t in re.findall(r'plugin type="([^"]+)"', text) if not t.startswith("multus")]
    probe = types[-1] if types else text
    for key, rx, agent, selector in cni.PLUGINS:
        if re.search(rx, probe):
            return key, agent, selector
    return (types[-1] if types else "cluster"), "the CNI agent", ""


def _policy_applies(ev):
    """Scheduled, on the pod network, not Succeeded (a Failed training pod's policy still matters)."""
    return scheduled(ev) and status(ev.pod).get("phase") != "Succeeded" and not spec(ev.pod).get("hostNetwork")


@rule("networkpolicy-blocks-traffic", phase="network", severity="warning", rank=DEFAULT, applies=_policy_applies,
      needs=("networkpolicies",), title="A NetworkPolicy blocks the pod's peers or DNS",
      remediation="Allow the job's pods to reach each other on every port (and DNS) in namespace $namespace: add "
                  "the NetworkPolicy below next to the policy that isolates the pod ($policies).")
def networkpolicy_blocks_traffic(ev):
    """A NetworkPolicy isolates the pod and no rule lets its job's other pods (or DNS) through.

    Evaluated for egress to and ingress from the job's pods in the namespace (every port: NCCL uses ephemeral
    ports) and egress to kube-dns; critical when the failing pod's log shows NCCL, torch.distributed, DNS or
    connection failures of the blocked kind."""
    pod = ev.pod
    policies = [p for p in ev.all("NetworkPolicy") if namespace(p) == namespace(pod)]
    if not policies:
        return None
    peer = netpolicy.job_peer(pod, ev.get("Namespace", namespace(pod)))
    dns = netpolicy.dns_peer(ev.get("Namespace", "kube-system"))
    verdicts = [netpolicy.evaluate(pod, policies, "Egress", peer), netpolicy.evaluate(pod, policies, "Ingress", peer),
                netpolicy.evaluate(pod, policies, "Egress", dns)]
    # Init containers too: a download or rendezvous wait in an init container is blocked the same way.
    names = [c["name"] for c in containers(pod, init=True) + containers(pod)]
    log = logscan.first(ev, pod, names, "networkpolicy-blocks-traffic")
    wanted = [v for v in verdicts if v.blocked and _matters(v, pod, log)]
    if not wanted:
        undecided = any(v.result == "unknown" for v in verdicts) and ev.gap("namespaces")
        return Unknown.from_gap(ev.gap("namespaces")) if undecided and (log or podstate.health(pod) != "healthy") else None
    if podstate.health(pod) == "healthy" and not log:
        return None   # the pod works: the CNI may not enforce policies, or the job needs no other pods
    return _policy_hit(pod, policies, wanted, log)


def _policy_hit(pod, policies, wanted, log):
    names = sorted({n for v in wanted for n in v.policies})
    by_name = {name(p): p for p in policies}
    lines = [Line("object", f"networkpolicies/{n}", netpolicy.describe(by_name[n])) for n in names]
    lines += [log.as_line(name(pod))] if log else []
    groups = {}
    for v in wanted:
        groups.setdefault((v.peer.what, v.result, tuple(v.ports)), []).append(v)
    msg = "; ".join(_says(g) for g in groups.values()) + "."
    if log is not None:
        msg += f" The log shows the failure this causes: {log.line.strip()[:200]}"
    peers, dns = any(not _is_dns(v) for v in wanted), any(_is_dns(v) for v in wanted)
    what = " and ".join(x for x, on in (("the job's pods to reach each other on every port", peers),
                                         ("DNS egress (kube-dns in kube-system, UDP and TCP 53)", dns)) if on)
    fix = f"Allow {what} in namespace $namespace: add the NetworkPolicy below next to $policies."
    # critical only when the pod is failing and its log shows the kind of traffic the policy blocks
    critical = log is not None and _explains(log, wanted) and podstate.health(pod) != "healthy"
    return Hit(msg[0].upper() + msg[1:], lines, severity="critical" if critical else None,
               values={"policies": ", ".join(names)}, fix=fix,
               snippet=netpolicy.allow_snippet(pod, ingress=any(v.direction == "Ingress" for v in wanted),
                                               egress=any(v.direction == "Egress" and not _is_dns(v) for v in wanted),
                                               dns=any(_is_dns(v) for v in wanted)),
               summary=f"NetworkPolicy {', '.join(names)} blocks {', '.join(sorted({_short(v) for v in wanted}))}",
               next=[f"kubectl get networkpolicy -n {namespace(pod)} -o yaml"])


def _is_dns(v) -> bool:
    return v.peer.namespace == "kube-system" and v.peer.port == 53


def _matters(v, pod, log) -> bool:
    """Peer traffic matters for distributed pods (or when the log shows peer failures); DNS for everyone."""
    if _is_dns(v):
        return True
    return netpolicy.is_distributed(pod) or (log is not None and log.signature.id.startswith("peer-"))


def _explains(log, wanted) -> bool:
    kind = log.signature.id.split("-", 1)[0]
    dns = any(_is_dns(v) for v in wanted)
    peers = any(not _is_dns(v) for v in wanted)
    return {"peer": peers, "dns": dns, "conn": dns or any(v.direction == "Egress" for v in wanted)}.get(kind, False)


def _says(group) -> str:
    """One sentence for verdicts about the same peer: who isolates the pod and what it leaves open."""
    v, names = group[0], sorted({n for g in group for n in g.policies})
    who = f"NetworkPolicy {names[0]}" if len(names) == 1 else f"NetworkPolicies {', '.join(names)} together"
    s = "s" if len(names) == 1 else ""
    dirs = sorted({g.direction for g in group})
    way = "traffic to or from" if len(dirs) == 2 else ("egress to" if dirs == ["Egress"] else "ingress from")
    if v.result == "partial":
        return (f"{who} allow{s} {way} {v.peer.what} only on {', '.join(sorted(set(v.ports)))}; NCCL and "
                f"torch.distributed need every port between ranks")
    deny = sorted({n for g in group for n in g.default_deny})
    return (f"{who} isolate{s} the pod for {' and '.join(dirs)} and allow{s} no {way} {v.peer.what}"
            + (f" (default deny: {', '.join(deny)})" if deny else ""))


def _short(v) -> str:
    return ("DNS" if _is_dns(v) else
            f"{'egress to' if v.direction == 'Egress' else 'ingress from'} the job's pods")
