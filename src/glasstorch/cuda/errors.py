"""CUDA runtime errors as torch.cuda names them: CudaError for a failed runtime call
(check_error raises it for a non-zero status), DeferredCudaCallError for a call queued
before CUDA started that then failed, cudaStatus's codes, and cudart() for the runtime."""
from __future__ import annotations

from ..backends.cuda import runtime

__all__ = ["CudaError", "DeferredCudaCallError", "cudaStatus", "check_error", "cudart"]


class cudaStatus:
    SUCCESS: int = 0
    ERROR_NOT_READY: int = 34


def _describe(code: int) -> str:
    try:
        name = runtime.cupy().cuda.runtime.getErrorString(code)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return f"CUDA error {code}"


class CudaError(RuntimeError):
    def __init__(self, code: int) -> None:
        self.code = code
        super().__init__(f"{_describe(code)} ({code})")


class DeferredCudaCallError(Exception):
    pass


def check_error(res: int) -> None:
    """Raise CudaError for a CUDA runtime status other than success."""
    if res != cudaStatus.SUCCESS:
        raise CudaError(res)


def cudart():
    """The CUDA runtime API (CuPy's binding of it)."""
    runtime.require()
    return runtime.cupy().cuda.runtime
