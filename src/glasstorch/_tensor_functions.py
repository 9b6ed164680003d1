"""Top-level functions PyTorch offers beside its Tensor methods: the in-place forms
(`torch.exp_(x)`, `torch.sigmoid_(x)`, ...), `dist`, `ravel`, `is_nonzero`, `vander`,
`scalar_tensor`, `frombuffer`, the `*_copy` view variants, and the constants `pi`, `e`,
`inf`, `nan`, `newaxis`.

Each is written over the Tensor methods and operators glasstorch already has, so dispatch,
autograd and modes see the same operators as for the method.

    >>> import glasstorch as torch
    >>> x = torch.zeros(2)
    >>> torch.exp_(x) is x, x.tolist()
    (True, [1.0, 1.0])
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .core import dtype as dt
from .core.tensor import Tensor
from .ops.creation.factories import empty, from_numpy, ones, tensor

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

# Tensor methods PyTorch also exposes as torch.<name>(input, ...).
_METHOD_FORMS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_",
    "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_",
    "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_",
    "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_",
    "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "resize_as_",
    "get_device", "is_inference", "is_signed")


def _method_form(name: str):
    def function(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}(input, ...) is input.{name}(...)."
    return function


METHOD_FORMS = {name: _method_form(name) for name in _METHOD_FORMS}


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """The p-norm of input - other (broadcast)."""
    return (input - other).norm(p)


def ravel(input: Tensor) -> Tensor:
    """input flattened to 1-D (a view when the layout allows)."""
    return input.reshape(-1)


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is non-zero."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return tuple(input.shape) == tuple(other.shape)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (a view)."""
    return input.transpose(-2, -1).conj()


def typename(obj) -> str:
    """A tensor's legacy type name ('torch.FloatTensor'), else the object's dotted name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = (getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
                or type(obj).__qualname__)
    if not hasattr(obj, "__qualname__") and not hasattr(obj, "__name__"):
        module = type(obj).__module__
    return f"{module}.{qualname}" if module not in ("", "builtins") else qualname


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """A 0-dim tensor of s in the default floating dtype (unless dtype says otherwise)."""
    if isinstance(s, Tensor):
        raise TypeError("scalar_tensor(): argument 's' (position 1) must be Number, not "
                        "Tensor")
    return tensor(s, dtype=dtype or dt.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0):
    return input.chunk(chunks, dim)


def unsafe_split(input: Tensor, split_size, dim: int = 0):
    return input.split(split_size, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0):
    return input.split(list(split_sizes), dim)


def fill(input: Tensor, value) -> Tensor:
    """A new tensor like input, every element value."""
    return input.clone().fill_(value)


def detach_copy(input: Tensor) -> Tensor:
    return input.detach().clone()


def view_as_real_copy(input: Tensor) -> Tensor:
    from .ops.registry import functions
    return functions["view_as_real"](input).clone()


def view_as_complex_copy(input: Tensor) -> Tensor:
    from .ops.registry import functions
    return functions["view_as_complex"](input).clone()


def vander(x: Tensor, N=None, increasing: bool = False) -> Tensor:
    """Columns x**0 .. x**(N-1) (decreasing powers unless increasing); integer inputs give
    int64, as PyTorch."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    d = dt.promote_types(x.dtype, dt.int64)
    if n == 0:
        return empty((x.shape[0], 0), dtype=d, device=x.device)
    columns = [ones((x.shape[0], 1), dtype=d, device=x.device)]
    if n > 1:
        columns.append(x.to(d).unsqueeze(1).expand(x.shape[0], n - 1))
    from .ops.registry import functions
    result = functions["cat"](columns, 1).cumprod(1)
    return result if increasing else result.flip(1)


def chain_matmul(*matrices, out=None) -> Tensor:
    """Deprecated: the product of the matrices, in the cheapest order (linalg.multi_dot)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    from . import linalg
    if len(matrices) == 1:
        return matrices[0].clone()
    return linalg.multi_dot(list(matrices), out=out)


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor sharing the memory of an object with the buffer protocol (a read-only
    buffer, such as bytes, is copied: NumPy will not write through it)."""
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    nbytes = memoryview(buffer).nbytes
    if offset < 0 or offset >= nbytes and nbytes:
        raise ValueError(f"both buffer length ({nbytes}) and offset ({offset}) must be "
                         f"greater than 0 and less than the buffer length")
    array = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    if not array.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor.", UserWarning,
                      stacklevel=2)
        array = array.copy()
    t = from_numpy(array)
    return t.requires_grad_(True) if requires_grad else t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False) -> Tensor:
    """An uninitialized tensor of `size` whose dims are laid out in memory in the order
    `physical_layout` (outermost first)."""
    size, physical_layout = tuple(size), tuple(physical_layout)
    if sorted(physical_layout) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(physical_layout)}")
    physical = empty([size[d] for d in physical_layout], dtype=dtype, device=device)
    result = physical.permute(*np.argsort(physical_layout).tolist())
    return result.requires_grad_(True) if requires_grad else result


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero(input) padded with fill_value (or truncated) to exactly `size` rows."""
    if not isinstance(size, numbers.Integral) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size]
    pad = empty((size - found.shape[0], input.dim()), dtype=dt.int64, device=input.device)
    from .ops.registry import functions
    return functions["cat"]([found, pad.fill_(fill_value)], 0)


def get_device_module(device=None):
    """The module of a device type: glasstorch.cuda for "cuda", glasstorch.cpu for "cpu"."""
    import importlib
    from .core.device import device as _device
    if device is None:
        kind = "cpu"
    elif isinstance(device, str) and ":" not in device and device in ("cpu", "cuda", "meta"):
        kind = device
    else:
        kind = _device(device).type
    try:
        return importlib.import_module(f"glasstorch.{kind}")
    except ImportError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module "
                           f"registered as 'torch.{kind}'.") from None


def sum_to_size(self: Tensor, *size) -> Tensor:
    """Sum self down to `size` (which must expand to self's shape): the reduction that
    undoes a broadcast."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s not in (1, d) for s, d in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(shape)}}}.")
    if not size:                    # a 0-d target: always a full sum, promoting as sum does
        return self.sum()
    result = self.sum(tuple(range(lead))) if lead else self
    dims = tuple(i for i, (s, d) in enumerate(zip(size, shape[lead:])) if s == 1 and d != 1)
    return result.sum(dims, keepdim=True) if dims else result


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Write fill_value on the main diagonal in place (all dims equal beyond 2-D; a tall
    matrix's diagonal restarts every columns + 1 rows with wrap)."""
    n = self.dim()
    if n < 2:
        raise RuntimeError("dimensions must larger than 1")
    if n > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    rows, cols = self.shape[0], self.shape[1]
    if n == 2 and wrap and rows > cols + 1:
        flat = np.arange(0, rows * cols, cols + 1)
        index = [tensor(flat // cols), tensor(flat % cols)]
    else:
        index = [tensor(np.arange(min(self.shape)))] * n
    from .ops.registry import functions
    return functions["index_put_"](self, index, tensor(fill_value, dtype=self.dtype))


# Tensor methods for the functions above (PyTorch has both forms).
_METHODS = {"ravel": ravel, "adjoint": adjoint, "is_nonzero": is_nonzero, "dist": dist,
            "sum_to_size": sum_to_size,
            "fill_diagonal_": fill_diagonal_}
for _name, _fn in _METHODS.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)


def _broadcast_to_method(self: Tensor, size) -> Tensor:
    return self.expand(size)


if not hasattr(Tensor, "broadcast_to"):
    Tensor.broadcast_to = _broadcast_to_method


def exported_names() -> dict:
    names = dict(METHOD_FORMS)
    names.update({f.__name__: f for f in (
        dist, ravel, is_nonzero, is_same_size, adjoint, typename,
        scalar_tensor, unsafe_chunk, unsafe_split, unsafe_split_with_sizes, fill, detach_copy,
        view_as_real_copy, view_as_complex_copy, vander, chain_matmul, frombuffer,
        empty_permuted, nonzero_static, get_device_module)})
    names.update(pi=pi, e=e, inf=inf, nan=nan, newaxis=newaxis)
    return names
