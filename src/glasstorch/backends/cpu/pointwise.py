"""CPU kernels for pointwise ops, written over NumPy ufuncs.

A kernel fills a preallocated output (`out`) whose dtype may differ from the compute dtype
(in-place and `out=` variants downcast within a category); NumPy's `dtype=` runs the ufunc
in PyTorch's compute dtype and `casting='unsafe'` stores into the output.
"""
from __future__ import annotations

import numpy as np

from ...core.tensor import Tensor
from ...ops.pointwise_meta import common_dtype, opmath


def operand(x, np_dtype=None):
    """The NumPy operand for a tensor or a Python scalar."""
    if isinstance(x, Tensor):
        return x._array()
    return x


def ufunc_kernel(ufunc, compute="common"):
    """Kernel running `ufunc` over the operands into `out`.

    compute: 'common' computes in the promoted dtype; 'out' computes in the output's dtype
    (for ops whose result dtype differs from the inputs', such as comparisons).
    """
    def kernel(out, *operands):
        cd = opmath(common_dtype(*operands)) if compute == "common" else opmath(out.dtype)
        args = [operand(x) for x in operands]
        ufunc(*args, out=out._array(), dtype=cd, casting="unsafe")
    kernel.__name__ = kernel.__qualname__ = f"cpu_{ufunc.__name__}"
    return kernel


def float_ufunc_kernel(ufunc):
    """Kernel for ops that compute in floating point even on integer inputs (exp, sqrt)."""
    def kernel(out, *operands):
        cd = common_dtype(*operands)
        cd = opmath(out.dtype if cd.category < 2 else cd)
        args = [operand(x) for x in operands]
        ufunc(*args, out=out._array(), dtype=cd, casting="unsafe")
    kernel.__name__ = kernel.__qualname__ = f"cpu_{ufunc.__name__}"
    return kernel
