"""Evidence helpers for the application crash rules: which volume covers a path, which credentials a container
uses (names only), what a connection error means, probe budgets and observed start times. Pure; no I/O."""
from __future__ import annotations

import json
import math
import os
import re
from datetime import datetime, timezone
from typing import List, Optional, Tuple

import yaml

from .. import logscan
from ..crashrun import match_run
from ..data.signatures_app import ARCH_ALIASES, ARCH_HINT, CREDENTIAL_ENV, LOG_TIME, PROGRESS, READY
from ..evidence import Line, event_count
from ..k8s import labels, name, spec, status
from ..timeutil import human_duration, parse_time, seconds_between

_READY = tuple(re.compile(p) for p in READY)
_TIMES = tuple(re.compile(p) for p in LOG_TIME)
# Paths that are not model or config files: devices, system and driver libraries, scripts, sockets.
_NOT_MODEL = re.compile(r"^/(?:dev|proc|sys|etc|run|var/run|bin|sbin|lib|lib64|usr/(?:bin|sbin|lib|lib64|local/(?:bin|cuda|nvidia)))(?:/|$)"
                        r"|\.so(?:\.\d+)*$|\.(?:py|pyc|sh|sock|pid)$|site-packages|dist-packages|^/tmp/")
_READ_ONLY_KINDS = ("configMap", "secret", "downwardAPI", "projected")
_SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount"


def match(ev, c, cs, term, rule_id):
    return match_run(ev, c, cs, term, rule_id)


# --- nodes and images ------------------------------------------------------------------------------------

def node_name(ev) -> str:
    return name(ev.node) or spec(ev.pod).get("nodeName") or "the node"


def node_arch(ev) -> Optional[str]:
    node = ev.node
    if not node:
        return None
    lab = labels(node)
    return lab.get("kubernetes.io/arch") or lab.get("beta.kubernetes.io/arch") or (status(node).get("nodeInfo") or {}).get("architecture")


def image_arch(image: str) -> Optional[str]:
    m = re.search(ARCH_HINT, image.split("@")[0])
    return ARCH_ALIASES.get(m.group("arch").lower(), m.group("arch").lower()) if m else None


# --- volumes ---------------------------------------------------------------------------------------------

def covering_mount(pod, c, path: str):
    """(volumeMount, volume) of the deepest mount at or above `path`, or (None, None)."""
    best = None
    for mount in c.get("volumeMounts") or []:
        mp = (mount.get("mountPath") or "").rstrip("/") or "/"
        if path == mp or path.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len((best.get("mountPath") or "").rstrip("/")):
                best = mount
    if not best:
        return None, None
    return best, next((v for v in spec(pod).get("volumes") or [] if v.get("name") == best.get("name")), None)


def volume_words(vol) -> str:
    if not vol:
        return "a volume missing from spec.volumes"
    for key, words in (("persistentVolumeClaim", lambda v: f"PVC {v.get('claimName')}"),
                       ("emptyDir", lambda v: "an emptyDir" + (" (medium Memory)" if v.get("medium") == "Memory" else "")),
                       ("hostPath", lambda v: f"hostPath {v.get('path')}"), ("configMap", lambda v: f"ConfigMap {v.get('name')}"),
                       ("secret", lambda v: f"Secret {v.get('secretName')}"), ("nfs", lambda v: f"NFS {v.get('server')}:{v.get('path')}"),
                       ("csi", lambda v: f"a CSI volume ({v.get('driver')})"), ("ephemeral", lambda v: "a generic ephemeral volume"),
                       ("image", lambda v: f"image volume {v.get('reference')}"), ("projected", lambda v: "a projected volume")):
        if key in vol:
            return words(vol[key] or {})
    return f"volume {vol.get('name')}"


def other_mounts(c) -> List[str]:
    return [f"{m.get('mountPath')} ({m.get('name')})" for m in c.get("volumeMounts") or [] if m.get("mountPath") != _SA_TOKEN]


def mount_line(c, mount, vol) -> Line:
    ref = f"containers[{c['name']}].volumeMounts"
    if not mount:
        return Line("spec", ref, "no volumeMount covers the path; mounted: " + (", ".join(other_mounts(c)) or "nothing"))
    extra = (f", subPath {mount['subPath']}" if mount.get("subPath") else "") + (", readOnly" if mount.get("readOnly") else "")
    return Line("spec", f"{ref}[{mount.get('name')}]", f"{mount.get('mountPath')} from {volume_words(vol)}{extra}")


def mount_story(pod, c, path, mount, vol) -> str:
    if not mount:
        mps = other_mounts(c)
        guess = next((m.get("mountPath").rstrip("/") + "/" + path.split(f"/{os.path.basename(m.get('mountPath').rstrip('/'))}/", 1)[1]
                      for m in c.get("volumeMounts") or [] if m.get("mountPath") not in ("/", _SA_TOKEN)
                      and f"/{os.path.basename(m.get('mountPath').rstrip('/'))}/" in path), None)
        return ("no volume is mounted at or above it, so it exists only if the image ships it"
                + (f"; this container mounts {', '.join(mps)}" if mps else "; this container mounts no volume")
                + (f" (did you mean {guess}?)" if guess else ""))
    mp = mount.get("mountPath")
    if vol and "emptyDir" in vol:
        writers = [x["name"] for x in (spec(pod).get("initContainers") or [])
                   if any(m.get("name") == mount.get("name") for m in x.get("volumeMounts") or [])]
        if not writers:
            return f"it is under {mp}, an emptyDir that starts empty, and no init container writes into it"
        return f"it is under {mp}, an emptyDir filled by init container {', '.join(writers)}, which did not put it there"
    sub = f" (subPath {mount['subPath']})" if mount.get("subPath") else ""
    return (f"it is under {mp}, mounted from {volume_words(vol)}{sub}, which does not contain it: the files were never "
            f"copied there, or they sit under a different directory of the volume")


def is_local(path: str) -> bool:
    return path.startswith(("/", "./", "../", "~"))


def model_path_accepted(m, line: str) -> bool:
    path = (m.groupdict().get("path") or "").rstrip(".'\"")
    if not path:
        return False
    if not is_local(path):
        return "does not appear to have a file named" in line   # a hub repo that lacks the file
    return not _NOT_MODEL.search(path)


def parent_dir(path: str, m) -> str:
    base = os.path.basename(path.rstrip("/"))
    return os.path.dirname(path.rstrip("/")) or "/" if re.search(r"\.\w{1,12}$", base) else path


def exec_mode_fix(c, path, mount, vol) -> Tuple[str, str]:
    """(", defaultMode 0644" or "", snippet) for a command that is not executable."""
    kind = next((k for k in ("configMap", "secret", "projected") if vol and k in vol), None)
    if kind:
        mode = (vol[kind] or {}).get("defaultMode", 420)
        body = {"name": vol["name"], kind: {k: v for k, v in (vol[kind] or {}).items() if k in ("name", "secretName")}}
        body[kind]["defaultMode"] = 493
        snippet = "# pod spec: mount the script with the execute bit (493 = 0755)\nvolumes:\n" + _indent(yaml.safe_dump([body], sort_keys=False), 0)
        return f", defaultMode {mode:#o}".replace("0o", "0"), snippet
    shell = os.path.basename((c.get("command") or [""])[0])
    interp = "python" if path.endswith(".py") else ("/bin/" + shell if shell in ("sh", "bash", "zsh", "dash", "ash") else "/bin/sh")
    if not path.endswith((".sh", ".py")) and not path.startswith("/"):
        return "", ""
    if not path.endswith((".sh", ".py")):
        return "", f"# in the image's Dockerfile\nRUN chmod +x {path}"
    cmd = list(c.get("command") or [])
    if cmd and cmd[0] == path:
        cmd = [interp] + cmd
    else:
        cmd = [re.sub(rf"(^|\s){re.escape(path)}", rf"\1{interp.rsplit('/', 1)[-1]} {path}", x) for x in cmd]
    if cmd == list(c.get("command") or []):
        cmd = [interp, path]
    return "", (f"# container {c['name']}: run the script through its interpreter (or RUN chmod +x {path} in the image)\n"
                f"command: {json.dumps(cmd)}")


def not_writable_story(pod, c, path, mount, vol, eacces: bool):
    """(why, spec Line or None) for a path the container could not write."""
    ref = f"containers[{c['name']}]"
    if mount and (mount.get("readOnly") or any(k in (vol or {}) for k in _READ_ONLY_KINDS)
                  or ((vol or {}).get("persistentVolumeClaim") or {}).get("readOnly")):
        return (f"{mount.get('mountPath')} is mounted read-only ({volume_words(vol)})",
                Line("spec", f"{ref}.volumeMounts[{mount.get('name')}]", f"mountPath {mount.get('mountPath')}, readOnly"))
    sc, psc = c.get("securityContext") or {}, spec(pod).get("securityContext") or {}
    if sc.get("readOnlyRootFilesystem") and not eacces:
        return ("the container's root filesystem is read-only (securityContext.readOnlyRootFilesystem: true) and no "
                "writable volume is mounted there", Line("spec", f"{ref}.securityContext", "readOnlyRootFilesystem: true"))
    if eacces:
        uid = sc.get("runAsUser", psc.get("runAsUser"))
        home = " ($HOME is /, so libraries default to /.cache)" if path.startswith("/.") else ""
        who = f"user {uid}" if uid is not None else "the container's user (e.g. a random UID assigned by OpenShift)"
        return (f"the directory is not writable for {who}{home}",
                Line("spec", f"{ref}.securityContext", f"runAsUser {uid}") if uid is not None else None)
    return ("the file system there is read-only (the volume, or the storage behind it, is mounted read-only)", None)


# --- credentials (names only) ---------------------------------------------------------------------------

def auth_target(line: str, text: str) -> str:
    if re.search(r"system:serviceaccount", line):
        return "k8s"
    if re.search(r"operation|NoCredentialsError|Unable to locate credentials|botocore|\bS3\b", line):
        return "s3"
    if re.search(r"storage\.\w+\.\w+ access|googleapis", line):
        return "gcs"
    if re.search(r"Authorization(?:PermissionMismatch|Failure)|AuthenticationFailed|windows\.net", line):
        return "azure"
    if re.search(r"huggingface|GatedRepo|gated repo|Authorization header|user token|HfHub|hf\.co", line + "\n" + text):
        return "hub"
    if re.search(r"nvcr\.io|NGC", line + text):
        return "ngc"
    return "generic"


def credential_refs(ev, c, target: str) -> List[str]:
    """How the container gets credentials for the target: env names and their Secret/ConfigMap sources."""
    wanted = CREDENTIAL_ENV.get(target, ())
    out = []
    for e in c.get("env") or []:
        n = e.get("name") or ""
        if not (n in wanted or (target == "generic" and re.search(r"TOKEN|API_KEY|SECRET|PASSWORD|CREDENTIAL", n))):
            continue
        ref = (e.get("valueFrom") or {}).get("secretKeyRef") or (e.get("valueFrom") or {}).get("configMapKeyRef")
        if ref:
            kind = "Secret" if "secretKeyRef" in e["valueFrom"] else "ConfigMap"
            gone = " (it does not exist)" if ev.is_absent(kind, ref.get("name"), ev.target.namespace) else ""
            out.append(f"{n} from {kind} {ref.get('name')} key {ref.get('key')}" + (" (optional)" if ref.get("optional") else "") + gone)
        else:
            out.append(f"{n} is set as a literal value in the spec" if e.get("value") else f"{n} is set but empty")
    for ef in c.get("envFrom") or []:
        if ef.get("secretRef"):
            out.append(f"every key of Secret {ef['secretRef'].get('name')} (envFrom)")
    if target in ("s3", "gcs", "azure", "k8s"):
        out.append(f"service account {spec(ev.pod).get('serviceAccountName') or 'default'}")
    return out


def _hub_repo(text: str) -> str:
    m = re.search(r"Access to model (\S+?) is|huggingface\.co/(?:api/models/)?([\w.-]+/[\w.-]+)", text)
    return (m.group(1) or m.group(2)) if m else "the model"


def auth_meaning(ev, c, target, line: str, creds: List[str], text: str = ""):
    """(what the rejection means, snippet, fix or None) — names only, never values."""
    ns, sa = ev.target.namespace, spec(ev.pod).get("serviceAccountName") or "default"
    token = next((x for x in creds if x.startswith(CREDENTIAL_ENV["hub"])), None)
    secret = re.search(r"from Secret (\S+) key (\S+)", token or "")
    if target == "hub":
        repo = _hub_repo(line + "\n" + text)
        if re.search(r"not in the authorized list|403", line):
            return ("the Hugging Face token is valid but its account has not been granted access to this gated model",
                    "", f"Request access to {repo} on huggingface.co with the account that owns the token"
                        + (f" in Secret {secret.group(1)}" if secret else "") + ", then delete the pod to retry now.")
        if token:
            return (f"the Hugging Face hub rejected the token ({token}): it is invalid, expired or revoked",
                    (f"kubectl create secret generic {secret.group(1)} -n {ns} --from-literal={secret.group(2)}=<new token> "
                     "--dry-run=client -o yaml | kubectl apply -f -") if secret else "",
                    f"Put a valid read token for {repo} into " + (f"Secret {secret.group(1)}" if secret else "the container's env")
                    + ", then delete the pod to retry now.")
        return ("the request to the Hugging Face hub carried no token (HF_TOKEN is not set), and the repo is gated or private",
                f"kubectl create secret generic hf-token -n {ns} --from-literal=token=<token>\n# container {c['name']}\n"
                "env:\n- name: HF_TOKEN\n  valueFrom:\n    secretKeyRef:\n      name: hf-token\n      key: token",
                f"Give container {c['name']} an HF_TOKEN from a Secret, for an account that has been granted {repo}.")
    if target == "s3":
        if re.search(r"NoCredentials|Unable to locate", line):
            why = f"no object-store credentials at all: no AWS_* variables and no web identity on service account {sa}"
        elif re.search(r"InvalidAccessKeyId|SignatureDoesNotMatch", line):
            why = "the access key or secret key is wrong"
        elif "ExpiredToken" in line:
            why = "the session credentials have expired"
        else:
            why = "the identity is not allowed to read that bucket/object (bucket policy, IAM role or KMS key)"
        return (f"the object store rejected the request: {why}",
                f"kubectl get serviceaccount {sa} -n {ns} -o jsonpath='{{.metadata.annotations}}'   # IRSA/Pod Identity role", None)
    if target == "k8s":
        m = re.search(r'"system:serviceaccount:([^:"]+):([^"]+)" cannot (\w+) resource "([^"]+)"', line)
        if m:
            return (f"service account {m.group(2)} is not allowed to {m.group(3)} {m.group(4)} (RBAC)",
                    f"kubectl auth can-i {m.group(3)} {m.group(4)} -n {m.group(1)} --as=system:serviceaccount:{m.group(1)}:{m.group(2)}",
                    f"Grant service account {m.group(2)} a Role with {m.group(3)} on {m.group(4)} (RoleBinding in {m.group(1)}).")
    if target == "gcs":
        return (f"the Google service account behind {sa} lacks access to the bucket",
                f"kubectl get serviceaccount {sa} -n {ns} -o jsonpath='{{.metadata.annotations}}'   # Workload Identity", None)
    return "the server rejected the credentials (401/403)", "", None


# --- connections -----------------------------------------------------------------------------------------

def endpoint(m):
    g = m.groupdict()
    host = (g.get("host") or g.get("host2") or "").strip("[]") or None
    return host, g.get("port"), (g.get("why") or g.get("why2") or "connection failed").strip()


def _kind(why: str) -> str:
    if re.search(r"(?i)no such host|not known|name resolution|ENOTFOUND|EAI_AGAIN|UnknownHost|resolve|translate host"
                 r"|No address|nodename|getaddrinfo|DNS|misbehaving", why):
        return "dns"
    if re.search(r"(?i)refused", why):
        return "refused"
    return "timeout" if re.search(r"(?i)timed? ?out|ETIMEDOUT|no route|EHOSTUNREACH", why) else "other"


def dependency_meaning(ev, host, port, why):
    """(meaning, snippet or None for the rule's, fix or None for the rule's)."""
    kind, ns = _kind(why), ev.target.namespace
    if host in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return (f"nothing listened on {host}:{port or '?'} yet: a sidecar in the same pod starts later, or listens on another port",
                "", "Start the sidecar first: declare it as a native sidecar (an init container with restartPolicy: Always "
                    "and a startupProbe), or make the app retry until it listens.")
    external = host and "." in host and not re.search(r"\.svc(\.|$)|cluster\.local$|^\d+\.\d+\.\d+\.\d+$", host)
    if external:
        return (f"the pod cannot reach {host} outside the cluster (no egress, DNS or proxy for it)", "",
                "Allow egress to it (NetworkPolicy, firewall, HTTPS_PROXY), or remove the dependency: for model hubs, "
                "pre-download the model to a volume and set HF_HUB_OFFLINE=1.")
    if not host:
        return ("the log does not name the host; find it in the lines above", "", None)
    meaning = {"dns": f"the name {host} does not resolve from namespace {ns}: no Service of that name exists here (if it "
                      f"lives in another namespace, use {host}.<namespace>.svc)",
               "refused": f"the address answers but nothing accepts connections on port {port or '?'}: the backend's pods "
                          f"are not ready (its Service has no ready endpoints) or the port is wrong",
               "timeout": "connections time out: a NetworkPolicy or firewall drops them, or the backend is overloaded",
               }.get(kind, "the backend was not reachable when the container started")
    return meaning, None, None


def wait_command(host, port, why) -> str:
    if not host:
        return ""
    if port and _kind(why) != "dns":
        return f"until nc -z {host} {port}; do echo waiting for {host}:{port}; sleep 2; done"
    return f"until nslookup {host}; do echo waiting for {host}; sleep 2; done"


# --- probes and start-up time ------------------------------------------------------------------------------

def _budget(p) -> int:
    return int(p.get("initialDelaySeconds") or 0) + int(p.get("failureThreshold") or 3) * int(p.get("periodSeconds") or 10)


def _probe_words(kind, p) -> str:
    delay = f"{p.get('initialDelaySeconds')}s + " if p.get("initialDelaySeconds") else ""
    return f"the {kind} ({delay}{p.get('failureThreshold') or 3} × {p.get('periodSeconds') or 10}s)"


def probe_budget(c):
    """(seconds before the kubelet gives up on a starting container, words, the probe whose handler to reuse)."""
    if c.get("startupProbe"):
        return _budget(c["startupProbe"]), _probe_words("startupProbe", c["startupProbe"]), c["startupProbe"]
    if c.get("livenessProbe"):
        return (_budget(c["livenessProbe"]), _probe_words("livenessProbe", c["livenessProbe"]) + " with no startupProbe",
                c["livenessProbe"])
    return 0, "", None


def _line_time(line: str, year: int) -> Optional[datetime]:
    for rx in _TIMES:
        m = rx.search(line)
        if m:
            g = m.groupdict()
            try:
                return datetime(int(g.get("y") or year), int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]),
                                int(g["s"]), tzinfo=timezone.utc)
            except ValueError:
                return None
    return None


def ready_after(text: str, started) -> Optional[float]:
    """Seconds from the run's start to its first ready line, from the nearest timestamped line at or before it."""
    start = parse_time(started)
    if not text or start is None:
        return None
    lines = logscan.clean(text).split("\n")
    i = next((n for n, l in enumerate(lines) if any(rx.search(l) for rx in _READY)), None)
    for j in range(i if i is not None else -1, max(-1, (i or 0) - 30), -1):
        t = _line_time(lines[j], start.year)
        if t:
            d = (t - start).total_seconds()
            return d if 0 <= d <= 6 * 3600 else None
    return None


def _seconds(clock: str) -> int:
    parts = [int(x) for x in clock.split(":")]
    return sum(v * 60 ** i for i, v in enumerate(reversed(parts)))


def _progress_left(text: str):
    """(seconds left, how far) from the last progress line of a log, or (None, "")."""
    best = None
    for n, line in enumerate(logscan.clean(text).split("\n")):
        for rx in PROGRESS:
            m = re.search(rx, line)
            if m:
                best = m
    if not best:
        return None, ""
    g = best.groupdict()
    done = f"{g['pct']}% done" if g.get("pct") else f"{g['done']} of {g['total']} files downloaded"
    return _seconds(g["left"]), done


def observed_start(ev, c, cs, term, text):
    """(seconds, how we know, exact): the longest of a ready line's time in any run and the killed run's length
    plus what its last progress line said was left (exact False when only the killed run's length is known)."""
    runs = [(ev.log(ev.pod, c["name"], False), ((cs.get("state") or {}).get("running") or {}).get("startedAt")),
            (ev.log(ev.pod, c["name"], True), ((cs.get("lastState") or {}).get("terminated") or {}).get("startedAt"))]
    ready = max([t for t in (ready_after(x, s) for x, s in runs) if t is not None], default=None)
    ran = seconds_between(term.get("startedAt"), term.get("finishedAt"))
    left, done = _progress_left(text)
    killed = ran + left if ran is not None and left is not None else ran
    parts = []
    if ready is not None:
        parts.append(f"a run that got ready did so {human_duration(ready)} after start")
    if ran is not None:
        parts.append(f"the killed run was still loading after {human_duration(ran)}"
                     + (f" with {done} and about {human_duration(left)} to go" if left is not None else ""))
    best = max([x for x in (ready, killed) if x is not None], default=None)
    if best is None:
        return None, "", False
    exact = left is not None or (ready is not None and ready >= (killed or 0))
    return best, ("about " if exact else "more than ") + human_duration(best) + " (" + "; ".join(parts) + ")", exact


def startup_snippet(c, probe, observed: float):
    period = int(probe.get("periodSeconds") or 10)
    threshold = max(1, math.ceil(observed * 1.5 / period))
    handler = {k: v for k, v in probe.items() if k in ("httpGet", "tcpSocket", "grpc", "exec")}
    body = _indent(yaml.safe_dump(handler, sort_keys=False, default_flow_style=False), 2)
    return (f"# container {c['name']}: liveness and readiness probes start only after the startup probe succeeds\n"
            f"startupProbe:\n{body}  periodSeconds: {period}\n  failureThreshold: {threshold}   "
            f"# {threshold} × {period}s = {threshold * period}s ≥ 1.5 × the observed {human_duration(observed)}"), threshold


def kill_count(kills) -> str:
    n = sum(event_count(e) for e in kills)
    return "once" if n == 1 else f"{n} times"


def _indent(text: str, n: int) -> str:
    return "".join(" " * n + l + "\n" for l in text.rstrip("\n").split("\n"))
