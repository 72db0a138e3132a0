"""Creation-phase rules about what the pod references: its RuntimeClass, Secrets and ConfigMaps, and images."""
from __future__ import annotations

import re

from ...fixes import generated_fix
from ...kube import owners, podstate
from ...data import event_signatures as sigs
from ...data.cuda_driver import split_image
from ...kube.objects import PUBLISHED_CONFIGMAPS, config_references, name, spec
from .._common import creating, current, event_line, first_match, pod_events, scheduled, status_line
from ..registry import Hit, Line, Unknown, rule
from ._common import CONFIG, IMAGE, SANDBOX, find


# --- rules -------------------------------------------------------------------------------------------------------

def _has_runtime_class(ev):
    return scheduled(ev) and bool(spec(ev.pod).get("runtimeClassName"))


@rule("runtimeclass-not-found", phase="creation", severity="critical", rank=SANDBOX, applies=_has_runtime_class,
      title="RuntimeClass does not exist",
      remediation="Set spec.runtimeClassName to an existing RuntimeClass ($existing), or create "
                  "RuntimeClass $runtimeclass (the GPU operator creates `nvidia` when its toolkit is enabled).",
      snippet="apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: $runtimeclass\nhandler: $runtimeclass")
def runtimeclass_not_found(ev):
    """spec.runtimeClassName names a RuntimeClass the API says does not exist (404, or the kubelet's event)."""
    rc = spec(ev.pod)["runtimeClassName"]
    if not creating(ev) or ev.get("RuntimeClass", rc) is not None:
        return None
    found = find(ev, "runtimeclass-not-found", sigs.SANDBOX_REASONS)
    existing = ", ".join(sorted(name(o) for o in ev.all("RuntimeClass"))) or "none exist"
    values = {"runtimeclass": rc, "existing": existing}
    if ev.is_absent("RuntimeClass", rc):
        lines = [Line("spec", "spec.runtimeClassName", rc),
                 Line("object", "runtimeclasses", f"RuntimeClass {rc} not found; existing: {existing}")]
        return Hit(f"The pod asks for RuntimeClass {rc!r}, which does not exist (existing: {existing}); the kubelet "
                   f"cannot create its sandbox.", lines + (found.lines if found else []), values=values)
    if found:
        return Hit(f"The kubelet cannot find RuntimeClass {rc!r} for this pod, so it cannot create the sandbox.",
                   found.lines, values=values)
    return Unknown.from_gap(ev.gap("runtimeclasses")) if ev.gap("runtimeclasses") else None


@rule("missing-config-reference", phase="creation", severity="critical", rank=CONFIG, applies=scheduled,
      title="A referenced Secret, ConfigMap or key does not exist",
      remediation="Create $kind $refname in namespace $namespace (or fix the reference in $where); values "
                  "are never shown here, only names.",
      snippet="kubectl create $kindlower $refname -n $namespace $literals")
def missing_config_reference(ev):
    """CreateContainerConfigError or FailedMount for a missing Secret/ConfigMap/key, or a non-optional reference
    whose object is absent, while the pod is stuck in creation."""
    if not creating(ev):
        return None
    said = _config_error(ev)
    if said:
        return said
    unknown = None
    mounted = podstate.past_volume_setup(ev.pod)
    for ref in config_references(ev.pod):
        source = "secrets" if ref["kind"] == "Secret" else "configmaps"
        # A volume's object existed when the kubelet mounted it; a published CA bundle is in every namespace (a
        # snapshot without it is incomplete): only the kubelet's own complaint (above) convicts those.
        if ref["optional"] or (ref["volume"] and mounted) or ref["name"] in PUBLISHED_CONFIGMAPS:
            continue
        if ev.is_absent(ref["kind"], ref["name"], ev.target.namespace):
            what = f"{ref['kind']} {ref['name']}" + (f" key {ref['key']}" if ref["key"] else "")
            return Hit(f"{ref['kind']} {ref['name']} (used by {ref['where']}) does not exist in namespace "
                       f"{ev.target.namespace}.",
                       [Line("spec", ref["where"], what), Line("object", source, f"{ref['kind']} {ref['name']} not found")],
                       values=_values(ref["kind"], ref["name"], ref["where"], ev.pod), **_made(ev, ref["kind"], ref["name"]))
        if ev.gap(source) and not ev.get(ref["kind"], ref["name"]):
            unknown = unknown or Unknown.from_gap(ev.gap(source))
    return unknown


# kubelet: `secret "x" not found`, `configmap "x" not found`, `couldn't find key K in Secret ns/x`
# (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables); FailedMount: `MountVolume.SetUp failed for volume "v" :
# secret "x" not found` (kubernetes/kubernetes#110158).
_CONFIG_MSG = (r'(?P<kind>secret|configmap) "(?P<name>[^"]+)" not found'
               r"|couldn't find key (?P<key>\S+) in (?P<kind2>Secret|ConfigMap) [\w.-]+/(?P<name2>[\w.-]+)")


def _config_error(ev):
    """The kubelet's own words about a missing reference: a container's CreateContainerConfigError or a FailedMount."""
    for c, cs, _ in podstate.all_container_states(ev.pod):
        wait = podstate.waiting(cs)
        m = re.search(_CONFIG_MSG, wait.get("message") or "", re.I)
        if wait.get("reason") == "CreateContainerConfigError" and m:
            return _config_hit(ev, m, f"container {c['name']}", [status_line(c["name"], "state", wait)],
                               f"Container {c['name']} cannot be created")
    mounts = current(ev, pod_events(ev, ("FailedMount",)))
    event, m = first_match(mounts, r'MountVolume\.SetUp failed for volume "([^"]+)" : (?:' + _CONFIG_MSG + ")")
    if event and not exists_now(ev, m):   # one that exists now is volume-mount-failed's (a lagging kubelet)
        return _config_hit(ev, m, f"volume {m.group(1)}", [event_line(event)], f"Volume {m.group(1)} cannot be mounted")
    return None


def exists_now(ev, m) -> bool:
    """The whole object the kubelet called missing is in the evidence now (a missing key is still missing)."""
    kind = "Secret" if (m.group("kind") or m.group("kind2") or "").lower() == "secret" else "ConfigMap"
    return not m.group("key") and ev.get(kind, m.group("name") or m.group("name2"), ev.target.namespace) is not None


def _config_hit(ev, m, where, lines, head):
    kind = "Secret" if (m.group("kind") or m.group("kind2") or "").lower() == "secret" else "ConfigMap"
    ref = m.group("name") or m.group("name2")
    what = f"key {m.group('key')} of {kind} {ref}" if m.group("key") else f"{kind} {ref}"
    if exists_now(ev, m):
        return Hit(f"{head}: the kubelet reports {what} not found, but it exists now: the kubelet's view lags or the "
                   f"status is from before it was created.", lines + [Line("object", f"{kind.lower()}s/{ref}", "exists")],
                   values=_values(kind, ref, where, ev.pod),
                   fix=f"Do not recreate {kind} {ref}: it exists. The kubelet retries on its next sync; if the container "
                       f"stays in CreateContainerConfigError, delete the pod: $recreates.")
    return Hit(f"{head}: {what} does not exist.", lines, values=_values(kind, ref, where, ev.pod),
               **({} if m.group("key") else _made(ev, kind, ref)))


def _made(ev, kind, ref) -> dict:
    """The fix for an object the pod's operator generates (a Volcano Job's `<job>-svc`): fixes.py's, not "create it"."""
    made = generated_fix(owners.fix_target(ev, ev.pod), kind, ref)
    return {"fix": made[0], "snippet": made[1]} if made else {}


def _values(kind, ref, where, pod=None):
    """The names the fix uses; the keys are those the pod reads from it (values are never known here)."""
    keys = sorted({r["key"] for r in config_references(pod or {}) if r["name"] == ref and r["kind"] == kind and r["key"]})
    literals = " ".join(f"--from-file={k}=./{k.lower().replace('_', '-')}.txt" for k in keys[:4]) or \
        "--from-file=./   # one key per file of this directory"
    return {"kind": kind, "refname": ref, "where": where, "kindlower": "secret generic" if kind == "Secret" else "configmap",
            "literals": literals}


_PULL_WAITING = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")


@rule("image-pull-failed", phase="creation", severity="critical", rank=IMAGE, applies=scheduled,
      title="Image cannot be pulled",
      remediation="Check the image reference and the registry credentials of the pod.")
def image_pull_failed(ev):
    """A container waits in ErrImagePull/ImagePullBackOff/InvalidImageName; the pull error says why."""
    for c, cs, _ in podstate.all_container_states(ev.pod):
        wait = podstate.waiting(cs)
        if wait.get("reason") not in _PULL_WAITING:
            continue
        image = c.get("image", "")
        event = _pull_event(ev, c["name"], image)
        text = " ".join([wait.get("message") or "", (event or {}).get("message") or ""])
        cause, fix = _pull_cause(wait.get("reason"), text)
        note, fix = _pull_secrets(ev, image, text, fix) if cause == "unauthorized" else ("", fix)
        lines = [status_line(c["name"], "state", wait)] + ([event_line(event)] if event else [])
        return Hit(f"Container {c['name']} cannot pull image {image} ({wait['reason']}, cause: {cause}).{note}",
                   lines, values={"image": image, "container": c["name"]}, fix=fix)
    return None


def _pull_event(ev, container, image):
    """The newest `Failed to pull image` event for this container (by fieldPath, else by image)."""
    failed = [e for e in pod_events(ev, ("Failed",)) if "pull" in (e.get("message") or "").lower()]
    mine = [e for e in failed if "{%s}" % container in ((e.get("involvedObject") or {}).get("fieldPath") or "")]
    event, _ = first_match(mine or failed, r"Failed to pull image|" + re.escape(image))
    return event


def _pull_cause(reason, text):
    if reason == "InvalidImageName":
        return "invalid-name", "Fix the image reference syntax of $image (lower-case repository, one tag or digest)."
    if reason == "ErrImageNeverPull":
        return "never-pull", ("Pre-load $image on node $node or change imagePullPolicy from Never: the image is not "
                              "on the node.")
    for sub, pattern, remedy in sigs.PULL_CAUSES:
        if re.search(pattern, text, re.I):
            return sub, remedy
    return "unknown", "Read the pull error below; check the image reference and registry access."


def _pull_secrets(ev, image, text, fix):
    """(sentence, fix) for a refused pull by a pod that sends imagePullSecrets: a named Secret that does not exist (404,
    or the kubelet's FailedToRetrieveImagePullSecret), else its credentials are rejected or (insufficient_scope / 403 /
    denied) not entitled to the repository."""
    names = [s["name"] for s in spec(ev.pod).get("imagePullSecrets") or [] if s.get("name")]
    if not names:
        return "", fix
    repo, ns = split_image(image)[0], ev.target.namespace
    host = repo.split("/")[0] if "/" in repo and re.search(r"[.:]|^localhost$", repo.split("/")[0]) else "docker.io"
    warned = " ".join(e.get("message") or "" for e in pod_events(ev, ("FailedToRetrieveImagePullSecret",)))
    missing = [n for n in names if ev.is_absent("Secret", n, ns) or re.search(rf"[(, ]{re.escape(n)}[,)]", warned)]
    if missing:
        return (f" The pod names imagePullSecret {', '.join(missing)}, which does not exist in namespace {ns}, so the "
                f"kubelet pulled without it.", f"Create Secret {missing[0]} (type kubernetes.io/dockerconfigjson) in "
                f"namespace $namespace with credentials for {host}, or fix the name in the pod's imagePullSecrets.")
    scope = re.search(r"insufficient_scope|403 Forbidden|denied: ", text, re.I)
    said = (f"the registry takes its credentials but their account is not entitled to {repo} (authorization, not "
            f"authentication), or the repository does not exist" if scope else
            f"the registry rejects its credentials (a wrong or expired key, or a Secret for another registry than {host})")
    # Not read and no events to show the kubelet's warning for a missing one: its existence is unchecked.
    unchecked = [n for n in names if ev.get("Secret", n, ns) is None] and not ev.readable("events")
    return (f" The pod sends imagePullSecret {', '.join(names)}" + (" (whether it exists was not checked)" if unchecked
                                                                   else "") + f": {said}.",
            f"Fix imagePullSecret {names[0]} in namespace $namespace: its credentials for {host} must be valid and "
            f"the account must have access to {repo} (for nvcr.io: user `$$oauthtoken` and an NGC API key of an org "
            f"entitled to that repository); recreate it with `kubectl create secret docker-registry`.")
