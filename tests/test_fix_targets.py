"""A fix that changes an owned pod's spec names the object the user edits (issue 19): the test judges from the fix's
own words whether it changes the pod's spec (PHRASES, kept here, independent of fixes.py's `Where:` wording) and
walks the pod's controller ownerReferences through the case's objects itself to find the top owner. Checked for the
finding whose fix the report prints for the root cause (an umbrella finding that names a more specific cause
stands for it) and for every critical finding, in every failing real-world case and every rule's fail-* case."""
import os
import re

import pytest

from tests.casebook import all_cases, diagnose, target_kind
from tests.conftest import ROOT

# What a fix says when it asks to change the pod's spec: the container and pod-spec fields a user writes. Matched as
# whole words (not inside a name: namespace gpu-operator-resources, label nvidia.com/gpu.product), in the fix's own
# words and in its YAML, never in the read-only commands it prints (`kubectl get pod -o jsonpath={.spec.runtimeClassName}`
# reads; `kubectl create secret ... HF_TOKEN=` changes a Secret, not the pod).
_W, _E = r"(?<![-/.\w])", r"(?![-/\w])"
PHRASES = [
    r"resources\.(?:limits|requests)", r"^\s*(?:resources|limits|requests):", r"\b(?:memory|GPU|cpu) (?:limit|request)s?\b",
    r"\b(?:raise|lower|set|change|remove|drop) (?:the |its )?(?:limits?|requests?)\b", r"\bRequest at most\b",
    r"\brequest the name\b", r"\brdma/\* resources\b",
    r"^\s*env:", r"(?-i:\benv (?:var )?[A-Z][A-Z0-9_]+\b)", r"\bHF_TOKEN\b", r"\bvalueFrom\b", r"\bsecretKeyRef\b",
    r"^\s*image:", r"\bimage tag\b", r"\b(?:use|fix|change|correct|pin|point|set) (?:the |its |an? )?(?:\w+ )?image\b",
    r"^\s*(?:command|args):", r"\b(?:its|container \S+'s) (?:command|args)\b",
    r"startupProbe", r"livenessProbe", r"readinessProbe",
    r"^\s*volumes:", r"volumeMounts", r"emptyDir", r"medium:\s*Memory", r"/dev/shm",
    r"runtimeClassName", r"nodeSelector", r"\bnode affinity\b", r"^\s*affinity:", r"\btolerations?\b",
    r"securityContext", r"imagePullSecrets?", r"serviceAccountName", r"schedulerName", r"initContainers",
    r"priorityClassName", r"activeDeadlineSeconds", r"restartPolicy", r"\bin the foreground\b", r"\barguments\b",
    # "give trainer-1 a GPU of its own (a whole nvidia.com/gpu or a MIG profile)": its request. Not "give each pod its
    # own GPU" of exclusive-process mode: the pod holds a whole nvidia.com/gpu already; the node's sharing is the change.
    r"\bgive \S+ a GPU of its own\b", r"\bdriver version/image\b", r"\bpod template\b", r"\bpod spec\b", r"hostIPC",
    r"kueue\.x-k8s\.io/queue-name", r"scheduling\.k8s\.io/group-name", r"volcano\.sh/queue-name", r"kai\.scheduler/queue",
]
# Words that change another object than the pod, though they use a pod-spec field's name: the DaemonSet of a node
# agent (the device plugin, the CNI agent) selecting or tolerating the node, a Secret's contents.
ELSEWHERE = [
    r"\b(?:its|the agent's|the plugin's|the device plugin's) DaemonSet\b[^.;]*",
    # "Fix imagePullSecret registry-secret in namespace nim: its credentials…; recreate it": the Secret's contents.
    r"\bFix imagePullSecret \S+ in namespace \S+[^.;]*",
]
_PHRASE = re.compile("|".join(f"{_W}(?:{p}){_E}" if p[0].isalpha() else f"(?:{p})" for p in PHRASES), re.M | re.I)
_ELSEWHERE = re.compile("|".join(ELSEWHERE))
_COMMAND = re.compile(r"^\s*(?:kubectl|helm|crictl|nvidia-smi|ssh|sudo|#\s+kubectl)\b.*$|`(?:kubectl|helm|crictl)[^`]*`", re.M)

# Built-in kinds -> API group, to match an ownerReference to an object of the case (kinds repeat across groups).
_SHORT = {"deployment": "Deployment", "replicaset": "ReplicaSet", "statefulset": "StatefulSet",
          "daemonset": "DaemonSet", "job": "Job", "cronjob": "CronJob"}


def changes_pod_spec(text: str, daemonset: bool = False) -> bool:
    """Whether the fix's words ask to change the pod's spec (a field of it, or its template). For a DaemonSet's own
    pod, "its DaemonSet" is its owner: those words count."""
    text = _COMMAND.sub(" ", text)
    return bool(_PHRASE.search(text if daemonset else _ELSEWHERE.sub(" ", text)))


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in (api_version or "") else ""


def _controller(obj):
    return next((r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")), None)


def top_owners(ev, pod):
    """The kinds and names a fix may name as the top of the pod's controller chain, walked here through the case's
    objects; the first is the top. An owner absent from the case is named from its reference and ends the walk."""
    ns, obj, top, read = (pod.get("metadata") or {}).get("namespace"), pod, None, True
    for _ in range(8):
        ref = _controller(obj)
        if not ref:
            break
        top = (ref.get("kind"), ref.get("name"))
        nxt = next((o for o in ev.all(ref.get("kind")) if (o.get("metadata") or {}).get("name") == ref.get("name")
                    and _group(o.get("apiVersion")) == _group(ref.get("apiVersion") or "v1")
                    and (o.get("metadata") or {}).get("namespace") in (ns, None)), None)
        if nxt is None:
            read = False
            break
        obj = nxt
    if top is None:
        return []
    alts = [top]
    # A GPU-operator operand (its init containers run the operator's validator or driver-manager image): the
    # operator renders its DaemonSet from the ClusterPolicy and reverts edits to it, so the ClusterPolicy is the top.
    images = {(c.get("image") or "").rsplit("/", 1)[-1].split(":")[0]
              for part in ("initContainers", "containers") for c in (pod.get("spec") or {}).get(part) or []}
    if top[0] == "DaemonSet" and images & {"gpu-operator-validator", "k8s-driver-manager"}:
        policy = next(iter(ev.all("ClusterPolicy")), None)
        alts = [("ClusterPolicy", (policy or {}).get("metadata", {}).get("name") or "cluster-policy")]
    # A ReplicaSet absent from the case: the Deployment controller names it `<deployment>-<pod-template-hash>`.
    hash_ = ((pod.get("metadata") or {}).get("labels") or {}).get("pod-template-hash")
    if top[0] == "ReplicaSet" and not read:
        if hash_ and top[1].endswith("-" + hash_):
            alts.append(("Deployment", top[1][: -len(hash_) - 1]))
        elif re.search(r"-[a-z0-9]{6,10}$", top[1]):
            alts.append(("Deployment", top[1].rsplit("-", 1)[0]))
    # Operators that own the chain's top without an ownerReference the case holds, named by the pod's labels
    # (KServe's InferenceService above a Knative Service or a Deployment; Ray above its pods).
    lab = (pod.get("metadata") or {}).get("labels") or {}
    for key, kind in (("serving.kserve.io/inferenceservice", "InferenceService"),
                      ("serving.kubeflow.org/inferenceservice", "InferenceService"),
                      ("serving.knative.dev/service", "Service"), ("ray.io/cluster", "RayCluster"),
                      ("leaderworkerset.sigs.k8s.io/name", "LeaderWorkerSet"),
                      ("jobset.sigs.k8s.io/jobset-name", "JobSet"), ("workflows.argoproj.io/workflow", "Workflow"),
                      ("volcano.sh/job-name", "Job")):
        if lab.get(key) and (kind, lab[key]) not in alts:
            alts.insert(0, (kind, lab[key]))
    return alts


def names(text: str, kind: str, obj_name: str) -> bool:
    """`Kind name`, or kubectl's resource name for it (`kubectl edit deployment name`, `clusterpolicy name`)."""
    k = re.escape(kind)
    return bool(re.search(rf"\b{k}(?:\.[\w.]+)? {re.escape(obj_name)}\b", text, re.I))


def printed_root_fix(diag):
    """The finding whose fix the report prints for the root cause (render/text.py _cause)."""
    return next((f for f in diag.findings if diag.root_cause in (f.id, f.cause)), None)


def violations(path, diag=None):
    """[(finding id, why, fix text)] for the printed root-cause fix and every critical finding's fix."""
    from kubectl_gpudoctor.offline import load as offline
    if target_kind(path) != "Pod":
        return []
    diag = diag or diagnose(path)
    ev = offline.load(path, "Pod")
    pod = ev.pod or {}
    owners = top_owners(ev, pod)
    if not owners:
        return []
    wanted = [f for f in [printed_root_fix(diag)] + [f for f in diag.findings if f.severity == "critical"] if f]
    out, seen = [], set()
    for f in wanted:
        if f.id in seen or not f.remediation:
            continue
        seen.add(f.id)
        text = f.remediation + "\n" + (f.snippet or "")
        if not changes_pod_spec(text, daemonset=_controller(pod) is not None
                                and _controller(pod).get("kind") == "DaemonSet"):
            continue
        if not any(names(text, k, n) for k, n in owners):
            out.append((f.id, f"names no {owners[0][0]} {owners[0][1]}", text))
        elif re.search(r"^# container |^# pod spec|\bpod spec\b", text, re.M):
            out.append((f.id, "says pod spec / # container without the owner", text))
    return out


REAL = os.path.join(ROOT, "tests", "realworld", "failing")
_REAL = [pytest.param(os.path.join(REAL, d), id=d) for d in sorted(os.listdir(REAL))
         if os.path.isfile(os.path.join(REAL, d, "bundle.yaml"))]
_FAIL = [pytest.param(p, id=f"{r}/{p.rsplit('/', 1)[-1]}") for r, k, p in all_cases() if k == "fail"]


# The real-world failing cases run the same judgement in tests/test_realworld.py (test_real_failure_fix_names_what_to_edit).
@pytest.mark.parametrize("path", _FAIL)
def test_owned_pod_fix_names_its_top_owner(path):
    bad = violations(path)
    assert not bad, "\n\n".join(f"{i}: {why}\n{text}" for i, why, text in bad)


def test_judgement_reads_the_words():
    assert changes_pod_spec("Raise its memory limits.") and changes_pod_spec("mount an emptyDir at /dev/shm")
    assert not changes_pod_spec("Restart the NVIDIA driver daemon on the node.")
    assert names("Where: Deployment vllm, spec.template", "Deployment", "vllm")
    assert names("`kubectl edit clusterpolicy cluster-policy`", "ClusterPolicy", "cluster-policy")
    assert not names("pod vllm-7d9f", "Deployment", "vllm")
    # names and read-only commands are not requests to change a field
    assert not changes_pod_spec("Read `kubectl logs p -n gpu-operator-resources`.\nkubectl get pod p -o "
                                "jsonpath='{.spec.runtimeClassName}'")
    assert changes_pod_spec("On CRI-O: drop runtimeClassName.") and changes_pod_spec("resources:\n  limits: {}")
    assert not changes_pod_spec("Fix imagePullSecret ngc in namespace nim: its credentials must be valid.")
    said = "If no pod is there, make its DaemonSet select the node (labels, tolerations)."
    assert not changes_pod_spec(said) and changes_pod_spec(said, daemonset=True)


def test_top_owner_is_walked_through_the_case_objects():
    from kubectl_gpudoctor.evidence import Evidence, Target

    def ref(kind, n, api):
        return {"ownerReferences": [{"apiVersion": api, "kind": kind, "name": n, "controller": True, "uid": n}]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(name="web-5d8f7c9b64-x2x9q", namespace="ml",
                                                               labels={"pod-template-hash": "5d8f7c9b64"},
                                                               **ref("ReplicaSet", "web-5d8f7c9b64", "apps/v1"))}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": dict(name="web-5d8f7c9b64", namespace="ml", **ref("Deployment", "web", "apps/v1"))}
    ev = Evidence(target=Target("Pod", "web-5d8f7c9b64-x2x9q", "ml"))
    ev.add(pod)
    assert top_owners(ev, pod) == [("ReplicaSet", "web-5d8f7c9b64"), ("Deployment", "web")]   # by its name
    ev.add(rs)
    assert top_owners(ev, pod)[0] == ("Deployment", "web")


def _kfserving_v1alpha2(account=None):
    """A KFServing 0.4 InferenceService (serving.kubeflow.org/v1alpha2: spec.default/.canary EndpointSpecs) and its
    default predictor pod as KFServing's mutator leaves it (labels from pkg/constants: component, endpoint)."""
    predictor = {"tensorflow": {"storageUri": "s3://models/flowers/0001", "resources": {"limits": {"nvidia.com/gpu": 1}}}}
    if account:
        predictor["serviceAccountName"] = account
    isvc = {"apiVersion": "serving.kubeflow.org/v1alpha2", "kind": "InferenceService",
            "metadata": {"name": "flowers", "namespace": "ml"}, "spec": {"default": {"predictor": predictor}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "flowers-predictor-default-7x2lq-deployment-5c8f9d7b6-k2mzp", "namespace": "ml",
                        "labels": {"serving.kubeflow.org/inferenceservice": "flowers", "component": "predictor",
                                   "endpoint": "default", "model": "flowers"}},
           "spec": {"serviceAccountName": account or "default",
                    "initContainers": [{"name": "storage-initializer", "image": "gcr.io/kfserving/storage-initializer:v0.4.0",
                                        "args": ["s3://models/flowers/0001", "/mnt/models"]}],
                    "containers": [{"name": "kfserving-container", "image": "tensorflow/serving:1.14.0-gpu"}]}}
    return isvc, pod


def _evidence(pod, *objs):
    from kubectl_gpudoctor.evidence import Evidence, Target
    ev = Evidence(target=Target("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"]))
    for o in (pod,) + objs:
        ev.add(o)
    ev.sources = {"pods"}
    return ev


def test_kfserving_v1alpha2_storage_uri_is_under_spec_default_predictor():
    from kubectl_gpudoctor.fixes import place
    from kubectl_gpudoctor.kube.owners import fix_target
    isvc, pod = _kfserving_v1alpha2()
    ft = fix_target(_evidence(pod, isvc), pod)
    assert ft.storage.path == "spec.default.predictor.tensorflow.storageUri", ft.storage.path
    fix, snippet = place(ft, "Fix its credentials.", "", "storage-initializer")
    assert "InferenceService flowers, spec.default.predictor.tensorflow.storageUri" in fix, fix
    assert "sets no spec.default.predictor.serviceAccountName" in fix, fix
    assert "'{\"spec\":{\"default\":{\"predictor\":{\"serviceAccountName\":\"flowers-storage\"}}}}'" in snippet, snippet
    assert ft.place() == "InferenceService flowers, spec.default.predictor"
    isvc, pod = _kfserving_v1alpha2("kf-sa")
    pod["metadata"]["labels"]["endpoint"] = "canary"
    isvc["spec"]["canary"] = isvc["spec"]["default"]
    ft = fix_target(_evidence(pod, isvc), pod)
    assert ft.storage.path == "spec.canary.predictor.tensorflow.storageUri" and ft.storage.account_set


def _operand_pod(image="nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.1"):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "gpu-feature-discovery",
                                                                      "namespace": "gpu-operator"}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "gpu-feature-discovery-h6srl", "namespace": "gpu-operator",
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "controller": True,
                                             "name": "gpu-feature-discovery", "uid": "u1"}]},
           "spec": {"initContainers": [{"name": "toolkit-validation", "image": image}],
                    "containers": [{"name": "gpu-feature-discovery",
                                    "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.2"}]}}
    return ds, pod


def test_gpu_operator_operand_pull_fix_names_the_clusterpolicy_section():
    """The GPU operator renders its operand DaemonSets from the ClusterPolicy (each component section's repository,
    image, version, imagePullSecrets) and reverts direct edits: a pull fix names that section, not the DaemonSet."""
    from kubectl_gpudoctor.fixes import place
    from kubectl_gpudoctor.kube.owners import fix_target
    ds, pod = _operand_pod()
    ft = fix_target(_evidence(pod, ds), pod)
    assert ft.top.what == "ClusterPolicy cluster-policy", ft.top
    fix, _ = place(ft, "Authenticate the pulls (an imagePullSecret) or use a registry mirror/cache.", "",
                   "toolkit-validation")
    assert "ClusterPolicy cluster-policy, spec.validator.imagePullSecrets" in fix, fix
    assert "`kubectl edit clusterpolicy cluster-policy`" in fix and "not DaemonSet gpu-feature-discovery" in fix, fix
    fix, _ = place(ft, "Fix the image name or tag: it does not exist.", "", "gpu-feature-discovery")
    assert "ClusterPolicy cluster-policy, spec.gfd.repository, .image and .version" in fix, fix
    read = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "gpu-cluster-policy"}}
    assert fix_target(_evidence(pod, ds, read), pod).top.what == "ClusterPolicy gpu-cluster-policy"
    ds, plain = _operand_pod(image="busybox:1.36")   # a DaemonSet of someone else's: edited itself
    assert fix_target(_evidence(plain, ds), plain).top.what == "DaemonSet gpu-feature-discovery"
    ds, pod = _operand_pod()
    fix, _ = place(fix_target(_evidence(pod, ds), pod), "On CRI-O: drop runtimeClassName.", "", None)
    assert "ClusterPolicy cluster-policy, spec.operator.runtimeClass" in fix, fix
