"""Shared pure getters over Kubernetes objects as plain dicts (pods, nodes, taints, resources)."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional

from ..data import gpu_resources
from .quantity import count, parse_quantity
from .. import lazyre

# Network-device extended resources (rule catalogue, preamble); GPU-class ones are data/gpu_resources.py.
# Beyond the catalogue's list: Mellanox/Intel SR-IOV resource prefixes and AWS EFA interfaces.
_NETDEV_RE = lazyre.compile(r"^(rdma/.+|nvidia\.com/hostdev|openshift\.io/.+|mellanox\.com/.+|"
                        r"intel\.com/\w*sriov\w*|vpc\.amazonaws\.com/efa)$")


def meta(obj: Optional[dict]) -> dict:
    return (obj or {}).get("metadata") or {}


def name(obj: Optional[dict]) -> str:
    return meta(obj).get("name") or ""


def namespace(obj: Optional[dict]) -> str:
    return meta(obj).get("namespace") or ""


def labels(obj: Optional[dict]) -> Dict[str, str]:
    return meta(obj).get("labels") or {}


def annotations(obj: Optional[dict]) -> Dict[str, str]:
    return meta(obj).get("annotations") or {}


def spec(obj: Optional[dict]) -> dict:
    return (obj or {}).get("spec") or {}


def status(obj: Optional[dict]) -> dict:
    return (obj or {}).get("status") or {}


def controller_of(obj: Optional[dict]) -> Optional[dict]:
    """The ownerReference with controller=true (kind, name), or None."""
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


# --- resources -----------------------------------------------------------

def is_gpu_resource(res: str) -> bool:
    """A GPU-class resource of any vendor or sharing scheme (data/gpu_resources.py)."""
    return gpu_resources.lookup(res) is not None


def is_netdev_resource(res: str) -> bool:
    return bool(_NETDEV_RE.match(res))


def containers(pod: dict, init: bool = False) -> List[dict]:
    return spec(pod).get("initContainers" if init else "containers") or []


def container_resources(c: dict) -> Dict[str, object]:
    """What a container asks for. Extended resources may be set in limits only: the API copies them to requests."""
    res = c.get("resources") or {}
    out = dict(res.get("limits") or {})
    out.update(res.get("requests") or {})
    return out


def pod_requests(pod: dict) -> Dict[str, float]:
    """Effective pod request per resource: max(sum of app containers + sidecars, largest init container)."""
    total: Dict[str, float] = {}
    for c in containers(pod):
        for res, val in container_resources(c).items():
            total[res] = total.get(res, 0) + float(parse_quantity(val) or 0)
    for c in containers(pod, init=True):
        for res, val in container_resources(c).items():
            v = float(parse_quantity(val) or 0)
            if c.get("restartPolicy") == "Always":  # sidecar: runs alongside the app containers
                total[res] = total.get(res, 0) + v
            else:
                total[res] = max(total.get(res, 0), v)
    return total


def gpu_request(pod: dict) -> Dict[str, int]:
    """GPU-class resources the pod requests, e.g. {"nvidia.com/gpu": 2}."""
    return {r: int(v) for r, v in pod_requests(pod).items() if is_gpu_resource(r) and v > 0}


def netdev_request(pod: dict) -> Dict[str, int]:
    return {r: int(v) for r, v in pod_requests(pod).items() if is_netdev_resource(r) and v > 0}


def asks_accelerator(c: dict) -> bool:
    """The container asks for an accelerator: a GPU-class resource, or a DRA claim (resources.claims names one of
    the pod's resourceClaims; GPU DRA drivers hand devices out this way)."""
    return bool(container_gpus(c) or (c.get("resources") or {}).get("claims"))


def container_gpus(c: dict) -> Dict[str, int]:
    return {r: count(v) for r, v in container_resources(c).items() if is_gpu_resource(r) and count(v) > 0}


def allocatable(node: dict, res: str) -> int:
    return count((status(node).get("allocatable") or {}).get(res))


def capacity(node: dict, res: str) -> int:
    return count((status(node).get("capacity") or {}).get(res))


def node_resources(node: dict, pred=is_gpu_resource) -> List[str]:
    st = status(node)
    names = set(st.get("allocatable") or {}) | set(st.get("capacity") or {})
    return sorted(r for r in names if pred(r))


def is_terminated(pod: dict) -> bool:
    return status(pod).get("phase") in ("Succeeded", "Failed")


def used(node: dict, pods: Iterable[dict], res: str) -> int:
    """Requests of the node's non-terminated pods for one resource."""
    node_name = name(node)
    return int(sum(pod_requests(p).get(res, 0) for p in pods
                   if spec(p).get("nodeName") == node_name and not is_terminated(p)))


def free(node: dict, pods: Iterable[dict], res: str) -> int:
    return allocatable(node, res) - used(node, pods, res)


# --- nodes ---------------------------------------------------------------

def condition(obj: dict, ctype: str) -> Optional[dict]:
    for cond in status(obj).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def node_ready(node: dict) -> str:
    """"True", "False" or "Unknown" (the kubelet stopped posting status)."""
    cond = condition(node, "Ready")
    return (cond or {}).get("status") or "Unknown"


def taints(node: dict) -> List[dict]:
    return spec(node).get("taints") or []


def tolerates(pod: dict, taint: dict) -> bool:
    """The scheduler's toleration matching (empty key + Exists tolerates everything)."""
    for tol in spec(pod).get("tolerations") or []:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        op = tol.get("operator") or "Equal"
        key = tol.get("key") or ""
        if not key:
            if op == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if op == "Exists" or (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def untolerated_taints(pod: dict, node: dict, effects=("NoSchedule", "NoExecute")) -> List[dict]:
    return [t for t in taints(node) if t.get("effect") in effects and not tolerates(pod, t)]


# --- references ------------------------------------------------------------

def claim_names(pod: dict) -> List[str]:
    return [v["persistentVolumeClaim"]["claimName"] for v in spec(pod).get("volumes") or []
            if (v.get("persistentVolumeClaim") or {}).get("claimName")]


# ConfigMaps a control-plane controller publishes into every namespace (kube-controller-manager's
# root-ca-cert-publisher; OpenShift's service-ca operator); the service-account volume of every pod projects them.
PUBLISHED_CONFIGMAPS = ("kube-root-ca.crt", "openshift-service-ca.crt")


def config_references(pod: dict) -> List[dict]:
    """Secrets and ConfigMaps the pod names: {kind, name, key, optional, where}."""
    refs: List[dict] = []

    def add(kind, ref_name, where, key=None, optional=False):
        if ref_name:
            refs.append({"kind": kind, "name": ref_name, "key": key, "optional": bool(optional), "where": where,
                         "volume": where.startswith("volume ")})

    for init in (True, False):
        for c in containers(pod, init=init):
            cname = c.get("name")
            for env in c.get("env") or []:
                src = env.get("valueFrom") or {}
                for field_, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                    r = src.get(field_)
                    if r:
                        add(kind, r.get("name"), f"container {cname} env {env.get('name')}", r.get("key"), r.get("optional"))
            for env in c.get("envFrom") or []:
                for field_, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                    r = env.get(field_)
                    if r:
                        add(kind, r.get("name"), f"container {cname} envFrom", None, r.get("optional"))
    for vol in spec(pod).get("volumes") or []:
        vname = vol.get("name")
        if vol.get("secret"):
            add("Secret", vol["secret"].get("secretName"), f"volume {vname}", None, vol["secret"].get("optional"))
        if vol.get("configMap"):
            add("ConfigMap", vol["configMap"].get("name"), f"volume {vname}", None, vol["configMap"].get("optional"))
        for src in (vol.get("projected") or {}).get("sources") or []:
            if src.get("secret"):
                add("Secret", src["secret"].get("name"), f"volume {vname}", None, src["secret"].get("optional"))
            if src.get("configMap"):
                add("ConfigMap", src["configMap"].get("name"), f"volume {vname}", None, src["configMap"].get("optional"))
    for ps in spec(pod).get("imagePullSecrets") or []:
        add("Secret", ps.get("name"), "imagePullSecrets", None, True)
    return refs
