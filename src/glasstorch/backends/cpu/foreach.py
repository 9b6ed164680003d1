"""Kernels of the foreach ops (torch._foreach_*): one Python loop over the tensor lists.

A foreach op applies a per-tensor op (add, mul, lerp, linalg_vector_norm, ...) to each
element of its lists. Each element goes through that op's own meta function and kernel,
called directly: no dispatch per tensor, and results, dtypes and errors are the per-tensor
op's by construction. The loops read each tensor's device to pick the per-tensor kernel, so
they serve CUDA tensors as they serve CPU ones (ops/pointwise/foreach.py registers them for
both); the Meta backend gets the same loop without the kernel.

`rows` turns a call's arguments into one argument tuple per element: which arguments are
tensor lists, scalar lists, 0-dim tensors standing for a scalar, and so on is the op's
`kinds`, one letter per schema argument (see `rows`).
"""
from __future__ import annotations

from itertools import repeat

import numpy as np

from ...core import dtype as dt
from ...core.tensor import Tensor
from . import native, parallel
from .reduction import norm2_native, norm_kernel

_BACKEND = {"cpu": "CPU", "cuda": "CUDA"}


def _same_length(n: int, items, kind: str) -> None:
    if len(items) != n:
        if kind == "L":
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} "
                               f"and {len(items)}")
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")


def _check_tensors(items, position: int) -> None:
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got "
                            f"{type(t).__name__}")


def rows(args, kinds: str) -> list:
    """One argument tuple per list element. `kinds` has a letter per argument:
    L a tensor list, S a list of scalars, C a value every element shares, T a 0-dim tensor
    every element shares (mul/div's `.Tensor`), I one read as a Python scalar (add's), V a
    1-D tensor of one
    scalar per element (addcmul's `.Tensor`). The first L sets the length; lists of another
    length raise PyTorch's errors, and so does an empty first list."""
    n = None
    for position, (a, k) in enumerate(zip(args, kinds)):
        if k == "L":
            if not isinstance(a, (list, tuple)):
                raise TypeError(f"argument {position} must be tuple of Tensors, not "
                                f"{type(a).__name__}")
            _check_tensors(a, position)
            if n is None:
                n = len(a)
                if not n:
                    raise RuntimeError("Tensor list must have at least one tensor.")
    columns = []
    for a, k in zip(args, kinds):
        if k == "L" or k == "S":
            _same_length(n, a, k)
            columns.append(a)
        elif k == "C":
            columns.append(repeat(a))
        elif k == "I" or k == "T":
            if a.dim() != 0:
                raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {a.dim()} "
                                   f"dimensions and {a.numel()} elements.")
            columns.append(repeat(a.item() if k == "I" else a))
        else:                                               # "V"
            if a.dim() != 1 or a.numel() != n:
                raise RuntimeError("Tensor list must have same number of elements as scalar "
                                   "list.")
            columns.append(a.tolist())
    return list(zip(*columns))


def _first_tensor(args) -> Tensor:
    return args[0] if args[0].__class__ is Tensor or isinstance(args[0], Tensor) else args[1]


def functional_loop(decl, kinds: str, arrange=None, fast=None):
    """The out-of-place foreach kernel over the structured declaration `decl`: a new tensor
    per element, described by `decl.meta` and filled by `decl`'s kernel for its device.
    `arrange(row)` maps an element's row to `decl`'s arguments (default: as is); `fast(row)`
    returns the element's result for the rows it recognises and None for the rest."""
    meta, impls, empty = decl.meta, decl.impls, Tensor._empty

    def kernel(*args):
        out = []
        for row in rows(args, kinds):
            if arrange is not None:
                row = arrange(row)
            if fast is not None and (r := fast(row)) is not None:
                out.append(r)
                continue
            spec = meta(*row)
            device = _first_tensor(row).device
            result = empty(spec.shape, spec.dtype, device, spec.stride)
            if device.type != "meta":
                impls[_BACKEND[device.type]](result, *row)
            out.append(result)
        return out
    return kernel


def inplace_loop(decl, check_write, kinds: str, arrange=None, fast=None):
    """The in-place foreach kernel: each self element is checked as the per-tensor in-place
    op checks it (`check_write(self, spec, rest)`: shape, dtype cast, overlap), then written
    by `decl`'s kernel. `fast(row)` returns True when it wrote the element itself."""
    meta, impls = decl.meta, decl.impls

    def kernel(*args):
        for row in rows(args, kinds):
            if arrange is not None:
                row = arrange(row)
            if fast is not None and fast(row):
                continue
            self, rest = row[0], row[1:]
            check_write(self, meta(*row), rest)
            if self.device.type != "meta":
                impls[_BACKEND[self.device.type]](self, self, *rest)
    return kernel


def copy_loop(copy_impls):
    """_foreach_copy_: each destination's copy_ kernel (broadcasting, casting)."""
    def kernel(self, src, non_blocking=False):
        for dst, s in rows((self, src), "LL"):
            if dst.device.type != "meta":
                copy_impls[_BACKEND[dst.device.type]](dst, s, non_blocking)
    return kernel


def zero_loop(self):
    """_foreach_zero_: every element set to zero through its array view."""
    for (t,) in rows((self,), "L"):
        if t.device.type != "meta" and t.numel():
            t._array()[...] = 0


# ---- NumPy fast paths ------------------------------------------------------------------
# Plain CPU tensors (class Tensor) of float32 or float64, where every tensor operand has
# self's dtype and shape and a Python number is the other operand: the calls optimizers,
# clipping and EMA updates make. The result is what the per-tensor kernel computes there
# (the same ufuncs in the same dtype), so the fast and general paths agree bit for bit.

_FLOATS = (dt.float32, dt.float64)
_NUMBERS = (int, float)


def _plain(t) -> bool:
    return t.__class__ is Tensor and t.dtype in _FLOATS and t._storage.device.type == "cpu"


def _operand(x, like: Tensor):
    """x as a NumPy operand of like's dtype, or None when the fast path must not take it
    (another dtype, shape or layout, another device, a view sharing like's memory)."""
    if x.__class__ is Tensor:     # a tensor of like's shape, or 0-dim (mul_.Tensor's scale)
        if x.dtype is like.dtype and (x._shape == like._shape or not x._shape) and \
                x._storage.device.type == "cpu" and (x is like or x._storage is not like._storage) \
                and x.is_contiguous():
            return x._array()
        return None
    if x.__class__ in _NUMBERS:
        return like.dtype.np.type(x)
    return None


def binary_fast(ufunc, alpha=False):
    """Fast paths (functional, in-place) of `ufunc(self, other)`; with `alpha`, the row's
    third value scales other first (add/sub), as the per-tensor kernel does."""
    def operands(row):
        self = row[0]
        if not _plain(self) or not self.is_contiguous():    # the result is laid out as self
            return None
        b = _operand(row[1], self)
        if b is None:
            return None
        if alpha:
            scale = row[2]
            if scale.__class__ not in _NUMBERS:      # a bool alpha: the general errors
                return None
            if scale != 1:
                b = np.multiply(b, self.dtype.np.type(scale))
        return self._array(), b

    def functional(row):
        ab = operands(row)
        if ab is None:
            return None
        out = Tensor._empty(row[0]._shape, row[0].dtype)
        parallel.ufunc(ufunc, ab, out._array())
        return out

    def inplace(row):
        ab = operands(row)          # contiguous self: an expanded one gets the general errors
        if ab is None:
            return False
        parallel.ufunc(ufunc, ab, ab[0])
        return True
    return functional, inplace


def norm_fast(row):
    """linalg_vector_norm(t, ord) of a plain float tensor without a dtype argument: its
    CPU kernel (reduction.norm_kernel) into a 0-dim output, without the meta function."""
    t, order, _, _, dtype = row
    if dtype is not None or not _plain(t) or not t.numel() or \
            order.__class__ not in _NUMBERS:
        return None
    out = Tensor._empty((), t.dtype)
    if order == 2 and norm2_native(out, t._array()):
        return out
    norm_kernel(out, t, order)
    return out


