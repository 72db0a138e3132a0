"""The object a user edits to change a pod: its controller chain walked to the top (built-in controllers and the
operators GPU users run), where a container's fields live inside that object, and whether Helm or GitOps owns it."""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, List, Optional, Tuple

from ..record import field, record
from . import kserve
from .objects import annotations, controller_of, labels, meta, name, spec

if TYPE_CHECKING:
    from .storageinit import StorageInit

# API group -> kind -> (the name `kubectl edit` takes, namespaced). Groups are part of the key because kinds repeat
# across groups (Volcano's Job, Knative's Service).
KINDS = {
    "apps": {"ReplicaSet": ("replicaset", True), "Deployment": ("deployment", True),
             "StatefulSet": ("statefulset", True), "DaemonSet": ("daemonset", True)},
    "batch": {"Job": ("job", True), "CronJob": ("cronjob", True)},
    "": {"Pod": ("pod", True)},
    "serving.kserve.io": {"InferenceService": ("inferenceservice", True)},
    "serving.kubeflow.org": {"InferenceService": ("inferenceservice.serving.kubeflow.org", True)},   # KFServing
    "serving.knative.dev": {"Service": ("ksvc", True), "Configuration": ("configuration.serving.knative.dev", True),
                            "Revision": ("revision.serving.knative.dev", True)},
    "ray.io": {"RayCluster": ("raycluster", True), "RayService": ("rayservice", True), "RayJob": ("rayjob", True)},
    "kubeflow.org": {"PyTorchJob": ("pytorchjob", True), "TFJob": ("tfjob", True), "MPIJob": ("mpijob", True),
                     "XGBoostJob": ("xgboostjob", True), "PaddleJob": ("paddlejob", True), "JAXJob": ("jaxjob", True),
                     "Notebook": ("notebook", True)},
    "trainer.kubeflow.org": {"TrainJob": ("trainjob", True)},
    "leaderworkerset.x-k8s.io": {"LeaderWorkerSet": ("leaderworkerset", True)},
    "jobset.x-k8s.io": {"JobSet": ("jobset", True)},
    "argoproj.io": {"Workflow": ("workflow", True), "CronWorkflow": ("cronworkflow", True)},
    "batch.volcano.sh": {"Job": ("vcjob", True)},
    "apps.nvidia.com": {"NIMService": ("nimservice", True), "NIMCache": ("nimcache", True)},
    "nvidia.com": {"ClusterPolicy": ("clusterpolicy", False), "NVIDIADriver": ("nvidiadriver", False)},
}

# Kubeflow training jobs: kind -> the map of replica specs (kubeflow/training-operator pkg/apis/kubeflow.org/v1).
REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs",
                 "XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs", "JAXJob": "jaxReplicaSpecs"}
REPLICA_TYPES = {"master": "Master", "worker": "Worker", "chief": "Chief", "ps": "PS", "evaluator": "Evaluator",
                 "launcher": "Launcher"}
_TEMPLATE_HASH = re.compile(r"-([bcdfghjklmnpqrstvwxz2456789]{6,10})$")
_REPLICA_IN_NAME = re.compile(r"-(master|worker|chief|ps|evaluator|launcher)-\d+$")

# Labels the operators put on the pods they create, naming an object above the pod's own controller (read
# bottom-up): KServe serverless pods are owned by a Knative Revision's Deployment, the InferenceService sits above.
LABEL_OWNERS = (
    ("serving.knative.dev/service", "serving.knative.dev/v1", "Service"),
    ("serving.kserve.io/inferenceservice", "serving.kserve.io/v1beta1", "InferenceService"),
    ("serving.kubeflow.org/inferenceservice", "serving.kubeflow.org/v1beta1", "InferenceService"),   # KFServing
    ("ray.io/cluster", "ray.io/v1", "RayCluster"),
    ("jobset.sigs.k8s.io/jobset-name", "jobset.x-k8s.io/v1alpha2", "JobSet"),
    ("leaderworkerset.sigs.k8s.io/name", "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("workflows.argoproj.io/workflow", "argoproj.io/v1alpha1", "Workflow"),
    ("volcano.sh/job-name", "batch.volcano.sh/v1alpha1", "Job"),
)
# ClusterPolicy's component sections, by the DaemonSet the GPU operator names after them.
CLUSTERPOLICY_PARTS = (("driver", "driver"), ("device-plugin", "devicePlugin"), ("toolkit", "toolkit"),
                       ("dcgm-exporter", "dcgmExporter"), ("feature-discovery", "gfd"), ("mig-manager", "migManager"),
                       ("validator", "validator"), ("dcgm", "dcgm"))
# ClusterPolicy's component sections by the image a GPU-operator operand container runs (NVIDIA/gpu-operator
# api/nvidia/v1/clusterpolicy_types.go: each section takes repository, image, version, imagePullPolicy and
# imagePullSecrets, a list of Secret names in the operator's namespace). The validation init containers of every
# operand (toolkit-validation, driver-validation…) run the validator image; the driver's init container runs
# k8s-driver-manager (spec.driver.manager). GFD runs the device plugin's image since v0.15: by its DaemonSet's name.
OPERAND_IMAGES = {"gpu-operator-validator": "validator", "k8s-driver-manager": "driver.manager", "driver": "driver",
                  "container-toolkit": "toolkit", "dcgm-exporter": "dcgmExporter", "dcgm": "dcgm",
                  "k8s-mig-manager": "migManager", "gpu-feature-discovery": "gfd", "k8s-kata-manager": "kataManager",
                  "k8s-cc-manager": "ccManager", "vgpu-device-manager": "vgpuDeviceManager",
                  "kubevirt-gpu-device-plugin": "sandboxDevicePlugin", "gpu-operator-node-status-exporter":
                  "nodeStatusExporter"}
# Images only the GPU operator's operand pods carry: a DaemonSet pod with one is rendered from the ClusterPolicy.
OPERAND_MARKS = ("gpu-operator-validator", "k8s-driver-manager")
# Pod-spec fields the ClusterPolicy sets for all its operands (OperatorSpec.RuntimeClass, DaemonsetsSpec).
POLICY_FIELDS = {"runtimeClassName": "spec.operator.runtimeClass", "tolerations": "spec.daemonsets.tolerations",
                 "priorityClassName": "spec.daemonsets.priorityClassName"}
POLICY_DEFAULT = "cluster-policy"   # the name the gpu-operator Helm chart gives its ClusterPolicy

# Run-to-completion kinds whose pod template is fixed once created (batch Job's spec.template is immutable; the
# training operators, JobSet and Volcano do not roll a changed template out to running pods): re-created, not edited.
RECREATED = {("batch", "Job"), ("batch.volcano.sh", "Job"), ("jobset.x-k8s.io", "JobSet"), ("argoproj.io", "Workflow"),
             ("trainer.kubeflow.org", "TrainJob"), ("ray.io", "RayJob")} | {("kubeflow.org", k) for k in REPLICA_SPECS}

HELM_RELEASE = "meta.helm.sh/release-name"
ARGO_TRACKING, ARGO_LABEL = "argocd.argoproj.io/tracking-id", "argocd.argoproj.io/instance"
FLUX_KUSTOMIZATION, FLUX_HELMRELEASE = "kustomize.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/name"


@record
class Link:
    """One object of the chain: its kind and name, and the object itself when it was read."""
    kind: str
    name: str
    api_version: str = "v1"
    obj: Optional[dict] = None
    known: str = ""   # how an unread object is known, when not from an ownerReference or a label

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    @property
    def what(self) -> str:
        return f"{self.kind} {self.name}"


@record
class FixTarget:
    """Where a change to a pod goes: the top of its controller chain (or the pod itself when it has none)."""
    pod: dict
    top: Link
    chain: List[Link] = field(default_factory=list)
    manager: Optional[Tuple[str, str, str]] = None   # (tool, name, how it is known): helm / argocd / flux-*
    webhooks: List[str] = field(default_factory=list)  # MutatingWebhookConfigurations that match the pod
    webhook_gap: Optional[str] = ""   # why they are unknown ("" when not needed; None when read and none matched)
    storage: Optional["StorageInit"] = None   # KServe's injected model download, when the pod has one

    @property
    def bare(self) -> bool:
        return self.top.kind == "Pod"

    @property
    def known_by_reference(self) -> bool:
        return self.top.obj is None and not self.bare and not self.top.known

    @property
    def namespace(self) -> str:
        return meta(self.pod).get("namespace") or ""

    def pod_path(self) -> Optional[str]:
        """The path of the pod spec inside the top object; None when its shape is not known."""
        return _pod_path(self.top, self.pod)

    def container_path(self, container: str) -> Optional[str]:
        """The path of a container's fields inside the top object."""
        return _container_path(self.top, self.pod, container)

    def place(self, container: Optional[str] = None) -> str:
        """`InferenceService x, spec.predictor.model`; for an owner of unknown shape, `the pod template of KIND X`."""
        path = self.container_path(container) if container else self.pod_path()
        if path is None:
            return f"the pod template of {self.top.what}" + (f", container {container}" if container else "")
        return f"{self.top.what}, {path}"

    @property
    def recreated(self) -> bool:
        """Changed by re-creating it, not by an edit (kube/owners.py RECREATED)."""
        return (self.top.group, self.top.kind) in RECREATED

    def renamed(self, key: str) -> str:
        """A container field's name in the top object: a TrainJob's trainer takes `resourcesPerNode`."""
        return "resourcesPerNode" if key == "resources" and self.top.kind == "TrainJob" else key

    def resource(self) -> Tuple[str, str]:
        """(the name kubectl takes for the top object's kind, ` -n NAMESPACE` or "" for a cluster-scoped one)."""
        resource, namespaced = resource_of(self.top)
        return resource, (f" -n {self.namespace}" if namespaced else "")

    def edit_command(self) -> str:
        resource, where = self.resource()
        return f"kubectl edit {resource} {self.top.name}{where}"


def resource_of(link: Link) -> Tuple[str, bool]:
    """(the name kubectl takes for the object's kind, whether it is namespaced)."""
    resource, namespaced = KINDS.get(link.group, {}).get(link.kind, (None, True))
    return resource or (f"{link.kind.lower()}.{link.group}" if link.group else link.kind.lower()), namespaced


def fix_target(ev, pod: Optional[dict]) -> Optional[FixTarget]:
    if not pod:
        return None
    chain = owner_chain(ev, pod)
    policy = cluster_policy(ev, pod, chain)
    if policy is not None:
        chain.append(policy)
    top = chain[-1] if chain else Link("Pod", name(pod), "v1", pod)
    ft = FixTarget(pod=pod, top=top, chain=chain, manager=management(chain[::-1], pod))
    from .storageinit import storage_init
    ft.storage = storage_init(pod, chain)
    if any(injected(ft, c.get("name")) for part in ("containers", "initContainers") for c in spec(pod).get(part) or []):
        gap = None if ev.all("MutatingWebhookConfiguration") else ev.gap(WEBHOOKS)
        ft.webhooks = [] if gap else mutating_webhooks(ev, pod)
        ft.webhook_gap = f"webhook configurations not read: {gap.reason} (needs list {WEBHOOKS})" if gap else \
            (None if not ft.webhooks else "")
    return ft


WEBHOOKS = "mutatingwebhookconfigurations"


def _image_name(image: str) -> str:
    """`nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.1` -> `gpu-operator-validator`."""
    last = (image or "").split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def cluster_policy(ev, pod: dict, chain: List[Link]) -> Optional[Link]:
    """The ClusterPolicy above a GPU-operator operand DaemonSet whose reference to it was not read: the operator
    renders that DaemonSet (images, pull secrets, env, resources) from the ClusterPolicy and reverts a direct edit.
    An operand pod is known by the operator's own init images (OPERAND_MARKS)."""
    if not chain or chain[-1].kind != "DaemonSet" or chain[-1].group != "apps":
        return None
    images = {_image_name(c.get("image") or "") for part in ("initContainers", "containers")
              for c in spec(pod).get(part) or []}
    if not images & set(OPERAND_MARKS):
        return None
    read = next(iter(ev.all("ClusterPolicy")), None)
    if read is not None:
        return Link("ClusterPolicy", name(read), read.get("apiVersion") or "nvidia.com/v1", read)
    return Link("ClusterPolicy", POLICY_DEFAULT, "nvidia.com/v1", None,
                known="the gpu-operator chart's name for it, not read: `kubectl get clusterpolicy` lists it")


def operand_part(pod: dict, container: Optional[str]) -> Optional[str]:
    """The ClusterPolicy section that configures a container of a GPU-operator operand pod (OPERAND_IMAGES), else
    the one its DaemonSet is named after (CLUSTERPOLICY_PARTS)."""
    c = next((c for part in ("initContainers", "containers") for c in spec(pod).get(part) or []
              if c.get("name") == container), None) if container else None
    part = OPERAND_IMAGES.get(_image_name((c or {}).get("image") or ""))
    if part:
        return part
    owner = (controller_of(pod) or {}).get("name") or ""
    return next((p for needle, p in CLUSTERPOLICY_PARTS if needle in owner), None)


def owner_chain(ev, pod: dict) -> List[Link]:
    """The controllers above the pod, bottom-up, as far as ownerReferences lead (an owner that could not be read is
    still named from its reference, and ends the walk), then the objects its operators' labels name above that."""
    ns, chain, obj = meta(pod).get("namespace"), [], pod
    for _ in range(8):
        ref = controller_of(obj)
        if not ref or not ref.get("kind") or not ref.get("name"):
            break
        link = Link(ref["kind"], ref["name"], ref.get("apiVersion") or "v1")
        link.obj = find(ev, link, ns)
        chain.append(link)
        if link.obj is None:
            break
        obj = link.obj
    guess = _deployment_of(ev, chain, pod)
    if guess:
        chain.append(guess)
    lab = labels(pod)
    for key, api, kind in LABEL_OWNERS:
        value = lab.get(key)
        group = api.split("/")[0]
        if not value or any(ln.kind == kind and ln.group == group for ln in chain):
            continue
        if chain and _rank(chain[-1]) > _rank(Link(kind, value, api)):
            continue   # the chain already reached something above it (a RayService above its RayCluster)
        link = Link(kind, value, api)
        link.obj = find(ev, link, ns)
        chain.append(link)
    return chain


def _deployment_of(ev, chain: List[Link], pod: dict) -> Optional[Link]:
    """The Deployment behind an unread ReplicaSet: the Deployment controller names its ReplicaSets
    `<deployment>-<pod-template-hash>`, and that hash is the pod's label (unless a read said no such Deployment)."""
    if len(chain) != 1 or chain[0].obj is not None or chain[0].kind != "ReplicaSet":
        return None
    hash_ = labels(pod).get("pod-template-hash")
    if not hash_:   # saved pods without their labels: the hash's alphabet (k8s.io/apimachinery rand.SafeEncodeString)
        m = _TEMPLATE_HASH.search(chain[0].name)
        hash_ = m.group(1) if m and re.search(r"\d", m.group(1)) else None
    if not hash_ or not chain[0].name.endswith("-" + hash_):
        return None
    deploy, ns = chain[-1].name[: -len(hash_) - 1], meta(pod).get("namespace")
    if f"Deployment/{ns}/{deploy}" in ev.absent:   # a 404 said so (a saved snapshot lacking its ReplicaSet says nothing)
        return None
    link = Link("Deployment", deploy, "apps/v1")
    link.obj = find(ev, link, ns)
    return link


_TOPS = ("RayService", "RayJob", "TrainJob", "InferenceService", "CronJob", "CronWorkflow", "NIMService")


def _rank(link: Link) -> int:
    """Objects that own the label-named ones: a label never names something below them."""
    return 1 if link.kind in _TOPS else 0


def find(ev, link: Link, ns: Optional[str]) -> Optional[dict]:
    """The object of that kind, group and name in the evidence (kinds repeat across API groups)."""
    for obj in ev.all(link.kind):
        api = obj.get("apiVersion") or ""
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        if name(obj) == link.name and group == link.group and meta(obj).get("namespace") in (ns, None):
            return obj
    return None


def management(objs: List[Link], pod: dict) -> Optional[Tuple[str, str, str]]:
    """(tool, name, how it is known) for the first object, top first, carrying GitOps or Helm metadata; the pod's
    own labels (copied from its template) count last. GitOps wins over Helm: Argo CD and Flux render charts too."""
    seen = [ln.obj for ln in objs if ln.obj is not None] + [pod]
    for obj in seen:
        ann, lab, what = annotations(obj), labels(obj), f"{obj.get('kind') or 'Pod'} {name(obj)}"
        if ARGO_TRACKING in ann:
            return "argocd", ann[ARGO_TRACKING].split(":")[0], f"annotation {ARGO_TRACKING} on {what}"
        if ARGO_LABEL in lab:
            return "argocd", lab[ARGO_LABEL], f"label {ARGO_LABEL} on {what}"
        if FLUX_HELMRELEASE in lab:
            return "flux-helm", lab[FLUX_HELMRELEASE], f"label {FLUX_HELMRELEASE} on {what}"
        if FLUX_KUSTOMIZATION in lab:
            return "flux", lab[FLUX_KUSTOMIZATION], f"label {FLUX_KUSTOMIZATION} on {what}"
    for obj in seen:
        ann, lab, what = annotations(obj), labels(obj), f"{obj.get('kind') or 'Pod'} {name(obj)}"
        release = ann.get(HELM_RELEASE)
        if release:
            return "helm", release, f"annotation {HELM_RELEASE} on {what}"
        if (lab.get("app.kubernetes.io/managed-by") or "").lower() == "helm":
            release = lab.get("app.kubernetes.io/instance") or lab.get("release")
            if release:
                return "helm", release, f"label app.kubernetes.io/managed-by=Helm on {what}"
    return None


def chart_of(ft: FixTarget) -> Optional[str]:
    """The chart name from Helm's `helm.sh/chart: NAME-VERSION` label, where an object of the chain carries it."""
    for obj in [ln.obj for ln in ft.chain if ln.obj is not None] + [ft.pod]:
        chart = labels(obj).get("helm.sh/chart")
        if chart:
            return re.sub(r"-v?\d+(\.\d+)*([-+.][\w.]+)?$", "", chart) or chart
    return None


def kueue_queue(ft: FixTarget) -> Optional[str]:
    """The Kueue LocalQueue a workload of the chain is submitted to (`kueue.x-k8s.io/queue-name`), if any."""
    for obj in [ln.obj for ln in ft.chain if ln.obj is not None] + [ft.pod]:
        queue = labels(obj).get("kueue.x-k8s.io/queue-name")
        if queue:
            return queue
    return None


# --- where a container lives inside each kind ---------------------------------------------------------------------

def _pod_path(top: Link, pod: dict) -> Optional[str]:
    kind, group, obj, lab = top.kind, top.group, top.obj, labels(pod)
    if group in ("apps", "batch", "kubeflow.org", "serving.knative.dev") and kind in (
            "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "Notebook", "Service", "Configuration"):
        return "spec.template.spec"
    if kind == "Revision":
        return "spec"
    if kind == "CronJob":
        return "spec.jobTemplate.spec.template.spec"
    if kind == "InferenceService":
        return kserve.section(top, pod)
    if kind in ("RayCluster", "RayService", "RayJob"):
        prefix = {"RayService": "spec.rayClusterConfig", "RayJob": "spec.rayClusterSpec"}.get(kind, "spec")
        if lab.get("ray.io/node-type") == "head":
            return f"{prefix}.headGroupSpec.template.spec"
        group_name = lab.get("ray.io/group")
        return f"{prefix}.workerGroupSpecs[groupName={group_name}].template.spec" if group_name else None
    if kind in REPLICA_SPECS:
        rtype = _replica_type(obj, kind, pod)
        return f"spec.{REPLICA_SPECS[kind]}.{rtype}.template.spec" if rtype else None
    if kind == "LeaderWorkerSet":
        leader = lab.get("leaderworkerset.sigs.k8s.io/worker-index") == "0"
        has_leader = obj is None or "leaderTemplate" in (spec(obj).get("leaderWorkerTemplate") or {})
        which = "leaderTemplate" if leader and has_leader else "workerTemplate"
        return f"spec.leaderWorkerTemplate.{which}.spec"
    if kind == "JobSet":
        rj = lab.get("jobset.sigs.k8s.io/replicatedjob-name")
        return f"spec.replicatedJobs[name={rj}].template.spec.template.spec" if rj else None
    if kind == "Job" and group == "batch.volcano.sh":
        task = lab.get("volcano.sh/task-spec")
        return f"spec.tasks[name={task}].template.spec" if task else None
    if kind == "Workflow":
        template = argo_template(pod)
        return f"spec.templates[name={template}]" if template else None
    if kind == "TrainJob":
        return "spec.podSpecOverrides"
    if kind == "NIMService":
        return "spec"
    if kind == "ClusterPolicy":
        return "spec.daemonsets"
    if kind == "NVIDIADriver":
        return "spec"
    return None


def _container_path(top: Link, pod: dict, container: str) -> Optional[str]:
    kind = top.kind
    if kind == "InferenceService":
        comp, section = kserve.component(labels(pod)), kserve.section(top, pod)
        if kserve.is_v1alpha2(top) and container == "kserve-container":   # one container per component, under its key
            keys = kserve.dig(top.obj, section)
            key = next((k for k in kserve.V1ALPHA2_MODEL_KEYS if k in keys), None)
            return f"{section}.{key}" if key else None
        if comp == "predictor" and container == "kserve-container":
            return f"spec.predictor.{kserve.model_key(top.obj)}"
        return f"{section}.containers[name={container}]"
    if kind == "Workflow":
        template = argo_template(pod)
        return f"spec.templates[name={template}].container" if template and container == "main" else None
    if kind == "TrainJob":
        return "spec.trainer"
    if kind == "NIMService":
        return "spec"
    if kind == "ClusterPolicy":
        part = operand_part(pod, container)
        return f"spec.{part}" if part else None
    if kind == "NVIDIADriver":
        return "spec"
    base = _pod_path(top, pod)
    if base is None:
        return None
    init = any(c.get("name") == container for c in spec(pod).get("initContainers") or [])
    return f"{base}.{'initContainers' if init else 'containers'}[name={container}]"


def _replica_type(job: Optional[dict], kind: str, pod: dict) -> Optional[str]:
    """The replica spec key (Master, Worker, Launcher…): the pod's replica-type label (lower-case since training-
    operator v1.7), matched against the job's keys when the job was read, else its usual spelling."""
    lab = labels(pod)
    raw = (lab.get("training.kubeflow.org/replica-type") or lab.get("training.kubeflow.org/job-role")
           or lab.get("replica-type") or "")
    if not raw:
        m = _REPLICA_IN_NAME.search(name(pod))
        raw = m.group(1) if m else ""
    if not raw:
        return None
    keys = list((spec(job).get(REPLICA_SPECS[kind]) or {}).keys())
    return next((k for k in keys if k.lower() == raw.lower()), REPLICA_TYPES.get(raw.lower(), raw))


def argo_template(pod: dict) -> Optional[str]:
    """The Workflow template a pod runs: the ARGO_TEMPLATE env var Argo's executor gets (v3), or the older
    `workflows.argoproj.io/template` annotation; JSON, read only when small."""
    texts = [annotations(pod).get("workflows.argoproj.io/template")]
    for c in (spec(pod).get("initContainers") or []) + (spec(pod).get("containers") or []):
        texts += [e.get("value") for e in c.get("env") or [] if e.get("name") == "ARGO_TEMPLATE"]
    for text in texts:
        if text and len(text) < 256 * 1024:
            try:
                doc = json.loads(text)
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("name"), str):
                return doc["name"]
    return None


# --- fields a mutating webhook added ------------------------------------------------------------------------------

_TEMPLATES = {"ReplicaSet": ("spec", "template"), "Deployment": ("spec", "template"), "StatefulSet": ("spec", "template"),
              "DaemonSet": ("spec", "template"), "Job": ("spec", "template"),
              "CronJob": ("spec", "jobTemplate", "spec", "template")}


def injected(ft: FixTarget, container: Optional[str]) -> Optional[Link]:
    """The nearest read built-in owner whose pod template lacks a container the pod has: a mutating admission webhook
    added it when the pod was created (KServe's storage-initializer, a service mesh's proxy), so the template is not
    where to change it."""
    if not container or ft.bare:
        return None
    for link in ft.chain:
        if link.obj is None or link.group not in ("apps", "batch") or link.kind not in _TEMPLATES:
            continue
        tmpl = link.obj
        for key in _TEMPLATES[link.kind]:
            tmpl = (tmpl or {}).get(key) or {}
        names = {c.get("name") for part in ("containers", "initContainers") for c in spec(tmpl).get(part) or []}
        return link if names and container not in names else None
    return None


def mutating_webhooks(ev, pod: dict) -> List[str]:
    """The MutatingWebhookConfigurations with a webhook on pod CREATE whose object (and, when the Namespace was read,
    namespace) selector matches the pod: `NAME (webhook NAME)`."""
    from .affinity import label_selector_matches
    nsobj = ev.get("Namespace", meta(pod).get("namespace") or "")
    out = []
    for cfg in ev.all("MutatingWebhookConfiguration"):
        for hook in cfg.get("webhooks") or []:
            on_pods = any("pods" in (r.get("resources") or []) or "*" in (r.get("resources") or [])
                          for r in hook.get("rules") or [] if set(r.get("operations") or []) & {"CREATE", "*"})
            objsel = hook.get("objectSelector") or {}
            nssel = hook.get("namespaceSelector") or {}
            if on_pods and label_selector_matches(objsel, labels(pod)) and \
                    (nsobj is None or label_selector_matches(nssel, labels(nsobj))):
                out.append(f"{name(cfg)} (webhook {hook.get('name')})")
                break
    return out[:4]


# --- objects an operator generates for its workload ---------------------------------------------------------------

# (owner's API group, owner kind, generated kind, name suffix after the owner's name, the plugin that makes it, what
# it holds). Volcano's job plugins (volcano-sh/volcano pkg/controllers/job/plugins; docs "job plugins"): svc writes
# ConfigMap `<job>-svc` (the tasks' host files, mounted at /etc/volcano) and a headless Service, ssh a Secret
# `<job>-ssh` (a ConfigMap before v1.1) with the key pair. vc-controller-manager creates them when the Job starts:
# a pod that waits for one waits on the controller, not on the user (volcano-sh/volcano#1894).
GENERATED = (
    ("batch.volcano.sh", "Job", "ConfigMap", "-svc", "svc", "the tasks' host files, mounted at /etc/volcano"),
    ("batch.volcano.sh", "Job", "Secret", "-ssh", "ssh", "the tasks' SSH key pair"),
    ("batch.volcano.sh", "Job", "ConfigMap", "-ssh", "ssh", "the tasks' SSH key pair"),
)


@record
class Generated:
    """An object the pod's operator creates for it: never created by hand."""
    owner: Link
    plugin: str
    holds: str


def generated(ft: Optional[FixTarget], kind: str, ref: str) -> Optional[Generated]:
    """The operator-made object `kind ref` is, for this pod's chain (a Volcano Job's `<job>-svc`), or None."""
    if ft is None:
        return None
    for group, owner_kind, gen_kind, suffix, plugin, holds in GENERATED:
        for link in ft.chain:
            if (link.group, link.kind) == (group, owner_kind) and kind == gen_kind and ref == link.name + suffix:
                return Generated(owner=link, plugin=plugin, holds=holds)
    return None


def queue_field(ft: FixTarget, what: Optional[str], key: Optional[str]) -> str:
    """Where the batch-scheduler queue is named inside the object to edit: a Volcano Job's spec.queue (its PodGroup
    copies it), else the label or annotation `key` (`what`) on the object itself when it carries it (Kueue reads the
    workload's own metadata.labels), or on its pod template (Volcano's and KAI's pod-level keys)."""
    top = ft.top
    if (top.group, top.kind) == ("batch.volcano.sh", "Job") or not key:
        return "spec.queue"
    field = "labels" if what == "label" else "annotations"
    on_top = (meta(top.obj) if top.obj is not None else {}).get(field) or {}
    pod_path = ft.pod_path() or ""
    if key in on_top or key.startswith("kueue.") or not pod_path.endswith(".spec"):
        return f"metadata.{field}[{key}]"
    return f"{pod_path[: -len('.spec')]}.metadata.{field}[{key}]"
