"""dcgm-exporter's metric text read into one record per physical GPU (Xids, ECC, row remapping, throttling, memory,
the pods using it), and which pod on a node is the exporter; pure, no I/O."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..data import xid as xids
from ..evidence import Evidence
from ..kube.objects import labels, name, namespace
from .stack import component_of, is_ready

SOURCE = "pods/proxy"                 # the RBAC subresource a proxied read needs
DEFAULT_PORT = 9400                   # dcgm-exporter's default listen address ":9400"
MAX_METRICS_BYTES = 4 * 1024 * 1024   # an 8-GPU node with MIG and every counter stays far below
# The GPU Operator labels its exporter pods app=nvidia-dcgm-exporter; the standalone Helm chart sets
# app.kubernetes.io/name=dcgm-exporter.
EXPORTER_LABELS = (("app", "nvidia-dcgm-exporter"), ("app.kubernetes.io/name", "dcgm-exporter"))

# DCGM_FI_DEV_CLOCKS_EVENT_REASONS (formerly ..._CLOCK_THROTTLE_REASONS) bits, as NVML/DCGM define them, that
# mean the GPU is slowed down by heat or power (not by idling or an application clock setting).
THROTTLE_BITS = {0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake"}
THROTTLE_EVENTS = set(THROTTLE_BITS.values())
GAUGES = {
    "DCGM_FI_DEV_FB_USED": "fbUsed", "DCGM_FI_DEV_FB_FREE": "fbFree", "DCGM_FI_DEV_FB_RESERVED": "fbReserved",
    "DCGM_FI_DEV_GPU_TEMP": "temperature", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "dbeVolatile",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "dbeAggregate", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "uncorrectableRows",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "remapFailure", "DCGM_FI_DEV_ROW_REMAP_PENDING": "remapPending",
    "DCGM_FI_DEV_RETIRED_PENDING": "retiredPending", "DCGM_FI_DEV_THERMAL_VIOLATION": "thermalViolationNs",
    "DCGM_FI_DEV_POWER_VIOLATION": "powerViolationNs",
}
REASON_FIELDS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")


class MetricsError(ValueError):
    """The exporter's answer is not Prometheus text."""


# --- the exporter pod ------------------------------------------------------------------------------------

def exporter_pods(ev: Evidence, node: dict) -> List[dict]:
    """dcgm-exporter pods on the node (by the operator's or the chart's labels, else by name), ready ones first."""
    out = []
    for pod in ev.pods_on(name(node)):
        lab = labels(pod)
        comp = component_of(pod)
        if any(lab.get(k) == v for k, v in EXPORTER_LABELS) or (comp is not None and comp.key == "dcgm-exporter"):
            out.append(pod)
    return sorted(out, key=lambda p: (not is_ready(p), name(p)))


def metrics_port(pod: dict) -> int:
    """The exporter container's port named "metrics" (both charts name it so), else 9400."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        for port in c.get("ports") or []:
            if port.get("name") == "metrics" and port.get("containerPort"):
                return int(port["containerPort"])
    return DEFAULT_PORT


def proxy_path(pod: dict) -> str:
    return f"/api/v1/namespaces/{namespace(pod)}/pods/{name(pod)}:{metrics_port(pod)}/proxy/metrics"


# --- parsing ----------------------------------------------------------------------------------------------

def parse(text: str) -> List[dict]:
    """One record per physical GPU (MIG instances' series folded into their GPU), ordered by index."""
    from prometheus_client.parser import text_string_to_metric_families   # only when metrics are read
    gpus: Dict[Tuple[str, str], dict] = {}
    try:
        # The family's name, not the sample's: the parser adds "_total" to the samples of a counter family.
        samples = [(fam.name, s) for fam in text_string_to_metric_families(text[:MAX_METRICS_BYTES])
                   for s in fam.samples]
    except Exception as exc:   # noqa: BLE001 — the parser raises ValueError, IndexError and others on bad text
        raise MetricsError(f"not Prometheus text format ({type(exc).__name__})") from None
    for metric, s in samples:
        lab = s.labels
        if "gpu" not in lab:
            continue
        uuid = lab.get("UUID") or lab.get("uuid") or ""
        g = gpus.setdefault((lab["gpu"], uuid), _new(lab, uuid))
        _fold(g, metric, lab, s.value)
    return sorted(gpus.values(), key=lambda g: (_int(g["index"]), g["uuid"]))


def _new(lab: dict, uuid: str) -> dict:
    return {"index": lab["gpu"], "uuid": uuid, "device": lab.get("device"), "model": lab.get("modelName"),
            "hostname": lab.get("Hostname"), "driver": lab.get("DCGM_FI_DRIVER_VERSION"), "pods": [],
            "migInstances": [], "lastXid": None, "lastXidMessage": None, "xidCounts": {}, "xidWindowMs": None,
            "throttleReasons": [], "podLabels": False}


def _fold(g: dict, metric: str, lab: dict, value: float) -> None:
    mig = (lab.get("GPU_I_PROFILE"), lab.get("GPU_I_ID")) if lab.get("GPU_I_ID") not in (None, "") else None
    if mig and mig not in g["migInstances"]:
        g["migInstances"].append(mig)
    if "pod" in lab:
        g["podLabels"] = True   # absent on older exporters and without the kubelet's pod-resources mapping
    if lab.get("pod"):
        holder = (lab.get("namespace") or "", lab["pod"], lab.get("container") or "", mig[0] if mig else None)
        if holder not in g["pods"]:
            g["pods"].append(holder)
    if metric == "DCGM_FI_DEV_XID_ERRORS":
        if value > 0:
            g["lastXid"] = int(value)
            g["lastXidMessage"] = lab.get("err_msg")
    elif metric == "DCGM_EXP_XID_ERRORS_COUNT" and lab.get("xid", "").isdigit():
        g["xidCounts"][int(lab["xid"])] = g["xidCounts"].get(int(lab["xid"]), 0) + int(value)
        g["xidWindowMs"] = _int(lab.get("window_size_in_ms")) or g["xidWindowMs"]
    elif metric in REASON_FIELDS:
        g["throttleReasons"] = sorted(set(g["throttleReasons"]) | {v for b, v in THROTTLE_BITS.items() if int(value) & b})
    elif metric == "DCGM_EXP_CLOCK_EVENTS_COUNT" and lab.get("clock_event") in THROTTLE_EVENTS and value > 0:
        g["throttleReasons"] = sorted(set(g["throttleReasons"]) | {lab["clock_event"]})
    elif metric in GAUGES:
        key = GAUGES[metric]
        if key.startswith("fb") and mig:   # a MIG instance's memory: summed into its GPU's
            g.setdefault("_mig" + key, {})[mig] = value
        elif not (key.startswith("fb") and key in g and g.get("_whole" + key)):
            g[key] = value
            if key.startswith("fb"):
                g["_whole" + key] = True


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


# --- readings of the records --------------------------------------------------------------------------------

def memory(g: dict) -> Tuple[Optional[float], Optional[float]]:
    """(used, total) framebuffer MiB: the GPU's own series, else its MIG instances' summed."""
    def one(key):
        if key in g:
            return g[key]
        parts = g.get("_mig" + key)
        return sum(parts.values()) if parts else None
    used, free, reserved = one("fbUsed"), one("fbFree"), one("fbReserved")
    if used is None or free is None:
        return used, None
    return used, used + free + (reserved or 0)


def critical_xids(g: dict) -> List[int]:
    """Xids of this GPU that say the GPU failed: in the exporter's window, and the last one it saw."""
    seen = [x for x in sorted(g["xidCounts"]) if g["xidCounts"][x] > 0 and xids.is_critical(x)]
    if g["lastXid"] and xids.is_critical(g["lastXid"]) and g["lastXid"] not in seen:
        seen.append(g["lastXid"])
    return seen


def xid_age(g: dict, xid: int) -> str:
    """How recent the exporter can say an Xid is."""
    count = g["xidCounts"].get(xid)
    if count:
        window = g["xidWindowMs"]
        span = f"the last {window // 60000} min" if window and window >= 60000 else "the exporter's window"
        return f"{count} time(s) in {span}"
    return ("the last Xid the GPU reported (DCGM_FI_DEV_XID_ERRORS keeps it until the driver reloads, even after "
            "the GPU recovered: it may be hours or days old)")


def memory_errors(g: dict) -> List[str]:
    out = []
    if g.get("dbeVolatile"):
        out.append(f"{int(g['dbeVolatile'])} uncorrectable (double-bit) ECC error(s) since the driver loaded")
    if g.get("remapFailure"):
        out.append("row remapping failed (no spare rows left)")
    if g.get("remapPending"):
        out.append("a row remap is pending (takes effect at the next GPU reset)")
    if g.get("retiredPending"):
        out.append(f"{int(g['retiredPending'])} page(s) pending retirement")
    return out


def holders(g: dict) -> List[str]:
    return [f"{ns}/{pod}" for ns, pod, _, _ in g["pods"]]


def node_gpus(ev: Evidence, node: dict) -> Tuple[Optional[dict], Optional[List[dict]], Optional[str]]:
    """(the exporter pod, its GPUs, why they are unknown): GPUs None with a reason when the read failed or the
    text is not metrics; no exporter pod gives (None, None, None). Remembered per evidence."""
    pods = exporter_pods(ev, node)
    if not pods:
        return None, None, None
    for pod in pods:
        text = ev.metrics.get((namespace(pod), name(pod)))
        if text is None:
            continue
        key = ("dcgm", namespace(pod), name(pod), len(text))
        if key not in ev.memo:
            try:
                ev.memo[key] = (parse(text), None)
            except MetricsError as exc:
                ev.memo[key] = (None, f"dcgm-exporter {namespace(pod)}/{name(pod)} answered {exc}")
        gpus, why = ev.memo[key]
        return pod, gpus, why
    gap = ev.gap(SOURCE)
    reason = gap.needs() if gap else f"not checked: the metrics of {namespace(pods[0])}/{name(pods[0])} were not read"
    if gap and gap.reason == "not-collected":
        reason = f"not checked: the metrics of dcgm-exporter {namespace(pods[0])}/{name(pods[0])} were not read"
    return pods[0], None, reason


def pod_gpus(gpus: List[dict], pod: dict) -> List[dict]:
    """The GPUs whose series name the pod (dcgm-exporter's pod/namespace labels)."""
    return [g for g in gpus if any(ns == namespace(pod) and p == name(pod) for ns, p, _, _ in g["pods"])]


def gpu_rows(ev: Evidence, node: dict) -> List[dict]:
    """The node view's per-GPU table (-o json key "gpus")."""
    _, gpus, _ = node_gpus(ev, node)
    rows = []
    for g in gpus or []:
        used, total = memory(g)
        xid = ",".join(str(x) for x in sorted(set(g["xidCounts"]) | ({g["lastXid"]} if g["lastXid"] else set())))
        # The model is in the GPU table above; the UUID's first 12 characters tell the GPUs of a node apart (the
        # findings quote it whole): the table fits 80 columns.
        rows.append({"gpu": g["index"], "uuid": (g["uuid"] or "")[:12] or None,
                     "memMiB": f"{int(used)}/{int(total)}" if used is not None and total is not None else None,
                     "temp": int(g["temperature"]) if g.get("temperature") is not None else None,
                     "xid": xid or None, "ecc": int(g.get("dbeVolatile") or 0) if "dbeVolatile" in g else None,
                     "remap": _remap(g), "pod": ",".join(p for _, p, _, _ in g["pods"]) or None})
    return rows


def _remap(g: dict) -> Optional[str]:
    if g.get("remapFailure"):
        return "failed"
    if "remapPending" in g:
        return "pending" if g["remapPending"] else "no"
    return None
