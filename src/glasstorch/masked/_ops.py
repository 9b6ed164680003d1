"""torch.masked's functions: reductions and normalizations that ignore masked-out elements.

Each one replaces the masked-out elements by the identity of its operation (0 for a sum,
-inf for amax, ...) and runs the ordinary op, so that gradients flow through `where` to the
masked-in elements only. Where an operation has no identity (mean, var, std, median), a row
with nothing masked in gives nan, as PyTorch's.
"""
from __future__ import annotations

import math

import glasstorch

from .maskedtensor.core import MaskedTensor, is_masked_tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]

# Integer and bool inputs that sum and prod widen to int64 when no dtype is given.
_WIDENED = ("uint8", "bool", "int8", "int16", "int32")


def _reduction_identity(op_name: str, input, *args):
    """The value that leaves `op_name`'s result unchanged (a 0-dim tensor of input's dtype),
    or None where the operation has none (mean, var, std)."""
    dtype, device = input.dtype, input.device

    def const(value, d=dtype):
        return glasstorch.tensor(value, dtype=d, device=device)

    floating = dtype.is_floating_point
    if op_name in ("sum", "cumsum"):
        return const(0)
    if op_name in ("prod", "cumprod"):
        return const(1)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating:
            return const(-math.inf)
        if dtype.is_complex and op_name == "logsumexp":
            return const(complex(-math.inf, 0))
        if dtype is not glasstorch.bool and not dtype.is_complex:
            return const(glasstorch.iinfo(dtype).min)
    elif op_name in ("amin", "argmin"):
        if floating:
            return const(math.inf)
        if dtype is not glasstorch.bool and not dtype.is_complex:
            return const(glasstorch.iinfo(dtype).max)
    elif op_name in ("mean", "var", "std"):
        return None
    elif op_name == "norm":
        ord = args[0] if args else 2
        return const(math.inf if ord == -math.inf else 0)
    elif op_name == "median":
        return const(math.nan, dtype if floating else glasstorch.float32)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _canonical_dim(dim, ndim: int) -> tuple:
    """`dim` as a sorted tuple of non-negative dims; None and () mean every dim."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    rank = max(ndim, 1)
    dims = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if not -rank <= d < rank:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                             f"{rank - 1}], but got {d})")
        dims.append(d % rank)
    return tuple(sorted(dims))


def _input_mask(input, *args, **kwargs):
    """The mask broadcast to input's shape, as bool. A mask of more dims than input raises."""
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.dim() > input.dim():
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = glasstorch.broadcast_to(mask, tuple(input.shape))
    return mask.to(dtype=glasstorch.bool)


def _output_mask(op, input, *args, **kwargs):
    """Which output elements have at least one masked-in element behind them."""
    name = op.__name__
    if name in ("softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"):
        return _input_mask(input, *args, **kwargs)
    if name not in ("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm",
                    "var", "std", "logsumexp"):
        raise ValueError(f"_output_mask expected masked operation (got callable "
                         f"{op.__module__}.{name})")
    if name == "norm" and args:
        args = args[1:]
    dim = args[0] if args else kwargs.get("dim")
    mask = _input_mask(input, *args, **kwargs)
    keepdim = bool(kwargs.get("keepdim", False))
    for d in reversed(_canonical_dim(dim, input.dim())):
        mask = mask.any(d, keepdim=keepdim)
    return mask


def _where(mask, input, fill_value):
    return glasstorch.where(mask, input, fill_value)


def _combine_input_and_mask(op, input, mask, *args):
    """input with its masked-out elements replaced by op's identity. A MaskedTensor brings
    its own mask, and its gradient is a MaskedTensor with that mask."""
    def fill(data, mask):
        if mask is None:
            return data
        identity = _reduction_identity(op.__name__, data, *args)
        return _where(_input_mask(data, mask=mask), data, identity)

    class Combine(glasstorch.autograd.Function):
        @staticmethod
        def forward(ctx, data, mask):
            ctx.mask = mask
            return fill(data, mask)

        @staticmethod
        def backward(ctx, grad):
            grad = grad.get_data() if is_masked_tensor(grad) else grad
            return MaskedTensor._from_values(grad, ctx.mask), None

    if is_masked_tensor(input):
        return Combine.apply(input.get_data(), input.get_mask())
    return fill(input, mask)


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dtype
    return glasstorch.int64 if str(input.dtype).split(".")[-1] in _WIDENED else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Sum of the masked-in elements over `dim`; 0 where none is masked in."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.dim())
    return glasstorch.sum(_combine_input_and_mask(sum, input, mask), dims, bool(keepdim),
                          dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Product of the masked-in elements over `dim`; 1 where none is masked in."""
    dtype = _sum_dtype(input, dtype)
    result = _combine_input_and_mask(prod, input, mask).to(dtype=dtype)
    for d in reversed(_canonical_dim(dim, input.dim())):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    """Cumulative sum along `dim` in which masked-out elements count as 0."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return glasstorch.cumsum(_combine_input_and_mask(sum, input, mask), d, dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Cumulative product along `dim` in which masked-out elements count as 1."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return glasstorch.cumprod(_combine_input_and_mask(prod, input, mask), d, dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Largest masked-in element over `dim`; the dtype's lowest value (-inf) where none."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask(amax, input, mask)
    return glasstorch.amax(masked, _canonical_dim(dim, masked.dim()), bool(keepdim)).to(dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Smallest masked-in element over `dim`; the dtype's highest value (inf) where none."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask(amin, input, mask)
    return glasstorch.amin(masked, _canonical_dim(dim, masked.dim()), bool(keepdim)).to(dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the largest masked-in element along `dim` (converted to `dtype`, by default
    input's, as PyTorch's)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask(argmax, input, mask)
    return glasstorch.argmax(masked, dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the smallest masked-in element along `dim` (converted to `dtype`)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask(argmin, input, mask)
    return glasstorch.argmin(masked, dim, bool(keepdim)).to(dtype=dtype)


def _float_dtype_for(name, input, dtype):
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"{name}(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    return dtype


def _count(input, dim, keepdim, mask):
    """How many elements are masked in along `dim`."""
    if mask is None:
        ones = glasstorch.ones(tuple(input.shape), dtype=glasstorch.int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim)
    return _input_mask(input, mask=mask).sum(dim=_canonical_dim(dim, input.dim()),
                                            keepdim=bool(keepdim))


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mean of the masked-in elements; nan where none is masked in."""
    dtype = _float_dtype_for("mean", input, dtype)
    if is_masked_tensor(input):
        input, mask = input.get_data(), input.get_mask()
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, keepdim, mask)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Median of the masked-in elements along one dim; nan where none (an error for
    integer input, which has no nan)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    floating = input.dtype.is_floating_point
    if is_masked_tensor(input):
        input, mask = input.get_data(), input.get_mask()
    if not floating:
        input = input.to(dtype=glasstorch.float32)
    output = glasstorch.nanmedian(_combine_input_and_mask(median, input, mask), d,
                                  keepdim).values
    if floating:
        return output
    if bool(glasstorch.isnan(output).any()):
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return output.to(dtype=dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp)) of the masked-in elements; -inf where none."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.dim())
    masked = _combine_input_and_mask(logsumexp, input, mask)
    return glasstorch.logsumexp(masked, dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)) with each operand's masked-out elements as -inf."""
    dtype = input.dtype if dtype is None else dtype
    a = _combine_input_and_mask(logaddexp, input, input_mask)
    b = _combine_input_and_mask(logaddexp, other, other_mask)
    return glasstorch.logaddexp(a, b).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Vector `ord`-norm of the masked-in elements; 0 where none (inf for ord=-inf)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask(norm, input, mask, ord)
    return glasstorch.linalg.vector_norm(masked, ord, _canonical_dim(dim, input.dim()),
                                         bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction is not None:
        raise RuntimeError("Only one of unbiased and correction may be given")
    if correction is None:
        correction = 1.0 if unbiased is None or unbiased else 0.0
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = glasstorch.float32
    compute = dtype if (dtype.is_floating_point or dtype.is_complex) else glasstorch.float32
    if is_masked_tensor(input):
        input, mask = input.get_data(), input.get_mask()
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, dim, True, inmask)
    centred = input - sum(input, dim, keepdim=True, dtype=dtype, mask=inmask) / count
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if correction != 0:
        count = count.to(compute.to_real() if compute.is_complex else compute) - correction
        count = glasstorch.maximum(count, count.new_zeros([]))
    output = (total / count).to(dtype=dtype)
    return output.sqrt() if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Variance of the masked-in elements (Bessel's correction by default); nan where too
    few are masked in."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Standard deviation of the masked-in elements; nan where too few are masked in."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def softmax(input, dim, *, dtype=None, mask=None):
    """Softmax along `dim` over the masked-in elements (masked-out ones get 0; a row with
    nothing masked in is nan)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return glasstorch.nn.functional.softmax(_combine_input_and_mask(amax, input, mask), d,
                                            dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax along `dim` over the masked-in elements (masked-out ones get -inf)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return glasstorch.nn.functional.log_softmax(_combine_input_and_mask(amax, input, mask), d,
                                                dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    """Softmin along `dim` over the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return glasstorch.nn.functional.softmin(_combine_input_and_mask(amin, input, mask), d,
                                            dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """input divided by the `ord`-norm of its masked-in elements along `dim` (at least
    `eps`); masked-out elements become 0."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask(sum, input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return glasstorch.divide(masked, glasstorch.maximum(nrm, nrm.new_full([], eps)))
