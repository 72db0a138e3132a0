"""The other GPU pods on a pod's node, read as corroboration of a GPU driver/library/visibility failure: pods of
other workloads there failing the same way point at the node's stack (device plugin, container toolkit, driver);
GPU pods there running with their GPUs point at the pod's own image. Pure: collect/node.py asks which sibling logs
to read (only once such a failure is seen), the crash rules judge what was read."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..evidence import Evidence
from ..kube import podstate
from ..kube.objects import container_gpus, containers, controller_of, labels, name, namespace, spec
from ..logs import scan as logscan
from . import stack as gpustack

MAX_SIBLINGS = 3            # sibling log tails read for one pod diagnosis
SIBLING_TAIL = 40           # lines of each (a GPU stack error is printed at start-up, near the end of a crashed run)
SIBLING_LOG_BYTES = 64 * 1024
# The rules whose log lines say the container cannot use the node's GPU stack.
STACK_RULES = ("cuda-driver-too-old", "gpu-not-visible", "driver-libraries-missing")
# The GPU operator's own CUDA workloads on the node (vectorAdd under the NVIDIA runtime): one failing as the pod does
# is the operator's test of the same stack failing; the other operands are the stack itself, not workloads on it.
VALIDATORS = ("cuda-validator", "plugin-validator")
# cudart's cudaErrorInsufficientDriver is also what a container without libcuda reads: it is alike both families.
AMBIGUOUS = "cuda-insufficient-driver"


def workload(pod: dict) -> Tuple[str, str]:
    """(kind, name) of what made the pod: two ReplicaSets of one Deployment (two revisions) are one workload."""
    owner = controller_of(pod)
    if not owner:
        return "Pod", name(pod)
    kind, oname = owner.get("kind") or "", owner.get("name") or ""
    tmpl = labels(pod).get("pod-template-hash")
    if kind == "ReplicaSet" and tmpl and oname.endswith("-" + tmpl):
        return "Deployment", oname[:-len(tmpl) - 1]
    return kind, oname


def workload_text(pod: dict) -> str:
    kind, oname = workload(pod)
    return "a bare pod" if kind == "Pod" else f"{kind} {oname}"


def failed_runs(pod: dict) -> List[Tuple[dict, dict, Optional[bool]]]:
    """(container, termination, previous) of the pod's GPU containers (any of a validator's) whose latest run exited
    non-zero; previous: the log to read for it (a container that restarted: its previous instance; one that stays
    terminated: its own)."""
    out, validator = [], _validator(pod)
    for c, cs, _ in podstate.all_container_states(pod):
        term = podstate.latest_termination(cs)
        if not (container_gpus(c) or validator) or not term or term.get("exitCode", 0) == 0:
            continue
        prev = int(cs.get("restartCount") or 0) > 0 and not podstate.terminated(cs)
        out.append((c, term, prev))
    return out


def _families(sig) -> set:
    return {"driver-libraries-missing", "cuda-driver-too-old"} if sig.id == AMBIGUOUS else {sig.rule}


def alike(a, b) -> bool:
    """Two stack signatures that say the same thing about the node's GPU stack (the same rule's lines)."""
    return a.id == b.id or bool(_families(a) & _families(b))


def stack_match(ev: Evidence, pod: dict, cname: str):
    """The newest line of a stack signature in the container's log tails that were read, or None."""
    found = [m for r in STACK_RULES for m in logscan.scan(ev, pod, cname, r)]
    return found[0] if found else None


def own_failure(ev: Evidence):
    """The stack signature the target pod's failed GPU run logged, or None (then no sibling is worth a read)."""
    pod = ev.pod or {}
    return next((m for c, _, _ in failed_runs(pod) for m in [stack_match(ev, pod, c["name"])] if m), None)


def others(ev: Evidence, pod: dict) -> List[dict]:
    """The GPU pods on the pod's node other than it and the GPU stack's own pods (operands, device plugins), and
    the operator's validators."""
    node = spec(pod).get("nodeName")
    if not node or not gpustack.pods_known(ev, node):
        return []
    return [p for p in ev.pods_on(node) if (namespace(p), name(p)) != (namespace(pod), name(pod))
            and (any(container_gpus(c) for c in containers(p) + containers(p, init=True)) and
                 gpustack.component_of(p) is None or _validator(p))]


def _validator(pod: dict) -> bool:
    comp = gpustack.component_of(pod)
    return comp is not None and comp.key in VALIDATORS


def candidates(ev: Evidence, pod: dict) -> List[Tuple[dict, dict, dict, bool]]:
    """(sibling, container, termination, previous) of at most MAX_SIBLINGS failed GPU runs on the node of other
    workloads (a replica of the same one, same image and spec, proves nothing about the node), newest first."""
    mine = workload(pod)
    runs = [(p, c, term, prev) for p in others(ev, pod) if workload(p) != mine for c, term, prev in failed_runs(p)[:1]]
    runs.sort(key=lambda r: _negated(r[2].get("finishedAt") or ""))
    return runs[:MAX_SIBLINGS]


def unread(ev: Evidence, pod: dict) -> List[dict]:
    """Pods of other workloads on the node whose GPU runs failed but whose logs were not read (refused, not in the
    input, or past MAX_SIBLINGS): whether they fail the same way is not known."""
    mine = workload(pod)
    return [p for p in others(ev, pod) if workload(p) != mine and failed_runs(p)
            and not any(ev.log(p, c["name"], prev) for c, _, _ in failed_runs(p) for prev in (True, False))]


def _negated(stamp: str) -> str:
    """A sort key that orders RFC 3339 timestamps newest first."""
    return "".join(chr(0x10FFFF - ord(ch)) for ch in stamp)


def failing_alike(ev: Evidence, pod: dict, m) -> List[Tuple[dict, object]]:
    """(sibling, its matched line) of pods of OTHER workloads on the node whose failed GPU run logged what `m`
    says; only logs that were read count (a sibling's state alone is no evidence of the same failure)."""
    if m is None:
        return []
    mine, out = workload(pod), []
    for p in others(ev, pod):
        if workload(p) == mine:
            continue
        for c, _, _ in failed_runs(p):
            theirs = stack_match(ev, p, c["name"])
            if theirs and alike(theirs.signature, m.signature):
                out.append((p, theirs))
                break
    return out


def healthy(ev: Evidence, pod: dict) -> List[dict]:
    """GPU pods of other workloads on the node that are Ready with no failed run: their GPUs work there."""
    mine = workload(pod)
    return [p for p in others(ev, pod) if workload(p) != mine and gpustack.is_ready(p)
            and podstate.health(p, ev.now()) == "healthy"]


def names(pods) -> str:
    """'ns/a (Deployment x), ns/b (Job y)'."""
    return ", ".join(f"{namespace(p)}/{name(p)} ({workload_text(p)})" for p in pods)
