"""Log signatures of GPU failures (CUDA, NVIDIA driver/toolkit, NCCL, PyTorch, vLLM, TGI, Triton)."""
from .log_signatures import Signature

GPU = ()
