"""`torch.utils.dlpack`: tensors shared with other array libraries through DLPack.

`from_dlpack(x)` takes any object with `__dlpack__` (a NumPy array, a CuPy array, a PyTorch
tensor, a glasstorch tensor) or a bare capsule, and returns a Tensor over the same memory;
`to_dlpack(t)` is `t.__dlpack__()`, a legacy capsule. The capsule is read by NumPy's (CPU) or
CuPy's (CUDA) own consumer, whose array keeps the producer's memory alive; the Tensor then
wraps that array's memory as `from_numpy` does. See core/dlpack.py for what is done by hand.
"""
from __future__ import annotations

import numpy as np

from ..core import dlpack as _capsules
from ..core import dtype as dt
from ..core.device import device as Device
from ..core.dlpack import DLDeviceType
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor
from ..ops.creation.factories import from_numpy

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]

_INVALID = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
            "consumed only once, so you might have already constructed a tensor from it once.")
_ON_CPU = (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost, DLDeviceType.kDLCUDAManaged)


def to_dlpack(tensor: Tensor):
    """A legacy "dltensor" capsule over `tensor`'s memory, consumable once."""
    return tensor.__dlpack__()


class _Capsule:
    """Hands an already made capsule to NumPy's or CuPy's consumer, which want a producer
    object (`__dlpack__`, `__dlpack_device__`)."""

    def __init__(self, capsule, device: tuple):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def _capsule_from(ext_tensor, copy):
    """(capsule, device) from a producer object or a bare capsule."""
    if _capsules.capsule_name(ext_tensor) is not None:
        capsule = ext_tensor
    elif hasattr(ext_tensor, "__dlpack__"):
        kind, index = ext_tensor.__dlpack_device__()
        stream = _consumer_stream(index) if kind == DLDeviceType.kDLCUDA else None
        kwargs = {"stream": stream, "max_version": (1, 0)}
        if copy is not None:
            kwargs["copy"] = copy
        try:
            capsule = ext_tensor.__dlpack__(**kwargs)
        except TypeError:              # a producer older than DLPack 1.0's keywords
            capsule = ext_tensor.__dlpack__(stream=stream)
    else:
        raise RuntimeError(_INVALID)
    if _capsules.capsule_name(capsule) not in (_capsules.LEGACY, _capsules.VERSIONED):
        raise RuntimeError(_INVALID)
    return capsule, _capsules.device_of(capsule)


def _consumer_stream(index: int) -> int:
    """The stream this side will use the memory on, in DLPack's terms: the current CUDA
    stream's pointer, 1 for the legacy default stream. The producer orders its pending
    work before it."""
    from ..cuda.streams import current_stream
    return current_stream(index).cuda_stream or 1


def from_dlpack(ext_tensor, *, device=None, copy: bool | None = None) -> Tensor:
    """A Tensor sharing memory with `ext_tensor` (an object with `__dlpack__`, or a capsule
    from `to_dlpack`): writes through either are seen by both. `device` moves it (a copy),
    `copy=True` always copies."""
    capsule, (kind, index) = _capsule_from(ext_tensor, copy)
    code, bits, lanes = _capsules.dtype_of(capsule)
    bfloat16 = code == _capsules.KDL_BFLOAT and bits == 16 and lanes == 1
    if bfloat16:                       # NumPy and CuPy read it as uint16 bit patterns
        _capsules.relabel(capsule, _capsules.KDL_UINT)
    producer = _Capsule(capsule, (kind, index))
    if kind in _ON_CPU:
        array = np.from_dlpack(producer)
        tensor = from_numpy(array.view(dt.bfloat16.np) if bfloat16 else array)
    elif kind == DLDeviceType.kDLCUDA:
        tensor = _from_cupy(producer, dt.bfloat16 if bfloat16 else None)
    else:
        raise BufferError(f"from_dlpack: unsupported device type {DLDeviceType(kind)!r}")
    if device is not None and Device(device) != tensor.device:
        return tensor.to(device)
    return tensor.clone() if copy else tensor


def _from_cupy(producer, dtype) -> Tensor:
    """A CUDA Tensor over a CuPy array's memory (CuPy consumed the capsule)."""
    import cupy
    array = cupy.from_dlpack(producer)
    dtype = dtype or dt.from_numpy_dtype(array.dtype)
    isz = array.itemsize
    if any(s < 0 or s % isz for s in array.strides):
        raise BufferError("from_dlpack: negative or unaligned strides are not supported")
    stride = tuple(s // isz for s in array.strides)
    extent = 0 if array.size == 0 else (
        sum((n - 1) * s for n, s in zip(array.shape, stride)) + 1) * isz
    raw = cupy.ndarray((extent,), cupy.uint8, array.data)
    storage = UntypedStorage._wrap(raw, Device("cuda", array.device.id))
    return Tensor._make(storage, 0, array.shape, stride, dtype)
