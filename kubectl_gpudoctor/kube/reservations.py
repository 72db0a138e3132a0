"""Reads GPU reservation objects generically (Koordinator `Reservation`, `ReservationBinding`-style CRDs): who they
are for, which nodes they pin, how much they hold; pure functions, no policy."""
from __future__ import annotations

from typing import List, Optional

from .affinity import label_selector_matches
from .objects import annotations, controller_of, labels, meta, name, namespace, spec, status
from .quantity import count

KINDS = ("Reservation", "ReservationBinding")
# Koordinator (scheduling.koordinator.sh/v1alpha1 Reservation): phases Pending, Available, Waiting, Succeeded,
# Failed; spec.owners[] {object, controller, labelSelector} ORed; status.nodeName / allocatable / allocated.
# (koordinator-sh/koordinator docs/proposals/scheduling/20220609-resource-reservation.md)
DONE_PHASES = ("Succeeded", "Failed", "Expired")
AFFINITY_ANNOTATION = "scheduling.koordinator.sh/reservation-affinity"


def all_reservations(ev) -> List[dict]:
    return [r for kind in KINDS for r in ev.all(kind)]


def active(r: dict) -> bool:
    return status(r).get("phase") not in DONE_PHASES


def phase(r: dict) -> str:
    return status(r).get("phase") or "unknown"


def ref(r: dict) -> str:
    ns = namespace(r)
    return f"{r.get('kind', 'Reservation')} {ns + '/' if ns else ''}{name(r)}"


def selects(r: dict, pod: dict) -> bool:
    """The reservation is for this pod: a podSelector (same namespace for a namespaced object) or a
    Koordinator owner (labelSelector, object reference or controller) matches it."""
    sp = spec(r)
    if sp.get("podSelector") is not None:
        same_ns = not namespace(r) or namespace(r) == namespace(pod)
        if same_ns and label_selector_matches(sp["podSelector"], labels(pod)):
            return True
    ctrl = controller_of(pod) or {}
    for owner in sp.get("owners") or []:
        obj, c = owner.get("object") or {}, owner.get("controller") or {}
        if owner.get("labelSelector") is not None and label_selector_matches(owner["labelSelector"], labels(pod)):
            return True
        if obj and obj.get("name") == name(pod) and obj.get("namespace", namespace(pod)) == namespace(pod):
            return True
        if c and c.get("name") == ctrl.get("name") and c.get("kind", ctrl.get("kind")) == ctrl.get("kind") \
                and c.get("namespace", namespace(pod)) == namespace(pod):
            return True
    return False


def who(r: dict) -> str:
    """Whom the reservation is for, in words."""
    sp = spec(r)
    parts = []
    if sp.get("podSelector") is not None:
        parts.append(_sel(sp["podSelector"]))
    for owner in sp.get("owners") or []:
        if owner.get("labelSelector") is not None:
            parts.append(_sel(owner["labelSelector"]))
        if owner.get("object"):
            parts.append(f"pod {owner['object'].get('namespace', '')}/{owner['object'].get('name')}")
        if owner.get("controller"):
            parts.append(f"{owner['controller'].get('kind')} {owner['controller'].get('name')}")
    return " or ".join(parts) or "no pods"


def _sel(selector: dict) -> str:
    items = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    items += [f"{e.get('key')} {e.get('operator')} {e.get('values') or ''}".strip()
              for e in selector.get("matchExpressions") or []]
    return "pods with " + (", ".join(items) or "any labels")


def nodes(r: dict) -> List[str]:
    sp, st = spec(r), status(r)
    out = [st.get("nodeName"), sp.get("nodeName"), ((sp.get("template") or {}).get("spec") or {}).get("nodeName")]
    out += list(sp.get("nodeNames") or []) + list(st.get("nodes") or []) + list(sp.get("nodes") or [])
    return [n if isinstance(n, str) else (n or {}).get("name") for n in out if n]


def held(r: dict, res: str, node_allocatable: int) -> int:
    """How much of `res` the reservation still holds on its node (the whole node when it states no amount)."""
    st, sp = status(r), spec(r)
    if res in (st.get("allocatable") or {}):
        return max(count(st["allocatable"][res]) - count((st.get("allocated") or {}).get(res)), 0)
    if res in (sp.get("resources") or {}):
        return count(sp["resources"][res])
    tmpl = ((sp.get("template") or {}).get("spec") or {}).get("containers") or []
    amount = sum(count(((c.get("resources") or {}).get("limits") or {}).get(res)) or
                 count(((c.get("resources") or {}).get("requests") or {}).get(res)) for c in tmpl)
    return amount if tmpl else node_allocatable


def requires_reservation(pod: dict) -> Optional[str]:
    """The pod's own demand to run on a reservation (Koordinator reservation-affinity annotation)."""
    return annotations(pod).get(AFFINITY_ANNOTATION)


def created(r: dict) -> str:
    return meta(r).get("creationTimestamp") or ""
