"""Where a fix goes: a finding's `# container X` / `# pod spec` snippet headers and its fix text rewritten to name the
object the user edits (the top of the pod's controller chain, at the field path inside it), through Helm or GitOps
when they own it; a bare pod is saved, changed and re-created. Filled in after a rule's placeholders."""
from __future__ import annotations

import re
from typing import Optional, Tuple

from .data import kserve_storage as ks
from .kube.objects import controller_of, name, spec
from .kube.owners import FixTarget, chart_of, injected, kueue_queue, resource_of

_CONTAINER_HEAD = re.compile(r"^# container (?P<c>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)(?P<rest>(?::| |$).*)$")
_POD_HEAD = re.compile(r"^# pod (?:spec|\S+ \(spec\))(?P<rest>.*)$")
_POD_SPEC = re.compile(r"\b(?:the |its )?pod spec\b")
# Top-level keys of a snippet that is a fragment of a container or of a pod spec (rules write them without a header
# when the place is obvious to them).
_CONTAINER_KEYS = ("resources", "env", "envFrom", "volumeMounts", "startupProbe", "livenessProbe", "readinessProbe",
                   "command", "args", "image", "securityContext")
_POD_KEYS = ("tolerations", "affinity", "nodeSelector", "volumes", "runtimeClassName", "imagePullSecrets",
             "schedulingGates", "hostIPC", "priorityClassName", "initContainers")
_KEY = re.compile(r"^([A-Za-z]+):(?:\s|$)")
# Fixes whose words say they change the pod's spec, from rules that set no `edits`: "Give container X an HF_TOKEN",
# "Raise spec.activeDeadlineSeconds of the pod template", "give the pod registry credentials", and the alternative
# "(or fix the reference in container X)".
_NAME = r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?"
_SAYS_CONTAINER = re.compile(rf"^(?:Give|Set|Add|Mount|Raise|Lower) (?:init )?container (?P<c>{_NAME})\b")
_SAYS_FIELD = re.compile(r"\bspec\.(?P<k>[A-Za-z]+) of the pod template\b")
_SAYS_POD = re.compile(r"\b(?:give the pod registry credentials|fix the name in the pod's imagePullSecrets|"
                       r"Authenticate the pulls \(an imagePullSecret\))")
# A pod-spec field named in the fix's words: "drop runtimeClassName", "Set spec.runtimeClassName to an existing
# RuntimeClass", "or remove schedulerName", "the missing runtimeClassName".
_SAYS_POD_FIELD = re.compile(r"\b(?:drop|remove|[Ss]et|missing) (?:spec\.)?(?P<k>runtimeClassName|schedulerName)\b")
# A container field of a named container: "Raise resources.limits.memory of container X", "Fix command/args of
# container X", "fix its cause in the code, arguments or configuration of container X", "keep the server process in
# the foreground (no `&`) in container X".
_SAYS_OF_CONTAINER = re.compile(rf"\b(?:(?:resources\.limits\.[\w.]+|command/args|the code, arguments or configuration) of "
                                rf"|in the foreground \([^)]*\) in )(?:init )?container (?P<c>{_NAME})\b")
# Several pod-spec fields at once (a checklist): /dev/shm's emptyDir and rdma/* requests, or node affinity and the
# image: the pod template as a whole.
_SAYS_TEMPLATE = re.compile(r"\b(?:that /dev/shm is large enough|node affinity on the GPU feature discovery)\b")
_SAYS_QUEUE = re.compile(r"^Point the pod template at a queue\b[^(]*\(the (?:(?P<what>label|annotation) "
                         r"(?P<key>[\w./-]+)=|(?:PodGroup \S+ )?spec\.queue=)")
_SAYS_REQUEST = re.compile(r"\b(?:lower the request|Request at most|request the name the nodes advertise|request the "
                           r"NetworkAttachmentDefinition's \S+ in resources\.limits|give \S+ a GPU of its own)\b")
_SAYS_IMAGE = re.compile(r"^(?:Use an image|Fix the image (?:name|reference))\b")
# The driver container's image, for a driver DaemonSet's pod (a ClusterPolicy's spec.driver for the GPU operator's).
_SAYS_DRIVER = re.compile(r"\buse a driver version/image that supports it\b")
_SAYS_ENV = re.compile(r"\bset (?P<var>[A-Z][A-Z0-9_]*)=\S")
_REFERENCE = re.compile(rf"\bfix the reference in (?:container (?P<c>{_NAME})(?: env [A-Z][A-Z0-9_]*)?|volume (?P<v>{_NAME}))(?=[);,.]|$)")


def recreate_values(ft: Optional[FixTarget]) -> dict:
    """`$recreates`: what brings a deleted pod back."""
    if ft is None:
        return {}
    ref = controller_of(ft.pod)
    if ref:
        return {"recreates": f"its {ref.get('kind')} {ref.get('name')} re-creates it"}
    return {"recreates": f"nothing re-creates it: pod {name(ft.pod)} has no controller, so re-create it from its manifest"}


def place(ft: Optional[FixTarget], fix: str, snippet: str, container: Optional[str],
          edits: str = "") -> Tuple[str, str]:
    """(fix, snippet) naming where the change goes, when the fix changes the pod's spec: the rule says so (`edits`:
    "pod" or "container"), or its snippet is a fragment of one."""
    if ft is None:
        return fix, snippet
    if container == ks.NAME and ft.storage is not None:   # KServe's injected download: configured elsewhere
        text, commands = storage_where(ft)
        keep = snippet and ks.NAME not in snippet and not _CONTAINER_HEAD.match(snippet.split("\n")[0])
        return (fix or "").rstrip() + " " + text, (snippet if keep else commands)
    explicit = container   # the rule's own $container: the one its words are about
    container = container or next((c.get("name") for c in (ft.pod.get("spec") or {}).get("containers") or []), None)
    snippet = _headed(snippet, container)
    lines, first, pod_level, kind, in_container = [], None, False, edits, False
    for line in snippet.split("\n"):
        m = _CONTAINER_HEAD.match(line)
        p = None if m else _POD_HEAD.match(line)
        key = _KEY.match(line)
        if m:
            first, in_container = first or m.group("c"), True
            line = line if ft.bare else _comment(ft.place(m.group('c')) + m.group("rest"))
        elif p:
            pod_level, in_container = True, False
            line = line if ft.bare else _comment(ft.place() + p.group("rest"))
        elif key and in_container and not ft.bare:
            line = ft.renamed(key.group(1)) + line[len(key.group(1)):]
        lines.append(line)
    edits = bool(kind or first or pod_level)
    if not edits:
        said = _said(ft, fix or "", explicit)
        if said:
            return said, snippet
    if not edits and not _POD_SPEC.search(fix or ""):
        return fix, snippet
    if not ft.bare:
        fix = _POD_SPEC.sub(lambda m: f"the pod template of {ft.top.what}", fix or "")
    at = first or (None if pod_level or kind == "pod" else container)
    return (fix or "").rstrip() + " " + where(ft, at), "\n".join(lines)


def _said(ft: FixTarget, fix: str, container: Optional[str] = None) -> Optional[str]:
    """The fix with where its change goes, when its words say it changes the pod's spec (see _SAYS_*); else None."""
    if not ft.bare and re.search(rf"\b{re.escape(ft.top.what)}\b", fix):
        return None   # the rule's own words name the object already (and how it is managed)
    names = {c.get("name") for part in ("containers", "initContainers") for c in spec(ft.pod).get(part) or []}
    for pattern, sub in ((_SAYS_REQUEST, "resources"), (_SAYS_IMAGE, "image"), (_SAYS_ENV, "env")):
        c = _gpu_container(ft) if sub == "resources" else container
        if pattern.search(fix) and c in names and not ft.bare:
            return fix.rstrip() + " " + where(ft, c, at=_container_field(ft, c, sub))
    if _SAYS_DRIVER.search(fix) and not ft.bare:
        first = next(iter(spec(ft.pod).get("containers") or []), {}).get("name")
        c = container if container in names and container != first and not _is_init(ft, container) else first
        if c:
            return fix.rstrip() + " " + where(ft, c, at=_container_field(ft, c, "image"))
    c = _SAYS_CONTAINER.match(fix) or _SAYS_OF_CONTAINER.search(fix)
    if c and c.group("c") in names:
        return fix.rstrip() + " " + where(ft, c.group("c"))
    k = _SAYS_POD_FIELD.search(fix)
    if k and not ft.bare:
        return fix.rstrip() + " " + where(ft, at=template_field(ft, k.group("k")))
    if _SAYS_TEMPLATE.search(fix) and not ft.bare:
        return fix.rstrip() + " " + where(ft)
    q = _SAYS_QUEUE.match(fix)
    if q and not ft.bare:
        from .kube.owners import queue_field
        volcano = "Volcano " if ft.top.group == "batch.volcano.sh" else ""
        at = f"{volcano}{ft.top.what}, {queue_field(ft, q.group('what'), q.group('key'))}"
        return fix.rstrip() + " " + where(ft, at=at)
    f = _SAYS_FIELD.search(fix)
    if f or _SAYS_POD.search(fix):
        at = None if ft.bare else template_field(ft, f.group("k") if f else "imagePullSecrets")
        if not f and ft.top.kind == "ClusterPolicy" and ft.container_path(container or "") is not None:
            at = (f"{ft.top.what}, {ft.container_path(container or '')}.imagePullSecrets (a list of Secret names in "
                  f"namespace {ft.namespace})")
        return fix.rstrip() + " " + where(ft, at=at)
    r = _REFERENCE.search(fix)
    if r and not ft.bare and (r.group("c") in names or r.group("v")):
        at = None if r.group("c") else template_field(ft, f"volumes[name={r.group('v')}]")
        return fix.rstrip() + " " + where(ft, r.group("c"), at=at)
    return None


def _is_init(ft: FixTarget, container: Optional[str]) -> bool:
    return any(c.get("name") == container for c in spec(ft.pod).get("initContainers") or [])


def _container_field(ft: FixTarget, container: str, sub: str) -> str:
    """`Deployment x, spec.template.spec.containers[name=c].resources` (a TrainJob's trainer: resourcesPerNode)."""
    path = ft.container_path(container)
    if path is None:
        return f"the pod template of {ft.top.what}, container {container}'s {sub}"
    if ft.top.kind == "ClusterPolicy" and sub == "image":   # its sections split an image in three
        return f"{ft.top.what}, {path}.repository, .image and .version"
    return f"{ft.top.what}, {path}.{ft.renamed(sub)}"


def _gpu_container(ft: FixTarget) -> Optional[str]:
    """The first container that requests a GPU (data/gpu_resources.py), else the first container."""
    from .data.gpu_resources import lookup
    cs = spec(ft.pod).get("containers") or []
    for c in cs:
        res = c.get("resources") or {}
        if any(lookup(k) for part in ("limits", "requests") for k in (res.get(part) or {})):
            return c.get("name")
    return cs[0].get("name") if cs else None


WIDTH = 72   # a snippet is shown indented under its finding: its comment lines fit an 80-column terminal


def _comment(text: str) -> str:
    """A `# ...` comment line, broken before a path's `.field` or at spaces when it is longer than WIDTH."""
    lines, cur = [], "#"
    for piece in re.findall(r"\.?[^.\s]+(?:\[[^\]]*\])?|\s+|\.", text):
        if piece.isspace():
            piece = " "
        if len(cur) + len(piece) > WIDTH and cur.strip("# "):
            lines.append(cur.rstrip())
            cur = "#   " + piece.lstrip()
        else:
            cur += piece if cur != "#" else " " + piece.lstrip()
    lines.append(cur.rstrip())
    return "\n".join(lines)


def _headed(snippet: str, container: Optional[str]) -> str:
    """A header before the first top-level key of a container or pod fragment that has none above it."""
    lines = snippet.split("\n")
    for i, line in enumerate(lines):
        if _CONTAINER_HEAD.match(line) or _POD_HEAD.match(line):
            return snippet
        key = _KEY.match(line)
        if key and key.group(1) in _POD_KEYS + _CONTAINER_KEYS:
            head = "# pod spec" if key.group(1) in _POD_KEYS or not container else f"# container {container}"
            return "\n".join(lines[:i] + [head] + lines[i:])
        if key or line.startswith("kubectl "):
            return snippet   # another document (a StorageClass, a Job) or commands
    return snippet


def where(ft: FixTarget, container: Optional[str] = None, at: Optional[str] = None, pods: bool = True) -> str:
    """One sentence: the object to change, how (kubectl edit, Helm values, Git) and why not the pod. `at` names the
    place when the caller knows the field; `pods` is false for a workload whose pods admission never let exist."""
    if ft.bare:
        return _bare_where(ft)
    added = injected(ft, container)
    if added:
        return _injected_where(ft, added, container)
    at, known = at or ft.place(container), _known(ft)
    managed = _managed_where(ft, at, known)
    if managed:
        return managed
    if ft.recreated:
        return _recreated_where(ft, at, known)
    if ft.top.kind == "ClusterPolicy":
        ds = next((ln.what for ln in ft.chain if ln.kind == "DaemonSet"), "its DaemonSet")
        return (f"Where: {at}{known} — not {ds} or the pod: the GPU operator renders {ds} from it and reverts a "
                f"direct edit: `{ft.edit_command()}`.")
    if not pods:
        return (f"Where: {at}{known}: `{ft.edit_command()}`; its controller retries creating the pods on its own once "
                f"admission accepts them.")
    return (f"Where: {at}{known} — not the pod, which {ft.top.kind} re-creates from it: `{ft.edit_command()}`.")


def _bare_where(ft: FixTarget) -> str:
    ns, pod = ft.namespace, name(ft.pod)
    return (f"Pod {pod} has no controller and a running pod's spec cannot be changed in place: save it "
            f"(`kubectl get pod {pod} -n {ns} -o yaml > {pod}.yaml`), make the change there, then delete and "
            f"re-create it (`kubectl replace --force -f {pod}.yaml`).")


def _injected_where(ft: FixTarget, added, container: Optional[str]) -> str:
    hooks = ft.webhooks
    named = (f": {', '.join(hooks)}" if hooks else f" ({ft.webhook_gap})" if ft.webhook_gap else
             " (none of the MutatingWebhookConfigurations read matches it)" if ft.webhook_gap is None else "")
    return (f"Where: not in {added.what}'s pod template — container {container} is not there, so a mutating "
            f"admission webhook added it when the pod was created{named}. Change what that webhook injects (its "
            f"operator's configuration or the annotations it reads on {ft.top.what}), not the template.")


def _known(ft: FixTarget) -> str:
    """How the object to edit is known, when not from reading it: ` (… named by the pod's owner references …)`."""
    pod = name(ft.pod)
    whose = "the pod's" if (ft.pod.get("kind") or "Pod") == "Pod" else f"{ft.pod.get('kind')} {pod}'s"
    return f" ({ft.top.what} named by {whose} owner references and labels, not read)" if ft.known_by_reference \
        else f" ({ft.top.kind}: {ft.top.known})" if ft.top.known else ""


def _managed_where(ft: FixTarget, at: str, known: str) -> Optional[str]:
    """The sentence for an object Argo CD, Flux or Helm owns (a direct edit is reverted); None for others."""
    tool, ns = ft.manager, ft.namespace
    if tool and tool[0] == "argocd":
        return (f"Where: {at}{known}. Argo CD manages it (application {tool[1]}, {tool[2]}): make the change in Git; "
                f"a kubectl edit is reverted at the next sync.")
    if tool and tool[0] == "flux":
        return (f"Where: {at}{known}. Flux applies it from Git (Kustomization {tool[1]}, {tool[2]}): make the change "
                f"in Git; a kubectl edit is reverted at the next reconciliation.")
    if tool and tool[0] == "flux-helm":
        return (f"Where: {at}{known}. Flux renders it from HelmRelease {tool[1]} ({tool[2]}): change that "
                f"HelmRelease's spec.values in Git; a kubectl edit is reverted at the next reconciliation.")
    if tool and tool[0] == "helm":
        rel, chart = tool[1], chart_of(ft) or "<chart>"
        return (f"Where: {at}{known}. It belongs to Helm release {rel} ({tool[2]}): set it in the release's values "
                f"(`helm get values {rel} -n {ns} -o yaml > values.yaml`, change it there, then `helm upgrade {rel} "
                f"{chart} -n {ns} -f values.yaml`); a kubectl edit is reverted at the next upgrade.")
    return None


def _recreated_where(ft: FixTarget, at: str, known: str) -> str:
    resource, scope = ft.resource()
    top, queue = ft.top.name, kueue_queue(ft)
    queued = f" Kueue admits the new one through LocalQueue {queue} again (quota permitting)." if queue else ""
    return (f"Where: {at}{known}, not the pod. A {ft.top.kind}'s pod template is fixed once it runs: save it "
            f"(`kubectl get {resource} {top}{scope} -o yaml > {top}.yaml`), make the change there, then re-create "
            f"it (`kubectl replace --force -f {top}.yaml`).{queued}")


def workload_target(ev, wl: dict) -> FixTarget:
    """Where a change to a workload's pod template goes: the workload itself, or the top of its own controller chain
    (an InferenceService above its Deployment, a CronJob above its Job)."""
    from .kube.owners import Link, management, owner_chain
    chain = owner_chain(ev, wl)
    top = chain[-1] if chain else Link(wl.get("kind") or "", name(wl), wl.get("apiVersion") or "v1", wl)
    return FixTarget(pod=wl, top=top, chain=chain, manager=management(chain[::-1], wl))


def template_field(ft: FixTarget, field: Optional[str]) -> str:
    """`StatefulSet train, spec.template.spec.runtimeClassName`: a pod-template field inside the object to edit."""
    from .kube.owners import POLICY_FIELDS
    if ft.top.kind == "ClusterPolicy" and field in POLICY_FIELDS:
        return f"{ft.top.what}, {POLICY_FIELDS[field]}"
    path = ft.pod_path()
    if path is None:
        return f"the pod template of {ft.top.what}" + (f", field {field}" if field else "")
    return f"{ft.top.what}, {path}" + (f".{field}" if field else "")


def patch_command(ft: FixTarget, field: str, value: str) -> Optional[str]:
    """`kubectl patch KIND NAME --type=merge -p '{"spec":{"template":{"spec":{FIELD:VALUE}}}}'` for a pod-template
    field of an owner that rolls its template out; None where a patch is refused (a Job's template is immutable), is
    reverted (Helm, GitOps) or cannot address the place (a list item by name)."""
    import json
    path = ft.pod_path()
    if path is None or "[" in path or ft.bare or ft.recreated or ft.manager:
        return None
    doc: object = value
    for key in reversed(path.split(".") + [field]):
        doc = {key: doc}
    resource, scope = ft.resource()
    return f"kubectl patch {resource} {ft.top.name}{scope} --type=merge -p '{json.dumps(doc, separators=(',', ':'))}'"


def storage_where(ft: FixTarget) -> Tuple[str, str]:
    """(one paragraph, commands) for KServe's storage-initializer: not the pod template (KServe's webhook adds it), but
    the InferenceService's storageUri and the ServiceAccount whose Secrets KServe hands it (data/kserve_storage.py)."""
    st, ns = ft.storage, ft.namespace
    keys = ks.SCHEMES.get(st.scheme, ((), ""))[0]
    text = (f"Where: not in the pod template — {st.operator}'s webhook adds init container {ks.NAME} to download "
            f"{st.uri or 'its model'} ({st.isvc.what}, {st.path})")
    killed = _storage_killed(ft)
    if killed:   # a download that ran out of memory: its credentials worked, its resources are KServe's
        return _storage_resources(ft, text, killed)
    if not keys:   # pvc://, oci://, a public URL: nothing to authenticate, the URI itself is what to fix
        return text + f". Fix that URI: `kubectl edit {resource_of(st.isvc)[0]} {st.isvc.name} -n {ns}`.", ""
    text += (f", with credentials only from the Secrets that ServiceAccount {st.account} lists ({_account_told(st)}); "
             f"an env var on the model container does not reach it.")
    if st.blank:
        return _storage_blank(ft, text)
    if st.attached:
        names = ", ".join(sorted({s for s, _ in st.attached}))
        return text + (f" {st.operator} passed it Secret {names} through that account: fix the credentials in it (keys "
                       f"{', '.join(keys)}; {_needs(st)}), {_again(ft)}."), ""
    return _storage_account(ft, text)


def _needs(st) -> str:
    return ks.SCHEMES.get(st.scheme, ((), ""))[1].format(prefix=st.prefix)


def _account_told(st) -> str:
    """How the storage-initializer's ServiceAccount was chosen: named by the InferenceService, or `default`."""
    sa_field = f"{st.section}.serviceAccountName"
    return (f"{st.isvc.what}'s {sa_field} names it" if st.account_set else f"{st.isvc.what} sets no {sa_field}, so "
            f"{st.operator} read `default`")


def _again(ft: FixTarget) -> str:
    ns, pod = ft.namespace, name(ft.pod)
    return f"then delete the pod so that the webhook injects it again (`kubectl delete pod {pod} -n {ns}`)"


def _storage_blank(ft: FixTarget, text: str) -> Tuple[str, str]:
    """An S3 setting KServe injected empty: the annotation it reads it from, on the Secret or the ServiceAccount."""
    st, ns = ft.storage, ft.namespace
    env, ann = st.blank[0]
    secret = st.attached[0][0] if st.attached else None
    on = f"Secret {secret}" if secret else f"ServiceAccount {st.account}"
    kind = "secret" if secret else "serviceaccount"
    return text + (f" {env} is empty: {st.operator} sets it from annotation {st.prefix}/{ann} on {on}; set it there, "
                   f"{_again(ft)}."), (f"kubectl annotate {kind} {secret or st.account} -n {ns} "
                                       f"{st.prefix}/{ann}=<endpoint host:port> --overwrite")


def _storage_account(ft: FixTarget, text: str) -> Tuple[str, str]:
    """No Secret reached the storage-initializer: list one in its ServiceAccount, or give the component one."""
    st, ns, pod = ft.storage, ft.namespace, name(ft.pod)
    keys = ks.SCHEMES.get(st.scheme, ((), ""))[0]
    secret, key = st.candidates[0] if st.candidates else ("storage-config", keys[0])
    have = (f"Secret {secret} (container {_reader(ft, secret)} reads it)" if st.candidates else
            f"a Secret, e.g. {secret} as KServe's docs name it,")
    renamed = f" under key {keys[0]} ({st.operator} reads no other key; {secret} holds it as {key})" \
        if st.candidates and key not in keys else \
        f" with key{'s' if len(keys) > 1 else ''} {', '.join(keys)}" + (f" and {_needs(st)}" if st.scheme == "s3" else "")
    patch = f"kubectl patch serviceaccount {{sa}} -n {ns} -p '{{{{\"secrets\":[{{{{\"name\":\"{secret}\"}}}}]}}}}'"
    create = [] if st.candidates else [f"kubectl create secret generic {secret} -n {ns} "
                                       + " ".join(f"--from-literal={k}=<{k.lower().replace('_', '-')}>" for k in keys)]
    if st.account_set:
        return text + (f" List {have}{renamed} in ServiceAccount {st.account}'s secrets, {_again(ft)}."), \
            "\n".join(create + [patch.format(sa=st.account), f"kubectl delete pod {pod} -n {ns}"])
    return _storage_new_account(ft, text, have + renamed, create, patch)


def _storage_new_account(ft: FixTarget, text: str, have: str, create: list, patch: str) -> Tuple[str, str]:
    """The InferenceService names no ServiceAccount: create `<isvc>-storage` and name it in the component."""
    st, ns = ft.storage, ft.namespace
    isvc, comp, sa_field = st.isvc, st.section.rsplit(".", 1)[-1], f"{st.section}.serviceAccountName"
    sa, res = f"{isvc.name}-storage", resource_of(isvc)[0]
    commands = "\n".join(create + [f"kubectl create serviceaccount {sa} -n {ns}", patch.format(sa=sa),
                          f"kubectl patch {res} {isvc.name} -n {ns} --type=merge -p '{_nested(st.section, sa)}'"])
    managed = f" ({isvc.what} comes from {ft.manager[0]} {ft.manager[1]}: set {sa_field} there)" if ft.manager else ""
    return text + (f" Give the {comp} a ServiceAccount that lists {have}, and name it in {sa_field}"
                   f"{managed}: its new pod gets the {'token' if st.scheme == 'hf' else 'credentials'}."), commands


def _nested(section: str, account: str) -> str:
    """`{"spec":{"predictor":{"serviceAccountName":"x"}}}` for the component at `section`."""
    import json
    doc: object = {"serviceAccountName": account}
    for key in reversed(section.split(".")):
        doc = {key: doc}
    return json.dumps(doc, separators=(",", ":"))


def _storage_resources(ft: FixTarget, text: str, killed: str) -> Tuple[str, str]:
    """(paragraph, commands) for a storage-initializer killed for its resources: KServe sets them cluster-wide, in the
    ClusterStorageContainer matching the URI, else the inferenceservice-config ConfigMap (data/kserve_storage.py)."""
    st, ns, pod = ft.storage, ft.namespace, name(ft.pod)
    uris = f"{st.scheme}:// URIs" if st.scheme else "its storageUri"
    csc = ks.CLUSTER_STORAGE_CONTAINER
    return text + (f"; it was {killed}, and {st.operator} sets its resources cluster-wide, not per InferenceService: "
                   f"in the ClusterStorageContainer that supports {uris} (`{csc}` as KServe installs it), "
                   f"{ks.RESOURCE_FIELD}, else ConfigMap {ks.CONFIGMAP} (namespace {ks.CONFIGMAP_NAMESPACE}), key "
                   f"{ks.CONFIGMAP_KEY}, memoryLimit; then delete the pod so that the webhook injects it again "
                   f"(`kubectl delete pod {pod} -n {ns}`)."), \
        "\n".join(["kubectl get clusterstoragecontainers -o yaml", f"kubectl edit clusterstoragecontainer {csc}",
                   f"kubectl delete pod {pod} -n {ns}"])


def _storage_killed(ft: FixTarget) -> str:
    """`OOMKilled` when the storage-initializer's current or last run ended for its resources; "" otherwise."""
    for cs in (ft.pod.get("status") or {}).get("initContainerStatuses") or []:
        if isinstance(cs, dict) and cs.get("name") == ks.NAME:
            for key in ("state", "lastState"):
                reason = (((cs.get(key) or {}).get("terminated")) or {}).get("reason")
                if reason in ks.RESOURCE_REASONS:
                    return reason
    return ""


def _reader(ft: FixTarget, secret: str) -> str:
    for c in (ft.pod.get("spec") or {}).get("containers") or []:
        if any(((e.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") == secret for e in c.get("env") or []):
            return c.get("name") or "?"
    return "?"


def generated_fix(ft: Optional[FixTarget], kind: str, ref: str) -> Optional[Tuple[str, str]]:
    """(fix, commands) for a missing object the pod's operator generates (kube/owners.py GENERATED): its plugin in the
    owner's spec and re-creating the owner, not a hand-made copy that the controller neither fills nor owns."""
    from .kube.owners import generated
    gen = generated(ft, kind, ref)
    if gen is None:
        return None
    owner, ns = gen.owner, ft.namespace
    res, what = resource_of(owner)[0], f"Volcano {gen.owner.what}" if owner.group == "batch.volcano.sh" else owner.what
    plugins = spec(owner.obj).get("plugins") if owner.obj is not None else None
    plugins = plugins if isinstance(plugins, dict) or plugins is None else {}   # a custom resource's shape
    listed = ("" if plugins is None else f" (now: {', '.join(sorted(plugins)) or 'none'})")
    lists = plugins is None or gen.plugin in (plugins or {})
    why = ("Its controller (vc-controller-manager) did not create it: read its log for this job, then re-create the "
           "job so that its plugins run again" if lists else
           f"spec.plugins does not list {gen.plugin}{listed}, yet the pods mount it: add `{gen.plugin}: []` there "
           f"and re-create the job")
    text = (f"Do not create {kind} {ref} by hand: the {gen.plugin} plugin of {what} generates it ({gen.holds}) "
            f"from its spec.plugins{listed if lists else ''}. {why} — a Volcano Job's pods are not re-made "
            f"from an edit: save it (`kubectl get {res} {owner.name} -n {ns} -o yaml > {owner.name}.yaml`), then "
            f"`kubectl replace --force -f {owner.name}.yaml`.")
    commands = "\n".join([f"kubectl get {res} {owner.name} -n {ns} -o jsonpath='{{.spec.plugins}}'",
                          f"kubectl get {res} {owner.name} -n {ns} -o yaml > {owner.name}.yaml",
                          f"kubectl replace --force -f {owner.name}.yaml"])
    return text, commands
