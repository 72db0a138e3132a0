"""Fixes name the object the user edits (kube/owners.py, fixes.py): the top of the pod's controller chain read live,
a refused owner read is a gap and the owner is still named, and the field path inside each owner kind."""
import os

import pytest

from kubectl_gpudoctor.evidence import Evidence, Target
from kubectl_gpudoctor.kube.owners import argo_template, fix_target
from tests.casebook import CASES
from tests.live import assert_read_only, run_json, serving

OWNERS = os.path.join(CASES, "oom-killed")


def _cause(doc):
    return next(f for f in doc["findings"] if f["id"] == doc["rootCause"])


def test_live_chain_reads_up_to_the_trainjob(tmp_path):
    path = os.path.join(OWNERS, "fail-owner-trainjob-jobset")
    with serving(path, tmp_path, namespace="serving") as (srv, kc):
        _, doc = run_json("llama-ft-node-0-1-r8s2v", "--kubeconfig", kc)
    assert_read_only(srv)
    fix = _cause(doc)["remediation"]
    assert "TrainJob llama-ft, spec.trainer" in fix and "not read" not in fix, fix
    assert any(r.path.endswith("/trainjobs/llama-ft") for r in srv.requests)


def test_live_forbidden_owner_is_a_gap_and_still_named(tmp_path):
    path = os.path.join(OWNERS, "fail-owner-kserve-inferenceservice")
    with serving(path, tmp_path, namespace="serving") as (srv, kc):
        srv.forbid("inferenceservices")
        _, doc = run_json("llama3-8b-predictor-6f9c8b7d54-h7x2k", "--kubeconfig", kc)
    gaps = {g["source"]: g["reason"] for g in doc["gaps"]}
    assert gaps.get("inferenceservices.serving.kserve.io") == "forbidden", doc["gaps"]
    fix = _cause(doc)["remediation"]
    assert doc["rootCause"] == "oom-killed"
    assert "InferenceService llama3-8b, spec.predictor.model" in fix and "not read" in fix, fix


def _ev(pod, *objs):
    ev = Evidence(target=Target("Pod", pod["metadata"]["name"], "ml"))
    for o in (pod,) + objs:
        ev.add(o)
    ev.sources = {"pods"}
    return ev


def _pod(name, labels=None, owner=None, containers=("main",), init=(), env=None, annotations=None):
    meta = {"name": name, "namespace": "ml", "labels": labels or {}, "annotations": annotations or {}}
    if owner:
        meta["ownerReferences"] = [dict(owner, controller=True, uid="u-" + owner["name"])]
    spec = {"containers": [{"name": c, "image": "img", **({"env": env} if env else {})} for c in containers],
            "initContainers": [{"name": c, "image": "img"} for c in init]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _ref(kind, name, api):
    return {"kind": kind, "name": name, "apiVersion": api}


@pytest.mark.parametrize("labels,owner,container,want", [
    ({"ray.io/node-type": "head", "ray.io/cluster": "rc"}, _ref("RayCluster", "rc", "ray.io/v1"), "ray-head",
     "RayCluster rc, spec.headGroupSpec.template.spec.containers[name=ray-head]"),
    ({"training.kubeflow.org/replica-type": "master"}, _ref("PyTorchJob", "pj", "kubeflow.org/v1"), "pytorch",
     "PyTorchJob pj, spec.pytorchReplicaSpecs.Master.template.spec.containers[name=pytorch]"),
    ({"training.kubeflow.org/job-role": "launcher"}, _ref("MPIJob", "mpi", "kubeflow.org/v2beta1"), "launcher",
     "MPIJob mpi, spec.mpiReplicaSpecs.Launcher.template.spec.containers[name=launcher]"),
    ({}, _ref("TFJob", "tf", "kubeflow.org/v1"), "tensorflow",   # no label: the replica type from the pod's name
     "TFJob tf, spec.tfReplicaSpecs.PS.template.spec.containers[name=tensorflow]"),
    ({"leaderworkerset.sigs.k8s.io/name": "lws", "leaderworkerset.sigs.k8s.io/worker-index": "0"},
     _ref("StatefulSet", "lws", "apps/v1"), "leader",
     "LeaderWorkerSet lws, spec.leaderWorkerTemplate.leaderTemplate.spec.containers[name=leader]"),
    ({"jobset.sigs.k8s.io/jobset-name": "js", "jobset.sigs.k8s.io/replicatedjob-name": "workers"},
     _ref("Job", "js-workers-0", "batch/v1"), "main",
     "JobSet js, spec.replicatedJobs[name=workers].template.spec.template.spec.containers[name=main]"),
    ({"serving.kserve.io/inferenceservice": "isvc", "component": "transformer"},
     _ref("ReplicaSet", "isvc-transformer-5d8f7c9b64", "apps/v1"), "kserve-container",
     "InferenceService isvc, spec.transformer.containers[name=kserve-container]"),
    ({"serving.knative.dev/service": "hello"}, _ref("ReplicaSet", "hello-00001-deployment-5d8f7c9b64", "apps/v1"), "user",
     "Service hello, spec.template.spec.containers[name=user]"),
    ({}, _ref("Notebook", "nb", "kubeflow.org/v1"), "nb", "Notebook nb, spec.template.spec.containers[name=nb]"),
    ({}, _ref("PodClique", "pc", "grove.io/v1alpha1"), "main", "the pod template of PodClique pc, container main"),
])
def test_field_path_inside_each_owner_kind(labels, owner, container, want):
    name = "tf-ps-0" if owner["kind"] == "TFJob" else "p-0"
    pod = _pod(name, labels, owner, containers=(container,))
    assert fix_target(_ev(pod), pod).place(container) == want


def test_init_container_path_and_bare_pod():
    pod = _pod("p", owner=_ref("Deployment", "web", "apps/v1"), init=("fetch",))
    assert fix_target(_ev(pod), pod).place("fetch") == "Deployment web, spec.template.spec.initContainers[name=fetch]"
    bare = _pod("solo")
    ft = fix_target(_ev(bare), bare)
    assert ft.bare and not ft.known_by_reference


def test_replicaset_name_names_its_deployment_unless_a_404_said_otherwise():
    pod = _pod("web-5d8f7c9b64-x2x9q", {"pod-template-hash": "5d8f7c9b64"}, _ref("ReplicaSet", "web-5d8f7c9b64", "apps/v1"))
    ev = _ev(pod)
    assert fix_target(ev, pod).top.what == "Deployment web"
    ev.mark_absent("Deployment", "web", "ml")
    assert fix_target(ev, pod).top.what == "ReplicaSet web-5d8f7c9b64"


@pytest.mark.parametrize("labels,annotations,want", [
    ({"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "llm"}, {}, ("helm", "llm")),
    ({}, {"meta.helm.sh/release-name": "gpu"}, ("helm", "gpu")),
    ({"app.kubernetes.io/managed-by": "Helm", "argocd.argoproj.io/instance": "apps"}, {}, ("argocd", "apps")),
    ({"helm.toolkit.fluxcd.io/name": "vllm"}, {}, ("flux-helm", "vllm")),
    ({"app.kubernetes.io/managed-by": "Helm"}, {}, None),   # Helm without a release name names no release
])
def test_management_of_the_owner(labels, annotations, want):
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "namespace": "ml", "labels": labels, "annotations": annotations}}
    pod = _pod("p", owner=_ref("Deployment", "web", "apps/v1"))
    got = fix_target(_ev(pod, deploy), pod).manager
    assert (got[:2] if got else None) == want


def test_argo_template_from_the_executor_env_bounded_and_tolerant():
    ok = _pod("wf-1", env=[{"name": "ARGO_TEMPLATE", "value": '{"name":"train","container":{}}'}])
    assert argo_template(ok) == "train"
    assert argo_template(_pod("wf-2", env=[{"name": "ARGO_TEMPLATE", "value": "{not json"}])) is None
    big = '{"name":"x","pad":"' + "a" * 300_000 + '"}'
    assert argo_template(_pod("wf-3", env=[{"name": "ARGO_TEMPLATE", "value": big}])) is None


@pytest.mark.parametrize("status,message,gap", [
    (400, 'previous terminated container "server" in pod "p" not found', False),
    (400, 'container "server" in pod "p" is waiting to start: ContainerCreating', False),
    (400, "the server rejected our request for an unknown reason", True),
    (500, "etcdserver: request timed out", True),
])
def test_a_log_read_is_absent_only_when_the_kubelet_says_so(status, message, gap):
    """Issue 19: a 400/5xx on a previous log is a gap (the check is unknown), unless its wording says no such log."""
    from kubectl_gpudoctor.collect.api import Request, Response, store
    ev = Evidence(target=Target("Pod", "p", "ml"))
    req = Request("pods/log", "get", "/api/v1/namespaces/ml/pods/p/log", {"previous": "true"},
                  log_key=("ml", "p", "server", True))
    store(ev, req, Response(status, None, "error", message))
    assert ("pods/log" in ev.gaps) == gap and ("pods/log" in ev.sources) != gap


def test_live_pod_whose_containers_never_ran_lacks_no_log(tmp_path):
    """A ContainerCreating pod read with full access: no log can exist, so no check says "needs get pods/log"."""
    path = os.path.join(CASES, "missing-config-reference", "fail-configmap-missing-key")
    from tests.test_request_budget import _target
    target = _target(path)
    with serving(path, tmp_path, namespace=target["namespace"]) as (srv, kc):
        _, doc = run_json(target["name"], "--kubeconfig", kc)
    assert doc["rootCause"] == "missing-config-reference"
    assert not [c for c in doc["checks"] if "pods/log" in (c.get("reason") or "")], doc["checks"]


def _webhook_pod():
    """An istio-proxy the template of Deployment web does not have: the sidecar injector added it."""
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"},
              "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img"}]}}}}
    pod = _pod("web-1", {"app": "web"}, _ref("Deployment", "web", "apps/v1"), containers=("main", "istio-proxy"))
    return pod, deploy


ISTIO = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "istio-sidecar-injector"},
         "webhooks": [{"name": "namespace.sidecar-injector.istio.io", "admissionReviewVersions": ["v1"],
                       "sideEffects": "None", "failurePolicy": "Fail",
                       "clientConfig": {"service": {"name": "istiod", "namespace": "istio-system", "path": "/inject"}},
                       "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                  "resources": ["pods"], "scope": "*"}],
                       "namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}},
                       "objectSelector": {"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "NotIn",
                                                                "values": ["false"]}]}}]}


@pytest.mark.parametrize("objs,sources,want", [
    ([ISTIO, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"istio-injection": "enabled"}}}],
     {"mutatingwebhookconfigurations"}, "added it when the pod was created: istio-sidecar-injector (webhook "
                                         "namespace.sidecar-injector.istio.io)"),
    ([ISTIO, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {}}}],
     {"mutatingwebhookconfigurations"}, "none of the MutatingWebhookConfigurations read matches it"),
    ([], set(), "webhook configurations not read: not-collected (needs list mutatingwebhookconfigurations)"),
])
def test_a_container_the_template_lacks_was_injected_by_a_webhook(objs, sources, want):
    from kubectl_gpudoctor.fixes import place
    pod, deploy = _webhook_pod()
    ev = _ev(pod, deploy, *objs)
    ev.sources |= sources
    fix, snippet = place(fix_target(ev, pod), "Raise its memory limit.", "# container istio-proxy\nresources: {}",
                         "istio-proxy")
    assert "not in Deployment web's pod template" in fix and want in fix, fix
    assert "kubectl edit" not in fix
    fix, _ = place(fix_target(ev, pod), "Raise its memory limit.", "# container main\nresources: {}", "main")
    assert "Deployment web, spec.template.spec.containers[name=main]" in fix   # the template's own container


def test_live_lists_webhooks_only_when_a_container_is_not_in_the_template(tmp_path):
    """An injected istio-proxy beside the OOMKilled server: one LIST of MutatingWebhookConfigurations (round 3);
    without the sidecar, no such read."""
    import shutil
    import yaml
    src = os.path.join(OWNERS, "fail-owner-argocd-deployment")
    case = tmp_path / "case"
    shutil.copytree(src, case)
    docs = list(yaml.safe_load_all(open(case / "objects.yaml")))
    pod = docs[0]
    pod["spec"]["containers"].append({"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.23.2",
                                      "args": ["proxy", "sidecar"]})
    pod["status"]["containerStatuses"].append({
        "name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.23.2", "ready": True, "started": True,
        "restartCount": 0, "imageID": "docker.io/istio/proxyv2@sha256:" + "ab" * 32,
        "containerID": "containerd://" + "cd" * 32, "state": {"running": {"startedAt": "2026-11-30T08:41:16Z"}},
        "lastState": {}})
    docs += [ISTIO]
    (case / "objects.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    target = pod["metadata"]["name"]
    for path, want in ((case, 1), (src, 0)):
        with serving(str(path), tmp_path, namespace="serving") as (srv, kc):
            _, doc = run_json(target, "--kubeconfig", kc)
        lists = [r for r in srv.requests if r.path.endswith("/mutatingwebhookconfigurations")]
        assert len(lists) == want and doc["rootCause"] == "oom-killed", srv.requests


@pytest.mark.parametrize("observed,threshold,says", [
    (441, 67, "≥ 1.5 × the observed 7m21s; was 30 × 10s = 300s"),
    (3 * 3600, 720, "capped at 2h"),   # a three-hour start is not a probe budget
])
def test_startup_budget_is_sized_from_the_observed_start_and_bounded(observed, threshold, says):
    from kubectl_gpudoctor.rules.crash._startup import startup_snippet
    probe = {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10, "failureThreshold": 30}
    snippet, got = startup_snippet({"name": "vllm", "startupProbe": probe}, probe, observed)
    assert got == threshold and says in snippet, snippet


def test_a_kueue_job_is_re_created_and_queued_again():
    from kubectl_gpudoctor.fixes import place
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ft", "namespace": "ml",
           "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
           "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img"}]}}}}
    pod = _pod("ft-x2x9q", {"batch.kubernetes.io/job-name": "ft"}, _ref("Job", "ft", "batch/v1"))
    fix, _ = place(fix_target(_ev(pod, job), pod), "Raise its memory limit.", "# container main\nresources: {}", "main")
    assert "kubectl replace --force -f ft.yaml" in fix and "LocalQueue team-a" in fix, fix


def _kserve_pod(account="default", init_env=None, model_env=None, ann=None):
    """A KServe predictor pod as KServe's pod mutator leaves it: its storage-initializer (not in any template) downloads
    the storageUri; the model container may read a token Secret of its own (kserve/website#482)."""
    pod = _pod("llm-predictor-6c9d9b8f7-zq5lm", {"serving.kserve.io/inferenceservice": "llm", "component": "predictor"},
               _ref("ReplicaSet", "llm-predictor-6c9d9b8f7", "apps/v1"), containers=("kserve-container",),
               init=("storage-initializer",), env=model_env, annotations=ann)
    init = pod["spec"]["initContainers"][0]
    init.update(image="kserve/storage-initializer:v0.14.1", args=["hf://meta-llama/meta-llama-3-8b-instruct", "/mnt/models"])
    if init_env:
        init["env"] = init_env
    pod["spec"]["serviceAccountName"] = account
    return pod


def _isvc(account=None, uri="hf://meta-llama/meta-llama-3-8b-instruct"):
    predictor = {"model": {"modelFormat": {"name": "huggingface"}, "storageUri": uri}}
    if account:
        predictor["serviceAccountName"] = account
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "llm", "namespace": "ml"}, "spec": {"predictor": predictor}}


HF_ENV = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-secret", "key": "HF_TOKEN"}}}]


def test_kserve_storage_initializer_fix_points_at_the_inferenceservice_and_its_service_account():
    """Issue 19: the injected storage-initializer is in no template; its token comes from the Secrets of the
    ServiceAccount spec.predictor.serviceAccountName names, so the fix names those, never the container."""
    from kubectl_gpudoctor.fixes import place
    pod = _kserve_pod(model_env=HF_ENV)
    fix, snippet = place(fix_target(_ev(pod, _isvc()), pod), "Give it an HF_TOKEN.", "", "storage-initializer")
    assert "InferenceService llm, spec.predictor.model.storageUri" in fix, fix
    assert "Secret hf-secret (container kserve-container reads it) with key HF_TOKEN" in fix, fix
    assert "sets no spec.predictor.serviceAccountName" in fix and "pod template of" not in fix, fix
    assert snippet.splitlines() == [
        "kubectl create serviceaccount llm-storage -n ml",
        "kubectl patch serviceaccount llm-storage -n ml -p '{\"secrets\":[{\"name\":\"hf-secret\"}]}'",
        "kubectl patch inferenceservice llm -n ml --type=merge -p "
        "'{\"spec\":{\"predictor\":{\"serviceAccountName\":\"llm-storage\"}}}'"], snippet


def test_kserve_storage_initializer_with_an_account_and_a_wrongly_keyed_secret():
    """A named ServiceAccount: the Secret goes in its list (one patch, then a new pod); a Secret keyed `token` must
    carry HF_TOKEN, the only key KServe's hf credentials read (pkg/credentials/hf)."""
    from kubectl_gpudoctor.fixes import place
    env = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]
    pod = _kserve_pod(account="llm-sa", model_env=env)
    fix, snippet = place(fix_target(_ev(pod, _isvc("llm-sa")), pod), "Give it an HF_TOKEN.", "", "storage-initializer")
    assert "InferenceService llm's spec.predictor.serviceAccountName names it" in fix, fix
    assert "under key HF_TOKEN (KServe reads no other key; hf holds it as token)" in fix, fix
    assert snippet.splitlines()[0] == "kubectl patch serviceaccount llm-sa -n ml -p '{\"secrets\":[{\"name\":\"hf\"}]}'"


def test_kserve_storage_initializer_secrets_already_injected_or_settings_left_blank():
    from kubectl_gpudoctor.fixes import place
    s3 = [{"name": "AWS_ACCESS_KEY_ID", "valueFrom": {"secretKeyRef": {"name": "s3creds", "key": "AWS_ACCESS_KEY_ID"}}},
          {"name": "S3_ENDPOINT", "value": ""}]
    pod = _kserve_pod(account="kserve-sa", init_env=s3)
    ev = _ev(pod, _isvc("kserve-sa", "s3://models/llama"))
    fix, snippet = place(fix_target(ev, pod), "Fix its credentials.", "", "storage-initializer")
    assert "S3_ENDPOINT is empty: KServe sets it from annotation serving.kserve.io/s3-endpoint on Secret s3creds" in fix
    assert snippet.startswith("kubectl annotate secret s3creds -n ml serving.kserve.io/s3-endpoint="), snippet
    pod["spec"]["initContainers"][0]["env"] = s3[:1]
    fix, snippet = place(fix_target(ev, pod), "Fix its credentials.", "", "storage-initializer")
    assert "KServe passed it Secret s3creds through that account" in fix and f"kubectl delete pod {pod['metadata']['name']}" in fix
    # the model container itself is still the InferenceService's spec.predictor.model
    fix, _ = place(fix_target(ev, pod), "Raise its memory limit.", "# container kserve-container\nresources: {}",
                   "kserve-container")
    assert "InferenceService llm, spec.predictor.model" in fix and "storageUri" not in fix, fix


def _volcano(plugins):
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"},
           "spec": {"schedulerName": "volcano", "plugins": plugins, "tasks": [{"name": "worker", "replicas": 2}]}}
    pod = _pod("train-worker-0", {"volcano.sh/job-name": "train", "volcano.sh/task-spec": "worker"},
               _ref("Job", "train", "batch.volcano.sh/v1alpha1"))
    return pod, job


@pytest.mark.parametrize("plugins,kind,ref,says", [
    ({"env": [], "svc": []}, "ConfigMap", "train-svc", "from its spec.plugins (now: env, svc). Its controller"),
    ({"ssh": []}, "Secret", "train-ssh", "the ssh plugin of Volcano Job train generates it"),
    ({"env": []}, "ConfigMap", "train-svc", "spec.plugins does not list svc (now: env), yet the pods mount it"),
    ({"svc": []}, "ConfigMap", "train-config", None),   # the user's own ConfigMap: create it
    ({"svc": []}, "Secret", "train-svc", None),
])
def test_a_volcano_plugins_object_is_generated_not_created_by_hand(plugins, kind, ref, says):
    """Issue 19: `configmap "<job>-svc" not found` (volcano-sh/volcano#1894) is the svc plugin's, made by the Volcano
    controller: the fix names the Volcano Job's spec.plugins and re-creating the job, never `kubectl create`."""
    from kubectl_gpudoctor.fixes import generated_fix
    pod, job = _volcano(plugins)
    got = generated_fix(fix_target(_ev(pod, job), pod), kind, ref)
    if says is None:
        assert got is None
        return
    fix, commands = got
    assert says in fix and f"Do not create {kind} {ref} by hand" in fix, fix
    assert commands.splitlines()[-1] == "kubectl replace --force -f train.yaml" and "create" not in commands


def _rejected(kind, api, labels=None, owner=None, template=None, message=None):
    """A workload whose FailedCreate event says admission refused its pods (wording: data/admission_messages.py)."""
    meta = {"name": "llm-worker", "namespace": "ml", "uid": "u-wl", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [dict(owner, controller=True, uid="u-" + owner["name"])]
    tmpl = template or {"spec": {"runtimeClassName": "nvidia-cdi",
                                 "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.6.3"}]}}
    wl = {"apiVersion": api, "kind": kind, "metadata": meta, "spec": {"replicas": 2, "template": tmpl},
          "status": {"replicas": 0, "readyReplicas": 0}}
    event = {"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "FailedCreate", "count": 24,
             "metadata": {"name": "llm-worker.17f", "namespace": "ml"},
             "involvedObject": {"kind": kind, "name": "llm-worker", "namespace": "ml", "uid": "u-wl"},
             "lastTimestamp": "2026-12-01T10:19:33Z",
             "message": message or 'create Pod llm-worker-0 in StatefulSet llm-worker failed error: pods "llm-worker-0" '
                                   'is forbidden: pod rejected: RuntimeClass "nvidia-cdi" not found'}
    ev = Evidence(target=Target(kind, "llm-worker", "ml"))
    for o in (wl, event):
        ev.add(o)
    ev.sources = {"events"}
    return ev


@pytest.mark.parametrize("kind,api,labels,owner,says", [
    ("StatefulSet", "apps/v1", {}, None,
     "Where: StatefulSet llm-worker, spec.template.spec.runtimeClassName: `kubectl edit statefulset llm-worker -n ml`"),
    ("Job", "batch/v1", {}, None,   # a Job's template is immutable: saved, changed and re-created
     "Where: Job llm-worker, spec.template.spec.runtimeClassName, not the pod. A Job's pod template is fixed"),
    ("StatefulSet", "apps/v1", {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "llm"}, None,
     "It belongs to Helm release llm"),
    ("Deployment", "apps/v1", {"serving.kserve.io/inferenceservice": "llm", "component": "predictor"},
     _ref("InferenceService", "llm", "serving.kserve.io/v1beta1"),
     "Where: InferenceService llm, spec.predictor.runtimeClassName (InferenceService llm named by"),
])
def test_rejected_pods_fix_names_the_workload_its_field_and_the_command(kind, api, labels, owner, says):
    """Issue 19: the umbrella pod-creation-rejected fix said "the pod template"; it names the object, the field path
    inside it and how to change it."""
    from kubectl_gpudoctor.rules.workload.creation_rejected import pod_creation_rejected
    hit = pod_creation_rejected(_rejected(kind, api, labels, owner))
    assert hit.cause == "runtimeclass-not-found"
    assert says in hit.fix and "in the pod template of " in hit.fix, hit.fix


def test_rejected_pods_fix_names_the_container_whose_requests_the_quota_refuses():
    from kubectl_gpudoctor.rules.workload.creation_rejected import pod_creation_rejected
    msg = ('Error creating: pods "llm-worker-7f9c6d5b8-" is forbidden: failed quota: gpu-quota: must specify '
           'limits.nvidia.com/gpu')
    hit = pod_creation_rejected(_rejected("StatefulSet", "apps/v1", message=msg))
    assert "StatefulSet llm-worker, spec.template.spec.containers[name=vllm].resources" in hit.fix, hit.fix


@pytest.mark.parametrize("fix,want", [
    ("Give container fetch an HF_TOKEN from a Secret, for an account granted the model.",
     "Where: StatefulSet sd, spec.template.spec.initContainers[name=fetch] — not the pod"),
    ("Raise spec.activeDeadlineSeconds of the pod template (or remove it).",
     "Where: StatefulSet sd, spec.template.spec.activeDeadlineSeconds — not the pod"),
    ("Check that the image exists and give the pod registry credentials: an imagePullSecret.",
     "Where: StatefulSet sd, spec.template.spec.imagePullSecrets — not the pod"),
    ("Create Secret hf in namespace ml (or fix the reference in container main); values are never shown here.",
     "Where: StatefulSet sd, spec.template.spec.containers[name=main] — not the pod"),
    ("Create ConfigMap c in namespace ml (or fix the reference in volume cfg); values are never shown here.",
     "Where: StatefulSet sd, spec.template.spec.volumes[name=cfg] — not the pod"),
    ("Give container ghost an HF_TOKEN.", None),   # not a container of the pod: nothing to place
    ("Put a valid read token into Secret hf, then delete the pod to retry now.", None),   # changes no spec
])
def test_a_fix_whose_words_change_the_pod_names_the_owner(fix, want):
    """Issue 19: rules that set no `edits` but whose fix changes the pod (a token for an init container, a template
    field, registry credentials, a reference) name the owner, its field path and the command."""
    from kubectl_gpudoctor.fixes import place
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sd", "namespace": "ml"},
           "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img"}],
                                          "initContainers": [{"name": "fetch", "image": "img"}]}}}}
    pod = _pod("sd-0", {"app": "sd"}, _ref("StatefulSet", "sd", "apps/v1"), init=("fetch",))
    got, _ = place(fix_target(_ev(pod, sts), pod), fix, "", None)
    if want is None:
        assert got == fix
    else:
        assert got.startswith(fix) and want in got and "`kubectl edit statefulset sd -n ml`" in got, got


@pytest.mark.parametrize("owner,obj_labels,fix,want", [
    (_ref("Job", "ft", "batch.volcano.sh/v1alpha1"), None,
     "(the PodGroup ft-9a7a spec.queue=team-a)", "Where: Volcano Job ft, spec.queue"),
    (_ref("Deployment", "web", "apps/v1"), None, "(the annotation scheduling.volcano.sh/queue-name=render-q)",
     "Where: Deployment web, spec.template.metadata.annotations[scheduling.volcano.sh/queue-name]"),
    (_ref("Job", "ft", "batch/v1"), {"kueue.x-k8s.io/queue-name": "user-queue"},   # Kueue reads the Job's own label
     "(the label kueue.x-k8s.io/queue-name=user-queue)", "Where: Job ft, metadata.labels[kueue.x-k8s.io/queue-name]"),
])
def test_a_queue_fix_names_where_the_owner_names_its_queue(owner, obj_labels, fix, want):
    from kubectl_gpudoctor.fixes import place
    objs = []
    if obj_labels is not None:
        objs = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                 "metadata": {"name": owner["name"], "namespace": "ml", "labels": obj_labels},
                 "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img"}]}}}}]
    pod = _pod("ft-0", {"volcano.sh/job-name": "ft"} if "volcano" in owner["apiVersion"] else {}, owner)
    text = "Point the pod template at a queue that exists, is a leaf and is open " + fix + ", or create / open it."
    got, _ = place(fix_target(_ev(pod, *objs), pod), text, "", None)
    assert want in got, got


@pytest.mark.parametrize("fix,container,want", [
    ("Wait for GPUs to free up, or lower the request if the workload can run on fewer GPUs.", None,
     "Where: Deployment web, spec.template.spec.containers[name=server].resources ("),   # the GPU one
    ("Request at most 8 GPU units per pod, or add nodes with at least 16 GPUs.", None,
     "Where: Deployment web, spec.template.spec.containers[name=server].resources"),
    ("Use an image or wheel built for this GPU's compute capability.", "server",
     "Where: Deployment web, spec.template.spec.containers[name=server].image"),
    ("Keep the model on a volume and set HF_HUB_OFFLINE=1 so start-up does not call the hub.", "server",
     "Where: Deployment web, spec.template.spec.containers[name=server].env"),
    ("Use an image or wheel built for this GPU.", None, None),   # which container: not said, nothing placed
])
def test_a_request_image_or_env_fix_names_the_owner_container_field(fix, container, want):
    from kubectl_gpudoctor.fixes import place
    pod = _pod("web-1", {"app": "web"}, _ref("Deployment", "web", "apps/v1"), containers=("sidecar", "server"))
    pod["spec"]["containers"][1]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    got, _ = place(fix_target(_ev(pod), pod), fix, "", container)
    assert (want in got) if want else got == fix, got


def test_kserve_storage_initializer_without_a_known_secret_or_credentials_to_give():
    """No Secret known: the one KServe's docs name (storage-config), created with a placeholder only for the value;
    a pvc:// model needs no credentials: the URI is what to fix."""
    from kubectl_gpudoctor.fixes import place
    pod = _kserve_pod(account="sa1")
    pod["spec"]["initContainers"][0]["args"] = ["s3://models/llama", "/mnt/models"]
    fix, snippet = place(fix_target(_ev(pod, _isvc("sa1", "s3://models/llama")), pod), "Fix it.", "", "storage-initializer")
    assert "with keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and annotations serving.kserve.io/s3-endpoint" in fix
    assert snippet.splitlines()[0] == ("kubectl create secret generic storage-config -n ml --from-literal="
                                       "AWS_ACCESS_KEY_ID=<aws-access-key-id> --from-literal=AWS_SECRET_ACCESS_KEY="
                                       "<aws-secret-access-key>"), snippet
    pod["spec"]["initContainers"][0]["args"] = ["pvc://models/llama", "/mnt/models"]
    fix, snippet = place(fix_target(_ev(pod, _isvc("sa1", "pvc://models/llama")), pod), "Fix it.", "", "storage-initializer")
    assert fix.endswith("Fix that URI: `kubectl edit inferenceservice llm -n ml`.") and "credentials" not in fix
    assert snippet == ""


@pytest.mark.parametrize("predictor", ["x", {"model": ["not", "a", "map"]}, {"model": {"storageUri": 7}}])
def test_a_malformed_inferenceservice_still_gets_a_storage_fix_from_the_pod(predictor):
    """A custom resource's fields are not shape-checked (kube/shapes.py): the fix falls back on the pod's own words."""
    from kubectl_gpudoctor.fixes import place
    pod = _kserve_pod(model_env=HF_ENV)
    isvc = dict(_isvc(), spec={"predictor": predictor})
    fix, _ = place(fix_target(_ev(pod, isvc), pod), "Give it an HF_TOKEN.", "", "storage-initializer")
    assert "download hf://meta-llama/meta-llama-3-8b-instruct (InferenceService llm" in fix, fix


@pytest.mark.parametrize("kind,api,runtimeclasses,patch", [
    ("StatefulSet", "apps/v1", ["nvidia", "kata"], "kubectl patch statefulset llm-worker -n ml --type=merge -p "
                                                  "'{\"spec\":{\"template\":{\"spec\":{\"runtimeClassName\":\"nvidia\"}}}}'"),
    ("StatefulSet", "apps/v1", ["kata", "gvisor"], None),   # which one: not ours to guess
    ("Job", "batch/v1", ["nvidia"], None),                   # a Job's template is immutable: no patch
])
def test_a_missing_runtimeclass_patch_names_an_existing_one(kind, api, runtimeclasses, patch):
    from kubectl_gpudoctor.rules.workload.creation_rejected import pod_creation_rejected
    ev = _rejected(kind, api)
    for rc in runtimeclasses:
        ev.add({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": rc}, "handler": rc})
    hit = pod_creation_rejected(ev)
    lines = hit.snippet.splitlines()
    assert lines[0] == "kubectl get runtimeclass"
    assert (lines[1].split("   #")[0] if len(lines) > 1 else None) == patch, lines


def test_a_refused_statefulset_s_report_names_it_its_field_and_the_patch():
    """End to end (a saved StatefulSet whose FailedCreate names RuntimeClass nvidia-cdi, RuntimeClass nvidia listed):
    the finding behind the root cause names the StatefulSet, the field and the commands."""
    from tests.casebook import diagnose
    diag = diagnose(os.path.join(CASES, "pod-creation-rejected", "fail-statefulset-runtimeclass-admission"))
    assert diag.root_cause == "runtimeclass-not-found"
    f = next(f for f in diag.findings if (f.cause or f.id) == diag.root_cause)
    assert "Where: StatefulSet train, spec.template.spec.runtimeClassName: `kubectl edit statefulset train -n " \
           "research`" in f.remediation, f.remediation
    assert "the pod template or" not in f.remediation
    assert ("kubectl patch statefulset train -n research --type=merge -p "
            "'{\"spec\":{\"template\":{\"spec\":{\"runtimeClassName\":\"nvidia\"}}}}'") in f.snippet, f.snippet


def test_a_workload_targets_fix_names_the_workload_whose_template_it_changes():
    """`kubectl gpudoctor sts/sd-render`: its pods are refused, so no pod exists; a fix that changes the pod template
    names the StatefulSet and the field inside it, as a fix for one of its pods would."""
    from tests.casebook import diagnose
    diag = diagnose(os.path.join(CASES, "scheduler-queue-invalid", "fail-volcano-webhook-refuses-closed-queue"))
    fix = next(f for f in diag.findings if f.id == "scheduler-queue-invalid").remediation
    assert ("Where: StatefulSet sd-render, spec.template.metadata.annotations[scheduling.volcano.sh/queue-name]"
            in fix), fix
    assert "`kubectl edit statefulset sd-render -n render`" in fix and "-template" not in fix


def test_a_cronjobs_template_pod_is_owned_by_the_cronjob_through_its_job_template():
    from kubectl_gpudoctor.kube.workloads import template_pod
    cj = {"apiVersion": "batch/v1", "kind": "CronJob",
          "metadata": {"name": "nightly-eval", "namespace": "ml", "uid": "c1",
                       "labels": {"app.kubernetes.io/managed-by": "Helm"}},
          "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": {
              "metadata": {"labels": {"app": "eval"}},
              "spec": {"restartPolicy": "Never", "containers": [{"name": "eval", "image": "eval:1.4"}]}}}}}}
    pod = template_pod(cj)
    assert pod["metadata"]["namespace"] == "ml" and pod["metadata"]["labels"] == {"app": "eval"}
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly-eval",
                                                   "uid": "c1", "controller": True}]
    assert pod["spec"]["containers"][0]["name"] == "eval"
    ev = Evidence(target=Target("CronJob", "nightly-eval", "ml"))
    ev.add(cj)
    ft = fix_target(ev, pod)
    assert (ft.top.kind, ft.top.name) == ("CronJob", "nightly-eval") and not ft.bare
    assert template_pod({"kind": "Deployment", "metadata": {"name": "x"}, "spec": {"template": "bad"}})["spec"] == {}
