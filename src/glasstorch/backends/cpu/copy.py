"""Copying on the CPU: the kernels of copy_ and fill_ (with the checks their CUDA and Meta
kernels share), the cast-on-assign every kernel writes its result with, and the strides an
output gets under a memory format."""
from __future__ import annotations

import warnings

import numpy as np

from ...core.shape import (channels_last_strides, contiguous_strides, expand_strides,
                           has_internal_overlap, is_non_overlapping_and_dense, iterator_strides)
from ...core.tensor import (Tensor, channels_last, channels_last_3d, contiguous_format,
                            preserve_format)


def assign_array(dst: np.ndarray, src) -> None:
    """dst[...] = src with PyTorch's casting (complex to real drops the imaginary part;
    NumPy's cast warnings are silenced for glasstorch's modules in backends/cpu)."""
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


def check_copy(self, src):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    expand_strides(src._shape, src._stride, self._shape)   # raises if not broadcastable
    if has_internal_overlap(self._shape, self._stride) and self.numel() > 1:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a"
            " single memory location. Please clone() the tensor before performing the "
            "operation.")
    if src.is_complex() and not self.is_complex():
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=4)


def copy_cpu(self, src, non_blocking=False):
    check_copy(self, src)
    if src.device.type != "cpu":
        return copy_across(self, src, non_blocking)
    assign_array(self._array(), src._array())
    return self


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


def fill_cpu(self, value):
    assign_array(self._array(), np.asarray(scalar_value(value)))
    return self
