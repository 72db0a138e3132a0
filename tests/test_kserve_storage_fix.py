"""KServe's storage-initializer fix says what failed: a download OOM-killed at its memory limit is fixed where KServe
sets that limit (the ClusterStorageContainer, else the inferenceservice-config ConfigMap), with no credentials advice;
a download whose status shows no such kill keeps the ServiceAccount/Secret advice (fixes.py storage_where)."""
from kubectl_gpudoctor.evidence import Evidence, Target
from kubectl_gpudoctor.fixes import place
from kubectl_gpudoctor.kube.owners import fix_target

POD = "gemma-2b-predictor-84c6d9b7f-m9d2c"
FIX = "Raise resources.limits.memory of container storage-initializer above its peak."


def _pod(reason):
    """A predictor pod as KServe's mutator leaves it; its storage-initializer last ended with `reason` (kubectl get
    pod -o yaml: lastState.terminated, state.waiting CrashLoopBackOff)."""
    last = {"terminated": {"exitCode": 137 if reason == "OOMKilled" else 1, "reason": reason,
                           "startedAt": "2026-11-26T10:05:40Z", "finishedAt": "2026-11-26T10:06:39Z"}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD, "namespace": "models",
                         "labels": {"serving.kserve.io/inferenceservice": "gemma-2b", "component": "predictor"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True,
                                              "name": "gemma-2b-predictor-84c6d9b7f", "uid": "u-rs"}]},
            "spec": {"serviceAccountName": "default",
                     "initContainers": [{"name": "storage-initializer", "image": "kserve/storage-initializer:v0.13.1",
                                         "args": ["gs://acme-models/gemma-2b", "/mnt/models"],
                                         "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                       "requests": {"cpu": "100m", "memory": "100Mi"}}}],
                     "containers": [{"name": "kserve-container", "image": "kserve/huggingfaceserver:v0.13.1"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "storage-initializer", "ready": False, "restartCount": 5, "lastState": last,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}


def _ev(pod):
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "gemma-2b", "namespace": "models"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"},
                                             "storageUri": "gs://acme-models/gemma-2b"}}}}
    ev = Evidence(target=Target("Pod", POD, "models"))
    for o in (pod, isvc):
        ev.add(o)
    ev.sources = {"pods"}
    return ev


def test_an_oom_killed_download_is_fixed_where_kserve_sets_its_memory_not_with_credentials():
    pod = _pod("OOMKilled")
    fix, snippet = place(fix_target(_ev(pod), pod), FIX, "", "storage-initializer")
    assert "InferenceService gemma-2b, spec.predictor.model.storageUri" in fix, fix
    assert "ClusterStorageContainer that supports gs:// URIs" in fix, fix
    assert "spec.container.resources.limits.memory" in fix, fix
    assert "ConfigMap inferenceservice-config (namespace kserve), key storageInitializer, memoryLimit" in fix, fix
    assert "Secret" not in fix and "ServiceAccount" not in fix and "create secret" not in snippet, (fix, snippet)
    assert snippet.splitlines() == ["kubectl get clusterstoragecontainers -o yaml",
                                    "kubectl edit clusterstoragecontainer default",
                                    f"kubectl delete pod {POD} -n models"], snippet


def test_a_download_that_failed_otherwise_keeps_the_credentials_advice():
    pod = _pod("Error")
    fix, snippet = place(fix_target(_ev(pod), pod), "Fix its credentials.", "", "storage-initializer")
    assert "ClusterStorageContainer" not in fix, fix
    assert "with key gcloud-application-credentials.json" in fix, fix
    assert snippet.startswith("kubectl create secret generic storage-config -n models"), snippet
