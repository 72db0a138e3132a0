"""Init-phase rules: an init container fails, or a driver (init) container cannot build the driver for the kernel."""
from __future__ import annotations

import re
import string
from typing import List, Optional, Tuple

from ...logs import scan as logscan
from ...kube import podstate
from ...data.log_signatures import SIGNATURES
from ...data.signatures_init import NVIDIA_BUILD_LOG
from ...record import replace
from ...kube.objects import annotations, condition, containers, controller_of, labels, meta, name, spec, status
from .._common import scheduled, status_line
from . import waiting
from ..registry import RULES, SPECIFIC, Hit, Line, rule

TAIL_LINES = 5


def _init_failures(pod) -> List[Tuple[dict, dict, dict, str]]:
    """(init container, status, failing termination record, field) for init containers whose latest run failed,
    while the pod is not initialized. A start failure (StartError, the process never ran) is a creation problem."""
    if (condition(pod, "Initialized") or {}).get("status") == "True":
        return []   # every init container succeeded; a sidecar's later crash is the crash rules' business
    out = []
    for c, cs, init in podstate.all_container_states(pod):
        term = podstate.terminated(cs)
        fld, rec = ("state", term) if term else ("lastState", podstate.last_terminated(cs))
        if init and rec and _failed(rec) and rec.get("reason") not in podstate.START_FAILURES:
            out.append((c, cs, rec, fld))
    return out


def _failed(rec) -> bool:
    # An OOMKilled init container can report exit code 0 (NVIDIA/nvidia-container-toolkit#30).
    return rec.get("exitCode", 0) != 0 or rec.get("reason") in ("OOMKilled", "Error")


def _has_init(ev):
    return scheduled(ev) and bool(containers(ev.pod, init=True))


@rule("init-container-failing", phase="init", severity="critical", rank=SPECIFIC, applies=_has_init,
      title="An init container fails",
      remediation="Fix init container $container's own failure ($cause): the pod's other containers wait until it "
                  "succeeds. Read its log: `kubectl logs $pod -n $namespace -c $container --previous`.")
def init_container_failing(ev):
    """An init container is in CrashLoopBackOff or terminated non-zero: names it, its exit code, its log tail, and
    the crash rule that explains it (OOMKilled, command not found, a log signature)."""
    fails = _init_failures(ev.pod)
    if not fails:
        return None
    c, cs, rec, fld = fails[0]
    order = [x.get("name") for x in containers(ev.pod, init=True)].index(c["name"]) + 1
    restarts = int(cs.get("restartCount") or 0)
    how = rec.get("reason") or "Error"
    running = (cs.get("state") or {}).get("running") is not None
    head = (f"Init container {c['name']} ({order} of {len(containers(ev.pod, init=True))}) "
            f"{'failed before and is running again' if running else 'fails'}: exit code {rec.get('exitCode')} ({how})"
            + (f", {restarts} restarts" if restarts else ""))
    rid, crash = _explained_by(ev, c, cs)
    why = f"; {rid} explains it: {(crash.summary or crash.message.split('. ')[0]).rstrip('.')}" if crash else ""
    lines = [status_line(c["name"], fld, rec)] + _tail(ev, c["name"])
    # A wait that gives up (wait-for-it --strict, a client's retries): the peer it dialed, and why it did not answer
    peer = waiting.failed_run_peer(ev, c, cs) if rid in WAIT_CAUSES else None
    dialed = f" It waited for {peer[0].shown}: {peer[1].says}" if peer else ""
    decisive = peer is not None and peer[1].decisive
    return Hit(head + why + ". The app containers cannot start until it succeeds." + dialed,
               lines + (peer[1].lines if peer else []),
               values={"container": c["name"], "cause": rid or how},
               fix=peer[1].fix if decisive else _crash_fix(rid, crash),
               snippet=(peer[1].snippet or None) if decisive else None, edits=peer[1].edits if decisive else None,
               severity="warning" if running else None,
               summary=head + (f" ({rid})" if rid else "") + (f": {peer[1].short}" if decisive else ""),
               next=[f"kubectl logs {name(ev.pod)} -n {ev.target.namespace} -c {c['name']} --previous --tail={ev.tail_lines}"])


# Causes of a failed init run that a peer's state may explain further (connection failures, an unclassified exit).
WAIT_CAUSES = (None, "dependency-unreachable", "app-error")


def _explained_by(ev, c, cs) -> Tuple[Optional[str], Optional[Hit]]:
    """The crash rule that explains this init container's failure, run on a view of the pod holding only it."""
    pod = dict(ev.pod, spec=dict(spec(ev.pod), initContainers=[c], containers=[]),
               status=dict(status(ev.pod), initContainerStatuses=[cs], containerStatuses=[]))
    others = [p for p in ev.all("Pod") if p is not ev.pod]
    view = replace(ev, objects=dict(ev.objects, Pod=[pod] + others))
    crash = sorted((r for r in RULES.values() if r.phase == "crash" and r.severity != "info"),
                   key=lambda r: (r.fallback, -r.rank, r.order))
    for r in crash:
        if (r.applies and not r.applies(view)) or any(view.gap(s) for s in r.needs):
            continue
        try:
            hit = r.check(view)
        except Exception:  # a crash rule's bug must not hide the init finding
            continue
        if isinstance(hit, Hit):
            return r.id, hit
    return None, None


def _crash_fix(rid, hit) -> Optional[str]:
    """The explaining rule's remediation with its own values filled in ($pod and $namespace stay for the verdict)."""
    if not rid:
        return None
    text = hit.fix or RULES[rid].remediation
    return string.Template(text).safe_substitute({k: str(v) for k, v in hit.values.items()})


def _tail(ev, container) -> List[Line]:
    """The last lines of the init container's previous log (else its current log)."""
    for previous in (True, False):
        text = ev.log(ev.pod, container, previous)
        if text:
            rows = [r for r in logscan.clean(text).split("\n") if r.strip()]
            which = "previous log" if previous else "log"
            first = len(rows) - min(TAIL_LINES, len(rows)) + 1
            return [Line("log", f"{name(ev.pod)}/{container} {which}, line {first + i}", r.strip()[:300])
                    for i, r in enumerate(rows[-TAIL_LINES:])]
    return []


# --- driver containers ---------------------------------------------------------------------------------------------

ARGO_TRACKING = "argocd.argoproj.io/tracking-id"
ARGO_LABEL = "argocd.argoproj.io/instance"   # the custom tracking label Argo CD's docs recommend


def _failing(cs) -> bool:
    """Not running-and-ready: waiting after a crash, exited non-zero, or restarting without being ready yet."""
    term = podstate.terminated(cs)
    if term:
        return term.get("exitCode", 0) != 0
    return podstate.waiting(cs).get("reason") is not None or (int(cs.get("restartCount") or 0) > 0 and not cs.get("ready"))


DRIVER_FIX = ("Align the driver with kernel $kernel of node $node: use a driver version/image that supports it "
              "(precompiled driver images exist only for specific kernels), let the driver container reach the "
              "distribution's repositories for kernel headers, or pin the node's kernel to one the driver supports.")


@rule("driver-kernel-mismatch", phase="init", severity="critical", rank=SPECIFIC + 5, applies=scheduled,
      needs=("pods/log",), title="The NVIDIA driver cannot be built or loaded for the node's kernel",
      remediation=DRIVER_FIX,
      snippet="$snippet")
def driver_kernel_mismatch(ev):
    """A driver container's (init or main) log says the NVIDIA driver cannot be built or loaded for the running
    kernel: `Could not resolve Linux kernel version`, no precompiled package, missing headers, wrong module."""
    pod = ev.pod
    for c, cs, _ in podstate.all_container_states(pod):
        m = _driver_line(ev, pod, c) if _failing(cs) else None
        if not m:
            continue
        kernel = ((ev.node or {}).get("status") or {}).get("nodeInfo", {}).get("kernelVersion") or "?"
        tracked = _argo_tracking(ev)
        gitops = (f" {tracked[0]} is managed by Argo CD ({tracked[1]}): make the change in Git, not with kubectl, or "
                  f"Argo CD reverts it; if the operator itself rewrites a field Argo CD tracks, add that field to the "
                  f"Application's ignoreDifferences.") if tracked else ""
        built = re.search(r"-(\d+\.\d+\.\d+-\d+[\w.-]*?)-(?:ubuntu|rhel|rhcos|sles)", c.get("image", ""))
        other = f", built for kernel {built.group(1)}" if built and built.group(1) != kernel else ""
        return Hit(f"Container {c['name']} (image {c.get('image', '?')}{other}) cannot build or load the NVIDIA driver "
                   f"for kernel {kernel} of node {spec(pod).get('nodeName')}: {m.signature.meaning}.",
                   [m.as_line(name(pod)), status_line(c["name"], "lastState" if podstate.last_terminated(cs) else "state",
                                                      podstate.latest_termination(cs) or podstate.waiting(cs))],
                   fix=DRIVER_FIX + gitops if tracked else None, values={"kernel": kernel, "snippet": _argo_snippet(tracked, kernel) if tracked else
                           f"kubectl get node {spec(pod).get('nodeName')} -o jsonpath='{{.status.nodeInfo.kernelVersion}}'\n"
                           f"kubectl logs {name(pod)} -n {ev.target.namespace} -c {c['name']} --previous --tail={ev.tail_lines}"})
    return None


def _driver_line(ev, pod, c) -> Optional[logscan.Match]:
    """The newest line of the most specific driver-kernel signature in the container's latest log that has one
    (previous first); the generic make/modpost line counts only in an NVIDIA driver build's log."""
    order = {sig.id: i for i, sig in enumerate(SIGNATURES)}
    found = logscan.scan(ev, pod, c["name"], "driver-kernel-mismatch")
    for previous in (True, False):
        text = ev.log(pod, c["name"], previous) or ""
        mine = [m for m in found if m.previous == previous and (m.signature.id != "driver-kernel-make" or re.search(NVIDIA_BUILD_LOG, text))]
        if mine:
            return min(mine, key=lambda m: (order[m.signature.id], -m.lineno))
    return None


def _owner_chain(ev) -> List[dict]:
    """The pod, then its controllers as far as they were read (ReplicaSet -> Deployment, DaemonSet -> ClusterPolicy)."""
    chain, obj = [ev.pod], ev.pod
    for _ in range(3):
        ref = controller_of(obj)
        nxt = ev.get(ref["kind"], ref["name"], meta(obj).get("namespace")) if ref else None
        if nxt is None:
            break
        chain.append(nxt)
        obj = nxt
    return chain


def _argo_tracking(ev) -> Optional[Tuple[str, str]]:
    """(object, how Argo CD tracks it) for the first object of the owner chain with Argo CD tracking metadata.
    `app.kubernetes.io/instance` alone (Argo CD's label tracking, but Helm sets it too) counts only on owners."""
    for strict in (True, False):
        for i, obj in enumerate(_owner_chain(ev)):
            ann, lab = annotations(obj), labels(obj)
            what = f"{obj.get('kind', 'Pod')} {name(obj)}"
            if strict and ARGO_TRACKING in ann:
                return what, f"application {ann[ARGO_TRACKING].split(':')[0]}, annotation {ARGO_TRACKING}"
            if strict and ARGO_LABEL in lab:
                return what, f"application {lab[ARGO_LABEL]}, label {ARGO_LABEL}"
            if not strict and i > 0 and "app.kubernetes.io/instance" in lab:
                return what, (f"probably: label app.kubernetes.io/instance={lab['app.kubernetes.io/instance']} is "
                              f"Argo CD's label tracking, though Helm sets it too")
    return None


def _argo_snippet(tracked, kernel) -> str:
    """Where the fix goes when Argo CD owns the object: the Helm values in Git, or ignoreDifferences for a live edit."""
    kind, obj = tracked[0].split(" ", 1)
    group, pointer = {"ClusterPolicy": ("nvidia.com", "/spec/driver"), "NVIDIADriver": ("nvidia.com", "/spec"),
                      "DaemonSet": ("apps", "/spec/template/spec"), "Deployment": ("apps", "/spec/template/spec")
                      }.get(kind, ("", "/spec"))
    values = {"ClusterPolicy": "# In Git: the gpu-operator chart values of that Application\ndriver:\n",
              "NVIDIADriver": "# In Git: the NVIDIADriver manifest of that Application\nspec:\n"}.get(kind, "")
    values += (f"  version: \"<a driver that supports kernel {kernel}>\"   # or usePrecompiled: false to build from "
               "source\n") if values else ""
    return (values + f"# To keep a live change instead, in the Argo CD Application:\nspec:\n  ignoreDifferences:\n"
            f"  - group: {group}\n    kind: {kind}\n    name: {obj}\n    jsonPointers:\n    - {pointer}")
