"""The GPU stack on a node: which pod is which component, its health, its telling log line, why a DaemonSet skips the node; pure."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional, Set, Tuple

from ..kube import podstate
from ..data import gpu_operator as go
from ..evidence import Evidence
from ..kube.objects import condition, containers, controller_of, labels, meta, name, spec, status, taints
from ..kube.timeutil import parse_time, seconds_between

# A component pod younger than this that is still starting is "starting", not "failing": the operator's
# driver container compiles and loads the kernel module (its startupProbe allows 60 s + 120 x 10 s).
STARTING_GRACE_S = 20 * 60
# The patterns of data/gpu_operator.py, each compiled once: by compiled() in the preload thread of a live
# diagnosis (kubectl_gpudoctor/preload.py), while its first requests are in flight.
_rx = lru_cache(maxsize=None)(re.compile)


def compiled() -> None:
    for pattern in [c.pattern for c in go.COMPONENTS] + list(go.ERROR_PATTERNS) + [
            go.DEVICE_PLUGIN_IMAGES, go.NOT_GPU_PLUGINS, go.DRA_PLUGIN_PODS, go.BENIGN_LINES, go.PLUGIN_HINT,
            go.HEALTH_PATTERN]:
        _rx(pattern)
    for _, pattern in go.VENDOR_HINTS:
        _rx(pattern, re.I)


# --- which pod is which component ----------------------------------------------------------------------

def identity(pod: dict) -> List[str]:
    """Names that say what a pod is: its DaemonSet, its app/name labels, its generateName."""
    out = []
    owner = controller_of(pod)
    if owner:
        out.append(owner.get("name") or "")
    lab = labels(pod)
    out += [lab[k] for k in go.IDENTITY_LABELS if lab.get(k)]
    gen = meta(pod).get("generateName") or ""
    if gen:
        out.append(gen.rstrip("-"))
    elif not owner:
        out.append(name(pod))
    return [s for s in out if s]


def component_of(pod: dict) -> Optional[go.Component]:
    ids = identity(pod)
    images = [c.get("image") or "" for c in containers(pod)]
    for comp in go.COMPONENTS:
        rx = _rx(comp.pattern)
        if any(rx.search(s) for s in ids):
            return None if comp.device_plugin and not_gpu_plugin(ids + images) else comp
    if _rx(go.DEVICE_PLUGIN_IMAGES).search(" ".join(images)) and (controller_of(pod) or {}).get("kind") == "DaemonSet":
        return go.COMPONENT_BY_KEY["device-plugin"]
    return None


def not_gpu_plugin(names: List[str]) -> bool:
    """A device plugin for network devices or other accelerators (SR-IOV, RDMA, EFA, Gaudi, ...), not for GPUs."""
    rx = _rx(go.NOT_GPU_PLUGINS)
    return any(rx.search(n.rsplit("@", 1)[0]) for n in names)


def vendor_of(pod: dict) -> str:
    text = " ".join(identity(pod) + [c.get("image") or "" for c in containers(pod)])
    return next(v for v, rx in go.VENDOR_HINTS if _rx(rx, re.I).search(text))


def pods_known(ev: Evidence, node_name: str) -> bool:
    """The pods on this node were listed (all namespaces)."""
    return ev.readable("pods") and (ev.pod_nodes is None or node_name in ev.pod_nodes)


def all_pods_known(ev: Evidence, node_name: str) -> bool:
    """Every pod on this node is held, not only the GPU stack's (a must-gather saves the operator namespace only)."""
    return pods_known(ev, node_name) and not ev.stack_only


def component_pods(ev: Evidence, node: dict) -> List[Tuple[go.Component, dict]]:
    """GPU-operator and device-plugin pods on the node, in chain order."""
    found = [(component_of(p), p) for p in ev.pods_on(name(node))]
    found = [(c, p) for c, p in found if c is not None and not meta(p).get("deletionTimestamp")]
    return sorted(found, key=lambda cp: (cp[0].stage, go.COMPONENTS.index(cp[0]), name(cp[1])))


def dra_plugin_pods(ev: Evidence, node: dict) -> List[dict]:
    """Kubelet-plugin pods of a DRA driver on the node (they publish the node's devices as ResourceSlices)."""
    rx = _rx(go.DRA_PLUGIN_PODS)
    return [p for p in ev.pods_on(name(node)) if any(rx.search(s) for s in identity(p))]


def device_plugin_pods(ev: Evidence, node: dict, vendors: Set[str]) -> List[dict]:
    return [p for c, p in component_pods(ev, node) if c.device_plugin and vendor_of(p) in vendors]


# --- pod state -------------------------------------------------------------------------------------------

def is_ready(pod: dict) -> bool:
    cond = condition(pod, "Ready")
    return status(pod).get("phase") == "Running" and bool(cond) and cond.get("status") == "True"


def ready_count(pod: dict) -> str:
    sts = podstate.statuses(pod)
    return f"{sum(1 for s in sts if s.get('ready'))}/{len(containers(pod))}"


def age_s(ev: Evidence, pod: dict) -> Optional[float]:
    return seconds_between(status(pod).get("startTime") or meta(pod).get("creationTimestamp"), ev.now())


def stuck_init(pod: dict) -> Optional[dict]:
    """The first init container that has not completed (waiting, running or failed), with its status."""
    by_name = podstate.status_by_name(pod)
    for c in containers(pod, init=True):
        cs = by_name.get(c.get("name")) or {}
        term = podstate.terminated(cs)
        if term and term.get("exitCode", 0) == 0:
            continue
        if c.get("restartPolicy") == "Always" and cs.get("started"):
            continue  # a sidecar that runs alongside the app containers
        return dict(cs, name=c.get("name"))
    return None


def health(ev: Evidence, comp: go.Component, pod: dict) -> str:
    """ok | starting | failing for one component pod."""
    phase = status(pod).get("phase")
    if (comp.one_shot and phase == "Succeeded") or (not comp.one_shot and is_ready(pod)):
        return "ok"
    if podstate.health(pod) == "failing" or phase in ("Failed", "Succeeded") or podstate.restarts(pod) > 0:
        return "failing"
    age = age_s(ev, pod)
    return "starting" if age is None or age < STARTING_GRACE_S else "failing"


def link_of(comp: go.Component, pod: dict) -> Tuple[go.Component, Optional[str]]:
    """The chain link a broken pod points at: a pod stuck in `driver-validation` waits for the driver."""
    init = stuck_init(pod) if status(pod).get("phase") == "Pending" else None
    if init and init["name"] in go.WAITS_FOR:
        return go.COMPONENT_BY_KEY[go.WAITS_FOR[init["name"]]], init["name"]
    return comp, None


def recent_restart(ev: Evidence, pod: dict, within_s: float = 3600) -> Optional[dict]:
    """The latest termination record of a container that restarted within the window, with the container."""
    now = ev.now()
    for c, cs, _ in podstate.all_container_states(pod):
        term = podstate.last_terminated(cs)
        end = parse_time(term.get("finishedAt")) if term else None
        if int(cs.get("restartCount") or 0) > 0 and end and now and (now - end).total_seconds() <= within_s:
            return dict(term, container=c.get("name"), restartCount=cs.get("restartCount"))
    return None


# --- logs -------------------------------------------------------------------------------------------------

def _log_order(pod: dict) -> List[str]:
    """Containers to read for the error: failing ones first, then a stuck init container, then the rest."""
    failing, rest = [], []
    stuck = stuck_init(pod)
    for c, cs, _ in podstate.all_container_states(pod):
        bad = int(cs.get("restartCount") or 0) > 0 or podstate.waiting(cs).get("reason") in podstate.FAILING_WAITING
        (failing if bad or (stuck and stuck["name"] == c.get("name")) else rest).append(c.get("name"))
    return failing + rest


def quoted(text: str) -> str:
    """A log line in quotes that do not clash with its own."""
    q = "'" if '"' in text else '"'
    return f"{q}{text}{q}"


def last_error(ev: Evidence, pod: dict) -> Optional[Tuple[str, bool, str]]:
    """(container, previous, line): the most telling error line of a component pod's logs."""
    from ..logs.scan import clean
    texts = [(c, prev, clean(ev.log(pod, c, prev) or "").splitlines()) for c in _log_order(pod) for prev in (True, False)]
    benign = _rx(go.BENIGN_LINES)
    for pattern in go.ERROR_PATTERNS:
        rx = _rx(pattern)
        for c, prev, lines in texts:
            for line in reversed(lines):
                if line.strip() and rx.search(line) and not benign.search(line):
                    return c, prev, line.strip()[:400]
    return None


def plugin_hint(ev: Evidence, node: dict) -> Optional[str]:
    """The device plugin's own advice on the node when it found no GPU library ("did you configure the NVIDIA
    Container Toolkit?"), from its newest log that has it."""
    rx = _rx(go.PLUGIN_HINT)
    for c, p in component_pods(ev, node):
        for cname in [x.get("name") for x in containers(p)] if c.device_plugin else []:
            for prev in (False, True):
                found = rx.search(ev.log(p, cname, prev) or "")
                if found:
                    return found.group(0).strip()[:200]
    return None


def device_plugin_ready(ev: Evidence, node: dict) -> bool:
    """Some device plugin on the node is Running and Ready (True when the node's pods are unknown)."""
    if not pods_known(ev, name(node)):
        return True
    return any(is_ready(p) for c, p in component_pods(ev, node) if c.device_plugin)


def health_lines(ev: Evidence, node: dict) -> List[Tuple[str, str]]:
    """(ref, line) for every device-plugin log line that marks a GPU unhealthy, oldest first."""
    rx = _rx(go.HEALTH_PATTERN)
    out = []
    for c, p in component_pods(ev, node):
        if not c.device_plugin:
            continue
        for cname in [x.get("name") for x in containers(p)]:
            for prev in (True, False):
                for line in (ev.log(p, cname, prev) or "").splitlines():
                    if rx.search(line):
                        out.append((f"{name(p)}/{cname} {'previous log' if prev else 'log'}", line.strip()[:400]))
    return out


# --- DaemonSets that skip the node ------------------------------------------------------------------------

# Tolerations the DaemonSet controller adds to every DaemonSet pod (pkg/controller/daemon/util).
DAEMONSET_TOLERATED = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                       "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                       "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable",
                       "node.kubernetes.io/network-unavailable")


def skip_reasons(ds: dict, node: dict) -> List[str]:
    """Why a DaemonSet places no pod on the node: selector labels, required node affinity, taints."""
    from ..kube.objects import tolerates
    tmpl = spec(spec(ds).get("template") or {})
    lab = labels(node)
    out = []
    for key, want in (tmpl.get("nodeSelector") or {}).items():
        have = f"{key}={lab[key]}" if key in lab else f"no label {key}"
        if lab.get(key) != want:
            out.append(f"its nodeSelector wants {key}={want}, the node has {have}")
    terms = ((((tmpl.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    if terms and not any(_term_matches(t, node) for t in terms):
        failing = [_expr_text(e) for e in (terms[0].get("matchExpressions") or []) if not _expr_matches(e, lab)]
        out.append("its required node affinity does not match the node (" + ("; ".join(failing) or "no term matches") + ")")
    pseudo = {"spec": tmpl}
    for t in taints(node):
        if t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") not in DAEMONSET_TOLERATED \
                and not tolerates(pseudo, t):
            out.append(f"it does not tolerate the node's taint {t.get('key')}={t.get('value', '')}:{t.get('effect')}")
    return out


def _term_matches(term: dict, node: dict) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no objects
    return all(_expr_matches(e, labels(node)) for e in exprs) and \
        all(_expr_matches(f, {"metadata.name": name(node)}) for f in fields)


def _expr_matches(expr: dict, lab: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    have = lab.get(key)
    if op == "In":
        return have in values
    if op == "NotIn":
        return have not in values
    if op == "Exists":
        return key in lab
    if op == "DoesNotExist":
        return key not in lab
    if op in ("Gt", "Lt") and have is not None and values:
        try:
            return int(have) > int(values[0]) if op == "Gt" else int(have) < int(values[0])
        except ValueError:
            return False
    return False


def _expr_text(expr: dict) -> str:
    return f"{expr.get('key')} {expr.get('operator')} {','.join(expr.get('values') or [])}".strip()


def as_pod(ds: dict) -> dict:
    """A DaemonSet seen as the pod it would create, to name its component and vendor."""
    tmpl = spec(ds).get("template") or {}
    md = dict(tmpl.get("metadata") or {})
    md["labels"] = {**labels(ds), **(md.get("labels") or {})}
    md["name"] = name(ds)
    md["ownerReferences"] = [{"kind": "DaemonSet", "name": name(ds), "controller": True}]
    return {"metadata": md, "spec": tmpl.get("spec") or {}}


def daemonset_component(ds: dict) -> Optional[go.Component]:
    return component_of(as_pod(ds))
