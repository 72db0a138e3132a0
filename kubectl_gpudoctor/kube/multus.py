"""Multus secondary-network annotations: which NetworkAttachmentDefinitions a pod asks for; pure functions."""
from __future__ import annotations

import json
from typing import List, NamedTuple, Optional

from .objects import annotations, namespace

NETWORKS = "k8s.v1.cni.cncf.io/networks"
DEFAULT_NETWORK = "v1.multus-cni.io/default-network"
RESOURCE_NAME = "k8s.v1.cni.cncf.io/resourceName"   # on a NetworkAttachmentDefinition: the device it needs


class Attachment(NamedTuple):
    namespace: str
    name: str
    interface: str
    annotation: str


def requested(pod: dict) -> List[Attachment]:
    """The NADs a pod names, from both annotation forms of the multi-net spec: `a, ns/b@net1` and a JSON list
    `[{"name": "b", "namespace": "ns", "interface": "net1"}]`."""
    out: List[Attachment] = []
    for key in (NETWORKS, DEFAULT_NETWORK):
        out += [Attachment(ns, n, iface, key) for ns, n, iface in parse(annotations(pod).get(key), namespace(pod))]
    return out


def parse(value: Optional[str], default_ns: str) -> List[tuple]:
    text = (value or "").strip()
    if not text:
        return []
    if text.startswith(("[", "{")):
        try:
            items = json.loads(text)
        except ValueError:
            return []
        items = items if isinstance(items, list) else [items]
        return [_split(i, default_ns) if isinstance(i, str) else
                ((i.get("namespace") or default_ns), *_name_iface(str(i.get("name") or ""), i.get("interface") or ""))
                for i in items if isinstance(i, (str, dict))]
    return [_split(part, default_ns) for part in text.split(",") if part.strip()]


def _split(part: str, default_ns: str) -> tuple:
    part = part.strip()
    ns, _, rest = part.rpartition("/")
    return (ns or default_ns, *_name_iface(rest, ""))


def _name_iface(text: str, iface: str) -> tuple:
    name, _, at = text.partition("@")
    return name.strip(), (iface or at).strip()


def resource_name(nad: dict) -> str:
    return annotations(nad).get(RESOURCE_NAME, "")
