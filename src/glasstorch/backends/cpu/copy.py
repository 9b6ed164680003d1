"""Array-level copying for the CPU kernels: the cast-on-assign every kernel writes its result
with, and the strides an output gets under a memory format."""
from __future__ import annotations

import numpy as np

from ...core.shape import (channels_last_strides, contiguous_strides, is_non_overlapping_and_dense,
                           iterator_strides)
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
