"""The foreach ops (`torch._foreach_add_(params, grads, alpha=-lr)`, `_foreach_norm(grads)`):
one call applies a per-tensor op to every element of tensor lists.

They exist for speed: optimizers, gradient clipping and EMA updates touch every parameter,
and one call for the whole list pays the dispatch and argument checks once instead of once
per tensor. Each overload is declared with PyTorch's schema and served by a loop over the
per-tensor op's meta function and kernel (backends/cpu/foreach.py), so its values, dtypes
and errors are that op's. Grad mode with an input that requires grad takes the per-tensor
operators instead, so autograd records them (PyTorch's foreach ops are differentiable too);
the no-grad calls of optimizers and clipping take the loop.

The public `glasstorch._foreach_<name>` picks the overload from its arguments' types as
PyTorch's argument parser does: a number is `.Scalar`, a list of numbers `.ScalarList`, a
list of tensors `.List`, a tensor `.Tensor`.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ...backends.cpu import foreach as kernels
from ...core.grad_state import state as _grad_state
from ...core.tensor import Tensor
from ...dispatch.dispatcher import overloads_of
from ..copying import copies  # noqa: F401  (the per-tensor ops declared before their lists')
from ..linalg import decompositions  # noqa: F401
from ..registry import check_inplace_write, declarations, export, kernel_op
from . import elementwise  # noqa: F401

_NUMBERS = (int, float, bool, complex)


def _requires_grad(args) -> bool:
    """Whether a tensor argument, or one in a list, requires grad (autograd.recording's
    check, which this layer may not import)."""
    for a in args:
        if isinstance(a, Tensor):
            if a._requires_grad:
                return True
        elif isinstance(a, (list, tuple)):
            for t in a:
                if isinstance(t, Tensor) and t._requires_grad:
                    return True
    return False


def _register_autograd(decl, reference) -> None:
    """The Autograd kernel: the per-tensor operators when autograd must record the call,
    the foreach kernel below otherwise."""
    def kernel(op, ks, *args):
        if _grad_state.enabled and _requires_grad(args):
            return reference(*args)
        return op.redispatch(ks, *args)
    decl.functional.register("Autograd", kernel)
    decl.functional.info["autograd"] = "per-tensor ops"    # what `glasstorch ops` reports


def _declare(schema: str, per, kinds: str, arrange=None, fast=None, inplace=False):
    """One foreach overload over the per-tensor structured declaration `per`."""
    if inplace:
        decl = kernel_op(schema, method=False, function=False, mutates=(0,))
        loop = kernels.inplace_loop(per, partial(check_inplace_write, per), kinds, arrange,
                                    fast)
        per_op = per.inplace
    else:
        decl = kernel_op(schema, method=False, function=False)
        loop = kernels.functional_loop(per, kinds, arrange, fast)
        per_op = per.functional

    def reference(*args):
        out = [per_op(*(row if arrange is None else arrange(row)))
               for row in kernels.rows(args, kinds)]
        return None if inplace else out
    decl.on_cuda = "shared"
    for backend in ("CPU", "CUDA", "Meta"):
        decl.impl(backend)(loop)
    _register_autograd(decl, reference)
    return decl


def _both(name, overload, args, per, kinds, arrange=None, fast=(None, None), inplace=True):
    """The functional overload `name.overload(args)` and, with `inplace`, `name_.overload`."""
    dot = f".{overload}" if overload else ""
    _declare(f"{name}{dot}({args}) -> Tensor[]", per, kinds, arrange, fast[0])
    if inplace:
        args = args.replace("Tensor[] self", "Tensor(a!)[] self", 1)
        _declare(f"{name}_{dot}({args}) -> ()", per, kinds, arrange, fast[1], inplace=True)


def _with(*extra):
    """An `arrange` appending arguments the per-tensor op takes and the overload lacks."""
    return lambda row: row + extra


def _op(name: str, overload: str | None = None):
    """The per-tensor declaration (of one overload) a foreach overload applies."""
    decl = declarations[name]
    return decl if overload is None else decl.overload(overload)


# ---- binary arithmetic: add, sub, mul, div -----------------------------------------------

for _name, _ufunc, _alpha, _scalar_tensor in (("add", np.add, True, True),
                                               ("sub", np.subtract, True, False),
                                               ("mul", np.multiply, False, True),
                                               ("div", np.true_divide, False, True)):
    _list_decl = _op("div", "Tensor") if _name == "div" else _op(_name)
    _scalar_decl = _op(_name, "Scalar")
    _fast = kernels.binary_fast(_ufunc, alpha=_alpha)
    _fast_scalar = kernels.binary_fast(_ufunc) if _alpha else _fast
    _tail = _with(1) if _alpha else None
    _f = f"_foreach_{_name}"
    _both(_f, "Scalar", "Tensor[] self, Scalar scalar", _scalar_decl, "LC", _tail,
          _fast_scalar)
    _both(_f, "List", "Tensor[] self, Tensor[] other" + (", *, Scalar alpha=1" if _alpha else ""),
          _list_decl, "LLC" if _alpha else "LL", None, _fast)
    _both(_f, "ScalarList", "Tensor[] self, Scalar[] scalars", _scalar_decl, "LS", _tail,
          _fast_scalar)
    # .Tensor: PyTorch's add reads the 0-dim tensor as a Python scalar (promoting as one);
    # mul and div pass it to the per-tensor op as a tensor
    if _alpha and _scalar_tensor:
        _both(_f, "Tensor", "Tensor[] self, Tensor other, *, Scalar alpha=1", _scalar_decl,
              "LIC", None, _fast)
    elif _scalar_tensor:
        _both(_f, "Tensor", "Tensor[] self, Tensor other", _list_decl, "LT", None, _fast)

# ---- maximum, minimum, clamp_min, clamp_max ----------------------------------------------
# PyTorch's maximum/minimum with a scalar are clamp_min/clamp_max per tensor.

for _name, _list_decl, _scalar_decl in (
        ("maximum", _op("maximum"), _op("clamp_min", "default")),
        ("minimum", _op("minimum"), _op("clamp_max", "default")),
        ("clamp_min", _op("clamp_min"), _op("clamp_min", "default")),
        ("clamp_max", _op("clamp_max"), _op("clamp_max", "default"))):
    _f = f"_foreach_{_name}"
    _both(_f, "Scalar", "Tensor[] self, Scalar scalar", _scalar_decl, "LC")
    _both(_f, "List", "Tensor[] self, Tensor[] other", _list_decl, "LL")
    _both(_f, "ScalarList", "Tensor[] self, Scalar[] scalars", _scalar_decl, "LS")

# ---- pow ---------------------------------------------------------------------------------

_both("_foreach_pow", "List", "Tensor[] self, Tensor[] exponent", _op("pow"), "LL")
_both("_foreach_pow", "Scalar", "Tensor[] self, Scalar exponent", _op("pow", "Tensor_Scalar"),
      "LC")
_both("_foreach_pow", "ScalarList", "Tensor[] self, Scalar[] exponent",
      _op("pow", "Tensor_Scalar"), "LS")
_both("_foreach_pow", "ScalarAndTensor", "Scalar self, Tensor[] exponent", _op("pow", "Scalar"),
      "CL", inplace=False)

# ---- addcmul, addcdiv, lerp --------------------------------------------------------------

for _name in ("addcmul", "addcdiv"):
    _f = f"_foreach_{_name}"
    _lists = "Tensor[] self, Tensor[] tensor1, Tensor[] tensor2"
    _both(_f, "Scalar", _lists + ", Scalar value=1", _op(_name), "LLLC")
    _both(_f, "ScalarList", _lists + ", Scalar[] scalars", _op(_name), "LLLS")
    _both(_f, "Tensor", _lists + ", Tensor scalars", _op(_name), "LLLV")

_both("_foreach_lerp", "List", "Tensor[] self, Tensor[] tensors1, Tensor[] weights",
      _op("lerp"), "LLL")
_both("_foreach_lerp", "Scalar", "Tensor[] self, Tensor[] tensors1, Scalar weight",
      _op("lerp", "Scalar"), "LLC")
_both("_foreach_lerp", "ScalarList", "Tensor[] self, Tensor[] tensors1, Scalar[] weight",
      _op("lerp", "Scalar"), "LLS")

# ---- unary ops, norm ---------------------------------------------------------------------

UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp",
         "expm1", "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg",
         "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan",
         "tanh", "trunc")
for _name in UNARY:
    _both(f"_foreach_{_name}", "", "Tensor[] self", _op(_name), "L")

_both("_foreach_norm", "Scalar", "Tensor[] self, Scalar ord=2, ScalarType? dtype=None",
      _op("linalg_vector_norm"), "LCC", lambda row: (row[0], row[1], None, False, row[2]),
      fast=(kernels.norm_fast, None), inplace=False)

_both("_foreach_max", "", "Tensor[] self", _op("amax"), "L", lambda row: (row[0], [], False),
      inplace=False)

# ---- copy_, zero_ ------------------------------------------------------------------------

_copy = kernel_op("_foreach_copy_(Tensor(a!)[] self, Tensor[] src, bool non_blocking=False) "
                  "-> ()", method=False, function=False, mutates=(0,),
                  tags=("cross_device",))     # as copy_: runs on the destinations' device
_zero = kernel_op("_foreach_zero_(Tensor(a!)[] self) -> ()", method=False, function=False,
                  mutates=(0,))
_copy.on_cuda = _zero.on_cuda = "shared"
for _backend in ("CPU", "CUDA", "Meta"):
    _copy.impl(_backend)(kernels.copy_loop(declarations["copy_"].impls))
    _zero.impl(_backend)(kernels.zero_loop)


def _copy_reference(self, src, non_blocking=False):
    for dst, s in kernels.rows((self, src), "LL"):
        dst.copy_(s, non_blocking)


def _zero_reference(self):
    for (t,) in kernels.rows((self,), "L"):
        t.zero_()


_register_autograd(_copy, _copy_reference)
_register_autograd(_zero, _zero_reference)


# ---- the public functions ----------------------------------------------------------------

def _packet(name: str) -> dict:
    return overloads_of(f"aten::{name}")


def _pick(fname: str, name: str, value, *args):
    """The overload of `name` PyTorch's argument parser picks for `value` (the argument
    that tells them apart), or its TypeError."""
    ops = _packet(name)
    if isinstance(value, Tensor):
        if "Tensor" in ops:
            return ops["Tensor"], value
        if value.dim() == 0 and "Scalar" in ops:      # a 0-dim tensor converts to a Scalar
            return ops["Scalar"], value.item()
    elif isinstance(value, (list, tuple)):
        if all(isinstance(v, Tensor) for v in value) and "List" in ops:
            return ops["List"], value
        if all(isinstance(v, _NUMBERS) for v in value) and "ScalarList" in ops:
            return ops["ScalarList"], value
    elif isinstance(value, _NUMBERS) and "Scalar" in ops:
        return ops["Scalar"], value
    got = ", ".join(type(a).__name__ for a in args)
    expected = "\n".join(f" * {op.schema}" for op in ops.values())
    raise TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), "
                    f"but expected one of:\n{expected}")


def _export(fn) -> None:
    """glasstorch.<name>, and this module's <name> (for nn.utils' clipping)."""
    export(fn.__name__, fn)
    globals()[fn.__name__] = fn


def _self_list(fname: str, self):
    """`self` checked as PyTorch's parser and foreach checks do (an empty list has no device
    to dispatch to, so the public function refuses it here)."""
    if not isinstance(self, (list, tuple)):
        raise TypeError(f"{fname}(): argument 'self' (position 1) must be tuple of Tensors, "
                        f"not {type(self).__name__}")
    if not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return self


def _binary(name: str, alpha: bool):
    """glasstorch._foreach_<name> and _foreach_<name>_ for a binary op."""
    def make(suffix):
        fname = f"_foreach_{name}{suffix}"

        def call(self, other, alpha=None):
            op, other = _pick(fname, fname, other, _self_list(fname, self), other)
            if len(op.schema.arguments) == 2:
                if alpha is not None and alpha != 1:      # no such overload in PyTorch
                    raise TypeError(f"{fname}() got an unexpected keyword argument 'alpha' "
                                    f"for a {type(other).__name__} `other`")
                result = op(self, other)
            else:
                result = op(self, other, 1 if alpha is None else alpha)
            return list(self) if suffix else tuple(result)
        if alpha:
            def fn(self, other, *, alpha=1):
                return call(self, other, alpha)
        else:
            def fn(self, other):
                return call(self, other)
        fn.__name__ = fn.__qualname__ = fname
        fn.__doc__ = (f"torch.{fname}: {name} of each tensor of `self` and `other` (a number, "
                      "a list of numbers, a list of tensors or a 0-dim tensor)"
                      + (", in place." if suffix else "."))
        _export(fn)
    make("")
    make("_")


for _name in ("add", "sub"):
    _binary(_name, alpha=True)
for _name in ("mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"):
    _binary(_name, alpha=False)


def _foreach_pow(self, exponent):
    """torch._foreach_pow: each tensor of `self` to the power `exponent` (a number, a list
    of numbers or tensors); a number `self` raised to each tensor of `exponent`."""
    if isinstance(self, _NUMBERS):
        exponent = _self_list("_foreach_pow", exponent)
        return tuple(_packet("_foreach_pow")["ScalarAndTensor"](self, exponent))
    op, exponent = _pick("_foreach_pow", "_foreach_pow", exponent,
                         _self_list("_foreach_pow", self), exponent)
    return tuple(op(self, exponent))


_export(_foreach_pow)


def _picked_last(name: str, params: str, picked: str):
    """addcmul/addcdiv (overload picked by `value`) and lerp (by `weight`): tensor lists,
    then the argument that picks the overload."""
    def make(suffix):
        fname = f"_foreach_{name}{suffix}"

        def call(self, *args):
            op, last = _pick(fname, fname, args[-1], _self_list(fname, self), *args)
            result = op(self, *args[:-1], last)
            return list(self) if suffix else tuple(result)
        if params == "lerp":
            def fn(self, tensors1, weight):
                return call(self, tensors1, weight)
        else:
            def fn(self, tensor1, tensor2, value=1):
                return call(self, tensor1, tensor2, value)
        fn.__name__ = fn.__qualname__ = fname
        fn.__doc__ = f"torch.{fname}: {name} of the tensors of the lists by {picked}" + \
            (", in place." if suffix else ".")
        _export(fn)
    make("")
    make("_")


_picked_last("addcmul", "addc", "value (a number, a list of numbers or a 1-D tensor of them)")
_picked_last("addcdiv", "addc", "value (a number, a list of numbers or a 1-D tensor of them)")
_picked_last("lerp", "lerp", "weight (a number, a list of numbers or a list of tensors)")


def _unary(name: str):
    ops = _packet(f"_foreach_{name}")[""], _packet(f"_foreach_{name}_")[""]

    def fn(self):
        return tuple(ops[0](_self_list(f"_foreach_{name}", self)))

    def fn_(self):
        ops[1](_self_list(f"_foreach_{name}_", self))
        return list(self)
    for f, suffix in ((fn, ""), (fn_, "_")):
        f.__name__ = f.__qualname__ = f"_foreach_{name}{suffix}"
        f.__doc__ = f"torch._foreach_{name}{suffix}: {name} of each tensor of the list" + \
            (", in place." if suffix else ".")
        _export(f)


for _name in UNARY:
    _unary(_name)


def _foreach_norm(self, ord=2, dtype=None):
    """torch._foreach_norm: linalg.vector_norm(t, ord, dtype=dtype) of each tensor, in one
    call (clip_grad_norm_'s per-gradient norms)."""
    return tuple(_packet("_foreach_norm")["Scalar"](_self_list("_foreach_norm", self), ord,
                                                    dtype))


def _foreach_copy_(self, src, non_blocking=False):
    """torch._foreach_copy_: copy each tensor of `src` into the tensor of `self` at its
    place (broadcasting and casting as copy_)."""
    _copy.functional(_self_list("_foreach_copy_", self), src, non_blocking)
    return list(self)


def _foreach_zero_(self):
    """torch._foreach_zero_: set every tensor of the list to zero."""
    _zero.functional(_self_list("_foreach_zero_", self))
    return list(self)


def _foreach_max(self):
    """torch._foreach_max: the largest element of each tensor (a 0-dim tensor each)."""
    for t in _self_list("_foreach_max", self):
        if isinstance(t, Tensor) and not t.numel():
            raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; "
                               "max over zero elements is undefined.")
    return tuple(_packet("_foreach_max")[""](self))


for _fn in (_foreach_norm, _foreach_max, _foreach_copy_, _foreach_zero_):
    _export(_fn)
