"""Workloads as plain dicts: kind aliases (deploy/x), their pods by selector and owner, readiness; pure functions."""
from __future__ import annotations

from typing import Dict, List, Optional

from . import podstate
from ..record import record
from .affinity import selector_query
from .objects import condition, controller_of, gpu_request, meta, netdev_request, spec, status

# Pods diagnosed in full per command (workload or scan); the rest are counted, live and offline alike.
MAX_DIAGNOSED = 25


@record(frozen=True)
class WorkloadKind:
    kind: str
    resource: str
    group: str
    version: str = "v1"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}"


_DEPLOY = WorkloadKind("Deployment", "deployments", "apps")
_STS = WorkloadKind("StatefulSet", "statefulsets", "apps")
_DS = WorkloadKind("DaemonSet", "daemonsets", "apps")
_RS = WorkloadKind("ReplicaSet", "replicasets", "apps")
_JOB = WorkloadKind("Job", "jobs", "batch")
_CRONJOB = WorkloadKind("CronJob", "cronjobs", "batch")
# The short names and plurals kubectl accepts for `<kind>/<name>`.
KINDS: Dict[str, WorkloadKind] = {
    **dict.fromkeys(("deploy", "deployment", "deployments", "deployment.apps", "deployments.apps"), _DEPLOY),
    **dict.fromkeys(("sts", "statefulset", "statefulsets", "statefulset.apps", "statefulsets.apps"), _STS),
    **dict.fromkeys(("ds", "daemonset", "daemonsets", "daemonset.apps", "daemonsets.apps"), _DS),
    **dict.fromkeys(("rs", "replicaset", "replicasets", "replicaset.apps", "replicasets.apps"), _RS),
    **dict.fromkeys(("job", "jobs", "job.batch", "jobs.batch"), _JOB),
    **dict.fromkeys(("cj", "cronjob", "cronjobs", "cronjob.batch", "cronjobs.batch"), _CRONJOB),
}
# The kinds a scan lists to find workloads whose pods are missing (DaemonSets and bare ReplicaSets: their pods).
SCANNED = (_DEPLOY, _STS, _JOB, _CRONJOB)
WORKLOAD_KINDS = {k.kind for k in KINDS.values()}


def parse_ref(text: str) -> Optional[tuple]:
    """("deploy", "x") for `deploy/x`, None when the text is not a workload reference."""
    kind, sep, wl_name = text.partition("/")
    if not sep or not wl_name or kind.lower() not in KINDS:
        return None
    return kind.lower(), wl_name


def template_pod(workload: dict) -> dict:
    """The pod a workload's template describes, as its controller would create it: the template's labels,
    annotations and spec, in the workload's namespace, owned by the workload (a CronJob's through its jobTemplate)."""
    tpl = spec(workload).get("template") if workload.get("kind") != "CronJob" else \
        (spec(spec(workload).get("jobTemplate") or {}) or {}).get("template")
    tpl = tpl if isinstance(tpl, dict) else {}
    m, tm = meta(workload), tpl.get("metadata") if isinstance(tpl.get("metadata"), dict) else {}
    ref = {"apiVersion": workload.get("apiVersion") or "", "kind": workload.get("kind") or "", "name": m.get("name"),
           "uid": m.get("uid"), "controller": True}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{m.get('name')}-template", "namespace": m.get("namespace"),
                         "labels": dict(tm.get("labels") or {}), "annotations": dict(tm.get("annotations") or {}),
                         "ownerReferences": [ref]},
            "spec": tpl.get("spec") if isinstance(tpl.get("spec"), dict) else {}}


def label_selector(obj: dict) -> str:
    return selector_query(spec(obj).get("selector")) or ""


def current_replicasets(ev, deployment: dict) -> List[dict]:
    """A Deployment's ReplicaSets, newest first (the ones whose events explain missing pods)."""
    if deployment.get("kind") != "Deployment":
        return []
    owned = [rs for rs in ev.all("ReplicaSet") if (controller_of(rs) or {}).get("uid") == uid(deployment)]
    return sorted(owned, key=lambda rs: meta(rs).get("creationTimestamp") or "", reverse=True)[:3]


def owned_jobs(ev, cronjob: dict) -> List[dict]:
    """A CronJob's Jobs, newest first."""
    if cronjob.get("kind") != "CronJob":
        return []
    owned = [j for j in ev.all("Job") if (controller_of(j) or {}).get("uid") == uid(cronjob)]
    return sorted(owned, key=lambda j: meta(j).get("creationTimestamp") or "", reverse=True)[:3]


def owned_pods(ev, obj: dict) -> List[dict]:
    """Pods whose controller is the workload (or, for a Deployment, one of its ReplicaSets; for a CronJob, one of
    its Jobs)."""
    owners = {uid(obj)} | {uid(rs) for rs in current_replicasets(ev, obj)} | {uid(j) for j in owned_jobs(ev, obj)}
    if obj.get("kind") == "Deployment":
        owners |= {uid(rs) for rs in ev.all("ReplicaSet") if (controller_of(rs) or {}).get("uid") == uid(obj)}
    return [p for p in ev.all("Pod") if (controller_of(p) or {}).get("uid") in owners]


def pod_template(obj: dict) -> dict:
    """The pod the workload creates, shaped as a pod (a CronJob's through its jobTemplate)."""
    sp = spec(obj)
    if obj.get("kind") == "CronJob":
        sp = spec(sp.get("jobTemplate") or {})
    return sp.get("template") or {}


def needs_attention(ev, obj: dict) -> bool:
    """A GPU workload a scan must show though its pods may not exist: pods refused at creation (ReplicaFailure,
    FailedCreate), fewer pods than desired, or a failed Job."""
    if not uses_gpu(pod_template(obj)) or settled(obj):
        return False
    if any((condition(obj, c) or {}).get("status") == "True" for c in ("ReplicaFailure", "Failed")):
        return True
    if any(e.get("reason") == "FailedCreate" for o in [obj] + current_replicasets(ev, obj) for e in ev.events_for(o)):
        return True
    return obj.get("kind") in ("Deployment", "StatefulSet") and status(obj).get("replicas", 0) < spec(obj).get("replicas", 1)


def uid(obj: dict) -> str:
    return meta(obj).get("uid") or ""


def uses_gpu(pod: dict) -> bool:
    """A GPU pod: it requests a GPU-class or network-device resource, or runs under a RuntimeClass."""
    return bool(gpu_request(pod) or netdev_request(pod) or spec(pod).get("runtimeClassName"))


def readiness(obj: dict) -> str:
    """What `kubectl get` shows for the workload: READY x/y, or a Job's active/succeeded/failed."""
    st = status(obj)
    if obj.get("kind") == "Job":
        return (f"active {st.get('active', 0)}, succeeded {st.get('succeeded', 0)}, failed {st.get('failed', 0)}")
    if obj.get("kind") == "DaemonSet":
        return f"{st.get('numberReady', 0)}/{st.get('desiredNumberScheduled', 0)} ready"
    if obj.get("kind") == "CronJob":
        return f"last schedule {st.get('lastScheduleTime') or 'never'}, {len(st.get('active') or [])} active"
    return f"{st.get('readyReplicas', 0)}/{spec(obj).get('replicas', 1)} ready"


def settled(obj: dict) -> bool:
    """All desired pods are ready (or the Job completed)."""
    st = status(obj)
    if obj.get("kind") == "Job":
        return any(c.get("type") == "Complete" and c.get("status") == "True" for c in st.get("conditions") or [])
    if obj.get("kind") == "DaemonSet":
        return st.get("numberReady", 0) >= st.get("desiredNumberScheduled", 0)
    if obj.get("kind") == "CronJob":   # its last scheduled run succeeded (or it never ran)
        return not st.get("lastScheduleTime") or (st.get("lastSuccessfulTime") or "") >= st["lastScheduleTime"]
    return st.get("readyReplicas", 0) >= spec(obj).get("replicas", 1)


def to_diagnose(pods: List[dict]) -> List[dict]:
    """The unhealthy pods worth a full diagnosis, by namespace and name, at most MAX_DIAGNOSED of them."""
    unhealthy = [p for p in pods if podstate.health(p) != "healthy"]
    return sorted(unhealthy, key=lambda p: (meta(p).get("namespace", ""), meta(p).get("name", "")))[:MAX_DIAGNOSED]


def scan_candidates(ev, namespace: Optional[str] = None) -> List[dict]:
    """The GPU workloads of the scope that need attention (see needs_attention), at most MAX_DIAGNOSED."""
    found = [o for k in SCANNED for o in ev.all(k.kind)
             if (namespace is None or meta(o).get("namespace") == namespace) and needs_attention(ev, o)]
    return sorted(found, key=lambda o: (meta(o).get("namespace", ""), o.get("kind", ""), meta(o).get("name", "")))[:MAX_DIAGNOSED]
