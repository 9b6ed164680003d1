"""The Conjugate and Negative keys: lazily conjugated and negated tensors (PyTorch's
MathBitsFallback).

`x.conj()` of a complex tensor is a view with the conjugate bit, `x.conj().imag` one with the
negative bit: the tensor's values are its storage's, conjugated (negated). A tensor with a bit
carries its key, so a call on it passes through this fallback, which hands the kernels below
materialised copies; an in-place or out= op then writes its result back through the bit.
Ops that understand the bits themselves are not resolved: view ops (their views keep the bits,
core.tensor.make_alias), copy_ (`copy_with_bits`), clone and _to_copy (copy_fresh).
"""
from __future__ import annotations

import numpy as np

from ..core import dtype as dt
from ..core.tensor import Tensor
from ..dispatch.dispatcher import FALLTHROUGH, find, register_fallback
from ..dispatch.keys import BACKEND_MASK, CONJ_BIT, MATH_BITS, NEG_BIT, DispatchKey


def plain(t: Tensor) -> Tensor:
    """A bit-free alias of t's storage: the values as stored."""
    out = Tensor._make(t._storage, t._offset, t._shape, t._stride, t.dtype, t._vc)
    out._inference = t._inference
    return out


def flip_bits(t: Tensor, bits: int) -> Tensor:
    """A view of t with the given bits flipped (recorded by autograd as _conj, _neg_view)."""
    if bits & CONJ_BIT:
        t = t._conj()
    if bits & NEG_BIT:
        t = t._neg_view()
    return t


def fix_bits(dst: Tensor, src_bits: int) -> None:
    """After dst's storage received the stored values of a source with `src_bits`, make
    dst's values the source's: conjugate or negate the storage where the bits differ."""
    differ = (dst._keyset ^ src_bits) & MATH_BITS
    if not differ:
        return
    stored, backend = plain(dst), dst._keyset & BACKEND_MASK
    if differ & CONJ_BIT and dst.dtype.is_complex:
        find("aten::conj_physical_").redispatch(backend, stored)
    if differ & NEG_BIT:
        find("aten::neg_").redispatch(backend, stored)


def copy_with_bits(op, ks, self, src, non_blocking=False):
    """copy_ at the bit keys: copy the stored values below, then fix them up in place."""
    op.redispatch(ks & ~MATH_BITS, plain(self) if self._keyset & MATH_BITS else self,
                  plain(src) if src._keyset & MATH_BITS else src, non_blocking)
    fix_bits(self, src._keyset)
    return self


def copy_fresh_with_bits(out: Tensor, src: Tensor, non_blocking=False) -> Tensor:
    """Fill `out`, just allocated with src's shape and no bits, with src's values (clone,
    _to_copy, and so every resolution): on the CPU within one dtype, one NumPy call."""
    bits = src._keyset & MATH_BITS
    if (out.dtype is src.dtype and src.dtype.family is None and src.dtype is not dt.bool
            and out._storage.device.type == "cpu" and src._storage.device.type == "cpu"):
        values, into = src._array(), out._array()
        if bits == CONJ_BIT:
            np.conjugate(values, out=into)
        elif bits == NEG_BIT:
            np.negative(values, out=into)
        else:                                    # both bits
            np.negative(np.conjugate(values), out=into)
        return out
    return copy_with_bits(find("aten::copy_"), out._keyset & BACKEND_MASK, out, src,
                          non_blocking)


def _resolved(t: Tensor, ks: int) -> Tensor:
    """t's values in a fresh bit-free tensor (clone, which a dispatch mode sees)."""
    return find("aten::clone").redispatch(ks & ~BACKEND_MASK | t._keyset & BACKEND_MASK, t)


def _has_bits(t) -> bool:
    return getattr(t, "_keyset", 0) & MATH_BITS != 0


def math_bits_fallback(op, ks, *args):
    """Run `op` on materialised copies of its inputs with a bit. Views keep the bits and
    run as they are; a mutated input with a bit gets the result written back through it
    (`x.conj().add_(1)` stores conj(conj(x) + 1) into x), as PyTorch's fallback does."""
    schema = op.schema
    ks &= ~MATH_BITS
    if schema.is_view and not schema.is_mutable:
        return op.redispatch(ks, *args)
    args = list(args)
    written = None
    for i in op.tensor_positions:
        arg, argument = args[i], schema.arguments[i]
        if isinstance(arg, (list, tuple)):
            if any(_has_bits(t) for t in arg):
                if argument.is_mutated:
                    raise RuntimeError(
                        f"{op.name}: the conjugate/negative fallback does not support mutable "
                        "tensor lists holding tensors with the conjugate or negative bit set. "
                        "Resolve them (resolve_conj(), resolve_neg()) before calling it.")
                args[i] = type(arg)(_resolved(t, ks) if _has_bits(t) else t for t in arg)
        elif _has_bits(arg):
            resolved = _resolved(arg, ks)
            if argument.is_mutated:
                if written is not None:
                    raise RuntimeError(
                        f"{op.name}: the conjugate/negative fallback does not support operators "
                        "with more than one mutable tensor with the conjugate or negative bit "
                        "set.")
                written = (arg, resolved)
            args[i] = resolved
    result = op.redispatch(ks, *args)
    if written is None:
        return result
    target, resolved = written
    if target._shape != resolved._shape:          # an out= resized by the kernel
        target.resize_(resolved._shape)
    copy_with_bits(find("aten::copy_"), ks, target, resolved)
    if result is resolved:
        return target
    if isinstance(result, (tuple, list)):
        items = [target if r is resolved else r for r in result]
        return result._make(items) if hasattr(result, "_make") else type(result)(items)
    return result


register_fallback(DispatchKey.Conjugate, math_bits_fallback)
register_fallback(DispatchKey.Negative, math_bits_fallback)
for _key in (DispatchKey.Conjugate, DispatchKey.Negative):
    find("aten::copy_").register(_key, copy_with_bits)
    for _name in ("aten::clone", "aten::_to_copy"):     # copy_fresh reads the bits
        find(_name).register(_key, FALLTHROUGH)
