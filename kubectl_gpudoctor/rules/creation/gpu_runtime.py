"""Creation-phase rules about the GPU container stack on the node: runtime handler, CDI, NVIDIA hook, devices."""
from __future__ import annotations

import re
import string
from ...kube import podstate
from ...data import cuda_driver as cuda
from ...data import event_signatures as sigs
from ...kube.objects import allocatable, capacity, labels, meta, name, spec, status
from .._common import creating, current, event_line, pod_events, scheduled
from ._common import ADMISSION, CREATE, SANDBOX, START, events_unknown, find, node_runtime
from ..registry import Hit, Line, rule

# How to give a runtime the handler, per runtime (nodeInfo.containerRuntimeVersion's scheme).
_HANDLER_FIX = {
    "containerd": ("with the GPU operator, the nvidia-container-toolkit pod on that node writes the handler into "
                   "containerd's config and restarts containerd: check that pod is Running and read its log (k3s and "
                   "RKE2 keep the config under /var/lib/rancher/…/containerd, so the toolkit needs CONTAINERD_CONFIG "
                   "and CONTAINERD_SOCKET set); without the operator run `nvidia-ctk runtime configure "
                   "--runtime=containerd` on the node and restart containerd",
                   "kubectl get pods -A -o wide --field-selector spec.nodeName=$node | grep -i toolkit\n"
                   "kubectl debug node/$node -it --image=busybox -- chroot /host sh -c "
                   "'grep -rn \"runtimes.$handler\\]\" /etc/containerd /var/lib/rancher/*/agent/etc/containerd "
                   "2>/dev/null'"),
    "cri-o": ("on CRI-O the GPU operator injects GPUs with an OCI hook, not a runtime handler: drop "
              "runtimeClassName (or use a RuntimeClass whose handler is in CRI-O's runtime list), or add "
              "[crio.runtime.runtimes.$handler] under /etc/crio/crio.conf.d/ and restart CRI-O",
              "kubectl debug node/$node -it --image=busybox -- chroot /host sh -c "
              "'grep -rn \"crio.runtime.runtimes\" /etc/crio/'"),
    "docker": ("cri-dockerd runs only Docker's default runtime: drop runtimeClassName and make nvidia Docker's "
               "default-runtime in /etc/docker/daemon.json, or move the node to containerd",
               "kubectl debug node/$node -it --image=busybox -- chroot /host cat /etc/docker/daemon.json"),
}


@rule("runtime-handler-not-configured", phase="creation", severity="critical", rank=SANDBOX, applies=scheduled,
      title="The node's container runtime has no handler for the pod's RuntimeClass",
      remediation="Configure runtime handler $handler on node $node: $how.",
      snippet="$check")
def runtime_handler_not_configured(ev):
    """Sandbox events say the node's runtime lacks the handler (`no runtime for "nvidia" is configured`, CRI-O
    `failed to find runtime handler`, cri-dockerd `RuntimeHandler "nvidia" not supported`) or its binary."""
    if not creating(ev):
        return None
    found = find(ev, "runtime-handler-not-configured", sigs.SANDBOX_REASONS)
    if not found:
        return events_unknown(ev)
    rc = spec(ev.pod).get("runtimeClassName")
    handler = found.group("handler") or (ev.get("RuntimeClass", rc) or {}).get("handler") or rc
    binary = found.group("binary", "binary2")
    runtime = node_runtime(ev)
    flavor = runtime.split(":")[0] if runtime else {"crio-no-handler": "cri-o", "dockershim-handler": "docker"}.get(
        found.sig.id, "containerd")
    node = spec(ev.pod).get("nodeName")
    how, check = (string.Template(t).safe_substitute(node=node, handler=handler or "nvidia")
                  for t in _HANDLER_FIX.get(flavor, _HANDLER_FIX["containerd"]))
    via = f" (RuntimeClass {rc} maps to it)" if rc and (ev.get("RuntimeClass", rc) or {}).get("handler", handler) == handler \
        else ""
    which = f"handler {handler!r}{via}" if handler else "its default runtime"
    what = f"cannot run {which}: {binary} is missing" if binary else f"has no {which}"
    return Hit(f"The container runtime on node {node} ({runtime or flavor}) {what}, so the pod sandbox cannot be "
               f"created: {found.sig.meaning.replace('<handler>', handler or 'nvidia')}.", found.lines,
               values={"handler": handler or "nvidia", "how": how, "check": check}, fix=found.sig.fix or None)


@rule("cdi-device-unresolvable", phase="creation", severity="critical", rank=CREATE, applies=scheduled,
      title="CDI devices cannot be injected into the container",
      remediation="Regenerate the CDI spec on node $node so it defines the device names the pod gets: with the GPU "
                  "operator (cdi.enabled) read the nvidia-container-toolkit pod's log on that node, it writes "
                  "/var/run/cdi/*.yaml; by hand run `nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml` (again "
                  "after every driver upgrade or MIG change). With containerd's own CDI, enable_cdi must be true "
                  "(default from containerd 2.0).",
      snippet="kubectl debug node/$node -it --image=busybox -- chroot /host sh -c "
              "'ls -l /etc/cdi /var/run/cdi; grep -h \"name:\" /etc/cdi/*.yaml /var/run/cdi/*.yaml'")
def cdi_device_unresolvable(ev):
    """The runtime reports `unresolvable CDI devices …` or `CDI device injection failed` for a container that
    cannot be created or started."""
    if not creating(ev):
        return None
    found = find(ev, "cdi-device-unresolvable", sigs.CONTAINER_REASONS)
    if not found:
        return events_unknown(ev)
    devices, detail = found.group("devices"), found.group("detail")
    what = f"CDI device(s) {devices}" if devices else f"its CDI devices ({detail.strip()})"
    who = f"container {found.container}" if found.container else "the pod's containers"
    return Hit(f"The runtime on node {spec(ev.pod).get('nodeName')} could not inject {what} into {who}: "
               f"{found.sig.meaning}.", found.lines, values={"container": found.container or ""})


@rule("nvidia-container-cli-error", phase="creation", severity="critical", rank=START, applies=scheduled,
      title="The NVIDIA container hook failed to start the container",
      remediation="The driver or the NVIDIA container toolkit on node $node is broken: read the driver and toolkit "
                  "pods' logs on that node (GPU operator) or check `nvidia-smi` and the toolkit's config.toml on the "
                  "host, and cordon the node until it is fixed.",
      snippet="$logs")
def nvidia_container_cli_error(ev):
    """nvidia-container-cli (the legacy prestart hook) failed: `initialization error` (driver not loaded,
    libnvidia-ml.so.1 missing), `ldcache error`, `mount error`, `device error`; a CUDA requirement is not this."""
    if not creating(ev):
        return None
    found = find(ev, "nvidia-container-cli-error", sigs.CONTAINER_REASONS)
    if not found:
        return events_unknown(ev)
    who = f"container {found.container}" if found.container else "a container"
    return Hit(f"The NVIDIA container hook could not set up {who} on node {spec(ev.pod).get('nodeName')}: "
               f"nvidia-container-cli {found.group('detail').strip()} — {found.sig.meaning}.", found.lines,
               values={"logs": _stack_logs(ev)}, fix=found.sig.fix or None)


def _stack_logs(ev) -> str:
    """Commands for the driver/toolkit pods on the pod's node (named when the node's pods were read)."""
    node = spec(ev.pod).get("nodeName")
    pods = [p for p in ev.pods_on(node) if re.search(r"nvidia-driver|container-toolkit", name(p))]
    cmds = [f"kubectl logs -n {meta(p).get('namespace')} {name(p)} --all-containers --tail=50" for p in pods[:3]]
    return "\n".join(cmds or [f"kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep -i nvidia",
                              f"kubectl debug node/{node} -it --image=busybox -- chroot /host nvidia-smi"])


@rule("cuda-requirement-unsatisfied", phase="creation", severity="critical", rank=START, applies=scheduled,
      title="The node's driver is too old for the image's CUDA requirement",
      remediation="Run the pod on nodes whose driver supports $needs (driver $mindriver or newer; $candidates), "
                  "upgrade the driver on node $node, or use an image built for an older CUDA. "
                  "NVIDIA_DISABLE_REQUIRE=true skips the check, but the CUDA code then fails at run time unless the "
                  "image really runs on the older driver.",
      snippet="affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n"
              "      - matchExpressions:\n        - key: $label\n          operator: Gt\n          values: [\"$gt\"]")
def cuda_requirement_unsatisfied(ev):
    """nvidia-container-cli refused to start a container: `requirement error: unsatisfied condition: cuda>=X`
    (the image's NVIDIA_REQUIRE_CUDA is newer than what the node's driver supports)."""
    if not creating(ev):
        return None
    found = find(ev, "cuda-requirement-unsatisfied", sigs.CONTAINER_REASONS)
    if not found:
        return events_unknown(ev)
    cond = found.group("condition").strip()
    m = re.search(r"cuda\s*>=\s*(\d+)\.(\d+)", cond)
    need = (int(m.group(1)), int(m.group(2))) if m else None
    node = ev.node or {}
    driver, supports = _driver_text(labels(node)), cuda.node_cuda(labels(node))
    have = (f"; node {name(node)} has driver {driver}" + (f" (CUDA {cuda.fmt(supports)})" if supports else "")
            if driver else "")
    mindriver = cuda.TOOLKIT_DRIVER.get(need) if need else None
    ok = [name(n) for n in ev.all("Node") if need and (cuda.node_cuda(labels(n)) or (0, 0)) >= need]
    summary = (f"Node {name(node)}'s driver {driver} is too old for container {found.container or '?'} ({cond})"
               if driver else f"Container {found.container or '?'} needs {cond}, newer than the node's driver supports")
    return Hit(f"Container {found.container or '?'} needs {cond} (the image's NVIDIA_REQUIRE_CUDA){have}: the NVIDIA "
               f"hook refuses to start it.", found.lines, summary=summary,
               values={"needs": f"CUDA {cuda.fmt(need)}" if need else cond,
                       "mindriver": mindriver or "a newer one",
                       "candidates": f"nodes that qualify: {', '.join(ok[:5])}" if ok else "no listed node qualifies",
                       "label": cuda.driver_major_label(labels(node)),
                       "gt": str(int(mindriver.split(".")[0]) - 1) if mindriver else "0"})


def _driver_text(lab) -> str:
    """The node's driver version as GPU feature discovery wrote it (leading zeros kept: 535.183.01)."""
    if lab.get(cuda.DRIVER_FULL_LABEL):
        return lab[cuda.DRIVER_FULL_LABEL]
    for keys in cuda.DRIVER_LABELS:
        if lab.get(keys[0]):
            return ".".join(lab[k] for k in keys if lab.get(k))
    return ""


@rule("device-allocation-failed", phase="creation", severity="critical", rank=ADMISSION, applies=scheduled,
      title="The kubelet could not allocate the pod's devices (UnexpectedAdmissionError)",
      remediation="Delete the pod ($recreates): a rejected pod is never retried. If it "
                  "repeats, check the device plugin on node $node (running, not restarting, and advertising healthy "
                  "devices: capacity equal to allocatable) and restart it.",
      snippet="kubectl delete pod $pod -n $namespace\nkubectl get pods -A -o wide --field-selector spec.nodeName=$node "
              "| grep -i device-plugin\nkubectl get node $node -o jsonpath='{.status.capacity}{\"\\n\"}{.status.allocatable}'")
def device_allocation_failed(ev):
    """The pod failed admission with UnexpectedAdmissionError: `Allocate failed due to requested number of devices
    unavailable …`, no healthy devices, or the device plugin did not answer."""
    st = status(ev.pod)
    events = pod_events(ev, ("UnexpectedAdmissionError",))
    failed = st.get("phase") == "Failed" and st.get("reason") == "UnexpectedAdmissionError"
    if not failed and not (events and creating(ev)):
        return _prepare_failed(ev) if creating(ev) else None
    text = (st.get("message") or "") if failed else ""
    hit = sigs.search(text, "device-allocation-failed") or sigs.search((events[-1] if events else {}).get(
        "message") or "", "device-allocation-failed")
    why = hit[0].meaning if hit else "the device manager refused the allocation"
    resource = (hit[1].groupdict().get("resource") if hit else None) or ""
    node = ev.node or {}
    counts = f" Node {name(node)} advertises {resource}: capacity {capacity(node, resource)}, allocatable " \
             f"{allocatable(node, resource)}." if resource and node else ""
    lines = ([Line("status", "status.reason", f"UnexpectedAdmissionError: {text}")] if failed else []) + \
        [event_line(e) for e in events[-1:]]
    return Hit(f"The kubelet on node {spec(ev.pod).get('nodeName')} rejected the pod at admission: "
               f"{(hit[1].group(0) if hit else text).strip()} — {why}.{_ran_before(ev)}{counts}", lines)


def _prepare_failed(ev):
    """DRA's kubelet-side allocation: NodePrepareResources failed (FailedPrepareDynamicResources), the claim's
    devices are not set up on the node; an unregistered driver is dra-driver-not-registered's."""
    events = [e for e in current(ev, pod_events(ev, sigs.PREPARE_REASONS)) if e.get("type") == "Warning"
              and not sigs.search(e.get("message") or "", "dra-driver-not-registered")]
    hit = sigs.search((events[-1].get("message") or "") if events else "", "device-allocation-failed")
    if not hit:
        return None
    return Hit(f"The kubelet on node {spec(ev.pod).get('nodeName')} could not prepare the pod's DRA devices: "
               f"{hit[1].group(0).strip()[:300]} — {hit[0].meaning}.", [event_line(events[-1])],
               fix="Fix the DRA driver's kubelet plugin on that node (its log says why it could not prepare the "
                   "claim's devices); the kubelet retries the prepare, so the pod starts once the driver can.",
               edits="",
               summary=f"DRA devices could not be prepared on node {spec(ev.pod).get('nodeName')}")


def _ran_before(ev) -> str:
    """Containers had run: the kubelet re-admitted a running pod after a kubelet/node restart."""
    ran = any(cs.get("started") or podstate.latest_termination(cs) or (cs.get("state") or {}).get("running") is not None
              for _, cs, _ in podstate.all_container_states(ev.pod))
    return (" Its containers had already run: the kubelet re-admitted it after a kubelet or node restart before the "
            "device plugin had re-registered (kubernetes/kubernetes#118559, #125579, #133382).") if ran else ""
