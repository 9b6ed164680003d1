"""CuPy arrays over glasstorch's GPU storages: what `Tensor._array()` returns on a GPU."""
from __future__ import annotations

from ...core import dtype as dt
from . import runtime

_BITS = {dt.bfloat16: "uint16"}     # dtypes CuPy lacks, kept as their bit patterns


def storage_dtype(dtype: dt.dtype):
    """The CuPy dtype a glasstorch dtype is stored as on a GPU."""
    name = _BITS.get(dtype)
    return dtype.np if name is None else runtime.cupy().dtype(name)


def device_array(buf, shape: tuple, dtype: dt.dtype, offset: int, stride: tuple):
    """A CuPy view of elements `shape`/`stride` from element `offset` of storage `buf`."""
    cp = runtime.cupy()
    np_dtype = storage_dtype(dtype)
    if 0 in shape:
        return cp.empty(shape, np_dtype)
    isz = dtype.itemsize
    return cp.ndarray(shape, np_dtype, buf.data + offset * isz, tuple(s * isz for s in stride))
