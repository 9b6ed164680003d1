"""Distances: cdist, pdist and the ops under them; pairwise_distance, cosine_similarity.

`_cdist_forward` and `_pdist_forward` compute p-norm distances directly (in row chunks, so
the (rows1, rows2, columns) differences never get large); `_euclidean_dist` is PyTorch's
matrix-product form of the p=2 distance, which `cdist` uses for large inputs
('use_mm_for_euclid_dist_if_necessary': more than 25 rows on either side) or when asked.
`cdist`, `pdist`, `pairwise_distance` and `cosine_similarity` are composites, as in PyTorch.
The CPU kernels are in backends/cpu/distance.py.
"""
from __future__ import annotations

import math

from ...core.grad_state import grad_disabled
from ...backends.cpu.pointwise import FLOATING
from ...core.shape import Size, broadcast_shapes2
from ...core.promotion import common_dtype
from ..registry import composite, spec, structured
from ...backends.cpu.distance import cdist_forward_cpu, euclidean_dist_cpu, pdist_forward_cpu

_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
          "donot_use_mm_for_euclid_dist": 2}


# ---- checks ----------------------------------------------------------------------------

def check_cdist(x1, x2, p, compute_mode):
    """PyTorch's cdist checks, in its order."""
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError("X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dtype not in FLOATING:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{x.dtype.cname}")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.device != x2.device:
        raise RuntimeError("X1 and X2 must have the same device type. X1: "
                           f"{x1.device.type} X2: {x2.device.type}")
    mode = 0 if compute_mode is None else compute_mode
    if not 0 <= mode <= 2:
        raise RuntimeError(f"possible modes: 0, 1, 2, but was: {mode}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.cname} but found "
                           f"{x2.dtype.cname}")


def _batch_shape(x1, x2) -> tuple:
    return tuple(broadcast_shapes2(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))


def _cdist_meta(x1, x2, p, compute_mode):
    check_cdist(x1, x2, p, compute_mode)
    return spec(_batch_shape(x1, x2) + (x1.shape[-2], x2.shape[-2]), x1.dtype)


def _euclidean_meta(x1, x2):
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.cname} but found "
                           f"{x2.dtype.cname}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError("X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    return spec(_batch_shape(x1, x2) + (x1.shape[-2], x2.shape[-2]), x1.dtype)


def _pdist_meta(self, p=2.0):
    if self.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {self.dim()}D")
    if self.dtype not in FLOATING:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = self.shape[0]
    return spec((n * (n - 1) // 2,), self.dtype)


# ---- ops -------------------------------------------------------------------------------

cdist_forward = structured(
    "_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor", _cdist_meta,
    function=False, method=False, inplace=False,
    doc="p-norm distances between the rows of x1 and x2, batch dimensions broadcast.")
cdist_forward.impl("CPU")(cdist_forward_cpu)


euclidean_dist = structured(
    "_euclidean_dist(Tensor x1, Tensor x2) -> Tensor", _euclidean_meta, method=False,
    inplace=False, out=False,
    doc="Euclidean distances between rows through one matrix product "
        "(|a|^2 - 2 a.b + |b|^2, clamped at 0 before the square root).")
euclidean_dist.impl("CPU")(euclidean_dist_cpu)


pdist_forward = structured(
    "_pdist_forward(Tensor self, float p=2.) -> Tensor", _pdist_meta, function=False,
    method=False, inplace=False,
    doc="Distances between every pair of rows i < j, in row-major order of the pairs.")
pdist_forward.impl("CPU")(pdist_forward_cpu)


@composite()
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each row of x1 (..., R1, M) and each of x2 (..., R2, M).

    For p=2 a matrix product is used when either side has more than 25 rows (or always with
    compute_mode='use_mm_for_euclid_dist'), as in PyTorch: faster, slightly less exact."""
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _MODES[compute_mode]
    check_cdist(x1, x2, p, mode)
    r1, r2 = x1.shape[-2], x2.shape[-2]
    if x1.numel() == 0 or x2.numel() == 0 or not (
            p == 2 and (mode == 1 or (mode is None and (r1 > 25 or r2 > 25)))):
        return cdist_forward.function(x1, x2, p, mode)
    batch = _batch_shape(x1, x2)
    if math.prod(batch) == 1:
        dist = euclidean_dist.function(x1, x2)
    else:
        m = x1.shape[-1]
        dist = euclidean_dist.function(x1.expand(batch + (r1, m)).reshape(-1, r1, m),
                                       x2.expand(batch + (r2, m)).reshape(-1, r2, m))
    return dist.view(Size(batch + (r1, r2)))


@composite()
def pdist(input, p=2):
    """Distances between every pair of rows of a 2-D input (i < j), as a 1-D tensor."""
    _pdist_meta(input, p)
    return pdist_forward.function(input.contiguous(), p)


@composite()
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """p-norm of x1 - x2 + eps over the last dimension (inputs broadcast)."""
    last = max(x1.dim(), x2.dim()) - 1
    return (x1 - x2 + eps).norm(p, last, keepdim)


@composite()
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between x1 and x2 along `dim` (inputs broadcast).

    Each input is divided by its norm (clamped at eps) before the dot product, as in
    PyTorch 2: the result stays in [-1, 1] and large norms lose no precision. The clamp is
    not differentiated (PyTorch applies it under no_grad)."""
    d = common_dtype(x1, x2)
    if d not in FLOATING:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{d.cname}")
    if x1.dtype not in FLOATING:
        x1 = x1.to(d)
    if x2.dtype not in FLOATING:
        x2 = x2.to(d)
    shape = Size(broadcast_shapes2(x1.shape, x2.shape))
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1, n2 = x1.norm(2, dim, True).clone(), x2.norm(2, dim, True).clone()
    with grad_disabled():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)
