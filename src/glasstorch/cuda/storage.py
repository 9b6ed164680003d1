"""torch.cuda.FloatStorage and the other legacy typed storages on the GPU: calling one makes
a TypedStorage on the current GPU, and isinstance tells a GPU storage of that dtype."""
from __future__ import annotations

from .._tensor_classes import STORAGE_TYPES, TypedStorage


class _CudaStorageType(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype and obj.is_cuda

    def __call__(cls, *args, device=None, **kwargs):
        return TypedStorage(*args, dtype=cls.dtype, device=device or "cuda", **kwargs)


CUDA_STORAGE_TYPES = {
    d: _CudaStorageType(cpu_type.__name__, (), {"dtype": d, "__module__": "torch.cuda"})
    for d, cpu_type in STORAGE_TYPES.items()}


def names() -> dict:
    return {cls.__name__: cls for cls in CUDA_STORAGE_TYPES.values()}
