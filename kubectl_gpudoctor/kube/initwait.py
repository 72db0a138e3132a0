"""An init container that waits: which one runs while the pod is not initialized, for how long against its own
earlier runs and its siblings', what its log repeats and which host/Service and port it waits for; pure.

Init containers run one at a time, in order, each to completion (a sidecar, restartPolicy Always, only has to
start): the pod stays `Init:N/M` while one runs, and the app containers never start. A wait loop (`until nc -z db
5432; do sleep 2; done`) never fails, so nothing restarts: the pod just sits there.
"""
from __future__ import annotations

import ipaddress
import re
from typing import List, Optional, Tuple

from .. import lazyre
from ..data import init_waits as data
from ..logs.lines import clean
from ..record import field, record
from .objects import condition, containers, controller_of, labels, name, namespace, spec
from .podstate import status_by_name
from .timeutil import human_duration, seconds_between

MIN_RUN_S = 60            # read a running init container's peers once it has run this long (collector)
STUCK_ALONE_S = 300       # with no earlier run to compare: stuck after 5 minutes of repeated waiting
STUCK_FACTOR = 3          # with history: stuck after 3x the longest earlier or sibling run ...
STUCK_FLOOR_S = 120       # ... and at least 2 minutes (KubeRay's GCS needs ~2 minutes after a slow head start)
MIN_REPEATS = 2           # wait lines a log must repeat (a single line is a start, not a loop)
MAX_PEERS = 3

_WAITS = [lazyre.compile(p, re.I) for p in data.WAIT_LINES]
_COMMAND = [lazyre.compile(p) for p in data.COMMAND_PEERS]
_LOOP = lazyre.compile(data.WAIT_LOOP, re.S)
_OWN_NS = lazyre.compile(data.OWN_NAMESPACE)
_VAR = lazyre.compile(r"\$\((\w+)\)|\$\{(\w+)\}|\$(\w+)")


@record(frozen=True)
class Peer:
    """What the init container waits for: a Service (name, namespace), an IP, or a host outside the cluster."""
    host: str
    port: Optional[int] = None
    service: Optional[str] = None
    namespace: Optional[str] = None
    ip: Optional[str] = None
    where: str = "log"          # log | command
    text: str = ""              # the line or command that names it

    @property
    def shown(self) -> str:
        return f"{self.host}:{self.port}" if self.port else self.host


@record
class Waiting:
    container: dict
    status: dict
    order: int                  # 1-based position among the init containers
    total: int
    running_for: Optional[float]
    history: Optional[float] = None   # the longest earlier run of it, or sibling run, in seconds
    history_from: str = ""
    lines: List[Tuple[int, str]] = field(default_factory=list)   # (line number, text) of the wait lines
    loop: bool = False          # its command is a wait loop
    peers: List[Peer] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.container.get("name") or ""


def running_init(pod: dict) -> Optional[Tuple[dict, dict, int, int]]:
    """(init container, its status, position, count) of the init container running while the pod is not
    initialized; None when there is none (sidecars, restartPolicy Always, only need to have started)."""
    if (condition(pod, "Initialized") or {}).get("status") == "True":
        return None
    inits = containers(pod, init=True)
    by_name = status_by_name(pod)
    for i, c in enumerate(inits):
        cs = by_name.get(c.get("name")) or {}
        if c.get("restartPolicy") == "Always":
            continue
        if (cs.get("state") or {}).get("running") is not None:
            return c, cs, i + 1, len(inits)
    return None


def reading(ev, pod: dict) -> Optional[Waiting]:
    """The running init container with its duration, history, wait lines and peers (any duration)."""
    found = running_init(pod)
    if found is None:
        return None
    c, cs, order, total = found
    started = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
    now = ev.now()
    running = seconds_between(started, now) if now else None
    w = Waiting(c, cs, order, total, running)
    w.history, w.history_from = history(ev, pod, c.get("name") or "", cs)
    return _read(ev, pod, w, ev.log(pod, w.name, False) or "")


def failed_reading(ev, pod: dict, c: dict, cs: dict) -> Waiting:
    """What a failed init container's last run waited for (its previous log when it restarted, else its log): a
    wait that gives up (`wait-for-it --strict`, a client's retries) fails instead of hanging."""
    inits = containers(pod, init=True)
    order = next((i + 1 for i, x in enumerate(inits) if x.get("name") == c.get("name")), 0)
    w = Waiting(c, cs, order, len(inits), None)
    return _read(ev, pod, w, ev.log(pod, w.name, True) or ev.log(pod, w.name, False) or "")


def _read(ev, pod: dict, w: Waiting, text: str) -> Waiting:
    w.lines = wait_lines(text)
    command = command_text(w.container, namespace(pod))
    w.loop = bool(_LOOP.search(command))
    w.peers = peers(w.lines, command, namespace(pod))
    return w


def is_stuck(w: Waiting) -> bool:
    """Running far longer than it did before (or its siblings did), or 5 minutes with nothing to compare, while it
    repeats a wait (its log, or a wait loop that prints nothing)."""
    if w.running_for is None or not (len(w.lines) >= MIN_REPEATS or (w.loop and w.peers)):
        return False
    if w.history is not None:
        return w.running_for >= max(STUCK_FACTOR * w.history, STUCK_FLOOR_S)
    return w.running_for >= STUCK_ALONE_S


def history(ev, pod: dict, cname: str, cs: dict) -> Tuple[Optional[float], str]:
    """The longest successful run of this init container in sibling pods (same controller), else its own earlier
    run in this pod; (None, "") when neither is known."""
    ref = controller_of(pod)
    runs = []
    if ref:
        for other in ev.all("Pod"):
            if other is pod or namespace(other) != namespace(pod) or (controller_of(other) or {}).get("uid") != ref.get("uid"):
                continue
            term = ((status_by_name(other).get(cname) or {}).get("state") or {}).get("terminated") or {}
            took = seconds_between(term.get("startedAt"), term.get("finishedAt")) if term.get("exitCode") == 0 else None
            if took is not None and took >= 0:
                runs.append((took, name(other)))
    if runs:
        took, who = max(runs)
        n = len(runs)
        return took, (f"{n} sibling pod{'s' if n > 1 else ''} of {ref.get('kind')} {ref.get('name')} finished it "
                      f"in at most {_short(took)}" if n > 1 else f"sibling pod {who} finished it in {_short(took)}")
    last = (cs.get("lastState") or {}).get("terminated") or {}
    took = seconds_between(last.get("startedAt"), last.get("finishedAt"))
    if took is not None and took >= 0:
        return took, f"its previous run lasted {_short(took)}"
    return None, ""


def _short(seconds: float) -> str:
    return human_duration(seconds)


def wait_lines(text: str) -> List[Tuple[int, str]]:
    """(line number, line) of the lines that say the container waits or retries a connection."""
    out = []
    for i, line in enumerate(clean(text).split("\n"), 1):
        line = line.strip()
        if line and any(rx.search(line) for rx in _WAITS):
            out.append((i, line[:300]))
    return out


def command_text(c: dict, ns: str) -> str:
    """The container's command and args as one line, env references replaced by the literal values it sets."""
    env = {e.get("name"): str(e.get("value")) for e in c.get("env") or [] if e.get("name") and e.get("value") is not None}
    text = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
    text = _OWN_NS.sub(ns, text)
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2) or m.group(3), m.group(0)), text)


def peers(lines: List[Tuple[int, str]], command: str, ns: str) -> List[Peer]:
    """The peers named by host:port in the log (most repeated first), then by the command, then by a host alone in
    the log, then by a `waiting for NAME` line; at most MAX_PEERS, one per Service or address."""
    found: List[Peer] = []
    counted = {}
    weak = []
    for _, line in lines:
        for rx in _WAITS:
            m = rx.search(line)
            if not m or not _host(m):
                continue
            port = _port(m)
            if port is None and "waiting for" in rx.pattern:
                weak.append((_host(m), line))
                continue
            key = (_host(m), port)
            counted[key] = (counted.get(key, (0, line))[0] + 1, line)
    ranked = sorted(counted.items(), key=lambda kv: -kv[1][0])
    found += [resolve(host, port, ns, "log", line) for (host, port), (_, line) in ranked if port]
    for rx in _COMMAND:
        for m in rx.finditer(command):
            found.append(resolve(_host(m), _port(m), ns, "command", command[:300]))
    found += [resolve(host, port, ns, "log", line) for (host, port), (_, line) in ranked if not port]
    for host, line in weak:
        if host.lower() not in data.NOT_HOSTS:
            found.append(resolve(host, None, ns, "log", line))
    out: List[Peer] = []
    for p in found:
        same = next((i for i, q in enumerate(out) if _key(q) == _key(p)), None)
        if same is None:
            out.append(p)
        elif out[same].port is None and p.port is not None:
            out[same] = Peer(out[same].host, p.port, out[same].service, out[same].namespace, out[same].ip,
                             out[same].where, out[same].text)
    return out[:MAX_PEERS]


def _key(p: Peer):
    return (p.service, p.namespace) if p.service else (p.ip or p.host.lower(),)


def _host(m) -> Optional[str]:
    groups = m.groupdict()
    host = groups.get("host") or groups.get("host2")
    return host.rstrip(".") if host else None


def _port(m) -> Optional[int]:
    port = m.groupdict().get("port")
    return int(port) if port and port.isdigit() and 0 < int(port) < 65536 else None


def resolve(host: str, port: Optional[int], ns: str, where: str, text: str) -> Peer:
    """A host as the pod's resolver reads it (ClusterFirst DNS, search path `NS.svc.<domain>`): `db`, `db.ns`,
    `db.ns.svc[.cluster.local]` name Service db; `pod.db.ns.svc...` a StatefulSet pod behind headless Service db;
    an IP may be a Service's clusterIP; anything else is outside the cluster's Services."""
    try:
        ipaddress.ip_address(host)
        return Peer(host, port, ip=host, where=where, text=text)
    except ValueError:
        pass
    parts = host.lower().split(".")
    # `db.svc.cluster.local`, `db.cluster.local`: the resolver's search path tried on `db` (nslookup prints them)
    if len(parts) == 1 or (len(parts) > 2 and parts[1] == "svc") or parts[1:] == ["cluster", "local"]:
        return Peer(host, port, parts[0], ns, where=where, text=text)
    if (len(parts) == 2 and parts[1] not in data.PUBLIC_SUFFIXES) or (len(parts) > 2 and parts[2] == "svc"):
        return Peer(host, port, parts[0], parts[1], where=where, text=text)
    if len(parts) >= 4 and parts[3] == "svc":
        return Peer(host, port, parts[1], parts[2], where=where, text=text)
    return Peer(host, port, where=where, text=text)


def service_for(ev, peer: Peer, ns: str) -> Optional[dict]:
    """The Service a peer names, by name, or by clusterIP among the Services read."""
    if peer.service:
        return ev.get("Service", peer.service, peer.namespace)
    if peer.ip:
        return next((s for s in ev.all("Service") if peer.ip in _cluster_ips(s)), None)
    return None


def _cluster_ips(svc: dict) -> List[str]:
    sp = spec(svc)
    return [ip for ip in [sp.get("clusterIP")] + list(sp.get("clusterIPs") or []) if isinstance(ip, str)]


SERVICE_NAME = "kubernetes.io/service-name"   # the label every EndpointSlice of a Service carries


def slices_of(ev, svc: dict) -> List[dict]:
    return [s for s in ev.all("EndpointSlice") if namespace(s) == namespace(svc)
            and labels(s).get(SERVICE_NAME) == name(svc)]


def endpoints(ev, svc: dict) -> Tuple[int, int]:
    """(ready, not ready) endpoints of a Service's EndpointSlices (an absent `ready` condition means ready)."""
    ready = unready = 0
    for s in slices_of(ev, svc):
        for e in s.get("endpoints") or []:
            if not isinstance(e, dict):
                continue
            if ((e.get("conditions") or {}).get("ready")) is False:
                unready += 1
            else:
                ready += 1
    return ready, unready


def selected_pods(ev, svc: dict) -> List[dict]:
    """The pods a Service's selector chooses in its namespace (among those read)."""
    sel = spec(svc).get("selector") or {}
    if not sel:
        return []
    return [p for p in ev.all("Pod") if namespace(p) == namespace(svc)
            and all(labels(p).get(k) == v for k, v in sel.items())]


def target_port(svc: dict, port: Optional[int], pod: Optional[dict]) -> Tuple[Optional[int], bool]:
    """(the pod port traffic to Service port `port` reaches, whether the Service has that port): a NetworkPolicy
    sees the pod's port, after kube-proxy's DNAT, not the Service's."""
    ports = [p for p in spec(svc).get("ports") or [] if isinstance(p, dict)]
    if port is None:
        chosen = ports[0] if len(ports) == 1 else None
    else:
        chosen = next((p for p in ports if p.get("port") == port), None)
        if chosen is None:
            return port, not ports
    if chosen is None:
        return None, True
    target = chosen.get("targetPort", chosen.get("port"))
    if isinstance(target, str) and not target.isdigit():
        named = {cp.get("name"): cp.get("containerPort") for c in containers(pod or {}) for cp in c.get("ports") or []}
        target = named.get(target)
    return (int(target) if target is not None else None), True


def service_port(svc: dict, port: Optional[int]) -> Tuple[int, Optional[dict]]:
    """(index, entry) of the Service's spec.ports entry that port `port` (or its only port) names; (-1, None)."""
    ports = spec(svc).get("ports") or []
    for i, p in enumerate(ports):
        if isinstance(p, dict) and (p.get("port") == port or (port is None and len(ports) == 1)):
            return i, p
    return -1, None


def proxied(svc: dict) -> bool:
    """Whether a client reaches the pods through kube-proxy's port mapping: a headless Service (clusterIP None)
    resolves to the pods' own addresses, so the client's port is the pod's port and targetPort plays no part."""
    return any(ip != "None" for ip in _cluster_ips(svc))


def declared_ports(pod: dict) -> List[int]:
    """The TCP containerPorts the pod's containers declare (declaring one is informational: a process may listen on
    a port it does not declare, so an empty list says nothing)."""
    out = []
    for c in containers(pod):
        for cp in c.get("ports") or []:
            n = cp.get("containerPort") if isinstance(cp, dict) else None
            if isinstance(n, int) and (cp.get("protocol") or "TCP") == "TCP" and n not in out:
                out.append(n)
    return out


def probed_ports(pod: dict) -> List[int]:
    """Numeric ports a container's readinessProbe checks: in a Ready pod, something answers on each of them (an
    httpGet or tcpSocket probe connects to it; a named port resolves through the container's ports)."""
    out = []
    for c in containers(pod):
        named = {cp.get("name"): cp.get("containerPort") for cp in c.get("ports") or [] if isinstance(cp, dict)}
        probe = c.get("readinessProbe") or {}
        for how in ("httpGet", "tcpSocket", "grpc"):
            port = (probe.get(how) or {}).get("port") if isinstance(probe.get(how), dict) else None
            port = named.get(port) if isinstance(port, str) and not port.isdigit() else port
            if port is not None and str(port).isdigit() and int(port) not in out:
                out.append(int(port))
    return out


def endpoint_pods(ev, svc: dict) -> List[str]:
    """Names of the pods behind the Service's ready endpoints (EndpointSlice targetRef), read or not."""
    out = []
    for s in slices_of(ev, svc):
        for e in s.get("endpoints") or []:
            ref = e.get("targetRef") if isinstance(e, dict) else None
            if isinstance(ref, dict) and ref.get("kind") == "Pod" and ref.get("name") and \
                    (e.get("conditions") or {}).get("ready") is not False and ref["name"] not in out:
                out.append(ref["name"])
    return out
