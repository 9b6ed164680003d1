"""The LDL^T factorization of symmetric (or Hermitian) indefinite matrices with
Bunch-Kaufman pivoting, and its solve: linalg.ldl_factor(_ex), linalg.ldl_solve.

Both are operators with CPU kernels (backends/cpu/factorizations.py: LAPACK's algorithm on
NumPy). PyTorch gives neither a derivative: their outputs require grad but backward raises.
"""
from __future__ import annotations

from ...core import dtype as dt
from ...core.device import META
from ...core.shape import broadcast_shapes2
from ...core.tensor import Tensor
from ... import return_types
from ..registry import kernel_op
from ...backends.cpu.decompositions import (_into, check_float, check_square, fortran_strides,
                                            need_tensor)
from ...backends.cpu.factorizations import ldl_factor_ex_cpu, ldl_solve_cpu, raise_for_ldl

linalg_ldl_factor_ex = kernel_op(
    "linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> "
    "(Tensor LD, Tensor pivots, Tensor info)", method=False, function=False,
    doc="(LD, pivots, info): the Bunch-Kaufman LDL^T factorization of each matrix.")
linalg_ldl_factor_ex.impl("CPU")(ldl_factor_ex_cpu)

linalg_ldl_solve = kernel_op(
    "linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor",
    method=False, function=False, doc="X with A X = B from ldl_factor's (LD, pivots).")
linalg_ldl_solve.impl("CPU")(ldl_solve_cpu)


def _meta(shape, dtype, fortran=False) -> Tensor:
    shape = tuple(shape)
    return Tensor._empty(shape, dtype, META, fortran_strides(shape) if fortran else None)


@linalg_ldl_factor_ex.impl("Meta")
def _ldl_factor_ex_meta(self, hermitian=False, check_errors=False):
    check_square("torch.linalg.ldl_factor_ex", self)
    check_float("torch.linalg.ldl_factor_ex", self)
    shape = tuple(self._shape)
    return return_types.linalg_ldl_factor_ex((_meta(shape, self.dtype, True),
                                              _meta(shape[:-1], dt.int32),
                                              _meta(shape[:-2], dt.int32)))


@linalg_ldl_solve.impl("Meta")
def _ldl_solve_meta(LD, pivots, B, hermitian=False):
    batch = broadcast_shapes2(tuple(LD._shape[:-2]), tuple(B._shape[:-2]))
    return _meta(batch + tuple(B._shape[-2:]), B.dtype, True)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): info > 0 marks a zero block of D instead of raising."""
    need_tensor("linalg_ldl_factor_ex", "A", 1, A)
    result = linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=check_errors)
    return _into(result, out, "linalg_ldl_factor_ex")


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots): A = P L D L^T P^T (L^H for Hermitian A), D with 1x1 and 2x2 blocks."""
    need_tensor("linalg_ldl_factor", "A", 1, A)
    LD, pivots, info = linalg_ldl_factor_ex(A, hermitian=hermitian)
    raise_for_ldl("torch.linalg.ldl_factor", info)
    return _into(return_types.linalg_ldl_factor((LD, pivots)), out, "linalg_ldl_factor_ex")


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B, A given by ldl_factor's (LD, pivots)."""
    need_tensor("linalg_ldl_solve", "LD", 1, LD)
    return _into(linalg_ldl_solve(LD, pivots, B, hermitian=hermitian), out, "linalg_ldl_solve")

