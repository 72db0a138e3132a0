"""Scheduling rule for GPU reservations (Koordinator Reservation, ReservationBinding-style CRDs)."""
from __future__ import annotations

from ...kube import placement, reservations
from ...kube.objects import allocatable, free, gpu_request, labels, node_ready
from .._common import unscheduled
from ..registry import SPECIFIC, Hit, Line, rule
from ._common import names


def _has_reservations(ev):
    return unscheduled(ev) and bool(gpu_request(ev.pod)) and bool(reservations.all_reservations(ev))


@rule("reservation-mismatch", phase="scheduling", severity="critical", rank=SPECIFIC, applies=_has_reservations,
      title="GPUs are reserved, but not for this pod",
      remediation="Give the pod the labels the reservation expects ($who), or create/extend a reservation for it; "
                  "if the pod is the reservation's owner, fix the reserved node (Ready, free GPUs).",
      snippet="kubectl get $kinds -A -o wide\nkubectl get pod $pod -n $namespace --show-labels")
def reservation_mismatch(ev):
    """Reservation objects exist and the pod matches none while they hold the free GPUs, or its reserved nodes are not Ready / have no free GPU."""
    pod, pods = ev.pod, ev.all("Pod")
    live = [r for r in reservations.all_reservations(ev) if reservations.active(r)]
    kinds = ",".join(sorted({r.get("kind", "Reservation").lower() + "s" for r in live})) or "reservations"
    mine = [r for r in live if reservations.selects(r, pod)]
    values = {"kinds": kinds, "who": "; ".join(f"{reservations.ref(r)}: {reservations.who(r)}" for r in live[:3])}
    if mine:
        return _own_reservation_broken(ev, mine, values)
    if reservations.requires_reservation(pod):
        return Hit(f"The pod demands a reservation (annotation {reservations.AFFINITY_ANNOTATION}) but none of the "
                   f"{len(live)} active reservation(s) is for it ({values['who']}).",
                   [Line("spec", f"metadata.annotations[{reservations.AFFINITY_ANNOTATION}]",
                         reservations.requires_reservation(pod))], values=values)
    if not ev.readable("nodes"):
        return None
    roomy = [v for v in placement.capacity_pool(placement.analyse(ev, pod))
             if placement.knows_free(ev, v.node) and not placement.shortfall(ev, pod, v.node)]
    if not roomy:
        return None   # the GPUs are really used: insufficient-gpu
    held_by = _held_by(pod, pods, live, roomy)
    if not held_by or len(held_by) < len(roomy):
        return None
    lines = [Line("object", reservations.ref(r), f"for {reservations.who(r)}; node {n}; phase {reservations.phase(r)}")
             for n, rs in held_by.items() for r in rs][:6]
    lines.append(Line("spec", "metadata.labels", ", ".join(f"{k}={v}" for k, v in sorted(labels(pod).items()))))
    return Hit(f"The GPUs that are free on {names(roomy)} are held by reservation(s) for other pods "
               f"({values['who']}); this pod matches none of them.", lines, values=values)


def _held_by(pod, pods, live, roomy):
    """Node -> reservations whose held GPUs leave too few free for the pod there."""
    out = {}
    for v in roomy:
        others = [r for r in live if v.name in reservations.nodes(r)]
        for res, need in gpu_request(pod).items():
            left = free(v.node, pods, res) - sum(reservations.held(r, res, allocatable(v.node, res)) for r in others)
            if left < need and others:
                out[v.name] = others
    return out


def _own_reservation_broken(ev, mine, values):
    """The pod's reservations are pending, or their nodes are NotReady or without free GPUs."""
    problems = []
    for r in mine:
        where = reservations.nodes(r)
        if not where:
            problems.append(f"{reservations.ref(r)} is {reservations.phase(r)} and has no node yet")
            continue
        for n in where:
            node = ev.get("Node", n)
            if node is None:
                if ev.readable("nodes"):
                    problems.append(f"{reservations.ref(r)} pins node {n}, which does not exist")
                continue
            if node_ready(node) != "True":
                problems.append(f"{reservations.ref(r)} pins node {n}, which is Ready={node_ready(node)}")
            elif not any(reservations.held(r, res, allocatable(node, res)) >= need or
                         free(node, ev.all("Pod"), res) >= need for res, need in gpu_request(ev.pod).items()):
                problems.append(f"{reservations.ref(r)} pins node {n}, which has no free GPU for the pod")
            else:
                return None   # one usable reservation is enough
    if not problems:
        return None
    return Hit("The pod's reservation cannot host it: " + "; ".join(problems) + ".",
               [Line("object", reservations.ref(r), f"phase {reservations.phase(r)}, nodes "
                     f"{', '.join(reservations.nodes(r)) or 'none'}") for r in mine[:4]], values=values)
