"""Collects several pods at once — a workload's pods (deploy/x, sts/x, job/x…) or a namespace's GPU pods for scan."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import List, Tuple

from ..kube import podstate, workloads
from ..evidence import Evidence, ScanEvidence, Target
from ..kube.objects import meta
from ..kube.timeutil import format_time
from ..kube.workloads import uid
from .api import Api, ClusterError, Request, TargetNotFound, quote, refused
from .kubeconfig import ConnOptions, connect
from .parallel import run_all
from .pod import evidence_for, read_target
from .scheduling import queue_requests

POD_WORKERS = 4             # pods collected at once (each runs its own bounded pool of GETs)
PAGE = 500


def collect_workload(opts: ConnOptions, kind: str, wl_name: str, tail: int = 80) -> Tuple[Evidence, List[Evidence]]:
    """The workload's evidence (object, its ReplicaSets or Jobs, events, pods) and one evidence per unhealthy pod."""
    conn = connect(opts)
    api = Api(conn.client, opts.request_timeout)
    ns = conn.namespace
    spec_ = workloads.KINDS[kind]
    try:
        obj = read_target(api, f"{spec_.base}/namespaces/{quote(ns)}/{spec_.resource}/{quote(wl_name)}",
                          f'{spec_.resource}.{spec_.group} "{wl_name}"', ns)
    except TargetNotFound as exc:   # the failure path only: what the name may have meant
        from .suggest import workload_hints
        raise TargetNotFound(f"{exc}{workload_hints(api, spec_, kind, ns, wl_name)}") from None
    return _workload(api, dict(obj, kind=spec_.kind, apiVersion=spec_.api_version), tail)


def _workload(api: Api, obj: dict, tail: int) -> Tuple[Evidence, List[Evidence]]:
    ns, spec_ = meta(obj).get("namespace"), workloads.KINDS[obj["kind"].lower()]
    wev = Evidence(target=Target(spec_.kind, meta(obj).get("name"), ns), tail_lines=tail)
    wev.collected_at = datetime.now(timezone.utc).replace(microsecond=0)
    wev.add(obj)
    wev.mark_read(spec_.resource)
    selector = workloads.label_selector(obj)
    pods = f"/api/v1/namespaces/{quote(ns)}/pods"
    reqs = [Request("pods", "list", pods, {"labelSelector": selector}, "Pod")] if selector else []
    if spec_.kind == "Deployment":
        reqs.append(Request("replicasets", "list", f"/apis/apps/v1/namespaces/{quote(ns)}/replicasets",
                            {"labelSelector": selector}, "ReplicaSet"))
    if spec_.kind == "CronJob":   # its Jobs carry no label of the CronJob: list the namespace's (few) Jobs
        reqs.append(Request("jobs", "list", f"/apis/batch/v1/namespaces/{quote(ns)}/jobs", kind="Job"))
    reqs += queue_requests(obj)   # the batch-scheduler queue its pod template names (scheduler-queue-invalid)
    api.run(reqs, wev)
    owners = [obj] + workloads.current_replicasets(wev, obj) + workloads.owned_jobs(wev, obj)
    extra = [Request("pods", "list", pods, {"labelSelector": workloads.label_selector(j)}, "Pod")
             for j in workloads.owned_jobs(wev, obj) if workloads.label_selector(j)]
    api.run(extra + [Request("events", "list", f"/api/v1/namespaces/{quote(ns)}/events",
                             {"fieldSelector": f"involvedObject.uid={uid(o)}"}, "Event") for o in owners if uid(o)], wev)
    pods = workloads.owned_pods(wev, obj)
    wev.objects["Pod"] = pods
    return wev, _diagnose_each(api, workloads.to_diagnose(pods), tail)


def scan_pods(opts: ConnOptions, all_namespaces: bool, tail: int = 80) -> ScanEvidence:
    """Evidence for the unhealthy GPU pods in the namespace (or cluster), and for its GPU workloads whose pods
    are missing or refused (Deployments, StatefulSets, Jobs, CronJobs: listed, never their pods cluster-wide)."""
    conn = connect(opts)
    api = Api(conn.client, opts.request_timeout)
    scope = "all namespaces" if all_namespaces else f"namespace {conn.namespace}"
    where = "" if all_namespaces else f"/namespaces/{quote(conn.namespace)}"
    gpu_count, unhealthy = _list_gpu_pods(api, f"/api/v1{where}/pods", scope)
    evs = _diagnose_each(api, workloads.to_diagnose(unhealthy), tail)
    found = Evidence(target=Target("Scan", "", None if all_namespaces else conn.namespace))
    api.run([Request(k.resource, "list", f"{k.base}{where}/{k.resource}", kind=k.kind) for k in workloads.SCANNED]
            + [Request("events", "list", f"/api/v1{where}/events", {"fieldSelector": "reason=FailedCreate"}, "Event")],
            found)
    wls = [_workload(api, o, tail) for o in workloads.scan_candidates(found)]
    when = next((format_time(e.now()) for e in evs + [w for w, _ in wls]), None)
    return ScanEvidence(evs, gpu_count, scope, when, wls, list(found.gaps.values()))


def _list_gpu_pods(api: Api, path: str, scope: str) -> Tuple[int, List[dict]]:
    """(GPU pods of the scope, the unhealthy ones), read page by page and kept as they stream by: a page's healthy
    and non-GPU pods are dropped before the next page is read. Failing to list is failing to scan (exit 3)."""
    count, out, token = 0, [], None
    while True:
        query = {"limit": str(PAGE), "fieldSelector": "status.phase!=Succeeded"}
        if token:
            query["continue"] = token
        resp = api.get(path, query)
        if resp.reason in ("unauthorized", "forbidden"):
            ns = path.split("/")[4] if "/namespaces/" in path else None
            raise ClusterError(refused(api, resp, "list", path, ns, f"cannot list pods in {scope}"))
        if resp.reason != "ok":
            raise ClusterError(f"cannot list pods in {scope}: {resp.message}")
        for p in resp.body.get("items") or []:
            if workloads.uses_gpu(p):
                count += 1
                if podstate.health(p) != "healthy":
                    out.append(dict(p, kind="Pod", apiVersion="v1"))
        token = (resp.body.get("metadata") or {}).get("continue")
        if not token:
            return count, out


def _diagnose_each(api: Api, pods: List[dict], tail: int) -> List[Evidence]:
    if not pods:
        return []
    return run_all(lambda p: evidence_for(api, p, tail), pods, POD_WORKERS)
