"""Builds tests/mustgather/<case>/ by running NVIDIA's real must-gather script against the suite's API server serving
a node case plus the GPU Operator's own pod (the script starts from `kubectl get pods -lapp=gpu-operator -A`):

    python tests/mustgather/build.py PATH/TO/gpu-operator/hack/must-gather.sh

The fixture in this directory was written from gpu-operator commit a22dbf671f2e26f9a1e342f8eea28e196235e110; the
script itself is not copied here. Its `kubectl exec` steps (nvidia-bug-report, nvidia-smi) fail against the read-only
server, as they would without exec rights; what they write is kept as written.
"""
import os
import subprocess
import sys
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from tests.apiserver import FakeApiServer, load_case  # noqa: E402
CASE = os.path.join(ROOT, "tests", "cases", "gpu-operator-component-failing", "fail-driver-kernel-version")
OUT = os.path.join(ROOT, "tests", "mustgather", "driver-kernel-version")
objects, logs = load_case(CASE)
op = {"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "gpu-operator-6b8d9c7f5d-q2xkz", "generateName": "gpu-operator-6b8d9c7f5d-", "namespace": "gpu-operator",
    "uid": "7f1e6c2a-3b9d-4c55-8e0a-1d2f3a4b5c6d", "resourceVersion": "918200114",
    "creationTimestamp": "2026-11-02T08:14:09Z",
    "labels": {"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator", "pod-template-hash": "6b8d9c7f5d"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "gpu-operator-6b8d9c7f5d",
                         "uid": "0c9b8a7d-6e5f-4d3c-b2a1-908f7e6d5c4b", "controller": True, "blockOwnerDeletion": True}]},
    "spec": {"containers": [{"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v24.9.0",
                             "command": ["gpu-operator"], "resources": {"requests": {"cpu": "200m", "memory": "100Mi"}}}],
             "nodeName": "cpu-node-01", "serviceAccountName": "gpu-operator", "restartPolicy": "Always"},
    "status": {"phase": "Running", "startTime": "2026-11-02T08:14:09Z",
               "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-02T08:14:31Z"}],
               "containerStatuses": [{"name": "gpu-operator", "ready": True, "started": True, "restartCount": 0,
                                      "image": "nvcr.io/nvidia/gpu-operator:v24.9.0",
                                      "state": {"running": {"startedAt": "2026-11-02T08:14:30Z"}}}]}}
objects.append(op)
logs[("gpu-operator", op["metadata"]["name"], "gpu-operator", False)] = (
    '{"level":"info","ts":1764496800.12,"logger":"controllers.ClusterPolicy","msg":"ClusterPolicy step wasn\'t ready",'
    '"State:":"notReady"}\n')
script, out = sys.argv[1], OUT
with FakeApiServer(objects, logs) as srv:
    kc = srv.write_kubeconfig(os.path.join(out + ".kubeconfig"), namespace="gpu-operator")
    env = dict(os.environ, KUBECONFIG=kc, ARTIFACT_DIR=out)
    r = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=300)
    os.unlink(kc)
    print("exit", r.returncode)
# The script's own trace names where it ran: the default ARTIFACT_DIR and its path in the repository instead.
for name in ("must-gather.log", "must-gather.stderr.log"):
    path = os.path.join(out, name)
    with open(path) as f:
        text = f.read().replace(out, "/tmp/nvidia-gpu-operator_20261130_0959").replace(script, "hack/must-gather.sh")
    with open(path, "w") as f:
        f.write(text)
