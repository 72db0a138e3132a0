"""Parses the scheduler's FailedScheduling text (`0/12 nodes are available: 8 Insufficient …`); pure, no policy."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple
from .. import lazyre
from ..record import field, record

# kube-scheduler's FitError: "0/N nodes are available: <prefilter msg>." or "<count> <reason>, …." then the
# PostFilter messages (DRA's "no new claims to deallocate", preemption's "preemption: 0/N nodes are available: …").
# Volcano's scheduler says "0/3 nodes are unavailable: …" with the same items.
_HEAD = lazyre.compile(r"^(?:Unschedulable:\s*)?(\d+)/(\d+) nodes are (?:un)?available:?\s*(.*)$", re.S | re.I)
_ITEM = lazyre.compile(r"^(\d+)\s+(.*)$", re.S)
_POSTFILTER = lazyre.compile(r"no new claims to deallocate|still not schedulable|deallocation of ResourceClaim completed|"
                         r"preemption:", re.I)
# kube-scheduler <= 1.9: "No nodes are available that match all of the following predicates:: Insufficient x (3), …"
_OLD_HEAD = lazyre.compile(r"^No nodes are available that match all of the (?:following )?predicates::?\s*(.*)$", re.S)
_OLD_ITEM = lazyre.compile(r"^(.*?)\s*\((\d+)\)$")
_CONTROL_PLANE = r"taint \{node-role\.kubernetes\.io/(control-plane|master):"
_NO_NODES = lazyre.compile(r"^no nodes available to schedule pods", re.I)
# GPU-sharing schedulers' own words for "the device request fits no node": Volcano vGPU (each vGPU of a pod on a
# distinct card: "no enough gpu cards on node X"), HAMi's scheduler ("no available node, all node scores do not
# meet"; its extender logs "request devices nums cannot exceed the total number of devices on the node").
DEVICE_SHORTAGE = (r"no enough gpu|not enough gpu|all node scores do not meet|request devices nums cannot exceed|"
                   r"InsufficientResourceOnSingleGPU|no gpu device fits|insufficient (?:gpu|vgpu|device)")

# Reason families across scheduler versions (kubernetes/kubernetes pkg/scheduler/framework/plugins/*:
# tainttoleration, nodeaffinity, nodeunschedulable, interpodaffinity, volumebinding, volumezone, dynamicresources).
FAMILIES = {
    "insufficient": r"^Insufficient \S+|" + DEVICE_SHORTAGE,
    "taint": r"untolerated taint|had taints? .*didn't tolerate|PodToleratesNodeTaints",
    "selector": r"didn't match Pod's node affinity|didn't match node selector|didn't match node affinity|"
                r"MatchNodeSelector|didn't have the requested labels",
    "unschedulable": r"were unschedulable|NodeUnschedulable|had unknown conditions|were not ready|"
                     r"node\(s\) had condition",
    "pod-affinity": r"didn't match pod affinity rules|pod affinity/anti-affinity|MatchInterPodAffinity",
    "pod-anti-affinity": r"didn't match pod anti-affinity rules|didn't satisfy existing pods anti-affinity rules",
    "volume-zone": r"volume node affinity conflict|no available volume zone|NoVolumeZoneConflict|"
                   r"VolumeNodeAffinityConflict",
    "volume-bind": r"didn't find available persistent volumes to bind|did not have enough free storage|"
                   r"unbound immediate PersistentVolumeClaims|persistentvolumeclaim \"[^\"]*\" (?:not found|is being deleted)|"
                   r"VolumeBindingNoMatch",
    "dra": r"cannot allocate all claims|resourceclaim|ResourceClaim|device class \S+ does not exist|"
           r"waiting for resource driver",   # classic DRA (1.26-1.30): the driver's controller allocates
    "topology-spread": r"topology spread constraints",
}


@record
class SchedulingFailure:
    available: int = 0
    total: int = 0
    reasons: List[Tuple[int, str]] = field(default_factory=list)   # (node count, reason text)
    preemption: str = ""
    free_text: str = ""          # a PreFilter message without per-node counts (e.g. unbound PVCs)

    def count(self, needle: str) -> int:
        """Nodes whose reason contains `needle` (case-insensitive)."""
        low = needle.lower()
        return sum(n for n, text in self.reasons if low in text.lower())

    def matching(self, pattern: str) -> List[Tuple[int, str]]:
        rx = re.compile(pattern, re.I)
        return [(n, t) for n, t in self.reasons if rx.search(t)]

    def family(self, name: str) -> List[Tuple[int, str]]:
        """Reasons of one family (FAMILIES), counting a count-less PreFilter message as all nodes."""
        out = self.matching(FAMILIES[name])
        if self.free_text and re.search(FAMILIES[name], self.free_text, re.I):
            out.append((self.total, self.free_text))
        return out

    def only(self, *names: str) -> bool:
        """Every reason belongs to one of the named families (the message is conclusive for them)."""
        texts = [t for _, t in self.reasons] + ([self.free_text] if self.free_text else [])
        return bool(texts) and all(any(re.search(FAMILIES[n], t, re.I) for n in names) for t in texts)

    def covers_all(self, *names: str) -> bool:
        """The named families account for every node the scheduler looked at, control-plane nodes rejected
        for their role taint aside (they are not GPU nodes)."""
        if self.free_text and any(re.search(FAMILIES[n], self.free_text, re.I) for n in names):
            return True
        named = sum(n for n, _ in self.reasons_of(*names))
        control_plane = sum(n for n, _ in self.matching(_CONTROL_PLANE)) if "taint" not in names else 0
        return self.total > 0 and named > 0 and named + control_plane >= self.total

    def reasons_of(self, *names: str) -> List[Tuple[int, str]]:
        rx = "|".join(f"(?:{FAMILIES[n]})" for n in names)
        return self.matching(rx)


def parse(message: str) -> Optional[SchedulingFailure]:
    """None when the text is not a scheduler summary at all (e.g. a PreBind error)."""
    text = (message or "").strip()
    if _NO_NODES.match(text) or (re.search(DEVICE_SHORTAGE, text, re.I) and not _HEAD.match(text)):
        return SchedulingFailure(free_text=text)
    old = _OLD_HEAD.match(text)
    if old:
        return _parse_old(old.group(1))
    m = _HEAD.match(text)
    if not m:
        return None
    body = m.group(3)
    preemption = ""
    cut = _POSTFILTER.search(body)
    if cut:
        post, body = body[cut.start():].strip(), body[:cut.start()]
        preemption = re.sub(r"^.*?preemption:\s*", "", post, flags=re.I | re.S)
    body = body.strip().rstrip(".")
    out = SchedulingFailure(available=int(m.group(1)), total=int(m.group(2)), preemption=preemption)
    # Items are "<count> <reason>" joined by ", "; a reason may itself contain ", " (the older
    # "had taint {k: v}, that the pod didn't tolerate"), so split only before a count.
    for part in re.split(r",\s+(?=\d+\s)", body):
        item = _ITEM.match(part.strip())
        if item:
            out.reasons.append((int(item.group(1)), item.group(2).strip().rstrip(".")))
        elif part.strip():
            out.free_text = (out.free_text + " " + part.strip()).strip()
    return out


def _parse_old(body: str) -> SchedulingFailure:
    out = SchedulingFailure()
    for part in re.split(r",\s+", body.strip().rstrip(".")):
        item = _OLD_ITEM.match(part.strip())
        if item:
            out.reasons.append((int(item.group(2)), item.group(1)))
    out.total = max((n for n, _ in out.reasons), default=0)
    return out


_TAINT = lazyre.compile(r"taint\s*\{([^}]*)\}")


def taints_in(reason: str) -> List[Tuple[str, str]]:
    """(key, value) of every `taint {key: value}` in a reason (the newest wording names none)."""
    out = []
    for body in _TAINT.findall(reason):
        key, _, value = body.partition(":")
        out.append((key.strip(), value.strip()))
    return out


def device_shortage(failure: Optional[SchedulingFailure]) -> List[Tuple[int, str]]:
    """Reasons in which a GPU-sharing scheduler says the device request fits no node (no resource named)."""
    if failure is None:
        return []
    out = failure.matching(DEVICE_SHORTAGE)
    if failure.free_text and re.search(DEVICE_SHORTAGE, failure.free_text, re.I):
        out.append((failure.total, failure.free_text))
    return out


def insufficient_resources(failure: SchedulingFailure) -> List[Tuple[int, str]]:
    """(node count, resource) of every `Insufficient <resource>` reason."""
    out = []
    for n, text in failure.reasons:
        m = re.match(r"^Insufficient (\S+)", text)
        if m:
            out.append((n, m.group(1)))
    return out
