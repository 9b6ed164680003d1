"""Comparing glasstorch against its references: NumPy always, PyTorch when installed.

`torch = oracle_torch()` skips the calling test cleanly when PyTorch is not installed.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import glasstorch as gt


def oracle_torch():
    return pytest.importorskip("torch")


def dispatch_module(T):
    """`utils._python_dispatch` of glasstorch or of torch, whichever `T` is."""
    if T is gt:
        from glasstorch.utils import _python_dispatch
    else:
        from torch.utils import _python_dispatch
    return _python_dispatch


def dtype_name(d) -> str:
    """'float32' for either library's dtype."""
    return str(d).replace("torch.", "")


def to_torch(t: gt.Tensor):
    """The same values, dtype, shape and strides as a torch tensor."""
    torch = oracle_torch()
    dtype = getattr(torch, dtype_name(t.dtype))
    base = torch.empty(t.untyped_storage().nbytes() // t.element_size(), dtype=dtype)
    flat = gt.Tensor._make(t.untyped_storage(), 0, (base.numel(),), (1,), t.dtype)
    if base.numel():
        base.view(torch.uint8 if dtype.itemsize == 1 else dtype).copy_(
            torch.from_numpy(np.array(flat._array()).view(
                np.uint8 if dtype.itemsize == 1 else flat._array().dtype))
            if dtype != torch.bfloat16 else
            torch.from_numpy(np.array(flat._array()).view(np.int16)).view(torch.bfloat16))
    out = base.as_strided(tuple(t.shape), t.stride(), t.storage_offset())
    out = out._conj() if t.is_conj() else out       # the same bits over the same bytes
    return out._neg_view() if t.is_neg() else out


def to_numpy(x) -> np.ndarray:
    """A float64/complex/int/bool NumPy copy of a glasstorch or torch tensor."""
    if isinstance(x, gt.Tensor):
        x = x.detach().resolve_conj().resolve_neg()      # the values, not the stored bytes
        a = np.array(x._array()) if x.device.type == "cpu" else np.array(
            x.detach().cpu()._array())
        return a.astype(np.float32) if a.dtype.name == "bfloat16" else a
    if hasattr(x, "detach"):  # torch
        x = x.detach()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_same(actual: gt.Tensor, expected, *, rtol=1e-6, atol=1e-6, check_stride=True,
                check_dtype=True, equal_nan=True):
    """Values, dtype, shape and (for torch expectations) strides agree."""
    assert isinstance(actual, gt.Tensor), f"expected a glasstorch Tensor, got {type(actual)}"
    if hasattr(expected, "stride") and not isinstance(expected, np.ndarray):
        assert tuple(actual.shape) == tuple(expected.shape), (actual.shape, expected.shape)
        if check_dtype:
            assert dtype_name(actual.dtype) == dtype_name(expected.dtype), (
                actual.dtype, expected.dtype)
        if check_stride and actual.numel() > 1:
            assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    else:
        expected = np.asarray(expected)
        assert tuple(actual.shape) == expected.shape, (actual.shape, expected.shape)
    a, e = to_numpy(actual), to_numpy(expected)
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)



def op_log(T=gt):
    """A dispatch mode of `T` (glasstorch or torch) that names each op call it sees in
    `seen`, then runs it: what tests of the fast paths check that a mode still sees every
    call with."""
    class OpLog(dispatch_module(T).TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))
    return OpLog()


def outcome(fn, T):
    """fn(T)'s result, or the class and text (its first line) of the error it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(T)
        except Exception as e:                  # compared with PyTorch's, class and text
            return type(e).__name__, str(e).split("\n")[0]


def outcomes(fn):
    """(glasstorch's outcome, PyTorch's) of fn."""
    return outcome(fn, gt), outcome(fn, oracle_torch())
