"""What a pod, workload or node name that was not found may have meant: close names in its namespace (or among the
nodes), the namespaces that hold it, a node, pod or workload of that name. Read only once the target's GET said 404,
one GET per hint, all at once; a hint whose read fails (forbidden, timeout) is simply not given."""
from __future__ import annotations

from typing import List, Optional

from ..kube.names import subdomain_error
from .api import METADATA_ONLY, NODE_PAGE, Api, quote
from .parallel import run_all

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
LIST_LIMIT = "500"      # names compared in the namespace; a larger namespace is compared on its first 500
MAX_CLOSE = 3           # close names offered
# Workloads a pod name may really be: kind, its short form on the command line, the API path of one.
WORKLOADS = (("Deployment", "deploy", "/apis/apps/v1/namespaces/{ns}/deployments/{name}"),
             ("StatefulSet", "sts", "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}"),
             ("Job", "job", "/apis/batch/v1/namespaces/{ns}/jobs/{name}"))


def pod_hints(api: Api, ns: Optional[str], pod_name: str) -> str:
    """"; did you mean …; …" to append to the not-found message, or "" when nothing close exists. `ns` None:
    the pod was looked for in every namespace (no namespace to compare names in)."""
    reads = [("node", f"/api/v1/nodes/{quote(pod_name)}", {}, METADATA_ONLY)]
    if ns:
        reads += _named_reads("/api/v1", "pods", ns, pod_name)
        reads += [(kind, path.format(ns=quote(ns), name=quote(pod_name)), {}, METADATA_ONLY)
                  for kind, _, path in WORKLOADS]
    answers = _read(api, reads)
    hints: List[str] = []
    if _found(answers["node"]):
        hints.append(f"that is a node: kubectl gpudoctor node {pod_name}")
    for kind, short, _ in WORKLOADS:
        if _found(answers.get(kind)):
            hints.append(f"that is a {kind}: kubectl gpudoctor {short}/{pod_name}")
    return _join(hints + _named_hints(answers, ns, pod_name, "a pod", "pods", ""))


def workload_hints(api: Api, kind, alias: str, ns: str, name: str) -> str:
    """The same for `alias/name` (a WorkloadKind `kind`): close names of that kind, the namespaces holding one
    of that name, or a pod of that name."""
    reads = _named_reads(kind.base, kind.resource, ns, name)
    reads.append(("pod", f"/api/v1/namespaces/{quote(ns)}/pods/{quote(name)}", {}, METADATA_ONLY))
    answers = _read(api, reads)
    hints = [f"that is a pod: kubectl gpudoctor {name}"] if _found(answers["pod"]) else []
    return _join(hints + _named_hints(answers, ns, name, f"a {kind.kind}", f"{kind.kind}s", f"{alias}/"))


def node_hints(api: Api, ns: Optional[str], node_name: str) -> str:
    """The same for `node NAME`: close node names (names only, every node of a supported cluster in one page;
    a cloud node's short hostname finds its full name), or a pod of that name in the current namespace."""
    reads = [("close", "/api/v1/nodes", {"limit": str(NODE_PAGE)}, METADATA_LIST)]
    if ns:
        reads.append(("pod", f"/api/v1/namespaces/{quote(ns)}/pods/{quote(node_name)}", {}, METADATA_ONLY))
    answers = _read(api, reads)
    hints = [f"that is a pod: kubectl gpudoctor {node_name} -n {ns}"] if _found(answers.get("pod")) else []
    close = [f"node {c}" for c in closest(node_name, _names(answers.get("close")), stems=False)]
    if close:
        hints.append("did you mean " + (close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"))
    return _join(hints)


def _named_reads(base: str, resource: str, ns: str, name: str) -> list:
    """The names of that resource in the namespace, and the objects of that name in every namespace."""
    return [("close", f"{base}/namespaces/{quote(ns)}/{resource}", {"limit": LIST_LIMIT}, METADATA_LIST),
            ("elsewhere", f"{base}/{resource}", {"fieldSelector": f"metadata.name={name}", "limit": "50"},
             METADATA_LIST)]


def _named_hints(answers: dict, ns: str, name: str, one: str, many: str, prefix: str) -> List[str]:
    hints = []
    spaces = sorted({n for n in _names(answers.get("elsewhere"), "namespace") if n != ns})
    if len(spaces) == 1:
        either = " or -A" if one == "a pod" else ""   # -A finds a pod in any namespace; a workload takes -n
        hints.append(f"{one} of that name is in namespace {spaces[0]}: use -n {spaces[0]}{either}")
    elif spaces:
        hints.append(f"{many} of that name are in namespaces {', '.join(spaces)}: use -n NAMESPACE")
    close = [prefix + c for c in closest(name, _names(answers.get("close")))]
    if close:
        hints.append("did you mean " + (close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"))
    return hints


def _read(api: Api, reads: list) -> dict:
    """Every read at once: {key: Response}."""
    return dict(zip((r[0] for r in reads), run_all(lambda r: api.get(r[1], r[2], accept=r[3]), reads, len(reads))))


def _join(hints: List[str]) -> str:
    return "".join(f"; {h}" for h in hints)


def closest(name: str, candidates: List[str], stems: bool = True) -> List[str]:
    """The candidates the name may have meant, best first: names it begins (a controller's generated name,
    `inference` for `inference-7d9f8b6c5-x2x9q`), names sharing its generated stem (a pod its controller has
    since re-created under a new suffix), then names a few edits away (a typo). Node names share their stem by
    the hundred (gpu-node-0001…, ip-10-1-0-11…), so for them (`stems` False) a stem says nothing."""
    stem = name.rsplit("-", 1)[0] + "-" if "-" in name and stems else None
    prefixed = sorted(c for c in candidates if c != name and (
        c.startswith(name) and (len(name) >= 4 or c[len(name)] == "-") or stem and c.startswith(stem)))
    bound = max(2, len(name) // 4)
    typos = sorted((d, c) for c in candidates if c not in prefixed
                   for d in [edit_distance(name, c, bound)] if d <= bound)
    return (prefixed + [c for _, c in typos])[:MAX_CLOSE]


def edit_distance(a: str, b: str, bound: int) -> int:
    """Levenshtein distance, or bound + 1 once it is certain to exceed `bound`."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        if min(row) > bound:
            return bound + 1
    return row[-1]


def _found(resp) -> bool:
    return resp is not None and resp.reason == "ok"


def _names(resp, key: str = "name") -> List[str]:
    """Names (or namespaces) of a list's items that are valid Kubernetes names: anything else a server sends is
    not echoed."""
    if not _found(resp) or not isinstance(resp.body, dict):
        return []
    out = []
    for item in resp.body.get("items") or []:
        value = ((item or {}).get("metadata") or {}).get(key) if isinstance(item, dict) else None
        if isinstance(value, str) and len(value) <= 253 and subdomain_error(value) is None:
            out.append(value)
    return out
