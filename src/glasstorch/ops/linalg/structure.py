"""Products and norms of a matrix's structure: trace, renorm (per-slice norm capping),
kron (the Kronecker product). Kernels in backends/cpu/special_functions.py.
"""
from __future__ import annotations

from ...backends.cpu.special_functions import renorm_kernel, trace_kernel
from ...core import dtype as dt
from ...core.shape import wrap_dim
from ..autocast import FP32, autocast_policy
from ..registry import composite, into_out, require_tensor, spec, structured


def _trace_meta(self):
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    if self.dtype is dt.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    d = dt.int64 if self.dtype.category == dt.INT else self.dtype
    return spec((), d)


trace = structured("trace(Tensor self) -> Tensor", _trace_meta, inplace=False, out=False,
                   doc="The sum of the main diagonal of a matrix (integers give int64).")
trace.impl("CPU")(trace_kernel)


def _renorm_meta(self, p, dim, maxnorm):
    if self.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} "
                           "dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    wrap_dim(dim, self.dim())
    if self.dtype.category < dt.FLOAT:
        raise RuntimeError(f"renorm: expected a floating point or complex input, got "
                           f"{self.dtype.cname}")
    return spec(self._shape, self.dtype)


renorm = structured("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
                    _renorm_meta, doc="Rescale each slice along `dim` whose p-norm exceeds "
                                      "maxnorm to have norm maxnorm.")
renorm.impl("CPU")(renorm_kernel)


@composite(method=True)
def kron(input, other, *, out=None):
    """The Kronecker product; the operand with fewer dims gets leading 1s."""
    require_tensor("kron", "other", 2, other)
    n = max(input.dim(), other.dim())
    a_shape = (1,) * (n - input.dim()) + tuple(input.shape)
    b_shape = (1,) * (n - other.dim()) + tuple(other.shape)
    a = input.reshape([s for d in a_shape for s in (d, 1)])
    b = other.reshape([s for d in b_shape for s in (1, d)])
    result = (a * b).reshape([x * y for x, y in zip(a_shape, b_shape)])
    return into_out(out, result)


# autocast runs these in another precision (ops/autocast.py)
autocast_policy(renorm, cuda=FP32)
autocast_policy(trace, cpu=FP32)
