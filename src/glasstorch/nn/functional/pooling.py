"""Pooling: torch.nn.functional's signatures over ops/pooling.py."""
from __future__ import annotations

import math

from ...core.tensor import Tensor
from ...ops.nn import pooling as _p

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _ntuple(v, n: int) -> tuple:
    return (v,) * n if isinstance(v, int) else tuple(v)


def _stride(stride) -> tuple:
    return () if stride is None else stride


# ---- max pooling ------------------------------------------------------------------------

def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """1-d max pooling returning (values, indices)."""
    return _p.max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                      ceil_mode)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """2-d max pooling returning (values, indices)."""
    return _p.max_pool2d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                      ceil_mode)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """3-d max pooling returning (values, indices)."""
    return _p.max_pool3d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                      ceil_mode)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """1-d max pooling over (N, C, L) or (C, L); with return_indices, also the indices."""
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation,
                                       ceil_mode)
    return _p.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """2-d max pooling over (N, C, H, W) or (C, H, W); indices are flat in each plane."""
    out = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """3-d max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    out = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


# ---- average pooling --------------------------------------------------------------------

def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True) -> Tensor:
    """1-d average pooling."""
    return _p.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                         count_include_pad)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:
    """2-d average pooling (divisor_override replaces the window size)."""
    return _p.avg_pool2d(input, kernel_size, _stride(stride), padding, ceil_mode,
                         count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:
    """3-d average pooling (divisor_override replaces the window size)."""
    return _p.avg_pool3d(input, kernel_size, _stride(stride), padding, ceil_mode,
                         count_include_pad, divisor_override)


# ---- adaptive pooling -------------------------------------------------------------------

def _output_size(input: Tensor, output_size, nd: int) -> tuple:
    """None entries keep the input's size along that dim, as F's adaptive pools."""
    sizes = _ntuple(output_size, nd)
    if len(sizes) != nd or None not in sizes:
        return sizes
    return tuple(input.shape[-nd + i] if v is None else v for i, v in enumerate(sizes))


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """1-d adaptive average pooling to `output_size` outputs."""
    return _p.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """2-d adaptive average pooling; None in output_size keeps that input size."""
    return _p.adaptive_avg_pool2d(input, _output_size(input, output_size, 2))


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """3-d adaptive average pooling; None in output_size keeps that input size."""
    return _p.adaptive_avg_pool3d(input, _output_size(input, output_size, 3))


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices=False):
    """1-d adaptive max pooling returning (values, indices)."""
    return _p.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices=False):
    """2-d adaptive max pooling returning (values, indices)."""
    return _p.adaptive_max_pool2d(input, _output_size(input, output_size, 2))


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices=False):
    """3-d adaptive max pooling returning (values, indices)."""
    return _p.adaptive_max_pool3d(input, _output_size(input, output_size, 3))


def adaptive_max_pool1d(input: Tensor, output_size, return_indices=False):
    """1-d adaptive max pooling; with return_indices, also the indices."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input: Tensor, output_size, return_indices=False):
    """2-d adaptive max pooling; with return_indices, also the indices."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool3d(input: Tensor, output_size, return_indices=False):
    """3-d adaptive max pooling; with return_indices, also the indices."""
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


# ---- max unpooling ----------------------------------------------------------------------

def _unpool_output_size(input, kernel_size, stride, padding, output_size) -> tuple:
    nd = len(kernel_size)
    default = [(input.shape[-nd + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(nd)]
    if output_size is None:
        sizes = default
    else:
        sizes = list(output_size)
        if len(sizes) == nd + 2:
            sizes = sizes[2:]
        if len(sizes) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                             f"elements, but it has a length of '{len(sizes)}'")
        for d in range(nd):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < sizes[d] < high:
                raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be '
                                 f"between {low} and {high})")
    for d, v in enumerate(sizes):
        if v < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={v}")
    return tuple(sizes)


def _unpool_args(input, kernel_size, stride, padding, output_size, nd):
    kernel_size = _ntuple(kernel_size, nd)
    stride = kernel_size if stride is None else _ntuple(stride, nd)
    padding = _ntuple(padding, nd)
    return stride, padding, _unpool_output_size(input, kernel_size, stride, padding,
                                                output_size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool1d: values placed at their indices, zeros elsewhere."""
    _, _, size = _unpool_args(input, kernel_size, stride, padding, output_size, 1)
    return _p.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1),
                           size + (1,)).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool2d: values placed at their indices, zeros elsewhere."""
    _, _, size = _unpool_args(input, kernel_size, stride, padding, output_size, 2)
    return _p.max_unpool2d(input, indices, size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool3d: values placed at their indices, zeros elsewhere."""
    stride, padding, size = _unpool_args(input, kernel_size, stride, padding, output_size, 3)
    return _p.max_unpool3d(input, indices, size, stride, padding)


# ---- power-average pooling --------------------------------------------------------------

def _lp_pool(nd, pool_max, pool_avg, input, norm_type, kernel_size, stride, ceil_mode):
    if norm_type == math.inf:
        return pool_max(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -pool_max(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = pool_avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sign(out) * |out| keeps PyTorch's zero gradient where a window's mean is 0
    return (out.sign() * out.abs()).mul(math.prod(_ntuple(kernel_size, nd))).pow(
        1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """1-d power-average pooling: (sum of x**p over each window) ** (1/p)."""
    return _lp_pool(1, max_pool1d, avg_pool1d, input, norm_type, kernel_size, stride,
                    ceil_mode)


def lp_pool2d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """2-d power-average pooling: (sum of x**p over each window) ** (1/p)."""
    return _lp_pool(2, max_pool2d, avg_pool2d, input, norm_type, kernel_size, stride,
                    ceil_mode)


def lp_pool3d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """3-d power-average pooling: (sum of x**p over each window) ** (1/p)."""
    return _lp_pool(3, max_pool3d, avg_pool3d, input, norm_type, kernel_size, stride,
                    ceil_mode)
