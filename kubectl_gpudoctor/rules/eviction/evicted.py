"""Eviction-phase rules: the pod was evicted, or the node under it is under pressure or not ready."""
from __future__ import annotations

import math
import re

from ...kube import podstate
from ...data.eviction_messages import (CONTAINER_USAGE, EVICTION_CAUSES, EVICTION_FIX, NOT_READY_CAUSES, PRESSURE,
                                       PRESSURE_FIX, THRESHOLD)
from ...kube.objects import condition, containers, name, spec, status, taints, tolerates
from ...kube.quantity import parse_quantity
from ...kube.timeutil import format_time, human_duration, seconds_between
from .._common import event_line, latest, pod_events
from ..registry import SPECIFIC, Hit, Line, Unknown, rule

UNREACHABLE_TAINTS = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
# Cache directories that model servers and training code fill; on the container filesystem they count
# against the container's ephemeral storage.
CACHE_ENV = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "TORCH_HOME",
             "XDG_CACHE_HOME", "VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "MODEL_DIR", "MODEL_PATH")


def _terminal(ev):
    return ev.pod is not None and status(ev.pod).get("phase") in ("Failed", "Succeeded")


@rule("evicted", phase="eviction", severity="critical", rank=SPECIFIC, applies=_terminal,
      title="Pod was evicted or stopped by the kubelet",
      remediation="Free or reserve the resource the kubelet was short of; the pod's controller creates a new pod.")
def evicted(ev):
    """status.reason is Evicted (or the kubelet's DisruptionTarget condition): the kubelet stopped the pod itself.

    The message names the resource (memory, ephemeral-storage, pids, an emptyDir or storage limit) or the node
    shutdown; the remedy follows the resource."""
    pod = ev.pod
    if not podstate.terminated_by_kubelet(pod):
        return None
    text, lines = _eviction_record(ev)
    cause, found = next(((c, m) for c, _, rx in EVICTION_CAUSES for m in [re.search(rx, text)] if m), ("unknown", None))
    values = {"container": "", "suggested": "", **(found.groupdict() if found else {})}
    users = [m.groupdict() for m in re.finditer(CONTAINER_USAGE, text)]
    top = max(users, key=lambda u: float(parse_quantity(u["usage"]) or 0), default=None)
    detail = _usage_detail(text, top)
    if top:
        values.update(container=top["container"], suggested=_suggest(top["usage"]))
    where = f" on node {spec(pod).get('nodeName')}" if spec(pod).get("nodeName") else ""
    verb = "evicted" if status(pod).get("reason") == "Evicted" else "stopped"
    head = f"The kubelet{where} {verb} the pod: {_first_sentence(text) or status(pod).get('reason')}"
    caches = _caches_on_rootfs(pod) if cause in ("container-storage-limit", "pod-storage-limit", "node-disk") else []
    note = f" {', '.join(caches)} {'is' if len(caches) == 1 else 'are'} on the container filesystem." if caches else ""
    return Hit(f"{head}{detail}.{note}", lines, values=values, fix=EVICTION_FIX[cause],
               snippet=_snippet(cause, values, pod),
               summary=f"{'Evicted' if verb == 'evicted' else 'Stopped by the kubelet'}{where}: {_first_sentence(text)}",
               next=[f"kubectl describe node {spec(pod).get('nodeName') or '$node'}",
                     f"kubectl delete pods -n {ev.target.namespace} --field-selector=status.phase=Failed   "
                     f"# evicted pods stay until deleted"])


def _eviction_record(ev):
    """The kubelet's words: status.message, the DisruptionTarget condition, or the Evicted event."""
    st, lines, texts = status(ev.pod), [], []
    if st.get("reason") or st.get("message"):
        lines.append(Line("status", "status.reason/message", f"{st.get('reason', '')}: {st.get('message', '')}".strip(": ")))
        texts.append(st.get("message") or "")
    cond = condition(ev.pod, "DisruptionTarget")
    if cond and cond.get("status") == "True":
        lines.append(Line("status", "conditions[DisruptionTarget]", f"{cond.get('reason')}: {cond.get('message', '')}"))
        texts.append(cond.get("message") or "")
    event = latest(pod_events(ev, ("Evicted",)))
    if event:
        lines.append(event_line(event))
        texts.append(event.get("message") or "")
    return " ".join(t for t in texts if t), lines


def _usage_detail(text, top):
    th = re.search(THRESHOLD, text)
    out = f" (eviction threshold {th['threshold']}, available {th['available']})" if th else ""
    if top:
        req = top["request"] or top["request_old"] or "0"
        out += f"; container {top['container']} was using {_human(top['usage'])} against a request of {req}"
    return out


def _human(q):
    """A usage the way a person reads it: 46.6Gi rather than 48838784Ki."""
    n = float(parse_quantity(q) or 0)
    for unit, size in (("Gi", 2 ** 30), ("Mi", 2 ** 20)):
        if n >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + unit
    return str(q)


def _first_sentence(text):
    return (text or "").strip().split(". ")[0].rstrip(". ")


def _suggest(usage):
    """The observed use plus 10%, rounded up to a whole Gi: a request the node can honour."""
    q = float(parse_quantity(usage) or 0)
    return f"{max(1, math.ceil(q * 1.1 / 2 ** 30))}Gi"


def _caches_on_rootfs(pod):
    """Cache directories set in env that no volume covers (they land on the container filesystem)."""
    out = []
    for c in containers(pod):
        mounts = [m.get("mountPath", "").rstrip("/") for m in c.get("volumeMounts") or []]
        for e in c.get("env") or []:
            path = e.get("value") or ""
            if e.get("name") in CACHE_ENV and path.startswith("/") and not any(
                    path == m or path.startswith(m + "/") for m in mounts if m):
                out.append(f"{e['name']}={path} (container {c['name']})")
    return out


def _snippet(cause, values, pod):
    if cause == "node-memory" and values.get("container"):
        s = values["suggested"]
        return (f"# container {values['container']}: requests close to real use; equal limits = Guaranteed QoS\n"
                f"resources:\n  requests:\n    memory: {s}\n  limits:\n    memory: {s}")
    if cause in ("container-storage-limit", "pod-storage-limit", "node-disk"):
        node = spec(pod).get("nodeName") or "<node>"
        return ("# keep model downloads and caches off the container filesystem\n"
                "env:\n- name: HF_HOME\n  value: /model-cache\nvolumeMounts:\n- name: model-cache\n  mountPath: /model-cache\n"
                "volumes:\n- name: model-cache\n  persistentVolumeClaim:\n    claimName: model-cache\n"
                + (f"# and free the node's disk:\n# kubectl debug node/{node} -it --image=busybox -- chroot /host crictl rmi --prune"
                   if cause == "node-disk" else ""))
    if cause == "emptydir-limit":
        return f"volumes:\n- name: {values.get('volume')}\n  emptyDir:\n    sizeLimit: <larger than {values.get('limit')}>"
    return None


def _on_node(ev):
    """Pod target: scheduled and not finished; Node target: always."""
    if ev.target.kind == "Node":
        return True
    return ev.pod is not None and bool(spec(ev.pod).get("nodeName")) and status(ev.pod).get("phase") != "Succeeded"


def _node_or_unknown(ev):
    node = ev.node
    if node is None and ev.gap("nodes"):
        return None, Unknown.from_gap(ev.gap("nodes"))
    return node, None


def _since(ev, cond):
    t = cond.get("lastTransitionTime")
    ago = seconds_between(t, format_time(ev.now())) if t and ev.now() else None
    return f" since {t}" + (f" ({human_duration(ago)} before collection)" if ago is not None else "") if t else ""


@rule("node-pressure", phase="eviction", severity="warning", targets=("Pod", "Node"), applies=_on_node,
      title="Node under memory, disk or PID pressure",
      remediation="Free the resource on node $node before the kubelet evicts more pods.")
def node_pressure(ev):
    """The pod's node (or the target node) reports MemoryPressure, DiskPressure or PIDPressure True."""
    node, unknown = _node_or_unknown(ev)
    if node is None:
        return unknown
    hot = [c for c in status(node).get("conditions") or [] if c.get("type") in PRESSURE and c.get("status") == "True"]
    if not hot:
        return None
    lines = [Line("node", f"nodes/{name(node)}.status.conditions[{c['type']}]",
                  f"True{_since(ev, c)}: {c.get('reason', '')} {c.get('message', '')}".strip()) for c in hot]
    lines += [Line("node", f"nodes/{name(node)}.spec.taints", f"{t['key']}:{t.get('effect')}")
              for t in taints(node) if t.get("key", "").endswith("-pressure")]
    what = "; ".join(f"{c['type']} ({PRESSURE[c['type']][0]}): {PRESSURE[c['type']][1]}" for c in hot)
    return Hit(f"Node {name(node)} reports {what}.", lines, fix=" ".join(PRESSURE_FIX[c["type"]] for c in hot),
               summary=f"Node {name(node)} is under {', '.join(c['type'] for c in hot)}",
               next=[f"kubectl describe node {name(node)}"])


@rule("node-not-ready", phase="eviction", severity="critical", rank=SPECIFIC, targets=("Pod", "Node"), applies=_on_node,
      title="Node is NotReady or unreachable",
      remediation="Bring node $node back (kubelet, container runtime, network) or drain and replace it; pods on it "
                  "are recreated elsewhere once the unreachable taint's toleration expires.")
def node_not_ready(ev):
    """The pod's node (or the target node) is NotReady or Unknown, or carries the unreachable/not-ready taint.

    Unknown means `Kubelet stopped posting node status.`; False names the kubelet's reason (CNI not ready, PLEG,
    container runtime down, shutting down). A node that no longer exists is reported too."""
    node, unknown = _node_or_unknown(ev)
    node_name = ev.target.name if ev.target.kind == "Node" else spec(ev.pod).get("nodeName")
    if node is None:
        if ev.is_absent("Node", node_name):
            return Hit(f"The pod's node {node_name} no longer exists (scaled down, reclaimed or deleted); the pod "
                       f"garbage collector deletes pods bound to a deleted node.",
                       [Line("object", f"nodes/{node_name}", "not found")],
                       fix="Nothing to bring back: delete the pod if it lingers; $recreates on another node.")
        return unknown
    ready = condition(node, "Ready") or {}
    marks = [t for t in taints(node) if t.get("key") in UNREACHABLE_TAINTS]
    if ready.get("status") == "True" or not (ready or marks):
        return None
    msg = f"{ready.get('reason', '')}: {ready.get('message', '')}".strip(": ")
    cause, fix = next(((c, f) for rx, c, f in NOT_READY_CAUSES if re.search(rx, msg)), (None, None))
    shown = "NotReady" if ready.get("status") == "False" else "Unknown (unreachable)"
    lines = [Line("node", f"nodes/{node_name}.status.conditions[Ready]", f"{ready.get('status', '?')}{_since(ev, ready)}: {msg}")]
    lines += [Line("node", f"nodes/{node_name}.spec.taints", ", ".join(f"{t['key']}:{t.get('effect')}" for t in marks))] if marks else []
    text = f"Node {node_name} is {shown}" + (f": {cause}" if cause else f" ({msg})" if msg else "") + "."
    if ev.pod is not None:
        text += _pod_fate(ev, marks)
    return Hit(text, lines, fix=fix, summary=f"Node {node_name} is {shown}" + (f": {cause}" if cause else ""),
               next=[f"kubectl describe node {node_name}", f"kubectl get pods -A --field-selector spec.nodeName={node_name} -o wide"])


def _pod_fate(ev, marks):
    """What happens to the pod: its status is stale; the taint manager deletes it after its toleration."""
    pod, out = ev.pod, " The pod's status is stale (the kubelet cannot update it)"
    no_exec = [t for t in marks if t.get("effect") == "NoExecute"]
    tol = [x for t in no_exec for x in spec(pod).get("tolerations") or []
           if x.get("key") == t.get("key") and x.get("effect") in (None, "", "NoExecute")]
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        out += (f"; it is Terminating since {pod['metadata']['deletionTimestamp']} and is only removed when the node "
                f"comes back or its Node object is deleted")
        if ((pod.get("metadata") or {}).get("ownerReferences") or [{}])[0].get("kind") == "StatefulSet":
            out += " (its StatefulSet creates no replacement until then: force-delete only if the machine is really off)"
    elif no_exec and tol and tol[0].get("tolerationSeconds") is not None:
        out += f"; it tolerates {tol[0]['key']} for {tol[0]['tolerationSeconds']}s, then it is deleted and recreated elsewhere"
    elif no_exec and not any(tolerates(pod, t) for t in no_exec):
        out += "; it does not tolerate the NoExecute taint and is being deleted"
    seen = pod_events(ev, ("TaintManagerEviction", "NodeNotReady"))
    return out + "." + (f" Last event: {seen[-1].get('reason')} {seen[-1].get('message', '')}." if seen else "")
