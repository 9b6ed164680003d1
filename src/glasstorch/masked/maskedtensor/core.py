"""MaskedTensor: data and a boolean mask of the same shape, as one tensor.

It is a wrapper subclass (`Tensor._make_wrapper_subclass`) whose `__torch_dispatch__` runs
each aten op on the data and carries the mask along: pointwise ops keep the mask, binary
ops need both operands' masks to match, view and joining ops apply to data and mask alike.
Reductions (`mt.sum()`, `torch.amax(mt, 0)`, ...) are caught earlier, in
`__torch_function__`, and run as torch.masked's reductions; the result's mask says which
outputs had any element masked in. Autograd runs above the dispatch handler, so gradients
are MaskedTensors too.
"""
from __future__ import annotations

import warnings

import glasstorch

__all__ = ["MaskedTensor", "is_masked_tensor"]

_SUPPORTED_DTYPES = ("float16", "float32", "float64", "bool", "int8", "int16", "int32",
                     "int64")

_UNARY = {"abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin",
          "asinh", "arcsinh", "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil",
          "clamp", "clip", "conj_physical", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc",
          "erfinv", "exp", "exp2", "expm1", "fix", "floor", "frac", "lgamma", "log", "log10",
          "log1p", "log2", "logit", "i0", "isnan", "nan_to_num", "neg", "negative", "positive",
          "pow", "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit",
          "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc"}
_BINARY = {"add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_left_shift", "bitwise_right_shift", "div", "divide", "floor_divide", "fmod",
           "logaddexp", "logaddexp2", "mul", "multiply", "nextafter", "remainder", "sub",
           "subtract", "true_divide", "eq", "ne", "le", "ge", "greater", "greater_equal", "gt",
           "less_equal", "lt", "less", "maximum", "minimum", "fmax", "fmin", "not_equal"}
# Ops that apply to the data and the mask alike.
_PASSTHROUGH = {"select", "transpose", "split", "t", "slice", "slice_backward",
                "select_backward", "index", "expand", "view", "_unsafe_view", "_reshape_alias",
                "cat", "unsqueeze", "unfold", "unfold_backward", "stack", "squeeze", "permute",
                "alias", "reshape"}
_REDUCTIONS = ("sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "norm", "var",
               "std")


def is_masked_tensor(obj, /) -> bool:
    """Whether obj is a MaskedTensor."""
    return isinstance(obj, MaskedTensor)


def _map(value, fn):
    """value with every MaskedTensor in it (through lists and tuples) replaced by fn(it)."""
    if isinstance(value, MaskedTensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    return value


def _wrap(data, mask):
    if isinstance(data, (list, tuple)):
        return type(data)(_wrap(d, m) for d, m in zip(data, mask))
    if isinstance(data, glasstorch.Tensor):
        return MaskedTensor(data, mask)
    return data


def _format(data, mask, formatter) -> str:
    """PyTorch's layout: nested brackets, one row a line, `--` for masked-out elements."""
    if data.dim() == 1:
        items = [formatter.format(v) if isinstance(v, float) else str(v)
                 for v in data.tolist()]
        present = mask.tolist()
        width = max((len(s) if p else 8) for s, p in zip(items, present)) if items else 0
        return "[" + ", ".join(s if p else "--".rjust(width)
                               for s, p in zip(items, present)) + "]"
    rows = [_format(d, m, formatter) for d, m in zip(data, mask)]
    rows = ["\n".join("  " + line for line in r.split("\n")) for r in rows]
    return "[\n" + ",\n".join(rows) + "\n]"


class MaskedTensor(glasstorch.Tensor):
    """A tensor with a mask: elements where the mask is False are absent."""

    @staticmethod
    def __new__(cls, data, mask, requires_grad=False):
        if is_masked_tensor(data) or not isinstance(data, glasstorch.Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, glasstorch.Tensor):
            raise TypeError("mask must be a Tensor")
        warnings.warn("The PyTorch API of MaskedTensors is in prototype stage and will change "
                      "in the near future. Please open a Github issue for features requests "
                      "and see our documentation on the torch.masked module for further "
                      "information about the project.", UserWarning, stacklevel=2)
        if data.requires_grad:
            warnings.warn("It is not recommended to create a MaskedTensor with a tensor that "
                          "requires_grad. To avoid this, you can use data.detach().clone()",
                          UserWarning, stacklevel=2)
        return glasstorch.Tensor._make_wrapper_subclass(
            cls, tuple(data.shape), data.stride(), dtype=data.dtype, device=data.device,
            requires_grad=requires_grad)

    def __init__(self, data, mask, requires_grad=False):
        self._set_data_mask(data.detach().clone() if data.requires_grad else data.clone(),
                            mask.clone())

    def _set_data_mask(self, data, mask):
        if mask.dtype is not glasstorch.bool:
            raise TypeError("mask must have dtype bool.")
        if str(data.dtype).split(".")[-1] not in _SUPPORTED_DTYPES:
            raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
        if data.dim() != mask.dim():
            raise ValueError("data.dim() must equal mask.dim()")
        if tuple(data.shape) != tuple(mask.shape):
            raise ValueError("data.size() must equal mask.size()")
        self._masked_data, self._masked_mask = data, mask

    @staticmethod
    def _from_values(data, mask):
        """A MaskedTensor through which gradients reach `data`."""
        return _FromValues.apply(data, mask)

    def get_data(self):
        """The data, masked-out elements included; differentiable (the gradient is this
        MaskedTensor's gradient's data)."""
        return _GetData.apply(self)

    def get_mask(self):
        """The boolean mask."""
        return self._masked_mask

    def to_tensor(self, value):
        """A plain tensor with `value` where the mask is False."""
        return self.get_data().masked_fill(~self.get_mask(), value)

    def is_sparse_coo(self):
        return False

    def is_sparse_csr(self):
        return False

    def __repr__(self):
        formatter = "{0:8.4f}"
        if self.dim() == 0:
            value = self._masked_data.item()
            text = formatter.format(value) if isinstance(value, float) else str(value)
            present = bool(self._masked_mask.item())
            return f"MaskedTensor({text if present else '--'}, {present})"
        body = _format(self._masked_data, self._masked_mask, formatter)
        return "MaskedTensor(\n" + "\n".join("  " + line for line in body.split("\n")) + "\n)"

    __str__ = __repr__

    def __lt__(self, other):
        return MaskedTensor(self._masked_data < _data(other), self._masked_mask)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None)
        owner = getattr(func, "__qualname__", "")
        if name in _REDUCTIONS and (owner == name or owner == f"Tensor.{name}") \
                and args and is_masked_tensor(args[0]):
            return _reduce(name, *args, **kwargs)
        if name == "where" and len(args) == 3:
            return _where(*args)
        with glasstorch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        base = name[:-1] if name.endswith("_") and not name.startswith("_") else name
        if base in _UNARY:
            return _unary(func, name != base, args, kwargs)
        if base in _BINARY:
            return _binary(func, name != base, args, kwargs)
        if name in _PASSTHROUGH:
            data = func(*_map(args, _data), **kwargs)
            return _wrap(data, func(*_map(args, lambda m: m._masked_mask), **kwargs))
        if name in ("detach", "clone", "contiguous"):
            return MaskedTensor(func(args[0]._masked_data, *args[1:], **kwargs),
                                args[0]._masked_mask)
        if name == "_to_copy":
            return MaskedTensor(func(args[0]._masked_data, *args[1:], **kwargs),
                                args[0]._masked_mask)
        if name in ("ones_like", "zeros_like", "empty_like"):
            return MaskedTensor(func(args[0]._masked_data, *args[1:], **kwargs),
                                args[0]._masked_mask)
        if name == "where":
            cond, a, b = args
            return MaskedTensor(func(_data(cond), _data(a), _data(b)), _mask_of(a, b))
        if name == "_local_scalar_dense":
            if not bool(args[0]._masked_mask.all()):
                raise ValueError("__bool__ on a MaskedTensor with masked-out elements")
            return func(args[0]._masked_data)
        if name == "copy_":
            dst, src = args[0], args[1]
            if not bool((dst._masked_mask == _mask_of(src, dst)).all()):
                raise ValueError("args[0] mask and args[1] mask must match but do not")
            func(dst._masked_data, _data(src))
            return dst
        if name == "is_same_size":
            return tuple(args[0].shape) == tuple(args[1].shape)
        raise TypeError(f"{name} is not implemented in __torch_dispatch__ for MaskedTensor.")


def _data(x):
    return x._masked_data if is_masked_tensor(x) else x


def _mask_of(a, b):
    return a._masked_mask if is_masked_tensor(a) else b._masked_mask


def _unary(func, inplace, args, kwargs):
    if any(isinstance(a, glasstorch.Tensor) for a in args[1:]):
        raise TypeError("MaskedTensor unary ops require that len(args) == 1")
    mt = args[0]
    data = func(mt._masked_data, *args[1:], **kwargs)
    if inplace:
        mt._set_data_mask(data, mt._masked_mask)
        return mt
    return MaskedTensor(data, mt._masked_mask)


def _binary(func, inplace, args, kwargs):
    if any(isinstance(a, glasstorch.Tensor) for a in args[2:]):
        raise TypeError("MaskedTensor binary ops do not support Tensor arguments aside from "
                        "the lhs and rhs")
    a, b = args[0], args[1]
    if is_masked_tensor(a) and is_masked_tensor(b) and \
            not bool((a._masked_mask == b._masked_mask).all()):
        raise ValueError("Input masks must match. If you need support for this, please open "
                         "an issue on Github.")
    data = func(_data(a), _data(b), *args[2:], **kwargs)
    if inplace:
        a._set_data_mask(data, a._masked_mask)
        return a
    return MaskedTensor(data, _mask_of(a, b).expand_as(data))


def _where(cond, a, b):
    data = glasstorch.where(_data(cond), _data(a), _data(b))
    if is_masked_tensor(a) or is_masked_tensor(b):
        return _as_masked(data, _mask_of(a, b))
    return data


def _as_masked(data, mask):
    """A MaskedTensor through which gradients reach data (as_masked_tensor)."""
    return MaskedTensor._from_values(data, mask)


def _reduce(name, self, *args, **kwargs):
    """`name` over a MaskedTensor as torch.masked's reduction: the whole tensor (result
    masked in when anything is), or along dim (masked in where any element was)."""
    from .. import _ops
    mask = self._masked_mask
    if not args and not kwargs:
        if name == "all":
            data = self._masked_data.masked_fill(~mask, True).all()
        else:
            data = getattr(_ops, name)(self, mask=mask)
        return _as_masked(data, mask.any())
    dim = args[0] if args else kwargs.get("dim")
    keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
    dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
    if name == "all":
        data = glasstorch.all(self._masked_data.masked_fill(~mask, True), dim=dim,
                              keepdim=keepdim)
    else:
        data = getattr(_ops, name)(self, dim=dim, keepdim=keepdim, dtype=dtype, mask=mask)
    out_mask = mask
    for d in sorted((dim,) if isinstance(dim, int) else dim, reverse=True):
        out_mask = out_mask.any(d, keepdim=keepdim)
    return _as_masked(data, out_mask)


class _GetData(glasstorch.autograd.Function):
    """MaskedTensor -> its data; the gradient goes back as a MaskedTensor."""

    @staticmethod
    def forward(ctx, self):
        ctx.mask = self._masked_mask
        return self._masked_data.detach()

    @staticmethod
    def backward(ctx, grad_output):
        if is_masked_tensor(grad_output):
            return grad_output
        return MaskedTensor(grad_output, ctx.mask)


class _FromValues(glasstorch.autograd.Function):
    """(data, mask) -> MaskedTensor; the gradient goes back to data as it comes."""

    @staticmethod
    def forward(ctx, data, mask):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return MaskedTensor(data, mask)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None
