"""CPU kernels for indexing: index_select, take, masked_fill, masked_select, nonzero, and the
array helpers that indexing and scatter kernels share (add_at, the scalar-fits checks, the
overlap check). NumPy code that also runs on CuPy arrays."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...core import dtype as dt
from ...core.shape import broadcast_shapes2, is_non_overlapping_and_dense, wrap_dim
from ...core.tensor import Tensor
from ..arrays import module_of
from .copy import assign_array


# C++ names PyTorch prints: c10's checked_convert and caffe2's TypeMeta.
_CONVERT_NAMES = {dt.uint8: "uint8_t", dt.int8: "int8_t", dt.int16: "int16_t", dt.int32: "int",
                  dt.int64: "int64_t", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16",
                  dt.float32: "float", dt.float64: "double", dt.complex64: "c10::complex<float>",
                  dt.complex128: "c10::complex<double>", dt.bool: "bool"}


def _int_limits(d):
    info = np.iinfo(d.np)
    # (lowest int, lowest float, highest): unsigned types take negative ints down to -max
    return (-int(info.max) if info.min == 0 else int(info.min)), int(info.min), int(info.max)


_INT_LIMITS = {d: _int_limits(d) for d in (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)}

_FLOAT_MAX = {d: float(np.finfo(d.to_real().np).max)          # float16/bfloat16 just round
              for d in (dt.float32, dt.float64, dt.complex64, dt.complex128)}


def check_scalar_fits(value, dtype) -> None:
    """PyTorch's overflow check when a Python scalar is stored into a tensor of `dtype`."""
    if dtype is dt.bool or isinstance(value, (bool, np.bool_)):
        return
    if value.__class__ is int and not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    ok = True
    if isinstance(value, (complex, np.complexfloating)):
        if dtype.category != dt.COMPLEX:
            ok, value = value.imag == 0, value.real
        else:
            value = max(abs(value.real), abs(value.imag))
    limits = _INT_LIMITS.get(dtype)
    if limits is not None:
        if isinstance(value, (int, np.integer)):
            ok = ok and limits[0] <= value <= limits[2]
        else:
            ok = ok and math.isfinite(value) and limits[1] <= value <= limits[2]
    else:
        limit = _FLOAT_MAX.get(dtype)
        ok = ok and (limit is None or not math.isfinite(value) or abs(value) <= limit)
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {_CONVERT_NAMES[dtype]} without "
                           "overflow")


def _scalar(value):
    return value.item() if isinstance(value, (Tensor, np.generic)) else value


def copyto_where(dst: np.ndarray, value, where) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.copyto(dst, np.asarray(value).astype(dst.dtype), where=where)


def index_data(t: Tensor, self: Tensor):
    """The elements of `t`, an index (or value) for `self`, as an array beside self's: index
    tensors may be on the CPU whatever self's device (as in PyTorch), and a CPU (or meta)
    self reads a GPU index on the host."""
    kind = t._storage.device.type
    if kind == "cpu":
        return t._array() if self._storage.device.type != "cuda" else t.to(self.device)._array()
    return t._array() if kind == self._storage.device.type else t.cpu()._array()


# CuPy's scatter-add (`add.at`) takes these dtypes only.
_DEVICE_ADD_AT = frozenset(np.dtype(c) for c in "ilqILQefd")


def add_at(arr, key, values) -> None:
    """np.add.at(arr, key, values): duplicate positions add up. On a CuPy array of a dtype
    CuPy's scatter-add lacks, complex numbers add as two real parts and narrow integers and
    bools add in int64 (wrapping, and saturating to True, as PyTorch's kernels do)."""
    if arr.__class__ is np.ndarray:
        np.add.at(arr, key, values)
        return
    add = module_of(arr).add    # CuPy's own: np.add.at does not defer to CuPy for a tuple key
    if arr.dtype in _DEVICE_ADD_AT:
        add.at(arr, key, values)
    elif arr.dtype.kind == "c":
        values = arr.dtype.type(values) if np.isscalar(values) else values
        add.at(arr.real, key, values.real)
        add.at(arr.imag, key, values.imag)
    else:
        work = arr.astype(np.int64)
        add.at(work, key, values if np.isscalar(values) else values.astype(np.int64))
        assign_array(arr, work != 0 if arr.dtype == np.bool_ else work)


def check_values(self, plan, values):
    shape, target = values._shape, plan.shape
    lead = len(target) - len(shape)
    if lead < 0 or any(s != 1 and s != target[lead + i] for i, s in enumerate(shape)):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(shape)} cannot be "
                           f"broadcast to indexing result of shape {list(target)}")


def _assert_no_overlap(a: Tensor, b: Tensor) -> None:
    """PyTorch's assert_no_overlap: dense tensors whose byte ranges in one storage meet."""
    if a._storage is not b._storage or not a.numel() or not b.numel():
        return
    if not (is_non_overlapping_and_dense(a._shape, a._stride) and
            is_non_overlapping_and_dense(b._shape, b._stride)):
        return      # "too hard" to tell, as in PyTorch
    a_begin, b_begin = a._offset * a.itemsize, b._offset * b.itemsize
    if a_begin < b_begin + b.nbytes and b_begin < a_begin + a.nbytes:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please clone() "
                           "the tensor before performing the operation.")


def index_select_cpu(out, self, dim, index):
    idx = index._array().reshape(-1)
    arr = self._array()
    size = arr.shape[wrap_dim(dim, self.dim())] if arr.ndim else 1
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        if size == 0 and arr.ndim > 1:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        if arr.ndim > 1 and (wrap_dim(dim, self.dim()) == 1 or arr.size == 0):
            # the text of PyTorch's kernel for dim 1 and for empty inputs
            bad = int(idx[(idx < 0) | (idx >= size)][0])
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} "
                               f"axis_dim={size}")
        raise IndexError("index out of range in self")
    if arr.ndim == 0:
        assign_array(out._array(), arr)
    else:
        assign_array(out._array(), np.take(arr, idx, axis=wrap_dim(dim, self.dim())))


def take_cpu(out, self, index):
    idx = index._array()
    n = self.numel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx[(idx < -n) | (idx >= n)].ravel()[0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    assign_array(out._array(), self._array().reshape(-1)[idx])


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def masked_fill_cpu(out, self, mask, value):
    arr, m = out._array(), mask._array()
    if out is not self:
        src = self._array()
        assign_array(arr, src if src.shape == arr.shape else np.broadcast_to(src, arr.shape))
    if arr.dtype in _FLOATS and (value.__class__ is float or value.__class__ is int) and \
            arr.__class__ is m.__class__:
        np.copyto(arr, value, where=m)    # fits (checked before): no cast to silence
    else:
        copyto_where(arr, _scalar(value), np.broadcast_to(m, arr.shape))


def masked_select_cpu(self, mask):
    if mask.dtype is not dt.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes2(mask._shape, self._shape)
    values = np.broadcast_to(self._array(), shape)[np.broadcast_to(index_data(mask, self),
                                                                    shape)]
    out = Tensor._empty(values.shape, self.dtype, self.device)
    assign_array(out._array(), values)
    return out


def nonzero_cpu(self):
    arr = self._array()
    found = np.nonzero(arr) if arr.ndim else \
        ((module_of(arr).zeros(int(arr != 0), np.int64)),)
    n = found[0].size
    ndim = self.dim()
    out = Tensor._empty((n, ndim), dt.int64, self.device, (1, n))   # column-major, as torch
    if ndim:
        assign_array(out._array(), np.stack(found, axis=1))
    return out
