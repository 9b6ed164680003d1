"""Fractional max pooling (Graham, 2014): max pooling whose window starts follow a
pseudo-random sequence, so the output size need not divide the input size.

Each (batch, channel) plane draws one uniform sample per pooled dim (`_random_samples`, from
`torch.rand` as PyTorch draws them unless given); window i of a dim of size n pooled to m
outputs with kernel k starts at floor((i + u) * a) - floor(u * a), a = (n - k) / (m - 1),
and the last window ends at the input's edge. The maxima are gathered from the input, so
gradients flow to them through gather.
"""
from __future__ import annotations

import numpy as np

from ...core.tensor import Tensor
from ...ops.random.samplers import rand
from ...ops.creation.factories import tensor

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _starts(samples: np.ndarray, n: int, m: int, k: int) -> np.ndarray:
    """Window starts (..., m) for samples (...), in the samples' precision."""
    cd = samples.dtype.type
    starts = np.empty(samples.shape + (m,), np.int64)
    if m > 1:
        alpha = cd(n - k) / cd(m - 1)
        i = np.arange(m - 1, dtype=samples.dtype)
        starts[..., :-1] = ((i + samples[..., None]) * alpha).astype(np.int64) - \
            (samples[..., None] * alpha).astype(np.int64)
    if m > 0:
        starts[..., -1] = n - k
    return starts


def _tuple(value, n: int, name: str) -> tuple:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints")
        return tuple(value)
    return (value,) * n


def _fractional(input: Tensor, kernel_size, output_size, output_ratio, samples, nd: int):
    name = f"fractional_max_pool{nd}d"
    kernel = _tuple(kernel_size, nd, "kernel_size")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         f"output_ratio")
    batched = input.dim() == nd + 2
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    x = input if batched else input.unsqueeze(0)
    spatial = tuple(x.shape[2:])
    if output_size is None:
        ratio = _tuple(output_ratio, nd, "output_ratio")
        output_size = [int(s * r) for s, r in zip(spatial, ratio)]
    out = _tuple(output_size, nd, "output_size")
    for n, m, k in zip(spatial, out, kernel):
        if m + k - 1 > n:
            raise RuntimeError(f"{name}(): pool size {k} too large relative to input size "
                               f"{n} for output size {m}")
    N, C = x.shape[0], x.shape[1]
    if samples is None:
        samples = rand(N, C, nd, dtype=x.dtype, device=x.device)
    u = np.asarray(samples.detach().cpu().numpy()).reshape(N, C, nd)
    # sample j goes to the last spatial dim first (width, then height, then depth)
    starts = [_starts(u[..., nd - 1 - d], spatial[d], out[d], kernel[d]) for d in range(nd)]
    values = np.asarray(x.detach().cpu().numpy())
    grids = []
    for d in range(nd):
        offsets = starts[d][..., None] + np.arange(kernel[d])          # (N, C, m_d, k_d)
        shape = [N, C] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = out[d], kernel[d]
        grids.append(offsets.reshape(shape))
    flat = sum(g * int(np.prod(spatial[d + 1:])) for d, g in enumerate(grids))
    flat = np.broadcast_to(flat, (N, C) + out + kernel).reshape(N, C, *out, -1)
    windows = np.take_along_axis(values.reshape(N, C, -1), flat.reshape(N, C, -1),
                                 axis=2).reshape(flat.shape)
    best = np.argmax(windows, axis=-1)
    indices = np.take_along_axis(flat, best[..., None], axis=-1)[..., 0]
    index = tensor(indices, device=x.device)
    result = x.flatten(2).gather(2, index.flatten(2)).view(N, C, *out)
    if not batched:
        return result.squeeze(0), index.squeeze(0)
    return result, index


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling over the last 2 dims of (N, C, H, W) or (C, H, W) inputs."""
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling over the last 3 dims of (N, C, D, H, W) or (C, D, H, W)."""
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, idx) if return_indices else out
