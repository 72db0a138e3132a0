"""Node rules from the GPUs' own health as dcgm-exporter reports it (Xid errors, uncorrectable memory errors and
row remapping, throttling) and from GPU conditions that health agents set on the node."""
from __future__ import annotations

from typing import List, Optional

from ... import lazyre
from ...data import xid as xids
from ...gpu import dcgm, stack as gpustack
from ...kube.objects import name, namespace, status
from ._common import node_line, node_or_unknown, on_gpu_node, troubled_gpu_pod
from ..registry import SPECIFIC, DEFAULT, Hit, Line, Unknown, rule

# Node conditions that GPU health agents set: node-problem-detector's GPU checks (AKS: GPUMissing, GPUXIDErrors,
# ...), NVIDIA NVSentinel's health monitors; the kubelet's own condition types are never these.
_AGENT_CONDITION = lazyre.compile(r"GPU|Gpu|Xid|XID|NVLink|NvLink|Nvlink|DCGM|Dcgm")
_KUBELET_CONDITIONS = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}
# A CUDA runtime error in the pod's log that a failing GPU produces (the application cannot cause these).
_CUDA_FAULT = lazyre.compile(r"(?i)(?<![\w-])(?:CUDA error|cudaError\w*|CUDA_ERROR_\w+|uncorrectable ECC error|"
                             r"unspecified launch failure|GPU is lost|NCCL error)")


def _health(ev):
    """(node, GPUs the rule judges, unknown reason): the pod's own GPUs when the exporter names it."""
    node = node_or_unknown(ev)
    if not isinstance(node, dict):
        return None, None, node
    exporter, gpus, why = dcgm.node_gpus(ev, node)
    if exporter is None and gpustack.pods_known(ev, name(node)):
        return node, None, Unknown(f"not checked: no dcgm-exporter pod runs on node {name(node)}, so the GPUs' own "
                                   f"health (Xid, ECC, throttling) is not reported")
    if gpus is None:
        return node, None, Unknown(why) if why else None
    if ev.pod is not None:
        mine = dcgm.pod_gpus(gpus, ev.pod)
        if mine:
            return node, mine, None
    return node, gpus, None


def applies(ev) -> bool:
    """The node view of a GPU node; under a GPU pod in trouble, when its node's dcgm-exporter metrics were read or a
    health agent set a GPU condition there. The pod view never turns unknown for want of them: the node view says
    why they could not be read."""
    if ev.target.kind == "Node":
        return on_gpu_node(ev)
    node = ev.node
    if not troubled_gpu_pod(ev) or node is None:
        return False
    read = ev.readable(dcgm.SOURCE) and any((namespace(p), name(p)) in ev.metrics for p in dcgm.exporter_pods(ev, node))
    return read or bool(agent_conditions(node))


def agent_conditions(node: dict) -> List[dict]:
    """True node conditions a GPU health agent set (not the kubelet's)."""
    return [c for c in status(node).get("conditions") or []
            if c.get("type") not in _KUBELET_CONDITIONS and str(c.get("status")) == "True"
            and _AGENT_CONDITION.search(str(c.get("type")) + " " + str(c.get("reason") or ""))]


def _where(g: dict) -> str:
    model = f" ({g['model']})" if g.get("model") else ""
    return f"GPU {g['index']} {g['uuid']}{model}"


def _used_by(g: dict, ev) -> str:
    if g["pods"]:
        return f" It is in use by {', '.join(dcgm.holders(g))}."
    if not g["podLabels"]:
        return " The exporter does not say which pod uses it (no pod labels: time-slicing or an older exporter)."
    return ""


def _metric_line(pod: Optional[dict], what: str, text: str) -> Line:
    ref = f"{namespace(pod)}/{name(pod)}:metrics {what}" if pod else f"metrics {what}"
    return Line("metric", ref, text)


_CUDA_OOM = lazyre.compile(r"(?i)(?<![\w-])(?:CUDA out of memory|CUDA error: out of memory|cudaErrorMemoryAllocation)")


def cuda_oom_line(ev) -> Optional[Line]:
    """The pod's last CUDA out-of-memory line (previous log first)."""
    return _last_line(ev, _CUDA_OOM)


def _xid_text(g: dict) -> str:
    counts = ", ".join(f"Xid {x} x{n}" for x, n in sorted(g["xidCounts"].items()) if n)
    return (f"gpu={g['index']} UUID={g['uuid']} last Xid {g['lastXid']}"
            + (f"; DCGM_EXP_XID_ERRORS_COUNT {counts}" if counts else ""))


def cuda_fault_line(ev) -> Optional[Line]:
    """The pod's last CUDA/NCCL runtime error line that a failing GPU produces (previous log first)."""
    return _last_line(ev, _CUDA_FAULT)


def _last_line(ev, pattern) -> Optional[Line]:
    pod = ev.pod
    if pod is None:
        return None
    for c in (pod.get("spec") or {}).get("containers") or []:
        for previous in (True, False):
            text = ev.log(pod, c.get("name"), previous) or ""
            for line in reversed(text.splitlines()):
                if pattern.search(line):
                    return Line("log", f"{c.get('name')} {'previous log' if previous else 'log'}", line.strip()[:300])
    return None


@rule("gpu-xid-critical", phase="node", severity="critical", rank=SPECIFIC, applies=applies,
      targets=("Pod", "Node"), needs=("nodes", "pods"),
      title="A GPU reported a critical Xid error",
      remediation="Stop scheduling onto $node and take GPU $gpu out of service: cordon and drain the node, then "
                  "$action. Workloads restarted elsewhere recover; the same GPU will fail them again.",
      snippet="kubectl cordon $node\n"
              "kubectl drain $node --ignore-daemonsets --delete-emptydir-data\n"
              "kubectl debug node/$node -it --image=ubuntu -- chroot /host sh -c 'dmesg -T | grep -i xid'")
def gpu_xid_critical(ev):
    """dcgm-exporter reports an Xid that means the GPU failed (79 fallen off the bus, 48/94/95 ECC, 119/120 GSP,
    ...), or a health agent's GPU condition on the node is True."""
    node, gpus, unknown = _health(ev)
    if node is None:
        return unknown
    agents = agent_conditions(node)
    for g in gpus or []:
        bad = dcgm.critical_xids(g)
        if not bad:
            continue
        x = bad[0]
        entry = xids.lookup(x)
        said = f" (exporter: \"{g['lastXidMessage']}\")" if g["lastXid"] == x and g["lastXidMessage"] else ""
        msg = (f"{_where(g)} on node {name(node)} reported Xid {x}: {xids.meaning(x, g['lastXidMessage'])}{said}, "
               f"{dcgm.xid_age(g, x)}." + _used_by(g, ev))
        lines = [_metric_line(dcgm.exporter_pods(ev, node)[0], "DCGM_FI_DEV_XID_ERRORS",
                              _xid_text(g))]
        cuda = cuda_fault_line(ev)
        if cuda is not None:
            msg += f" The pod's CUDA error ({cuda.text[:120]}) happened on this GPU: the GPU is the cause, not the code."
            lines.append(cuda)
        lines += [node_line(node, f"status.conditions[{c.get('type')}]", c.get("message") or c.get("reason") or "True")
                  for c in agents]
        return Hit(msg, lines, values={"gpu": g["index"], "action": entry.action if entry else xids.RESET_GPU},
                   summary=f"GPU {g['index']} on {name(node)}: Xid {x} ({xids.meaning(x)})")
    if agents:
        c = agents[0]
        return Hit(f"Node {name(node)} has GPU health condition {c.get('type')}=True"
                   f"{' (' + c['reason'] + ')' if c.get('reason') else ''}: {(c.get('message') or 'no message').rstrip('.')}.",
                   [node_line(node, f"status.conditions[{c.get('type')}]", c.get("message") or "True")],
                   values={"gpu": "named in the condition", "action": xids.RESET_GPU},
                   summary=f"GPU health condition {c.get('type')} on {name(node)}")
    return unknown


@rule("gpu-memory-errors", phase="node", severity="critical", rank=DEFAULT, applies=applies,
      targets=("Pod", "Node"), needs=("nodes", "pods"),
      title="GPU memory has uncorrectable errors or a pending row remap",
      remediation="Drain $node and reset GPU $gpu so the pending row remap takes effect (or replace the GPU when "
                  "remapping failed); jobs on it may see ECC errors or wrong results until then.",
      snippet="kubectl drain $node --ignore-daemonsets --delete-emptydir-data\n"
              "kubectl debug node/$node -it --image=ubuntu -- chroot /host nvidia-smi -q -d ROW_REMAPPER,ECC")
def gpu_memory_errors(ev):
    """dcgm-exporter reports uncorrectable (double-bit) ECC errors, a failed or pending row remap, or pages
    pending retirement on a GPU."""
    node, gpus, unknown = _health(ev)
    if gpus is None:
        return unknown
    for g in gpus:
        found = dcgm.memory_errors(g)
        if not found:
            continue
        severe = bool(g.get("dbeVolatile") or g.get("remapFailure"))
        msg = f"{_where(g)} on node {name(node)}: {'; '.join(found)}." + _used_by(g, ev)
        line = _metric_line(dcgm.exporter_pods(ev, node)[0], "ECC/row remapping", "; ".join(found))
        return Hit(msg, [line], values={"gpu": g["index"]}, severity=None if severe else "warning",
                   summary=f"GPU {g['index']} on {name(node)}: {found[0]}")
    return None


@rule("gpu-throttled", phase="node", severity="warning", rank=DEFAULT, applies=applies,
      targets=("Pod", "Node"), needs=("nodes", "pods"),
      title="A GPU is slowed down by heat or power",
      remediation="Check cooling and power on $node (fans, airflow, power capping); GPU $gpu runs below its clocks, "
                  "so jobs on it are slower and distributed jobs wait for it.",
      snippet="kubectl debug node/$node -it --image=ubuntu -- chroot /host nvidia-smi -q -d PERFORMANCE,TEMPERATURE")
def gpu_throttled(ev):
    """dcgm-exporter's clock-event reasons say a GPU is throttled now (HW/SW thermal slowdown, power brake,
    HW slowdown)."""
    node, gpus, unknown = _health(ev)
    if gpus is None:
        return unknown
    for g in gpus:
        if not g["throttleReasons"]:
            continue
        temp = f" at {int(g['temperature'])} C" if g.get("temperature") is not None else ""
        msg = (f"{_where(g)} on node {name(node)} is throttled{temp}: {', '.join(g['throttleReasons'])}."
               + _used_by(g, ev))
        line = _metric_line(dcgm.exporter_pods(ev, node)[0], "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
                            ", ".join(g["throttleReasons"]))
        return Hit(msg, [line], values={"gpu": g["index"]}, summary=f"GPU {g['index']} on {name(node)} throttled")
    return None
