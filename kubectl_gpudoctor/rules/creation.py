"""Creation-phase rules: the pod is on a node but its containers cannot be created or started."""
from __future__ import annotations

import re

from .. import podstate
from ..k8s import config_references, name, spec
from .common import event_line, first_match, pod_events, scheduled, status_line
from .registry import SPECIFIC, Hit, Line, Unknown, rule

# The kubelet wraps the API's 404 (`runtimeclass.node.k8s.io "x" not found`); admission says
# `pod rejected: RuntimeClass "x" not found`.
_RC_NOT_FOUND = r'RuntimeClass "?([\w.-]+)"? not found|runtimeclass\.node\.k8s\.io "([^"]+)" not found'


def _has_runtime_class(ev):
    return ev.pod is not None and bool(spec(ev.pod).get("runtimeClassName"))


@rule("runtimeclass-not-found", phase="creation", severity="critical", rank=SPECIFIC, applies=_has_runtime_class,
      title="RuntimeClass does not exist",
      remediation="Set spec.runtimeClassName to an existing RuntimeClass ($existing), or create "
                  "RuntimeClass $runtimeclass (the GPU operator creates `nvidia` when its toolkit is enabled).",
      snippet="apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: $runtimeclass\nhandler: $runtimeclass")
def runtimeclass_not_found(ev):
    """spec.runtimeClassName names a RuntimeClass the API says does not exist (404, or the kubelet's event)."""
    rc = spec(ev.pod)["runtimeClassName"]
    event, _ = first_match(pod_events(ev), _RC_NOT_FOUND)
    existing = ", ".join(sorted(name(o) for o in ev.all("RuntimeClass"))) or "none exist"
    values = {"runtimeclass": rc, "existing": existing}
    if ev.is_absent("RuntimeClass", rc):
        lines = [Line("spec", "spec.runtimeClassName", rc),
                 Line("object", "runtimeclasses", f"RuntimeClass {rc} not found; existing: {existing}")]
        lines += [event_line(event)] if event else []
        return Hit(f"The pod asks for RuntimeClass {rc!r}, which does not exist (existing: {existing}).",
                   lines, values=values)
    if event:
        return Hit(f"The kubelet cannot find RuntimeClass {rc!r} for this pod.", [event_line(event)], values=values)
    if ev.get("RuntimeClass", rc) is None and ev.gap("runtimeclasses"):
        return Unknown.from_gap(ev.gap("runtimeclasses"))
    return None


_CONFIG_MSG = (r'(secret|configmap) "([^"]+)" not found'
               r"|couldn't find key (\S+) in (Secret|ConfigMap) ([\w.-]+)/([\w.-]+)")


@rule("missing-config-reference", phase="creation", severity="critical", rank=SPECIFIC, applies=scheduled,
      title="A referenced Secret, ConfigMap or key does not exist",
      remediation="Create $kind $refname in namespace $namespace (or fix the reference in $where); values "
                  "are never shown here, only names.",
      snippet="kubectl create $kindlower $refname -n $namespace --from-literal=<key>=<value>   # or --from-file")
def missing_config_reference(ev):
    """CreateContainerConfigError, or a non-optional Secret/ConfigMap reference whose object is absent."""
    pod = ev.pod
    for c, cs, _ in podstate.all_container_states(pod):
        wait = podstate.waiting(cs)
        m = re.search(_CONFIG_MSG, wait.get("message") or "", re.I)
        if wait.get("reason") == "CreateContainerConfigError" and m:
            kind = "Secret" if (m.group(1) or m.group(4) or "").lower() == "secret" else "ConfigMap"
            ref = m.group(2) or m.group(6)
            what = f"key {m.group(3)} of {kind} {ref}" if m.group(3) else f"{kind} {ref}"
            return Hit(f"Container {c['name']} cannot be created: {what} does not exist ({wait['message']}).",
                       [status_line(c["name"], "state", wait)],
                       values=_values(kind, ref, f"container {c['name']}"))
    unknown = None
    for ref in config_references(pod):
        if ref["optional"]:
            continue
        source = "secrets" if ref["kind"] == "Secret" else "configmaps"
        if ev.is_absent(ref["kind"], ref["name"], ev.target.namespace):
            return Hit(f"{ref['kind']} {ref['name']} (used by {ref['where']}) does not exist in namespace "
                       f"{ev.target.namespace}.",
                       [Line("spec", ref["where"], f"{ref['kind']} {ref['name']}" + (f" key {ref['key']}" if ref["key"] else "")),
                        Line("object", source, f"{ref['kind']} {ref['name']} not found")],
                       values=_values(ref["kind"], ref["name"], ref["where"]))
        if ev.gap(source) and not ev.get(ref["kind"], ref["name"]):
            unknown = unknown or Unknown.from_gap(ev.gap(source))
    return unknown


def _values(kind, ref, where):
    return {"kind": kind, "refname": ref, "where": where, "kindlower": "secret generic" if kind == "Secret" else "configmap"}


# Sub-reasons of a failed pull, from the kubelet/containerd/registry wording.
_PULL_CAUSES = (
    ("rate-limited", r"429 Too Many Requests|toomanyrequests|rate limit",
     "Authenticate pulls (imagePullSecret) or use a registry mirror/cache: the registry is rate-limiting this node."),
    ("platform", r"no match for platform in manifest|no matching manifest for",
     "Use an image built for the node's architecture (node label kubernetes.io/arch), or a multi-arch tag."),
    # Docker Hub answers "pull access denied, repository does not exist or may require authorization"
    # for both a private and a missing repository: the credentials remedy names both.
    ("unauthorized", r"401 Unauthorized|403 Forbidden|unauthorized|authorization failed|pull access denied|"
                     r"insufficient_scope|no basic auth credentials|denied: ",
     "Check that $image exists and give the pod registry credentials: an imagePullSecret of type "
     "kubernetes.io/dockerconfigjson in namespace $namespace (nvcr.io uses user `$$oauthtoken` and an NGC API key)."),
    ("not-found", r"not found|manifest unknown|repository does not exist|NotFound|name unknown",
     "Fix the image name or tag: $image does not exist in the registry."),
    ("network", r"no such host|i/o timeout|connection refused|TLS handshake timeout|context deadline exceeded|"
                r"x509: certificate",
     "Fix the node's path to the registry (DNS, proxy, firewall, CA certificates) or use a reachable mirror."),
)


@rule("image-pull-failed", phase="creation", severity="critical", rank=SPECIFIC, applies=scheduled,
      title="Image cannot be pulled",
      remediation="Check the image reference and the registry credentials of the pod.")
def image_pull_failed(ev):
    """A container waits in ErrImagePull/ImagePullBackOff/InvalidImageName; the pull error says why."""
    pod = ev.pod
    for c, cs, _ in podstate.all_container_states(pod):
        wait = podstate.waiting(cs)
        if wait.get("reason") not in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"):
            continue
        image = c.get("image", "")
        event, _ = first_match(pod_events(ev, ("Failed",)), r"Failed to pull image|" + re.escape(image))
        text = " ".join([wait.get("message") or "", (event or {}).get("message") or ""])
        cause, fix = "unknown", "Read the pull error below; check the image reference and registry access."
        for sub, pattern, remedy in _PULL_CAUSES:
            if re.search(pattern, text, re.I):
                cause, fix = sub, remedy
                break
        if wait.get("reason") == "InvalidImageName":
            cause, fix = "invalid-name", "Fix the image reference syntax ($image)."
        lines = [status_line(c["name"], "state", wait)] + ([event_line(event)] if event else [])
        return Hit(f"Container {c['name']} cannot pull image {image} ({wait['reason']}, cause: {cause}).",
                   lines, values={"image": image, "container": c["name"]}, fix=fix)
    return None
