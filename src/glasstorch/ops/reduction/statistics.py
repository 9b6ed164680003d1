"""Statistics over samples: covariance, correlation, quantiles, multi-dimensional histograms.

cov, corrcoef and the quantiles are composites over sort/gather/lerp and matrix products, as
PyTorch's are, so their gradients come from those ops; histogramdd counts in NumPy
(backends/cpu/sorting.py), on the host for a GPU's tensors too (its results are copied back).
"""
from __future__ import annotations


import numpy as np

from ... import return_types
from ...core import dtype as dt
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from ..pointwise.elementwise import complex_
from ...backends.cpu.sorting import histogramdd_counts
from ..registry import composite, export, into_out, require_tensor, warn_user


# ---- cov, corrcoef --------------------------------------------------------------------------

def _check_weights(kind, w, observations, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got "
                           f"{kind} with {w.dim()} dimensions")
    if integral and w.dtype.category != dt.INT:
        raise RuntimeError(f"cov(): expected {kind} to have integral dtype but got {kind} with "
                           f"{w.dtype.cname} dtype")
    if not integral and w.dtype.category != dt.FLOAT:
        raise RuntimeError(f"cov(): expected {kind} to have floating point dtype but got "
                           f"{kind} with {w.dtype.cname} dtype")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {observations}")
    if w.numel() and bool((w < 0).any()):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


@composite(method=True)
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the variables in input's rows (observations in columns), with
    frequency weights, observation weights and `correction` (Bessel's by default)."""
    from ..creation.factories import full
    require_tensor("cov", "input", 1, input)
    if input.dim() > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    observations = input if input.dim() == 2 else input.view(1, -1)
    n = observations.shape[1]
    if fweights is not None:
        _check_weights("fweights", fweights, n, True)
    if aweights is not None:
        _check_weights("aweights", aweights, n, False)
    w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    w_sum = full((), n, dtype=dt.int64, device=input.device) if w is None else w.sum()
    avg = (observations if w is None else observations * w).sum(1) / w_sum
    if w is not None and correction != 0:
        norm = w_sum - (correction if aweights is None
                        else correction * (w * aweights).sum() / w_sum)
    else:
        norm = w_sum - correction
    if bool(norm <= 0):
        warn_user("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                  "than the number of observations.")
        norm = norm * 0
    centred = observations - avg.unsqueeze(1)
    weighted = centred if w is None else centred * w
    return (centred.mm(weighted.t().conj()) / norm).squeeze()


@composite(method=True)
def corrcoef(input):
    """Pearson's correlation coefficients of the variables in input's rows, clipped to
    [-1, 1] (each part of a complex value)."""
    require_tensor("corrcoef", "input", 1, input)
    if input.dim() > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    stddev = (d.real if d.is_complex() else d).sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c.is_complex():
        return complex_.function(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


# ---- quantile, nanquantile ------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    """Both ops' errors say quantile(), as torch's do."""
    fname = "quantile"
    from ..creation.factories import full
    require_tensor(fname, "input", 1, input)
    if input.numel() == 0:
        raise RuntimeError(f"{fname}() input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"{fname}() q must be a scalar or 1D tensor")
    elif not 0 <= q <= 1:
        raise RuntimeError(f"{fname}() q must be in the range [0, 1] but got {q}")
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{fname}() input tensor must be either float or double dtype")
    if not isinstance(q, Tensor):
        q = full((), q, dtype=input.dtype, device=input.device)
    elif q.dtype is not input.dtype:
        raise RuntimeError(f"{fname}() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{fname}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
        raise RuntimeError(f"{fname}() q values must be in the range [0, 1]")

    # The output shape without q's dim; the samples sorted along a last dim.
    if dim is None:
        out_shape = [1] * input.dim() if keepdim else []
        ordered = input.flatten().sort()[0]
    else:
        d = wrap_dim(dim, input.dim())
        out_shape = list(input.shape)
        if keepdim and input.dim():
            out_shape[d] = 1
        elif input.dim():
            del out_shape[d]
        if input.dim() == 0 or d == input.dim() - 1:
            ordered = input.sort()[0]
        else:
            ordered = input.unsqueeze(-1).transpose(d, -1).sort()[0]
    ordered = ordered.reshape(out_shape + [ordered.shape[-1] if ordered.dim() else 1])

    last = ordered.shape[-1] - 1
    nans = ordered.isnan()
    if ignore_nan:
        ranks = q * (nans.logical_not().sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        scaled = q * last
        has_nan = nans.any(-1, keepdim=True)
        ranks = scaled.masked_fill(has_nan, last)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.to(dt.int64)
    values = ordered.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = ranks.new_full(ranks.shape, 0.5) if interpolation == "midpoint" \
            else ranks - below
        values = values.lerp(ordered.gather(-1, ranks.ceil().to(dt.int64)), weights)
    if q.dim() == 0:
        return values.squeeze(-1)
    return values.unsqueeze(0).transpose(0, -1).squeeze(-1)


@composite(method=True)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of input (flattened, or along `dim`), interpolating between the
    two nearest sorted samples; a nan among the samples gives nan. A 1-D q adds a first
    dim."""
    return into_out(out, _quantile(input, q, dim, keepdim, interpolation, False))


@composite(method=True)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring nan samples (nan where every sample is nan)."""
    return into_out(out, _quantile(input, q, dim, keepdim, interpolation, True))


# ---- histogramdd ----------------------------------------------------------------------------

_HDD = "torch.histogramdd: "


def _histogramdd_edges(points: np.ndarray, bins, range, d: dt.dtype) -> list:
    """Per dimension, the bin edges: the given tensors' values, or `bins` equal bins over
    the range (the data's range by default, widened by 0.5 each way when empty)."""
    from ...backends.cpu.ranges import linspace_values
    n = points.shape[1]
    if isinstance(bins, Tensor):
        bins = [bins]
    counts = [bins] * n if isinstance(bins, int) else list(bins)
    if len(counts) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None and len(range) != 2 * n:
        raise RuntimeError(f"{_HDD}for a {n}-dimensional histogram range should have {2 * n} "
                           f"elements, but got {len(range)}")
    edges = []
    for i, b in enumerate(counts):
        if isinstance(b, Tensor):
            if b.dim() != 1:
                raise RuntimeError(f"{_HDD}bins tensor should have one dimension, but got "
                                   f"{b.dim()} dimensions in the bins tensor for dimension {i}")
            if b.dtype is not d:
                raise RuntimeError(f"{_HDD}input tensor and bins tensors should have the same "
                                   f"dtype, but got input with dtype {d.cname.lower()} and bins "
                                   f"for dimension {i} with dtype {b.dtype.cname.lower()}")
            if b.numel() < 2:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got "
                                   f"{b.numel() - 1} for dimension {i}")
            edges.append(b.detach().cpu()._array())
            continue
        if b < 0:
            raise RuntimeError("number of steps must be non-negative")
        if b == 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {i}")
        if range is not None:
            lo, hi = float(range[2 * i]), float(range[2 * i + 1])
            if lo > hi:
                raise RuntimeError(f"{_HDD}min should not exceed max, but got min {lo:g} max "
                                   f"{hi:g} for dimension {i}")
        elif points.shape[0]:
            lo, hi = float(points[:, i].min()), float(points[:, i].max())
        else:
            lo, hi = 0.0, 1.0
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"{_HDD}dimension {i}'s range [{lo:g}, {hi:g}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        lo, hi = (float(v) for v in np.array([lo, hi], dtype=d.np))
        edges.append(np.asarray(linspace_values(lo, hi, b + 1, d), dtype=d.np))
    return edges


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """return_types.histogramdd(hist, bin_edges): the counts (or weight sums; a density with
    density=True) of the points in input's last dim over a grid of bins, each dim's edges
    given as a tensor or made as `bins` equal bins over `range`. Not differentiable."""
    from ..creation.factories import tensor
    require_tensor("histogramdd", "input", 1, input)
    if input.dtype not in (dt.float32, dt.float64):
        raise NotImplementedError(f'"histogramdd" not implemented for \'{input.dtype.cname}\'')
    if input.dim() < 2:
        raise RuntimeError(f"{_HDD}input tensor should have at least 2 dimensions")
    if weight is not None:
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"{_HDD}if weight tensor is provided, input tensor and weight "
                               "tensor should have the same dtype, but got "
                               f"input({input.dtype.cname.lower()}), and "
                               f"weight({weight.dtype.cname.lower()})")
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"{_HDD}if weight tensor is provided it should have the same "
                               "shape as the input tensor excluding its innermost dimension, "
                               f"but got input with shape {list(input.shape)} and weight with "
                               f"shape {list(weight.shape)}")
    points = input.detach().cpu()._array().reshape(-1, input.shape[-1])
    edges = _histogramdd_edges(points, bins, range, input.dtype)
    w = None if weight is None else weight.detach().cpu()._array().reshape(-1)
    hist = histogramdd_counts(points, edges, w, density)
    device = input.device
    return return_types.histogramdd((
        tensor(hist.astype(input.dtype.np), device=device),
        tuple(tensor(e, device=device) for e in edges)))


export("histogramdd", histogramdd)
