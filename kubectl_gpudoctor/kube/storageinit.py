"""Where KServe's injected storage-initializer gets its model and credentials: the InferenceService's storageUri
and the ServiceAccount whose Secrets KServe turns into its environment (data/kserve_storage.py)."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..record import field, record
from .objects import annotations, labels, spec
from . import kserve
from .owners import Link


@record
class StorageInit:
    """Where the model download of KServe's injected storage-initializer is configured: the InferenceService's
    storageUri, and the ServiceAccount whose Secrets KServe turns into its credentials."""
    isvc: Link
    path: str                 # the storageUri's field path inside the InferenceService
    section: str              # the component's path: spec.predictor (v1alpha2: spec.default.predictor)
    uri: str
    account: str              # the pod's ServiceAccount: the one KServe read
    account_set: bool         # named by the InferenceService (else KServe fell back to `default`)
    attached: List[Tuple[str, str]] = field(default_factory=list)    # (Secret, key) KServe injected from it
    candidates: List[Tuple[str, str]] = field(default_factory=list)  # (Secret, key) other containers read
    blank: List[Tuple[str, str]] = field(default_factory=list)       # (env, annotation) injected empty

    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0].lower() if "://" in self.uri else ""

    @property
    def operator(self) -> str:
        return "KFServing" if self.isvc.group == "serving.kubeflow.org" else "KServe"

    @property
    def prefix(self) -> str:
        """The annotation prefix KServe (or KFServing) reads: `serving.kserve.io`."""
        return self.isvc.group or "serving.kserve.io"


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def storage_init(pod: dict, chain: List[Link]) -> Optional[StorageInit]:
    """The storage-initializer KServe added to this pod, with what configures it; None for other pods."""
    from ..data import kserve_storage as ks
    init = next((c for c in spec(pod).get("initContainers") or [] if c.get("name") == ks.NAME), None)
    isvc = next((ln for ln in chain if ln.kind == "InferenceService" and ln.group in ks.GROUPS), None)
    if init is None or isvc is None:
        return None
    comp, where = kserve.component(labels(pod)), kserve.section(isvc, pod)
    section = kserve.dig(isvc.obj, where)   # a custom resource: no schema checked its shape
    if kserve.is_v1alpha2(isvc):
        key = next((k for k in kserve.V1ALPHA2_MODEL_KEYS if k in section), None)
    else:
        key = kserve.model_key(isvc.obj) if comp == "predictor" else None
    model = kserve.as_map(section.get(key)) if key else {}
    ann = annotations(pod)
    uri = (_text(model.get("storageUri")) or next((ann[a] for a in ks.SOURCE_ANNOTATIONS if ann.get(a)), None)
           or _text(next(iter(init.get("args") or []), "")) or "")
    if isvc.obj is None and isvc.group != "serving.kserve.io":
        key = None   # KFServing's framework keys (tensorflow, triton…): which one is not known without the object
    path = f"{where}.{key}.storageUri" if key else f"{where}'s storageUri"
    account = _text(spec(pod).get("serviceAccountName")) or _text(spec(pod).get("serviceAccount")) or "default"
    attached, blank = [], []
    for e in init.get("env") or []:
        ref = ((e.get("valueFrom") or {}).get("secretKeyRef") or {})
        if ref.get("name"):
            attached.append((ref["name"], ref.get("key") or e.get("name") or ""))
        elif e.get("name") in ks.S3_SETTINGS and not str(e.get("value") or "").strip() and "valueFrom" not in e:
            blank.append((e["name"], ks.S3_SETTINGS[e["name"]]))
    wanted = set(ks.SCHEMES.get(uri.split("://", 1)[0].lower() if "://" in uri else "", ((),))[0])
    candidates = []
    for c in spec(pod).get("containers") or []:
        for e in c.get("env") or []:
            ref = ((e.get("valueFrom") or {}).get("secretKeyRef") or {})
            pair = (ref.get("name"), ref.get("key"))
            if pair[0] and (pair[1] in wanted or e.get("name") in wanted) and pair not in candidates:
                candidates.append(pair)
    return StorageInit(isvc=isvc, path=path, section=where, uri=uri, account=account,
                       account_set=bool(section.get("serviceAccountName")) if isvc.obj is not None
                       else account != "default",
                       attached=attached, candidates=candidates, blank=blank)
