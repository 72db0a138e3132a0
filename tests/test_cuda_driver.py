"""The CUDA <-> driver table and the image-tag / GFD-label readers behind cuda-driver-too-old."""
import pytest

from kubectl_gpudoctor.data import cuda_driver as cd


@pytest.mark.parametrize("image,cuda", [
    ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", (12, 4)),
    ("nvcr.io/nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04", (11, 8)),
    ("docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", (12, 1)),
    ("ghcr.io/acme/embedder:1.0-cu118", (11, 8)),
    ("registry.local:5000/team/train:v2-cu124-py311", (12, 4)),
    ("rapidsai/base:24.10-cuda12.5-py3.12", (12, 5)),
    ("rapidsai/base:26.08-cuda13-py3.13", (13, None)),
    ("nvcr.io/nvidia/pytorch:24.05-py3", (12, 4)),
    ("nvcr.io/nvidia/tritonserver:24.08-trtllm-python-py3", (12, None)),
    ("nvcr.io/nvidia/pytorch:22.12-py3", (11, None)),
    ("nvcr.io/nvidia/pytorch:25.08-py3", (13, None)),
])
def test_image_cuda(image, cuda):
    assert cd.image_cuda(image)[0] == cuda


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.6.3", "python:3.11-slim", "registry/x@sha256:" + "a" * 64,
                                   "localhost:5000/cuda", "nvcr.io/nvidia/pytorch:19.10-py3", "ghcr.io/acme/cuda-tools:latest"])
def test_image_without_a_cuda_version(image):
    assert cd.image_cuda(image) is None


@pytest.mark.parametrize("cuda,driver,verdict", [
    ((12, 4), "550.54.14", "ok"),
    ((12, 4), "535.183.06", "minor-compat"),     # CUDA 12.x minor-version compatibility from R525
    ((12, 4), "470.256.02", "too-old"),
    ((13, 0), "575.57.08", "too-old"),           # CUDA 13.x needs R580
    ((13, None), "580.65.06", "ok"),
    ((11, 8), "450.80.02", "minor-compat"),      # 11.x compatibility needs 450.80.02 (release notes footnote)
    ((11, 8), "450.51.06", "too-old"),
    ((10, 2), "418.39", "too-old"),              # no minor-version compatibility before CUDA 11
])
def test_compare(cuda, driver, verdict):
    assert cd.compare(cuda, cd.parse_version(driver)) == verdict


def test_driver_max_cuda_and_formatting():
    assert cd.driver_max_cuda((535, 129, 3)) == (12, 2)
    assert cd.driver_max_cuda((580, 126, 9)) == (13, 0)
    assert cd.cuda_from_driver_api("11040") == (11, 4)
    assert cd.fmt(cd.driver_floor((11, 8))) == "450.80.02"


def test_gfd_labels_new_and_deprecated():
    new = {"nvidia.com/cuda.driver-version.full": "470.256.02", "nvidia.com/cuda.runtime-version.major": "11",
           "nvidia.com/cuda.runtime-version.minor": "4"}
    old = {"nvidia.com/cuda.driver.major": "470", "nvidia.com/cuda.driver.minor": "256", "nvidia.com/cuda.driver.rev": "02",
           "nvidia.com/cuda.runtime.major": "11", "nvidia.com/cuda.runtime.minor": "4"}
    for labels in (new, old):
        assert cd.node_driver(labels) == (470, 256, 2)
        assert cd.node_driver_text(labels) == "470.256.02"
        assert cd.node_cuda(labels) == (11, 4)
    assert cd.driver_major_label(old) == "nvidia.com/cuda.driver.major"
    assert cd.node_driver({}) is None and cd.node_cuda({}) is None


def test_major_only_release_is_judged_by_the_majors_oldest_driver():
    # An NGC tag (tritonserver:20.07) gives CUDA 11.x without the minor: 11.0 runs on its GA driver 450.36.06, below
    # the 11.x family floor 450.80.02, so R450.57 is not too old (triton-inference-server/server#1931).
    assert cd.fmt(cd.driver_floor((11, None))) == "450.36.06"
    assert cd.compare((11, None), (450, 57)) != "too-old"
    assert cd.compare((11, 8), (450, 57)) == "too-old"
    assert cd.compare((12, None), (470, 82, 1)) == "too-old"
    assert cd.fmt(cd.driver_floor((13, None))) == "580"
