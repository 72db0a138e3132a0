"""Init-phase rule: an init container that waits for another service far longer than it ever did, and why the
service does not answer: it does not exist, has no ready endpoints, or a NetworkPolicy (of the pod, or of the pods
behind the service) drops the connection."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ...kube import initwait, netpolicy, podstate
from ...kube.objects import condition, labels, name, namespace, spec
from ...kube.owners import owner_chain
from ...kube.timeutil import human_duration
from ...record import field, record
from .._common import scheduled
from ..registry import SPECIFIC, Gap, Hit, Line, Unknown, rule


def _has_running_init(ev):
    return scheduled(ev) and initwait.running_init(ev.pod) is not None


@record
class Why:
    """What the peer check found: a sentence, a fix, a snippet, evidence, and whether the fix edits the pod."""
    says: str
    short: str
    fix: str
    snippet: str = ""
    lines: List[Line] = field(default_factory=list)
    edits: str = ""
    decisive: bool = False      # the peer's state explains the wait (absent, no endpoints, a policy drops it)
    severity: Optional[str] = None   # warning while the peer's pods are still starting


def failed_run_peer(ev, c: dict, cs: dict) -> Optional[tuple]:
    """(peer, Why) for an init container whose failed run's log waited for or retried a connection to a named
    peer (init-container-failing adds it); None otherwise."""
    w = initwait.failed_reading(ev, ev.pod, c, cs)
    if not w.lines or not w.peers:
        return None
    return _first_explained(ev, w)


@rule("init-container-waiting", phase="init", severity="critical", rank=SPECIFIC, applies=_has_running_init,
      title="An init container waits for a service that does not answer",
      remediation="Make $peer reachable from pod $pod, or fix what init container $container waits for: the app "
                  "containers start only after it exits.")
def init_container_waiting(ev):
    """An init container has run far longer than its earlier runs or its siblings' (5 minutes with nothing to
    compare) while its log repeats a wait or a connection retry: names the Service/host and port, whether the
    Service exists and has ready endpoints, and the NetworkPolicies of the pod and of the peer's pods that drop it."""
    w = initwait.reading(ev, ev.pod)
    if w is None or not initwait.is_stuck(w):
        long = w is not None and (w.running_for or 0) >= initwait.STUCK_ALONE_S and not w.lines
        return Unknown.from_gap(ev.gap("pods/log")) if long and ev.gap("pods/log") else None
    peer, why = _first_explained(ev, w)
    ran = human_duration(w.running_for)
    before = f" ({w.history_from})" if w.history_from else ""
    what = f"for {peer.shown}" if peer else "for something its log and command do not name"
    repeats = f"; its log repeats the wait {len(w.lines)} times" if len(w.lines) >= initwait.MIN_REPEATS else \
        "; its command is a wait loop"
    head = f"Init container {w.name} ({w.order} of {w.total}) has been waiting {what} for {ran}{before}{repeats}"
    running = (w.status.get("state") or {}).get("running") or {}
    lines = [Line("status", f"initContainerStatuses[{w.name}].state.running", f"startedAt={running.get('startedAt')}")]
    lines += [Line("log", f"{name(ev.pod)}/{w.name} log, line {n}", text) for n, text in _first_last(w.lines)]
    return Hit(f"{head}. {why.says}", lines + why.lines, fix=why.fix, snippet=why.snippet, edits=why.edits,
               severity=why.severity,
               values={"container": w.name, "peer": peer.shown if peer else "what it waits for"},
               summary=f"Init container {w.name} waits {what} ({ran}): {why.short}",
               next=[f"kubectl logs {name(ev.pod)} -n {namespace(ev.pod)} -c {w.name} --tail=20"]
               + ([f"kubectl get endpointslices -n {peer.namespace} -l kubernetes.io/service-name={peer.service}"]
                  if peer and peer.service and initwait.service_for(ev, peer, namespace(ev.pod)) else []))


def _first_explained(ev, w):
    """(peer, Why): the first peer whose state explains the wait (`until nc -z db 5432 && nc -z redis 6379` waits
    for both), else the first peer named."""
    found = [(p, _why(ev, w, p)) for p in w.peers] or [(None, _why(ev, w, None))]
    return next((pw for pw in found if pw[1].decisive), found[0])


def _first_last(rows):
    return rows[:1] + rows[-1:] if len(rows) > 1 else rows


def _why(ev, w, peer) -> Why:
    if peer is None:
        return Why("What it waits for is not named in its log or its command.", "the peer is not named",
                   f"Read init container {w.name}'s log and command to see what it waits for; the app containers "
                   f"start only after it exits.")
    if not peer.service and not peer.ip:
        return _outside(ev, w, peer)
    svc = initwait.service_for(ev, peer, namespace(ev.pod))
    if svc is None:
        return _no_service(ev, w, peer)
    if spec(svc).get("type") == "ExternalName" and spec(svc).get("externalName"):
        # a DNS alias (CNAME) to a host outside the Service's endpoints: what it names is the peer
        out = _outside(ev, w, initwait.Peer(str(spec(svc)["externalName"]), peer.port))
        return Why(f"Service {name(svc)} is an ExternalName alias of {spec(svc)['externalName']}: {out.says}",
                   out.short, out.fix, out.snippet, out.lines, out.edits, out.decisive)
    ready, unready = initwait.endpoints(ev, svc)
    port, has_port = initwait.target_port(svc, peer.port, _ready_pod(ev, svc))
    ref = Line("object", f"services/{name(svc)}", _describe_service(svc))
    if not has_port:
        have = ", ".join(f"{p.get('port')}/{p.get('protocol') or 'TCP'}" for p in spec(svc).get("ports") or [])
        return Why(f"Service {name(svc)} in namespace {namespace(svc)} has no port {peer.port} (its ports: {have}).",
                   f"Service {name(svc)} has no port {peer.port}",
                   f"Point init container {w.name} at a port Service {name(svc)} serves ({have}), or add port "
                   f"{peer.port} to the Service.", lines=[ref], edits="container", decisive=True)
    if not ready:
        return _no_endpoints(ev, w, svc, unready, ref)
    return _policies(ev, w, peer, svc, port, ready, ref)


def _outside(ev, w, peer) -> Why:
    """A host outside the cluster's Services: only the pod's own egress policies are known."""
    policies = _policies_in(ev, namespace(ev.pod))
    if isinstance(policies, Gap):
        return Why(f"{peer.host} is not a Service of the cluster; NetworkPolicies {policies.needs()}.",
                   "outside host, policies unknown", f"Check that pod {name(ev.pod)} can reach {peer.shown}.")
    # outside the cluster: pod and namespace selectors never match it, only an ipBlock can (its address unknown)
    target = netpolicy.Peer(peer.host, "", {}, True, {}, port=peer.port)
    v = netpolicy.evaluate(ev.pod, policies, "Egress", target)
    if v.blocked:
        return _blocked_egress(ev, w, v, peer.shown, policies)
    return Why(f"{peer.host} is not a Service of the cluster and no NetworkPolicy read denies egress to it: check that "
               f"the host resolves and answers from the pod's network (proxy, firewall, the service itself).",
               f"{peer.host} does not answer", f"Make {peer.shown} reachable from pod {name(ev.pod)}, or fix the host "
               f"init container {w.name} waits for.", edits="container")


def _no_service(ev, w, peer) -> Why:
    ns = peer.namespace or namespace(ev.pod)
    if peer.service and ev.is_absent("Service", peer.service, ns):
        return Why(f"Service {peer.service} does not exist in namespace {ns}, so {peer.host} never resolves.",
                   f"Service {peer.service} does not exist in {ns}",
                   f"Create Service {peer.service} in namespace {ns} (deploy what provides it), or point init "
                   f"container {w.name} at the Service that does exist.", edits="container", decisive=True)
    gap = ev.gap_in("services", ns)
    if peer.ip and not gap:
        return Why(f"No Service in namespace {ns} has clusterIP {peer.ip}.", f"no Service has IP {peer.ip}",
                   f"Point init container {w.name} at the Service's name rather than an address.", edits="container",
                   decisive=True)
    need = gap.needs() if gap else "not checked"
    return Why(f"Service {peer.service or peer.ip}: {need}.", f"Service {need}",
               f"Check that Service {peer.service or peer.ip} exists in namespace {ns} and has ready endpoints.")


def _no_endpoints(ev, w, svc, unready, ref) -> Why:
    gap = ev.gap_in("endpointslices", namespace(svc))
    if gap:
        return Why(f"Service {name(svc)} exists; its endpoints: {gap.needs()}.", "endpoints unknown",
                   f"Check that Service {name(svc)} in namespace {namespace(svc)} has ready endpoints.", lines=[ref])
    sel = spec(svc).get("selector") or {}
    shown = ",".join(f"{k}={v}" for k, v in sel.items())
    pods = initwait.selected_pods(ev, svc)
    if not sel:
        state = "it has no selector, and its EndpointSlices hold no ready address"
        fix = f"Add the backend's addresses to Service {name(svc)}'s EndpointSlices, or give it a selector."
    elif not pods and ev.gap_in("pods", namespace(svc)):
        state = f"its pods (selector {shown}): {ev.gap_in('pods', namespace(svc)).needs()}"
        fix = f"Make the pods behind Service {name(svc)} (selector {shown}) ready."
    elif not pods:
        state = f"no pod in namespace {namespace(svc)} matches its selector {shown}"
        fix = (f"Deploy the backend of Service {name(svc)} in namespace {namespace(svc)}, or fix the Service's "
               f"selector {shown} to match its pods' labels.")
    else:
        state = f"its pods are not ready: {'; '.join(_pod_state(p) for p in pods[:3])}"
        owners = sorted({_owner(ev, p) for p in pods})
        fix = (f"Make {', '.join(owners)} ready in namespace {namespace(svc)} (diagnose it: `kubectl gpudoctor "
               f"{name(pods[0])} -n {namespace(svc)}`); the init container then finishes by itself.")
    # pods still being created or pulled are progress: the wait is a symptom that may end by itself
    starting = bool(pods) and all(podstate.health(p, ev.now()) == "progressing" for p in pods)
    extra = f" ({unready} not ready)" if unready else ""
    return Why(f"Service {name(svc)} in namespace {namespace(svc)} has no ready endpoints{extra}: {state}"
               + (" (still starting)." if starting else "."),
               f"Service {name(svc)} has no ready endpoints", fix, lines=[ref], decisive=True,
               severity="warning" if starting else None)


def _pod_state(p) -> str:
    """`postgres-0 Pending (Unschedulable)`, `head-x ContainerCreating`, `db-0 Running, not Ready` (kubectl's
    STATUS column, with the scheduler's reason when it has not placed the pod)."""
    shown = podstate.display_status(p)
    cond = condition(p, "PodScheduled") or {}
    if cond.get("status") == "False":
        return f"{name(p)} {shown} ({cond.get('reason') or 'unscheduled'})"
    return f"{name(p)} {shown}" + (", not Ready" if shown == "Running" else "")


def _owner(ev, p) -> str:
    chain = owner_chain(ev, p)
    return chain[-1].what if chain else f"pod {name(p)}"


def _ready_pod(ev, svc) -> Optional[dict]:
    pods = initwait.selected_pods(ev, svc)
    return next((p for p in pods if (condition(p, "Ready") or {}).get("status") == "True"), pods[0] if pods else None)


def _policies_in(ev, ns):
    """The NetworkPolicies of namespace ns as read, or the gap of that namespace's read (a 403 on the peer's
    namespace leaves the pod's own policies known, and the reverse)."""
    gap = ev.gap_in("networkpolicies", ns)
    return gap if gap else [p for p in ev.all("NetworkPolicy") if namespace(p) == ns]


def _policies(ev, w, peer, svc, port, ready, ref) -> Why:
    """Ready endpoints: does a policy selecting this pod drop its egress (or DNS), or one selecting the Service's
    pods drop their ingress from this pod? Either side read decides what it drops, the other unread or not."""
    pod, peer_ns = ev.pod, namespace(svc)
    mine, theirs = _policies_in(ev, namespace(pod)), _policies_in(ev, peer_ns)
    up = f"Service {name(svc)} has {ready} ready endpoint{'s' if ready > 1 else ''}"
    unread = [(ns, g) for ns, g in ((namespace(pod), mine), (peer_ns, theirs)) if isinstance(g, Gap)]
    if isinstance(mine, Gap) and isinstance(theirs, Gap):
        return _unread(pod, svc, port, up, ref, unread)
    backend = _ready_pod(ev, svc)
    known = backend is not None
    backend = backend or {"metadata": {"namespace": peer_ns, "labels": dict(spec(svc).get("selector") or {})}}
    to = netpolicy.pod_peer(backend, ev.get("Namespace", peer_ns), port, f"Service {name(svc)}'s pods",
                            labels_only=None if known else dict(spec(svc).get("selector") or {}))
    checks = [] if isinstance(mine, Gap) else [netpolicy.evaluate(pod, mine, "Egress", to)]
    if not isinstance(theirs, Gap):
        checks.append(netpolicy.evaluate(backend, theirs, "Ingress",
                                         netpolicy.pod_peer(pod, ev.get("Namespace", namespace(pod)), port,
                                                            f"pod {name(pod)}")))
    if peer.service and not isinstance(mine, Gap):
        checks.append(netpolicy.evaluate(pod, mine, "Egress", netpolicy.dns_peer(ev.get("Namespace", "kube-system"))))
    blocked = [v for v in checks if v.blocked]
    read = [p for side in (mine, theirs) if not isinstance(side, Gap) for p in side]
    if blocked:
        return _blocked(ev, w, blocked, svc, port, backend, read, up)
    if unread:
        return _unread(pod, svc, port, up, ref, unread)
    if any(v.result == "unknown" for v in checks):
        # undecided: a policy chooses by labels of pods or namespaces that were not read
        what, gap = ("namespace labels", ev.gap("namespaces")) if known else \
            (f"the labels of Service {name(svc)}'s pods", ev.gap_in("pods", peer_ns))
        return Why(f"{up}; whether a NetworkPolicy drops the connection depends on {what}: "
                   f"{gap.needs() if gap else 'not read'}.", f"{name(svc)} is up, policies undecided",
                   f"Check the NetworkPolicies of namespaces {namespace(pod)} and {peer_ns}.", lines=[ref])
    return _allowed(ev, w, peer, svc, port, up, ref)


def _unread(pod, svc, port, up, ref, unread) -> Why:
    """Nothing read drops the connection, and the policies of a namespace that could were not read."""
    gap, where = unread[0][1], " and ".join(sorted({ns for ns, _ in unread}))
    s = "s" if " and " in where else ""
    return Why(f"{up}; the NetworkPolicies that could drop the connection: {gap.needs()}.",
               f"{name(svc)} is up, NetworkPolicies not checked", f"Check the NetworkPolicies of namespace{s} {where} "
               f"for traffic from pod {name(pod)} to Service {name(svc)} on port {port}.", lines=[ref])


def _allowed(ev, w, peer, svc, port, up, ref) -> Why:
    mapped = _target_mismatch(ev, w, peer, svc, port, up, ref)
    if mapped:
        return mapped
    cmd = initwait.command_text(w.container, namespace(ev.pod))
    host = peer.host if peer.service or peer.ip else name(svc)
    dial = peer.port or port   # a client dials the Service's port; kube-proxy, not the client, maps it to targetPort
    nslookup = "nslookup" in cmd
    hint = (f" busybox's nslookup exits 1 when any search-domain query fails (ndots:5), even when the name "
            f"resolves (chatwoot/charts#200): test with `nc -z {host} {dial}` or the fully qualified "
            f"{name(svc)}.{namespace(svc)}.svc.cluster.local instead." if nslookup else "")
    check = f"nslookup {host}; echo exit=$?" if nslookup else f"nc -z -w 2 {host} {dial}; echo exit=$?"
    return Why(f"{up} and no NetworkPolicy read drops traffic from this pod to its pods on port {port} (nor DNS): "
               f"the service is up, so the wait's own check keeps failing.{hint}",
               f"{name(svc)} is up; the wait's check fails",
               f"Run init container {w.name}'s check by hand (`kubectl exec {name(ev.pod)} -n {namespace(ev.pod)} -c "
               f"{w.name} -- sh -c '{check}'`) and fix its command." + hint, lines=[ref], edits="container")


def _target_mismatch(ev, w, peer, svc, port, up, ref) -> Optional[Why]:
    """The client dials the Service's port and kube-proxy forwards it to targetPort `port` on the pods: when that
    differs from the Service port and no pod read shows anything answering there (its containerPorts, its
    readinessProbe), the Service's targetPort is the suspect, not the client's check (which dials the right port)."""
    index, entry = initwait.service_port(svc, peer.port)
    if entry is None or port is None or port == peer.port or not initwait.proxied(svc):
        return None
    pods = [p for p in initwait.selected_pods(ev, svc) if (condition(p, "Ready") or {}).get("status") == "True"]
    if any(port in initwait.probed_ports(p) or port in initwait.declared_ports(p) for p in pods):
        return None   # a Ready pod probes or declares the targetPort: something answers there
    declared = sorted({n for p in pods for n in initwait.declared_ports(p)})
    s, ns = name(svc), namespace(svc)
    at = f"spec.ports[name={entry['name']}].targetPort" if entry.get("name") else f"spec.ports[{index}].targetPort"
    mapping = f"it forwards port {peer.port} to targetPort {port} on its pods"
    lines = [ref] + [Line("object", f"pods/{name(p)}", f"Ready, containerPorts "
                          f"{', '.join(str(n) for n in initwait.declared_ports(p)) or 'none'}") for p in pods[:2]]
    if declared:
        right = peer.port if peer.port in declared else declared[0] if len(declared) == 1 else None
        says = (f"{up}, but {mapping}, and no container of its pods declares port {port} (they declare "
                f"{', '.join(map(str, declared))}): nothing listens on the targetPort, so every connection is refused")
        short = f"Service {s}'s targetPort {port} matches no containerPort"
    else:
        right = None
        seen = "declare no containerPort" if pods else "are not among the objects read"
        says = (f"{up}, but {mapping}, and its pods {seen}: the targetPort names no port they are known to listen "
                f"on — init container {w.name} dials Service port {peer.port} as a client should, so the mapping to "
                f"the pods is what to check")
        short = f"Service {s} maps {peer.port} to targetPort {port}"
    to = f"{right} (the port {'it dials and ' if right == peer.port else ''}the pods declare)" if right else \
        "the port the pods listen on"
    backend = next(iter([name(p) for p in pods] + initwait.endpoint_pods(ev, svc)), None)
    check = (f" (check them: `kubectl get pod {backend} -n {ns} -o jsonpath='{{.spec.containers[*].ports}}'`)"
             if backend and not declared else "")
    where, editable = _service_where(ev, svc)
    fix = (f"Set Service {s}'s {at} (now {port}) to {to}{check}. {where} Init container "
           f"{w.name} of {_owner(ev, ev.pod)} dials Service port {peer.port}, which is right: leave its command as "
           f"it is; it finishes by itself once the Service forwards to a listening port.")
    snippet = "" if right is None or not editable else \
        (f"kubectl patch service {s} -n {ns} --type=json -p "
         f"'[{{\"op\":\"replace\",\"path\":\"/spec/ports/{index}/targetPort\",\"value\":{right}}}]'")
    return Why(says + ".", short, fix, snippet, lines, decisive=bool(declared))


def _service_where(ev, svc) -> Tuple[str, bool]:
    """(where the Service's spec is kept, whether a kubectl edit of it lasts): the operator that owns it, Helm or
    GitOps (which put it back), else the Service itself."""
    from ...kube.owners import management
    chain, tool = owner_chain(ev, svc), management([], svc)
    if chain:
        return (f"Service {name(svc)} belongs to {chain[-1].what} (its owner reference): set the port there; its "
                f"controller reverts an edit of the Service."), False
    if tool:
        how = {"helm": f"Helm release {tool[1]} ({tool[2]}): set it in the release's values and `helm upgrade`",
               "argocd": f"Argo CD application {tool[1]} ({tool[2]}): change it in Git"}.get(
            tool[0], f"Flux ({tool[1]}, {tool[2]}): change it in Git")
        return f"Service {name(svc)} belongs to {how}; a kubectl edit is reverted.", False
    return f"Edit it: `kubectl edit service {name(svc)} -n {namespace(svc)}`.", True


def _blocked(ev, w, blocked, svc, port, backend, policies, up) -> Why:
    by_name = {name(p): p for p in policies}
    names = sorted({n for v in blocked for n in v.policies})
    lines = [Line("object", f"networkpolicies/{n}", netpolicy.describe(by_name[n])) for n in names if n in by_name]
    says, fixes, snippets = [], [], []
    for v in blocked:
        who = ", ".join(v.policies)
        if v.direction == "Ingress":
            says.append(f"NetworkPolicy {who} (namespace {namespace(backend)}) selects Service {name(svc)}'s pods "
                        f"and allows no ingress from pod {name(ev.pod)} on port {port}")
            fixes.append(f"edit NetworkPolicy {v.policies[0]} in namespace {namespace(backend)}: add an ingress rule "
                         f"from this pod's labels on {port}/TCP")
            snippets.append(_rule_snippet(v.policies[0], namespace(backend), "ingress", "from",
                                          netpolicy.group_selector(ev.pod) or labels(ev.pod), namespace(ev.pod),
                                          namespace(backend), port))
        elif v.peer.port == 53 and v.peer.namespace == "kube-system":
            says.append(f"NetworkPolicy {who} isolates the pod for egress and allows no DNS (kube-dns, UDP 53), so "
                        f"{name(svc)} never resolves")
            fixes.append(f"edit NetworkPolicy {v.policies[0]} in namespace {namespace(ev.pod)}: allow DNS egress")
            snippets.append(netpolicy.allow_snippet(ev.pod, ingress=False, egress=False, dns=True))
        else:
            says.append(f"NetworkPolicy {who} isolates pod {name(ev.pod)} for egress and allows none to Service "
                        f"{name(svc)}'s pods on port {port}")
            fixes.append(f"edit NetworkPolicy {v.policies[0]} in namespace {namespace(ev.pod)}: add an egress rule "
                         f"to the Service's pods on {port}/TCP")
            snippets.append(_rule_snippet(v.policies[0], namespace(ev.pod), "egress", "to",
                                          dict(spec(svc).get("selector") or {}), namespace(backend),
                                          namespace(ev.pod), port))
    return Why(f"{up}, but {'; '.join(says)}.", f"NetworkPolicy {', '.join(names)} drops it",
               f"Let init container {w.name} reach Service {name(svc)}: {'; '.join(fixes)} (below).",
               "\n".join(snippets), lines, decisive=True)


def _rule_snippet(policy, policy_ns, key, side, sel, peer_ns, own_ns, port) -> str:
    """The rule to add to a NetworkPolicy: peers by labels (and namespace when it differs), on the port."""
    out = [f"# NetworkPolicy {policy} (namespace {policy_ns}):", f"# add under spec.{key}", f"- {side}:", "  - podSelector:",
           "      matchLabels:"] + [f"        {k}: {v}" for k, v in sorted(sel.items())]
    if peer_ns != own_ns:
        out += ["    namespaceSelector:", "      matchLabels:", f"        {netpolicy.NS_NAME_LABEL}: {peer_ns}"]
    return "\n".join(out + ["  ports:", "  - protocol: TCP", f"    port: {port}"])


def _blocked_egress(ev, w, v, shown, policies) -> Why:
    return Why(f"NetworkPolicy {', '.join(v.policies)} isolates pod {name(ev.pod)} for egress and allows none to "
               f"{shown}.", f"NetworkPolicy {', '.join(v.policies)} drops it",
               f"Edit NetworkPolicy {v.policies[0]} in namespace {namespace(ev.pod)}: allow egress to {shown}.",
               lines=[Line("object", f"networkpolicies/{n}", netpolicy.describe(p))
                      for p in policies for n in [name(p)] if n in v.policies], decisive=True)


def _describe_service(svc) -> str:
    sp = spec(svc)
    sel = ",".join(f"{k}={v}" for k, v in (sp.get("selector") or {}).items()) or "none"
    ports = ", ".join(f"{p.get('port')}->{p.get('targetPort', p.get('port'))}/{p.get('protocol') or 'TCP'}"
                      for p in sp.get("ports") or [] if isinstance(p, dict))
    return f"type {sp.get('type') or 'ClusterIP'}, clusterIP {sp.get('clusterIP') or '-'}, selector {sel}, ports {ports}"

