"""An InferenceService's layout, KServe's serving.kserve.io/v1beta1 and KFServing's serving.kubeflow.org/v1alpha2:
which component a pod serves and where that component's model and settings sit."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .objects import labels, spec

if TYPE_CHECKING:
    from .owners import Link


def component(lab: dict) -> str:
    comp = lab.get("component") or lab.get("serving.kserve.io/component") or "predictor"
    return comp if comp in ("predictor", "transformer", "explainer") else "predictor"


# The predictor's model keys of serving.kserve.io/v1beta1 (kserve/kserve pkg/apis/serving/v1beta1/predictor.go):
# the new `model` with a modelFormat, or one of the older per-framework keys.
MODEL_KEYS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml",
              "lightgbm", "paddle")


def model_key(isvc: Optional[dict]) -> str:
    predictor = spec(isvc).get("predictor") or {}
    return next((k for k in MODEL_KEYS if k in predictor), "model")


# KFServing's serving.kubeflow.org/v1alpha2 (kubeflow/kfserving pkg/apis/serving/v1alpha2): spec.default and
# spec.canary are EndpointSpecs, each with its predictor/transformer/explainer; a predictor's framework keys (tensorrt
# before v0.4 renamed it triton) hold storageUri, and serviceAccountName sits inline on the component. KFServing labels
# the pods `endpoint: default|canary` (constants.KServiceEndpointLabel).
V1ALPHA2_MODEL_KEYS = ("tensorflow", "triton", "tensorrt", "onnx", "pytorch", "sklearn", "xgboost", "custom")


def is_v1alpha2(link: Link) -> bool:
    return link.group == "serving.kubeflow.org" and (link.api_version.endswith("/v1alpha2") or "default" in spec(
        link.obj) and "predictor" not in spec(link.obj))


def section(link: Link, pod: dict) -> str:
    """The component's path: `spec.predictor`, or v1alpha2's `spec.default.predictor` (`spec.canary…`)."""
    comp = component(labels(pod))
    if is_v1alpha2(link):
        endpoint = labels(pod).get("endpoint")
        return f"spec.{endpoint if endpoint in ('default', 'canary') else 'default'}.{comp}"
    return f"spec.{comp}"


def as_map(value) -> dict:
    return value if isinstance(value, dict) else {}


def dig(obj: Optional[dict], path: str) -> dict:
    for key in path.split("."):
        obj = as_map((obj or {}).get(key))
    return obj or {}
