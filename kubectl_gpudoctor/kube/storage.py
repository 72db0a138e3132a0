"""Pure getters over a pod's claims: PVCs, their PVs and StorageClasses, and DRA ResourceClaims; no I/O, no policy."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .affinity import term_failures
from ..evidence import Evidence
from .objects import annotations, labels, meta, name, namespace, spec, status
from .. import lazyre

# --- PersistentVolumeClaims ------------------------------------------------------------

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
# Legacy zone/region labels the VolumeZone filter reads from a PV (values may list several zones joined by "__").
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region",
               "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region")


def pod_claims(pod: dict) -> List[Tuple[str, str, bool]]:
    """(volume name, claim name, generic ephemeral?) for every PVC the pod uses."""
    out = []
    for vol in spec(pod).get("volumes") or []:
        if (vol.get("persistentVolumeClaim") or {}).get("claimName"):
            out.append((vol["name"], vol["persistentVolumeClaim"]["claimName"], False))
        elif (vol.get("ephemeral") or {}).get("volumeClaimTemplate") is not None:
            out.append((vol["name"], f"{name(pod)}-{vol['name']}", True))   # the ephemeral volume controller's name
    return out


def claim_phase(pvc: Optional[dict]) -> str:
    return status(pvc).get("phase") or "Pending"


def storage_class(ev: Evidence, pvc: dict) -> Tuple[Optional[str], Optional[dict]]:
    """The claim's StorageClass name and object (the default class when the claim names none)."""
    sc_name = spec(pvc).get("storageClassName")
    if sc_name is None:
        sc_name = annotations(pvc).get("volume.beta.kubernetes.io/storage-class")
    if sc_name is None:
        default = [sc for sc in ev.all("StorageClass") if annotations(sc).get(DEFAULT_CLASS_ANNOTATION) == "true"]
        return (name(default[0]), default[0]) if default else (None, None)
    if sc_name == "":
        return "", None      # explicitly no class: only pre-created PVs can bind
    return sc_name, ev.get("StorageClass", sc_name)


def waits_for_consumer(sc: Optional[dict]) -> bool:
    return (sc or {}).get("volumeBindingMode") == "WaitForFirstConsumer"


def bound_pv(ev: Evidence, pvc: dict) -> Optional[dict]:
    vol = spec(pvc).get("volumeName")
    return ev.get("PersistentVolume", vol) if vol else None


def pv_node_failures(pv: dict, node: dict) -> List[str]:
    """Why a PV cannot be attached on the node: its required node affinity or legacy zone labels."""
    out = []
    terms = ((spec(pv).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms") or []
    if terms:
        per_term = [term_failures(node, t) for t in terms]
        if all(per_term):
            out.append(f"PersistentVolume {name(pv)} requires " + " OR ".join(f[0] for f in per_term))
    node_labels = labels(node)
    for key in ZONE_LABELS:
        want = labels(pv).get(key)
        if want and key in node_labels and node_labels[key] not in want.split("__"):
            out.append(f"PersistentVolume {name(pv)} is in {key}={want} (node has {node_labels[key]})")
    return out


def pv_location(pv: dict) -> str:
    """The zone/hostname a PV is pinned to, for messages."""
    terms = ((spec(pv).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for e in term.get("matchExpressions") or []:
            if e.get("operator") == "In":
                return f"{e.get('key')}={','.join(e.get('values') or [])}"
    for key in ZONE_LABELS:
        if labels(pv).get(key):
            return f"{key}={labels(pv)[key]}"
    return "its node affinity"


def bound_pvs(ev: Evidence, pod: dict) -> List[Tuple[str, dict]]:
    """(claim name, PV) of every Bound claim whose PV is in the evidence."""
    out = []
    for _, claim, _ in pod_claims(pod):
        pvc = ev.get("PersistentVolumeClaim", claim, namespace(pod))
        pv = bound_pv(ev, pvc) if pvc is not None and claim_phase(pvc) == "Bound" else None
        if pv is not None:
            out.append((claim, pv))
    return out


def location_key(pv: dict) -> str:
    return pv_location(pv).split("=", 1)[0] if "=" in pv_location(pv) else "topology.kubernetes.io/zone"


def volume_failures(ev: Evidence, pod: dict, node: dict) -> Optional[List[str]]:
    """Bound PVs of the pod that cannot be used on the node; None when a bound PV could not be read."""
    out: List[str] = []
    for _, claim, _ in pod_claims(pod):
        pvc = ev.get("PersistentVolumeClaim", claim, namespace(pod))
        if pvc is None or claim_phase(pvc) != "Bound":
            continue
        pv = bound_pv(ev, pvc)
        if pv is None:
            if not ev.is_absent("PersistentVolume", spec(pvc).get("volumeName") or "?"):
                return None
            continue
        out += pv_node_failures(pv, node)
    return out


# --- DRA: ResourceClaims, DeviceClasses, ResourceSlices (resource.k8s.io v1alpha3 … v1) --------------


def pod_resource_claims(pod: dict) -> List[Dict[str, Optional[str]]]:
    """{name, claim, template} per pod.spec.resourceClaims entry; claim resolved from status for templates."""
    generated = {s.get("name"): s.get("resourceClaimName") for s in status(pod).get("resourceClaimStatuses") or []}
    out = []
    for entry in spec(pod).get("resourceClaims") or []:
        src = entry.get("source") or entry     # before 1.31 the names sat under `source`
        claim, template = src.get("resourceClaimName"), src.get("resourceClaimTemplateName")
        if template and not claim:
            claim = generated.get(entry.get("name"))
        out.append({"name": entry.get("name"), "claim": claim, "template": template})
    return out


def claim_device_classes(claim: dict) -> List[Tuple[str, str]]:
    """(request name, deviceClassName) of every request, across the v1beta1 and v1/v1beta2 shapes."""
    out = []
    for req in (spec(claim).get("devices") or {}).get("requests") or []:
        exact = req.get("exactly") or req
        if exact.get("deviceClassName"):
            out.append((req.get("name", ""), exact["deviceClassName"]))
        for sub in req.get("firstAvailable") or []:
            if sub.get("deviceClassName"):
                out.append((f"{req.get('name', '')}/{sub.get('name', '')}", sub["deviceClassName"]))
    return out


def claim_allocated(claim: dict) -> bool:
    return bool(status(claim).get("allocation"))


_DRIVER_CEL = lazyre.compile(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]")


def class_drivers(device_class: dict) -> List[str]:
    """Drivers a DeviceClass selects with the usual `device.driver == "…"` CEL (empty: not stated that way)."""
    out = []
    for sel in spec(device_class).get("selectors") or []:
        out += _DRIVER_CEL.findall(((sel.get("cel") or {}).get("expression")) or "")
    return out


def slices_of(ev: Evidence, driver: str) -> List[dict]:
    return [s for s in ev.all("ResourceSlice") if spec(s).get("driver") == driver]


def slice_devices(slices: List[dict]) -> int:
    return sum(len(spec(s).get("devices") or []) for s in slices)


def being_deleted(obj: Optional[dict]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))
