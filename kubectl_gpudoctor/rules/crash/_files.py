"""Evidence helpers for the application crash rules about files and binaries: which volume covers a path, what
makes it read-only or not executable, the node's and the image's CPU architecture. Pure; no I/O."""
from __future__ import annotations

import json
import os
import re
from typing import List, Optional, Tuple

from ...logs.crashrun import match_run
from ...data.app_context import ARCH_ALIASES, ARCH_HINT, CACHE_ENV, CACHE_ENV_FALLBACK
from ...evidence import Line
from ...kube.objects import labels, name, spec, status
from ... import lazyre

# Paths that are not model or config files: devices, system and driver libraries, scripts, sockets.
_NOT_MODEL = lazyre.compile(r"^/(?:dev|proc|sys|etc|run|var/run|bin|sbin|lib|lib64|usr/(?:bin|sbin|lib|lib64|local/(?:bin|cuda|nvidia)))(?:/|$)"
                        r"|\.so(?:\.\d+)*$|\.(?:py|pyc|sh|sock|pid)$|site-packages|dist-packages|^/tmp/")
_READ_ONLY_KINDS = ("configMap", "secret", "downwardAPI", "projected")
_SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount"


def match(ev, c, cs, term, rule_id):
    return match_run(ev, c, cs, term, rule_id)


# --- nodes and images ------------------------------------------------------------------------------------

def node_name(ev) -> str:
    return name(ev.node) or spec(ev.pod).get("nodeName") or "the node"


def node_arch_of(ev) -> Optional[str]:
    node = ev.node
    if not node:
        return None
    lab = labels(node)
    return (lab.get("kubernetes.io/arch") or lab.get("beta.kubernetes.io/arch")
            or (status(node).get("nodeInfo") or {}).get("architecture"))


def image_arch_of(image: str) -> Optional[str]:
    m = re.search(ARCH_HINT, image.split("@")[0])
    return ARCH_ALIASES.get(m.group("arch").lower(), m.group("arch").lower()) if m else None


def owner_words(pod, owner) -> str:
    """"its Deployment x (ReplicaSet x-hash)" for the controller that restarts a pod's containers."""
    if not owner:
        return "restartPolicy Always"
    hash_ = labels(pod).get("pod-template-hash")
    if owner.get("kind") == "ReplicaSet" and hash_ and owner.get("name", "").endswith("-" + hash_):
        return f"its Deployment {owner['name'][: -len(hash_) - 1]} (ReplicaSet {owner['name']})"
    return f"its {owner['kind']} {owner.get('name')}"


def foreground_command(c) -> Optional[str]:
    """A command/args snippet that runs a backgrounded `sh -c "server &"` in the foreground with exec, or None."""
    argv = (c.get("command") or []) + (c.get("args") or [])
    script = argv[2].strip() if len(argv) >= 3 and argv[1] == "-c" else ""
    if not re.search(r"&\s*$|nohup ", script):
        return None
    fg = "exec " + re.sub(r"^nohup\s+|\s*&\s*$", "", script)
    return f"# container {c['name']}\ncommand: {json.dumps([argv[0], '-c'])}\nargs: [{json.dumps(fg)}]"


def arch_story(ev, c, exe: str):
    """(why the binary cannot run here, node arch, the arch to select for the snippet, node Line or None)."""
    node_arch, image_arch, image = node_arch_of(ev), image_arch_of(c.get("image") or ""), c.get("image")
    line = Line("node", f"{node_name(ev)} labels", f"kubernetes.io/arch={node_arch}") if node_arch else None
    if image_arch and node_arch and image_arch != node_arch:
        why = f"the image {image} is built for {image_arch} and node {node_name(ev)} is {node_arch}"
    elif node_arch:
        why = (f"the image {image} has no {node_arch} variant (a single-architecture image)"
               + ("" if re.search(r"/s?bin/", exe) else ", or its entrypoint is a script without a #! line"))
    else:
        why = "the binary is built for another CPU architecture than the node's (the node could not be read)"
    return why, node_arch, image_arch or {"arm64": "amd64", "amd64": "arm64"}.get(node_arch or "", "amd64"), line


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
        guess = _mount_guess(c, path)
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


def _mount_guess(c, path: str) -> Optional[str]:
    """`/models/x` for `/data/models/x` when the container mounts /models: the path probably missed the mount."""
    for m in c.get("volumeMounts") or []:
        mp = (m.get("mountPath") or "").rstrip("/")
        base = os.path.basename(mp)
        if base and mp != _SA_TOKEN and f"/{base}/" in path:
            return mp + "/" + path.split(f"/{base}/", 1)[1]
    return None


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
        import yaml   # only for this snippet: a pod diagnosis does not load PyYAML otherwise
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


def cache_env(path: str, traceback: str):
    """(variable, subdirectory) that moves the cache a failed write was for: from the path, else the traceback."""
    return next(((env, sub) for where_ in (path, traceback) for rx, env, sub in CACHE_ENV if re.search(rx, where_)),
                CACHE_ENV_FALLBACK)


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


def _indent(text: str, n: int) -> str:
    return "".join(" " * n + l + "\n" for l in text.rstrip("\n").split("\n"))
