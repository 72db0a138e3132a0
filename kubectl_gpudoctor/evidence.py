"""Plain evidence for one diagnosis: API objects as dicts, log tails, and what is absent or unknown; no I/O here."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .kube.timeutil import parse_time
from .logs.lines import bounded
from .record import field, record, replace

# Every source a rule may need, named as RBAC names it (resource[/subresource]).
KNOWN_SOURCES = (
    "pods", "events", "nodes", "pods/log", "runtimeclasses", "persistentvolumeclaims",
    "persistentvolumes", "storageclasses", "secrets", "configmaps", "networkpolicies",
    "daemonsets", "replicasets", "deployments", "statefulsets", "jobs", "cronjobs", "nvidiadrivers",
    "resourceclaims", "deviceclasses", "resourceslices", "network-attachment-definitions",
    "clusterpolicies", "reservations", "reservationbindings", "resourceclaimtemplates", "namespaces",
    "services", "endpointslices",
)

# kind -> source; kinds not listed use the lower-case plural of their kind.
_SOURCE_OF_KIND = {
    "NetworkAttachmentDefinition": "network-attachment-definitions",
}


def plural(kind: str) -> str:
    """The API resource name of a kind, as the apiserver derives it for built-ins and CRDs."""
    low = kind.lower()
    if low == "endpoints":
        return low
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    if low.endswith("s"):
        return low + "es"
    return low + "s"


def source_of(kind: str) -> str:
    return _SOURCE_OF_KIND.get(kind, plural(kind))


@record(frozen=True)
class Line:
    """One observed fact: where it was read and what it says."""
    source: str          # status | event | log | spec | node | object
    ref: str             # e.g. containerStatuses[server].lastState, events/FailedScheduling
    text: str

    def to_dict(self) -> dict:
        return {"source": self.source, "ref": self.ref, "text": self.text}


@record
class Gap:
    """A read that failed or a source the input lacks: unknown, never evidence of absence."""
    source: str
    reason: str          # forbidden | unauthorized | timeout | error | not-in-bundle | not-collected | malformed
    detail: str = ""
    verb: str = "get"    # the RBAC verb that was refused, for "needs list nodes"
    namespace: Optional[str] = None   # the one namespace a namespaced read covered, when the gap names it

    def needs(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"not checked: {self.reason} (needs {self.verb} {self.source}{where})"

    def to_dict(self) -> dict:
        out = {"source": self.source, "reason": self.reason, "detail": self.detail}
        return dict(out, namespace=self.namespace) if self.namespace else out


@record
class Target:
    kind: str
    name: str
    namespace: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


LogKey = Tuple[str, str, str, bool]  # namespace, pod, container, previous


@record
class Evidence:
    """Everything one diagnosis may read, as the API returned it."""
    target: Target
    objects: Dict[str, List[dict]] = field(default_factory=dict)
    logs: Dict[LogKey, str] = field(default_factory=dict)
    absent: Dict[str, str] = field(default_factory=dict)   # "Kind/ns/name" -> why we know (404)
    gaps: Dict[str, Gap] = field(default_factory=dict)
    sources: Set[str] = field(default_factory=set)         # sources that were read (possibly empty)
    collected_at: Optional[datetime] = None
    tail_lines: int = 80
    pod_nodes: Optional[Set[str]] = None   # nodes whose pods were listed; None: every pod is here
    metrics: Dict[Tuple[str, str], str] = field(default_factory=dict)   # (ns, pod) -> dcgm-exporter metric text
    stack_only: bool = False   # only the GPU stack's pods were saved (NVIDIA must-gather): other pods are unknown
    _index: Dict[str, Tuple[list, Set[tuple]]] = field(default_factory=dict, repr=False, compare=False)
    memo: Dict[tuple, object] = field(default_factory=dict, repr=False, compare=False)   # pure readings, by inputs

    # --- building -------------------------------------------------------
    def add(self, obj: dict, kind: Optional[str] = None) -> None:
        kind = kind or obj.get("kind") or ""
        if not kind:
            return
        bucket = self.objects.setdefault(kind, [])
        seen = self._seen_keys(kind, bucket)
        key = _key(kind, obj)
        if key in seen:
            return
        seen.add(key)
        bucket.append(obj)

    def _seen_keys(self, kind: str, bucket: List[dict]) -> Set[tuple]:
        """The keys held for a kind (a set, so adding n objects costs n, not n²); rebuilt when `objects` was
        edited directly (a workload's pods narrowed, a bundle loaded)."""
        entry = self._index.get(kind)
        if entry is None or entry[0] is not bucket or len(entry[1]) != len(bucket):
            entry = (bucket, {_key(kind, o) for o in bucket})
            self._index[kind] = entry
        return entry[1]

    def add_all(self, objs: Iterable[dict], kind: str) -> None:
        for obj in objs:
            self.add(obj, kind)

    def retarget(self, target: Target) -> "Evidence":
        """The same evidence seen from another target (a workload's or a scan's pods share one snapshot)."""
        return replace(self, target=target)

    def merged(self, others: Iterable["Evidence"]) -> "Evidence":
        """One snapshot of this evidence and others' (a workload's and its pods'), for a bundle: objects, logs,
        sources, gaps and absences together; the nodes whose pods were listed, joined."""
        out = replace(self, objects={k: list(v) for k, v in self.objects.items()}, logs=dict(self.logs),
                      absent=dict(self.absent), gaps=dict(self.gaps), sources=set(self.sources),
                      pod_nodes=set(self.pod_nodes or ()), metrics=dict(self.metrics))
        for ev in others:
            for kind, objs in ev.objects.items():
                out.add_all(objs, kind)
            out.logs.update(ev.logs)
            out.metrics.update(ev.metrics)
            out.absent.update(ev.absent)
            out.sources |= ev.sources
            for key, gap in ev.gaps.items():
                out.gaps.setdefault(key, gap)   # keys kept: a gap of one namespace's read stays that namespace's
            out.pod_nodes |= set(ev.pod_nodes or ())
        return out

    def mark_read(self, source: str) -> None:
        self.sources.add(source)

    def add_gap(self, gap: Gap) -> None:
        # a source with malformed objects skipped is still read: its gap has a key of its own (kube/shapes.py)
        self.gaps.setdefault(gap.source + "#malformed" if gap.reason == "malformed" else gap.source, gap)

    def mark_absent(self, kind: str, name: str, namespace: Optional[str] = None, detail: str = "") -> None:
        self.absent[_ref(kind, name, namespace)] = detail or f"{kind} {name} not found"

    # --- reading --------------------------------------------------------
    def all(self, kind: str) -> List[dict]:
        return self.objects.get(kind, [])

    def get(self, kind: str, name: str, namespace: Optional[str] = None) -> Optional[dict]:
        for obj in self.objects.get(kind, []):
            meta = obj.get("metadata") or {}
            if meta.get("name") == name and (namespace is None or meta.get("namespace") in (namespace, None)):
                return obj
        return None

    def is_absent(self, kind: str, name: str, namespace: Optional[str] = None) -> bool:
        """True only when the API said 404 (or a complete snapshot lacks it): a fact, not a gap."""
        if _ref(kind, name, namespace) in self.absent:
            return True
        src = source_of(kind)
        # a malformed object skipped from the source may be this one: its absence is not known
        # nor is it when the read of its namespace (a peer's, other than the target's) failed: `src#namespace`
        return (src in self.sources and src not in self.gaps and src + "#malformed" not in self.gaps
                and f"{src}#{namespace}" not in self.gaps and self.get(kind, name, namespace) is None)

    def read_in(self, source: str) -> List[str]:
        """The namespaces a namespaced read of the source covered (`source#ns` marks, collect/api.py Request.scope):
        a DaemonSet list read namespace by namespace, once the cluster-wide one was refused, saw only those."""
        return sorted(s.split("#", 1)[1] for s in self.sources if s.startswith(source + "#"))

    def readable(self, source: str) -> bool:
        return source in self.sources and source not in self.gaps

    def gap(self, source: str) -> Optional[Gap]:
        if source in self.gaps:
            return self.gaps[source]
        if source not in self.sources:
            return Gap(source, "not-collected", "", "get")
        return None

    def gap_in(self, source: str, namespace: str) -> Optional[Gap]:
        """The gap of a namespaced source in one namespace: its own (`source#ns`, a read of another namespace than
        the target's), else the source's unless that one names another namespace (a gap with none covers all)."""
        scoped = self.gaps.get(f"{source}#{namespace}")
        if scoped is not None:
            return scoped
        gap = self.gap(source)
        return None if gap is not None and gap.namespace not in (None, namespace) and source in self.sources else gap

    @property
    def pod(self) -> Optional[dict]:
        if self.target.kind != "Pod":
            return None
        return self.get("Pod", self.target.name, self.target.namespace)

    @property
    def node(self) -> Optional[dict]:
        """The node under the target: the pod's node, or the target node itself."""
        if self.target.kind == "Node":
            return self.get("Node", self.target.name)
        pod = self.pod
        name = ((pod or {}).get("spec") or {}).get("nodeName")
        return self.get("Node", name) if name else None

    def log(self, pod: dict, container: str, previous: bool) -> Optional[str]:
        """A container's log, each line bounded in length (logs/lines.py): no pattern ever reads an unbounded line."""
        meta = pod.get("metadata") or {}
        text = self.logs.get((meta.get("namespace") or "", meta.get("name") or "", container, previous))
        return bounded(text) if text else text

    def events_for(self, obj: dict) -> List[dict]:
        """Events about one object (by uid when both have one), oldest first."""
        meta = obj.get("metadata") or {}
        uid, name, ns = meta.get("uid"), meta.get("name"), meta.get("namespace")
        kind = obj.get("kind") or ("Node" if not ns else "Pod")
        out = []
        for ev in self.all("Event"):
            io = ev.get("involvedObject") or ev.get("regarding") or {}
            # The kubelet reports Node events with the node's name as involvedObject.uid.
            if uid and io.get("uid") and io.get("uid") != name:
                if io.get("uid") == uid:
                    out.append(ev)
            elif io.get("name") == name and io.get("kind", kind) == kind and (io.get("namespace") or None) == (ns or None):
                out.append(ev)
        return sorted(out, key=lambda e: event_time(e) or _EPOCH)

    def pods_on(self, node_name: str) -> List[dict]:
        return [p for p in self.all("Pod") if ((p.get("spec") or {}).get("nodeName")) == node_name]

    def now(self) -> Optional[datetime]:
        """The diagnosis clock: collectedAt, else the newest timestamp in the evidence."""
        if self.collected_at:
            return self.collected_at
        newest = None
        for objs in self.objects.values():
            for obj in objs:
                for t in _timestamps(obj):
                    if newest is None or t > newest:
                        newest = t
        return newest


def event_time(ev: dict) -> Optional[datetime]:
    """When an event last happened: lastTimestamp, else series/eventTime (events.k8s.io writers), else first."""
    series = ev.get("series") or {}
    for key in ("lastTimestamp",):
        if ev.get(key):
            return parse_time(ev[key])
    if series.get("lastObservedTime"):
        return parse_time(series["lastObservedTime"])
    for key in ("eventTime", "firstTimestamp"):
        if ev.get(key):
            return parse_time(ev[key])
    return parse_time((ev.get("metadata") or {}).get("creationTimestamp"))


def event_count(ev: dict) -> int:
    series = ev.get("series") or {}
    return int(ev.get("count") or series.get("count") or 1)


def _ref(kind: str, name: str, namespace: Optional[str]) -> str:
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def _key(kind: str, obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return (kind, meta.get("namespace"), meta.get("name"), meta.get("uid"))


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

_TIME_FIELDS = ("creationTimestamp", "lastTimestamp", "firstTimestamp", "eventTime",
                "startedAt", "finishedAt", "lastTransitionTime", "lastProbeTime", "lastHeartbeatTime", "startTime")


def _timestamps(obj, depth: int = 0):
    if depth > 8:
        return
    if isinstance(obj, dict):
        for key, val in obj.items():
            if key in _TIME_FIELDS and isinstance(val, str):
                t = parse_time(val)
                if t:
                    yield t
            elif isinstance(val, (dict, list)):
                yield from _timestamps(val, depth + 1)
    elif isinstance(obj, list):
        for item in obj:
            yield from _timestamps(item, depth + 1)


@record
class ScanEvidence:
    """What a scan gathered: the unhealthy GPU pods' evidence, how many GPU pods the scope holds, and the GPU
    workloads whose pods are missing or refused (each as its own evidence and its unhealthy pods')."""
    pods: List[Evidence]
    gpu_pods: int
    scope: str
    collected_at: Optional[str] = None
    workloads: List[Tuple[Evidence, List[Evidence]]] = field(default_factory=list)
    gaps: List[Gap] = field(default_factory=list)
