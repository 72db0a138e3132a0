"""Evidence helpers for the GPU crash rules: crashed containers, decisive log lines, visibility causes, snippets."""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Optional

from .. import gpustack, logscan, podstate
from ..data import cuda_driver as cd
from ..data.log_signatures import SIGNATURES
from ..data.signatures_gpu import NOTICE, SIGNATURE_CAUSES
from ..k8s import container_gpus, containers, labels, name, namespace, spec
from ..quantity import parse_quantity
from ..timeutil import seconds_between
from .common import status_line
from .registry import Hit, Line

NVIDIA_RESOURCE = re.compile(r"^nvidia\.com/(gpu|gpu\.shared|mig-.+)$")
# Env values that hide every GPU: the NVIDIA container toolkit treats NVIDIA_VISIBLE_DEVICES void/empty as
# "no GPU, no driver" and none as "driver libraries but no device"; CUDA hides all devices for "" or -1.
HIDING_ENV = {"NVIDIA_VISIBLE_DEVICES": ("void", "none", ""), "CUDA_VISIBLE_DEVICES": ("", "-1", "none", "nodevfiles")}
# A matched line belongs to the crash when at most this many ordinary lines follow it; a server that caught a
# per-request error and kept serving prints many more (access logs, throughput lines).
CRASH_TAIL_LINES = 15
_JSON_INFO = re.compile(r'"(?:level|severity|lvl)"\s*:\s*"(?:info|debug|trace|notice)"', re.I)
# Error lines that still speak about the GPU, or that only wrap the root cause printed above them.
_GPU_WORDS = re.compile(r"(?i)gpu|cuda|nvidia|nvml|nccl|device|driver|root cause|ChildFailedError|exitcode")
# The kubelet resets the crash-loop back-off after 10 minutes of running: an older crash of a Ready container is history.
RECOVERED_AFTER_S = 600
# Per-process prefixes that come before a traceback's indentation: kubectl --timestamps, vLLM's
# "(APIServer pid=1) " / "(EngineCore_0 pid=57) ", torch.distributed's "[rank0]: ".
_PREFIX = re.compile(r"^(?:\d{4}-\d\d-\d\dT\S+\s)?(?:\([^)]*pid=\d+[^)]*\)\s?|\[rank\d+\]:\s?)?")
# Not ordinary output: indented traceback/stack lines, error vocabulary, and dumped code (PTX/JSON) after an error.
_NOT_ORDINARY = re.compile(r"^\s|^[.{}/\]\[]|;\s*$|error|exception|traceback|warn|fatal|fail|abort|killed|terminat"
                           r"|shut|exit|raise|signal|core dump|stack|frame", re.I)


_ORDER = {sig.id: i for i, sig in enumerate(SIGNATURES)}


def crashed(ev):
    """(container, status, termination, log key) for containers (init ones too) whose latest run exited non-zero
    and still matters; the log key says which log (previous or not) holds that run, None when none was read."""
    for c, cs, _ in podstate.all_container_states(ev.pod):
        term = podstate.latest_termination(cs)
        if term and term.get("exitCode", 0) != 0 and not _recovered(ev, cs):
            yield c, cs, term, _run_log(ev, c["name"], cs, term)


def _recovered(ev, cs) -> bool:
    """Running and Ready for longer than the kubelet's 10-minute back-off reset: the old crash is history."""
    running = (cs.get("state") or {}).get("running")
    up = seconds_between((running or {}).get("startedAt"), ev.now())
    return bool(running is not None and cs.get("ready") and up is not None and up >= RECOVERED_AFTER_S)


def _run_log(ev, cname, cs, term) -> Optional[bool]:
    """The kubelet serves the terminated run as the current log while the container is terminated or waits in
    back-off (and also as `previous` once it restarted); a newer running instance owns the current log."""
    if podstate.terminated(cs) is term:
        order = (False, True)
    elif (cs.get("state") or {}).get("running") is not None:
        order = (True,)
    else:
        order = (True, False)
    return next((prev for prev in order if ev.log(ev.pod, cname, prev)), None)


def crash_match(ev, cname: str, prev: Optional[bool], rules: Iterable[str], accept=None) -> Optional[logscan.Match]:
    """The line of these rules' signatures in the failed run's log that belongs to the crash, or None: the
    earliest-listed signature (data order = preference), its newest line."""
    if prev is None:
        return None
    found = [m for r in rules for m in logscan.scan(ev, ev.pod, cname, r) if m.previous == prev
             and (accept is None or accept(m)) and _in_crash_tail(ev, m)
             and not (m.signature.id in NOTICE and _unrelated_error_after(ev, m))]
    return min(found, key=lambda m: (_ORDER.get(m.signature.id, 0), -m.lineno)) if found else None


def matches(ev, cname: str, prev: Optional[bool], rule_id: str) -> list:
    """Every line of a rule's signatures in the failed run's log, newest first."""
    return [m for m in logscan.scan(ev, ev.pod, cname, rule_id) if m.previous == prev] if prev is not None else []


def _unrelated_error_after(ev, m) -> bool:
    """An error line after a notice that is about something else (the program carried on and failed later)."""
    return any(x.previous == m.previous and x.lineno > m.lineno and not _GPU_WORDS.search(x.line)
               for x in logscan.scan(ev, ev.pod, m.container, "app-error"))


def _in_crash_tail(ev, m) -> bool:
    rest = logscan.clean(ev.log(ev.pod, m.container, m.previous) or "").split("\n")[m.lineno:]
    return sum(1 for line in rest if _ordinary(_PREFIX.sub("", line, count=1))) <= CRASH_TAIL_LINES


def _ordinary(line: str) -> bool:
    """Normal output of a running program; structured (JSON) lines by their level."""
    if line.startswith("{"):
        return bool(_JSON_INFO.search(line))
    return bool(line.strip()) and not _NOT_ORDINARY.search(line)


def status_of(c, cs, term) -> Line:
    return status_line(c["name"], "state" if podstate.terminated(cs) is term else "lastState", term)


def nvidia_gpus(c) -> dict:
    return {r: n for r, n in container_gpus(c).items() if NVIDIA_RESOURCE.match(r)}


def gpu_text(gpus: dict) -> str:
    return ", ".join(f"{r}: {n}" for r, n in sorted(gpus.items()))


def smi_127(c, term) -> bool:
    """nvidia-smi in the command and exit 127: with no log to say otherwise, the shell did not find nvidia-smi."""
    cmd = " ".join((c.get("command") or []) + (c.get("args") or []))
    return "nvidia-smi" in cmd and term.get("exitCode") == 127 and term.get("reason") != "OOMKilled"


def env_value(c, key) -> Optional[str]:
    """A literal env value of the container ('' when set empty: the API omits empty values), None if unset."""
    for e in c.get("env") or []:
        if e.get("name") == key and "valueFrom" not in e:
            return e.get("value", "")
    return None


def node_labels(ev) -> dict:
    return labels(ev.node) if ev.node else {}


def crash_hit(ev, c, cs, term, m, message, extra=(), **kw) -> Hit:
    lines = [status_of(c, cs, term)] + ([m.as_line(name(ev.pod))] if m else []) + list(extra)
    kw.setdefault("values", {})["container"] = c["name"]
    return Hit(message, lines, **kw)


def quote(m, c, term) -> str:
    """The matched log line without its process prefix (shortened), or the exit code of an nvidia-smi command."""
    if m:
        line = _PREFIX.sub("", m.line.strip(), count=1).strip()
        if len(line) > 200:   # long library messages: keep their first sentence
            end = line.find(". ", 60)
            line = line[:end + 1] if 0 < end < 300 else line
        return (line if len(line) <= 320 else line[:317] + "...").rstrip(".")
    return f"exit code {term.get('exitCode')} from `{' '.join((c.get('command') or []) + (c.get('args') or []))}`"


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
    if m is not None and m.signature.id in SIGNATURE_CAUSES:
        cause, fix, snippet = SIGNATURE_CAUSES[m.signature.id]
        return cause.replace("$node", spec(pod).get("nodeName") or "the node"), fix, snippet, []
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
    if rcs and not spec(pod).get("runtimeClassName"):
        return (f"possibly the missing runtimeClassName: RuntimeClass {rcs[0]!r} exists and the pod does not use it "
                "(needed unless nvidia is containerd's default runtime on the node)",
                f"Set spec.runtimeClassName: {rcs[0]} unless containerd's default runtime on the node is nvidia.",
                f"# pod {name(pod)} (spec)\nruntimeClassName: {rcs[0]}", [Line("spec", "spec.runtimeClassName", "(not set)")])
    unchecked = [f"{s} ({ev.gap(s).reason})" for s in ("runtimeclasses",) if ev.gap(s)]
    if state == "unknown":
        unchecked.append("the device plugin and the other GPU pods on the node (pods not listed)")
        checked = "no env hides the GPU"
    else:
        checked = "no env hides the GPU, no other GPU pod uses a runtimeClass this pod lacks, the device plugin is Ready"
    return ("unknown: " + checked + ("; not checked: " + ", ".join(unchecked) if unchecked else ""), None, None, [])


# --- advice computed from evidence ------------------------------------------------------------------

def oom_advice(ev, m, c):
    """(fix, snippet) from an out-of-memory line, using vLLM's/TGI's own numbers when the line gives them; else
    node affinity for GPUs with more memory than this node's (GFD nvidia.com/gpu.memory, MiB)."""
    fit = re.search(r"estimated maximum model length is (\d+)|stored in KV cache \((\d+)\)", m.line)
    if fit:
        n = fit.group(1) or fit.group(2)
        return (f"The KV cache holds only {n} tokens at this --gpu-memory-utilization: set --max-model-len {n} or "
                "lower, raise --gpu-memory-utilization if memory is free, quantize, or add GPUs (--tensor-parallel-size).",
                f"# container {c['name']} args\n- --max-model-len\n- \"{n}\"")
    if m.signature.id == "vllm-free-memory":
        return ("Another process already holds GPU memory: lower --gpu-memory-utilization to what is free, or find "
                "the other process (a shared/time-sliced GPU, a leftover pod).", None)
    tgi = re.search(r"handle (\d+) prefill tokens", m.line)
    if tgi:
        return (f"Lower --max-batch-prefill-tokens below {tgi.group(1)} (and --max-batch-total-tokens), or use a "
                "bigger GPU / more shards.",
                f"# container {c['name']} args\n- --max-batch-prefill-tokens\n- \"{int(tgi.group(1)) // 2}\"")
    mem = str(node_labels(ev).get("nvidia.com/gpu.memory") or "")
    return None, (node_affinity(ev, "nvidia.com/gpu.memory", "Gt", [mem]) + "   # MiB: a GPU with more memory than this one"
                  if mem.isdigit() else None)


def shm_volume(pod, c) -> Optional[dict]:
    """The volume mounted at /dev/shm in this container, or None (the runtime's 64Mi default)."""
    for vm in c.get("volumeMounts") or []:
        if (vm.get("mountPath") or "").rstrip("/") == "/dev/shm":
            return next((v for v in spec(pod).get("volumes") or [] if v.get("name") == vm.get("name")),
                        {"name": vm.get("name")})
    return None


def shm_size(c, current=None) -> str:
    """Half the container's memory limit (tmpfs pages count against it), between 1Gi and 16Gi, 8Gi without a
    limit; at least twice a sizeLimit that proved too small."""
    limit = parse_quantity(((c.get("resources") or {}).get("limits") or {}).get("memory"))
    gib = max(1, min(16, int(limit) // 2 // 2 ** 30)) if limit else 8
    now = parse_quantity(current)
    if now and gib * 2 ** 30 <= now:
        gib = -(-int(now) * 2 // 2 ** 30)
    return f"{gib}Gi"


def driver_ok(ev, c) -> bool:
    """The node's labelled driver runs the image's CUDA: then cudart's 'driver insufficient' means no libcuda at all."""
    return cd.runs_on(c.get("image", ""), node_labels(ev))


def ngc_fatal(ev, m) -> bool:
    """The NGC entrypoint's 'compatibility mode is UNAVAILABLE' is fatal only below the CUDA major's driver floor
    (e.g. a 25.x image on R580 prints it and runs in minor-version compatibility)."""
    if m.signature.id != "ngc-driver-unavailable":
        return True
    found = cd.parse_version(re.search(r"version (\S+) was detected", m.line).group(1))
    text = logscan.clean(ev.log(ev.pod, m.container, m.previous) or "").split("\n")
    built = re.search(r"built for NVIDIA Driver Release (\d+\.\d+)", "\n".join(text[max(0, m.lineno - 3):m.lineno]))
    cuda = cd.driver_max_cuda(cd.parse_version(built.group(1))) if built else None
    return bool(found and cuda and cd.compare(cuda, found) == "too-old")


def driver_facts(ev, img, m) -> str:
    """What the image needs and what the node's driver supports, in one sentence."""
    lbls = node_labels(ev)
    driver, driver_text = cd.node_driver(lbls), cd.node_driver_text(lbls)
    parts = []
    if img:
        need, floor = cd.toolkit_driver(img[0]), cd.driver_floor(img[0])
        parts.append(f"The image is built for CUDA {cd.cuda_str(img[0])} ({img[1]}), which needs driver >= {cd.fmt(floor)}"
                     + (f" (>= {cd.fmt(need)} to run without minor-version-compatibility limits)" if need and need != floor else ""))
    found = re.search(r"found version (\d+)", m.line) if m else None
    if found and cd.cuda_from_driver_api(found.group(1)) and not driver:
        parts.append(f"the driver supports CUDA up to {cd.cuda_str(cd.cuda_from_driver_api(found.group(1)))}")
    if driver:
        top = cd.driver_max_cuda(driver)
        parts.append(f"the node runs driver {driver_text}" + (f" (CUDA up to {cd.cuda_str(top)})" if top else ""))
    if m and m.signature.id == "cuda-insufficient-driver" and not driver:
        parts.append("cudart also says this when no libcuda was injected at all, and the node's driver is not labelled")
    if not parts:
        return "The node's driver version is not labelled (no GPU feature discovery labels)."
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def driver_label_line(ev, node_lbls) -> list:
    text = cd.version_label_text(node_lbls)
    return [Line("node", f"nodes/{spec(ev.pod).get('nodeName')} labels", text)] if text else []


def node_affinity(ev, key, op, values) -> str:
    """A required node-affinity snippet for the pod, with its real name."""
    vals = ", ".join(f'"{v}"' for v in values)
    return (f"# pod {name(ev.pod)} (spec)\naffinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n"
            f"      nodeSelectorTerms:\n      - matchExpressions:\n        - key: {key}\n          operator: {op}\n"
            f"          values: [{vals}]")


def affinity_snippet(ev, node_lbls, img) -> Optional[str]:
    """Node affinity on the GFD driver-major label for the image's CUDA, else on the CUDA major the node supports."""
    if img:
        need = cd.toolkit_driver(img[0]) or cd.driver_floor(img[0])
        return node_affinity(ev, cd.driver_major_label(node_lbls), "Gt", [str(need[0] - 1)])
    if cd.node_cuda(node_lbls):
        return node_affinity(ev, "nvidia.com/cuda.runtime-version.major", "Gt", [str(cd.node_cuda(node_lbls)[0])])
    return None
