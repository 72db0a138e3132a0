"""The GPU a container asks for, the env that can hide it, and why a GPU container sees no GPU (ranked
causes): helpers for the GPU crash rules, which must hold no rule and do no I/O."""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from ...gpu import siblings, stack as gpustack
from ...kube import podstate
from ...data import gpu_resources
from ...data.app_context import RUNTIME_NOT_FOUND
from ...data.signatures_gpu import SIGNATURE_CAUSES
from ...kube.objects import container_gpus, containers, name, namespace, spec
from ..registry import Line

# Env values that hide every GPU: the NVIDIA container toolkit treats NVIDIA_VISIBLE_DEVICES void/empty as
# "no GPU, no driver" and none as "driver libraries but no device"; CUDA hides all devices for "" or -1.
HIDING_ENV = {"NVIDIA_VISIBLE_DEVICES": ("void", "none", ""), "CUDA_VISIBLE_DEVICES": ("", "-1", "none", "nodevfiles")}


def nvidia_gpus(c) -> dict:
    """The container's requests of NVIDIA GPUs, whole or shared (MIG, time-slicing, HAMi, Volcano vGPU, gpushare)."""
    return {r: n for r, n in container_gpus(c).items() if gpu_resources.lookup(r).vendor == "nvidia"}


def gpu_text(gpus: dict) -> str:
    return ", ".join(f"{r}: {n}" for r, n in sorted(gpus.items()))


def smi_missing(c, term, prev) -> Optional[str]:
    """What says nvidia-smi was not there, or None: the runtime's StartError `exec: "nvidia-smi": executable file
    not found in $PATH` (it never started, so no log can say otherwise), or nvidia-smi in the command and exit 127
    with no log of that run."""
    runtime = re.search(RUNTIME_NOT_FOUND, term.get("message") or "")
    if runtime and (runtime.group("cmd") or runtime.group("cmd2") or "").rsplit("/", 1)[-1] == "nvidia-smi":
        return f"the runtime could not start it: {runtime.group(0)}"
    cmd = " ".join((c.get("command") or []) + (c.get("args") or []))
    if prev is None and "nvidia-smi" in cmd and term.get("exitCode") == 127 and term.get("reason") != "OOMKilled":
        return f"exit code 127 from `{cmd}`"
    return None


def ipc_lock(c) -> bool:
    """The container may lock memory past RLIMIT_MEMLOCK (IPC_LOCK added, or privileged)."""
    sc = c.get("securityContext") or {}
    return bool(sc.get("privileged")) or "IPC_LOCK" in ((sc.get("capabilities") or {}).get("add") or [])


def env_value(c, key) -> Optional[str]:
    """A literal env value of the container ('' when set empty: the API omits empty values), None if unset."""
    for e in c.get("env") or []:
        if e.get("name") == key and "valueFrom" not in e:
            return e.get("value", "")
    return None



# --- why a GPU container sees no GPU --------------------------------------------------------------

def plugin_state(ev):
    """('missing'|'not-ready'|'ok'|'unknown', detail) for the NVIDIA device plugin pod on the pod's node
    (recognised the way the node rules recognise GPU-stack components)."""
    node = ev.node
    if node is None or not gpustack.pods_known(ev, name(node)):
        return "unknown", "the pods on the node were not readable"
    plugins = gpustack.device_plugin_pods(ev, node, {"nvidia"})
    if not plugins:
        return "missing", f"no NVIDIA device plugin pod runs on node {name(node)}"
    ready = [p for p in plugins if gpustack.is_ready(p)]
    if ready:
        return "ok", f"device plugin {name(ready[0])} is Running and Ready"
    p = plugins[0]
    return "not-ready", f"device plugin pod {name(p)} on node {name(node)} is {podstate.display_status(p)}, not Ready"


def visibility_cause(ev, pod, c, libs=False, m=None):
    """(cause, fix, snippet, evidence lines): the most likely reason a GPU container sees no GPU/driver, ranked;
    the cause starts with 'unknown' when none of the checks found one. Some log lines name the cause themselves."""
    alike = siblings.failing_alike(ev, pod, m)
    if m is not None and m.signature.id in SIGNATURE_CAUSES:
        cause, fix, snippet = SIGNATURE_CAUSES[m.signature.id]
        also = f"; pods of other workloads on the node fail the same way: {siblings.names(p for p, _ in alike)}" if alike else ""
        return cause.replace("$node", spec(pod).get("nodeName") or "the node") + also, fix, snippet, _sibling_lines(alike)
    for key, hiding in HIDING_ENV.items():
        val = env_value(c, key)
        if val is not None and val.strip().lower() in hiding:
            return (f"container env sets {key}={val!r}, which hides every GPU from the container",
                    f"Remove {key} from container {c['name']}'s env: the device plugin sets the visible devices itself.",
                    f"# container {c['name']}: delete this env entry\n- name: {key}\n  value: \"{val}\"",
                    [Line("spec", f"containers[{c['name']}].env[{key}]", repr(val))])
    caps = env_value(c, "NVIDIA_DRIVER_CAPABILITIES")
    if libs and caps is not None and not re.search(r"\ball\b|\bcompute\b|\butility\b", caps):
        return (f"container env sets NVIDIA_DRIVER_CAPABILITIES={caps!r}, so the toolkit injects neither libcuda "
                "(compute) nor nvidia-smi (utility)", f"Set NVIDIA_DRIVER_CAPABILITIES=compute,utility on {c['name']}.",
                f"# container {c['name']}\nenv:\n- name: NVIDIA_DRIVER_CAPABILITIES\n  value: compute,utility",
                [Line("spec", f"containers[{c['name']}].env[NVIDIA_DRIVER_CAPABILITIES]", repr(caps))])
    if not spec(pod).get("runtimeClassName"):
        peers = [p for p in ev.all("Pod") if p is not pod and spec(p).get("runtimeClassName")
                 and any(nvidia_gpus(x) for x in containers(p))]
        if peers:
            rc = Counter(spec(p)["runtimeClassName"] for p in peers).most_common(1)[0][0]
            return (f"the pod sets no runtimeClassName while the other GPU pods here use runtimeClassName {rc!r}; "
                    "without it the NVIDIA runtime does not inject the GPU",
                    f"Set spec.runtimeClassName: {rc} in the pod template.", f"# pod {name(pod)} (spec)\nruntimeClassName: {rc}",
                    [Line("spec", "spec.runtimeClassName", "(not set)")] +
                    [Line("object", f"pods/{namespace(p)}/{name(p)}", f"runtimeClassName: {spec(p)['runtimeClassName']}")
                     for p in peers if spec(p)["runtimeClassName"] == rc][:2])
    state, detail = plugin_state(ev)
    if state in ("missing", "not-ready"):
        return (detail, "Fix the NVIDIA device plugin on this node (its DaemonSet, node selector/taints, previous "
                        "logs), then delete the pod so it is recreated with a GPU.", None,
                [Line("object", f"pods on node {spec(pod).get('nodeName')}", detail)])
    rcs = [name(o) for o in ev.all("RuntimeClass") if "nvidia" in (o.get("handler") or name(o))]
    if alike:
        return node_stack_cause(ev, pod, alike, rcs)
    well = siblings.healthy(ev, pod)
    if rcs and not spec(pod).get("runtimeClassName") and not any(not spec(p).get("runtimeClassName") for p in well):
        return (f"possibly the missing runtimeClassName: RuntimeClass {rcs[0]!r} exists and the pod does not use it "
                "(needed unless nvidia is containerd's default runtime on the node)",
                f"Set spec.runtimeClassName: {rcs[0]} unless containerd's default runtime on the node is nvidia.",
                f"# pod {name(pod)} (spec)\nruntimeClassName: {rcs[0]}", [Line("spec", "spec.runtimeClassName", "(not set)")])
    unchecked = [f"{s} ({ev.gap(s).reason})" for s in ("runtimeclasses",) if ev.gap(s)]
    blind = siblings.unread(ev, pod)
    if blind:
        unchecked.append(f"whether {siblings.names(blind[:3])} on the node fail the same way (logs not read)")
    if well and state != "unknown":
        return own_image_cause(ev, pod, c, well)
    if state == "unknown":
        unchecked.append("the device plugin and the other GPU pods on the node (pods not listed)")
        checked = "no env hides the GPU"
    else:
        checked = "no env hides the GPU, no other GPU pod uses a runtimeClass this pod lacks, the device plugin is Ready"
    return ("unknown: " + checked + ("; not checked: " + ", ".join(unchecked) if unchecked else ""), None, None, [])


# --- the other GPU pods on the node as corroboration ----------------------------------------------------

def _sibling_lines(alike) -> list:
    return [Line("log", f"pods/{namespace(p)}/{name(p)} ({siblings.workload_text(p)})", x.line.strip()[:200])
            for p, x in alike]


def node_stack_cause(ev, pod, alike, rcs):
    """Pods of other workloads on the node fail the same way: the node's GPU stack is at fault, not this image."""
    node = spec(pod).get("nodeName") or "the node"
    cause = (f"the GPU stack of node {node} (device plugin, container toolkit or driver); pods of other workloads "
             f"there fail the same way: {siblings.names(p for p, _ in alike)}")
    bare = [p for p in [pod] + [p for p, _ in alike] if not spec(p).get("runtimeClassName")]
    # The GPU operator's toolkit makes nvidia containerd's default runtime itself; without it (k3s, RKE2, a
    # hand-installed toolkit) pods without runtimeClassName start under runc and get no NVIDIA hook.
    toolkit = ev.node is not None and any(comp.key == "toolkit" for comp, _ in gpustack.component_pods(ev, ev.node))
    if rcs and len(bare) == 1 + len(alike) and not toolkit:
        cause += (f"; none of them sets runtimeClassName and RuntimeClass {rcs[0]!r} exists, so the NVIDIA runtime "
                  "is likely not containerd's default runtime there")
        fix = (f"Set spec.runtimeClassName: {rcs[0]} in the pod template (and in the other failing workloads), or "
               f"make nvidia containerd's default runtime on node {node}.")
        snippet = f"# pod {name(pod)} (spec)\nruntimeClassName: {rcs[0]}"
    else:
        fix = (f"Fix the GPU stack on node {node}, not the image: check the container toolkit and device plugin pods "
               "there (their logs and configuration, e.g. the device list strategy), then delete the failing pods.")
        snippet = (f"kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep -Ei 'toolkit|device-plugin|driver'\n"
                   f"kubectl debug node/{node} -it --image=busybox -- chroot /host nvidia-smi")
    return cause, fix, snippet, _sibling_lines(alike)


def own_image_cause(ev, pod, c, well):
    """Other GPU pods on the node run with their GPUs and no pod or node check found a cause: this image is likelier."""
    node = spec(pod).get("nodeName") or "the node"
    cause = (f"likely container {c['name']}'s image or command: other GPU pods on node {node} are Ready with their "
             f"GPUs ({siblings.names(well[:2])}), so the node's GPU stack works")
    fix = (f"Compare container {c['name']}'s image, env and command with {namespace(well[0])}/{name(well[0])}, which "
           f"uses its GPU on node {node}; run nvidia-smi in this image on that node to see what it lacks.")
    return cause, fix, None, [Line("object", f"pods/{namespace(p)}/{name(p)}", f"Ready on node {node}, requests a GPU")
                              for p in well[:2]]
