"""Householder QR in LAPACK's compact form: geqrf, and the products of its reflectors
(linalg.householder_product / orgqr, ormqr).

geqrf is an operator with a CPU kernel (backends/cpu/factorizations.py); it has no
derivative, as in PyTorch. The products are composites: each reflector H_i = I - tau_i v_i
v_i^H is applied as a rank-one update, so their gradients (to the reflectors and to tau, and
to ormqr's other operand) come from matmul, cat and the arithmetic ops.
"""
from __future__ import annotations

from ...core.device import META
from ...core.tensor import Tensor
from ... import return_types
from ..creation.factories import ones, zeros
from ..creation.ranges import eye
from ..registry import composite, kernel_op
from ..shape.joining import cat
from ...backends.cpu.decompositions import _into, fortran_strides, need_tensor
from ...backends.cpu.factorizations import geqrf_cpu

geqrf = kernel_op("geqrf(Tensor self) -> (Tensor a, Tensor tau)", function=False,
                  doc="Householder QR in LAPACK's compact form: (a, tau).")
geqrf.impl("CPU")(geqrf_cpu)


@composite(name="geqrf")
def _geqrf_function(input, *, out=None):
    """(a, tau): R on and above a's diagonal, the Householder vectors below it, and their
    scales (torch.geqrf, with out=)."""
    return _into(geqrf(input), out, "geqrf")


@geqrf.impl("Meta")
def _geqrf_meta(self):
    if self.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    shape = tuple(self._shape)
    tau = shape[:-2] + (min(shape[-2:]),)
    return return_types.geqrf((Tensor._empty(shape, self.dtype, META, fortran_strides(shape)),
                               Tensor._empty(tau, self.dtype, META)))


def _reflector(A: Tensor, i: int) -> Tensor:
    """v_i as a column (batch, m, 1): zeros above i, 1 at i, A's column i below."""
    batch, m = tuple(A.shape[:-2]), A.shape[-2]
    head = [zeros(batch + (i, 1), dtype=A.dtype, device=A.device)] if i else []
    one = ones(batch + (1, 1), dtype=A.dtype, device=A.device)
    return cat(head + [one, A[..., i + 1:, i:i + 1]], -2) if i + 1 < m else cat(head + [one], -2)


def _apply_left(C: Tensor, v: Tensor, tau: Tensor) -> Tensor:
    """(I - tau v v^H) C."""
    return C - tau[..., None, None] * (v @ (v.mH @ C))


def _apply_right(C: Tensor, v: Tensor, tau: Tensor) -> Tensor:
    """C (I - tau v v^H)."""
    return C - tau[..., None, None] * ((C @ v) @ v.mH)


def _check_tau(name: str, input: Tensor, tau: Tensor) -> None:
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{input.dim()}")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype is not input.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype.cname} does not match input dtype "
                           f"{input.dtype.cname}")


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 H_2 ... H_k, the product of the Householder reflectors
    that geqrf stores in (A, tau)."""
    name = "torch.linalg.householder_product"
    need_tensor("linalg_householder_product", "input", 1, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    _check_tau(name, A, tau)
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    for i in reversed(range(tau.shape[-1])):
        Q = _apply_left(Q, _reflector(A, i), tau[..., i])
    return _into(Q, out, "linalg_householder_product")


@composite(method=True)
def orgqr(input, tau):
    """The Q of a QR factorization from geqrf's (a, tau): linalg.householder_product."""
    return householder_product(input, tau)


@composite(method=True)
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """other multiplied by Q = H_1 ... H_k (from geqrf's (input, tau)) without forming Q:
    Q other, Q^H other (transpose), other Q or other Q^H (left=False)."""
    name = "torch.ormqr"
    need_tensor("ormqr", "input", 1, input)
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    _check_tau(name, input, tau)
    if other.dtype is not input.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got "
                           f"other.dtype equal to {other.dtype.cname} and input.dtype equal to "
                           f"{input.dtype.cname}")
    k = tau.shape[-1]
    # Q = H_1 ... H_k: Q C applies H_k first; Q^H C applies H_1^H first; likewise on the right.
    order = range(k) if left == transpose else reversed(range(k))
    taus = tau.conj() if transpose else tau
    C = other
    for i in order:
        v = _reflector(input, i)
        C = _apply_left(C, v, taus[..., i]) if left else _apply_right(C, v, taus[..., i])
    return _into(C, out, "ormqr")

