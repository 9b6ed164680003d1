"""Copying on the CPU: the kernels of copy_ and fill_ (with the checks their CUDA and Meta
kernels share), the cast-on-assign every kernel writes its result with, and the strides an
output gets under a memory format."""
from __future__ import annotations

import warnings

import numpy as np

from ...core import dtype as dt
from ...core.shape import (broadcast_shapes2, channels_last_strides, check_no_partial_overlap,
                           contiguous_strides, has_internal_overlap,
                           is_non_overlapping_and_dense, iterator_strides)
from ...core.tensor import (Tensor, channels_last, channels_last_3d, contiguous_format,
                            preserve_format)
from . import casts


def assign_array(dst: np.ndarray, src) -> None:
    """dst[...] = src with PyTorch's casting (complex to real drops the imaginary part;
    NumPy's cast warnings are silenced for glasstorch's modules in backends/cpu; float8 and
    complex32 convert in casts.py)."""
    if dst.dtype in casts.SPECIAL or getattr(src, "dtype", None) in casts.SPECIAL:
        casts.cast_into(dst, src)
        return
    np.copyto(dst, src, casting="unsafe")


def strides_for(t: Tensor, memory_format) -> tuple:
    """Output strides for clone/empty_like under a memory format (preserve keeps layout)."""
    shape = t._shape
    if memory_format is preserve_format:
        # dense: the very same strides; otherwise dense ones in the input's dimension order
        stride = t._stride
        if stride == contiguous_strides(shape) or is_non_overlapping_and_dense(shape, stride):
            return stride
        return iterator_strides(shape, ((shape, stride),))
    if memory_format is contiguous_format:
        return contiguous_strides(shape)
    if memory_format is channels_last or memory_format is channels_last_3d:
        return channels_last_strides(shape)
    raise RuntimeError(f"unsupported memory format {memory_format}")


def internal_overlap_error() -> RuntimeError:
    """TensorIterator's refusal to write a tensor whose elements share memory (expanded)."""
    return RuntimeError(
        "unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location. Please clone() the tensor before performing the operation.")


def _same_data(self, src) -> bool:
    """src is another view of exactly self's elements (a permute of no dims, a
    view(shape) of the same shape): PyTorch's copy_ checks this before any overlap."""
    return src._storage is self._storage and src._offset == self._offset and \
        src._stride == self._stride and src._shape == self._shape and \
        src.dtype is self.dtype and src.is_conj() == self.is_conj() and \
        src.is_neg() == self.is_neg()


def check_copy(self, src):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    if src._shape != self._shape:          # TensorIterator's checks, as PyTorch's copy_
        shape = broadcast_shapes2(self._shape, src._shape)
        if shape != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
    if src is self or _same_data(self, src):   # PyTorch's copy_ returns at once: nothing
        return                                  # to write (nor an overlap to refuse)
    if has_internal_overlap(self._shape, self._stride) and self.numel() > 1:
        raise internal_overlap_error()
    if src._storage is self._storage:
        check_no_partial_overlap(self, (src,))
    if self.dtype.family is not None or src.dtype.family is not None:
        casts.check_conversion(self.dtype, src.dtype)
    if src.is_complex() and not self.is_complex():
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=4)


def copy_cpu(self, src, non_blocking=False):
    check_copy(self, src)
    if src.device.type != "cpu":
        return copy_across(self, src, non_blocking)
    copy_values(self, src)
    return self


def copy_values(dst: Tensor, src: Tensor) -> None:
    """dst's elements = src's, converted as c10 converts: bfloat16 into an integer type
    through float32 (NumPy's own cast turns NaN, inf and negatives into unsigned types to 0)."""
    values = src._array()
    if src.dtype is dt.bfloat16 and dst.dtype.category == dt.INT:
        values = values.astype(np.float32)
    assign_array(dst._array(), values)


def copy_across(self, src, non_blocking):
    """Copies with a GPU on either side (backends/cuda/copy.py)."""
    if src.device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    from ...backends.cuda.copy import copy_between
    return copy_between(self, src, non_blocking)


def check_fill_value(value) -> None:
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                           f"with {value.dim()} dimensions.")


def scalar_value(value):
    """A Python number from a number or a 0-dim tensor."""
    check_fill_value(value)
    return value.item() if isinstance(value, Tensor) else value


# c10's names of the types a fill value is converted to, and the ranges its checked
# conversion accepts (unsigned types take negative values, which wrap; 16-bit floats are
# converted through double, unchecked).
_FILL_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                    "int64": "int64_t", "float16": "double", "bfloat16": "double",
                    "float32": "float", "float64": "double",
                    "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
                    "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
                    **{d.name: f"c10::{d.cname}" for d in dt.FLOAT8_DTYPES}}


def _fill_range(dtype):
    if dtype.category == 1:                                            # integers
        info = np.iinfo(dtype.np)
        return (-int(info.max) if info.min == 0 else int(info.min)), int(info.max)
    if dtype.name in ("float32", "complex64"):
        big = float(np.finfo(np.float32).max)
        return -big, big
    if dtype.family == "float8":
        info = dt.finfo(dtype)
        return info.min, info.max
    return None


def check_fill_fits(self: Tensor, value) -> None:
    """A number written by fill_ must convert to self's dtype as c10 converts it: no
    imaginary part for a real (non-bool) tensor, and within the type's range."""
    if isinstance(value, Tensor) or value.__class__ is int and value == 0:
        return                # zero_ (float8_e8m0fnu, which has no zero, takes zero bytes)
    type_name = _FILL_TYPE_NAMES.get(self.dtype.name)                # None for bool
    if type_name is None:
        return
    real = value
    if isinstance(value, complex):
        if value.imag != 0 and self.dtype.category != 3:             # not complex
            raise RuntimeError(f"value cannot be converted to type {type_name} without "
                               "overflow")
        real = value.real
    bounds = _fill_range(self.dtype)
    if bounds is not None and self.dtype.category == 1 and isinstance(real, float):
        bounds = (int(np.iinfo(self.dtype.np).min), bounds[1])     # a float does not wrap
    floating = self.dtype.category >= 2                 # take inf and nan unchecked
    if bounds is not None and not (floating and (real != real or abs(real) == float("inf"))) \
            and not bounds[0] <= real <= bounds[1]:
        raise RuntimeError(f"value cannot be converted to type {type_name} without overflow")


def fill_cpu(self, value):
    check_fill_fits(self, value)
    assign_array(self._array(), np.asarray(scalar_value(value)))
    return self
