"""glasstorch.special: the special functions of torch.special.

Most are the top-level operators under SciPy-style names (expit is sigmoid, gammaln is
lgamma, ...); the ones only torch.special has (i0e, i1, i1e, erfcx, ndtri, log_ndtr, entr,
xlog1py, zeta, the Bessel functions, the orthogonal polynomials) are `special_*` operators
declared in `ops/misc_math.py`. Those PyTorch does not differentiate (Airy Ai, Bessel J,
Y, K, modified I, the polynomials) run without recording a graph, so their results never
require grad, as in PyTorch.
"""
from __future__ import annotations

import math

from .ops.nn import loss as _loss
from .ops.pointwise import special_functions as _mm
from .ops.pointwise import elementwise as _pw
from .ops.reduction import reductions as _red

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "digamma", "entr", "erf", "erfc",
    "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0",
    "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy",
    "zeta", *_mm.POLYNOMIALS,
]

expit = _pw.sigmoid.function
logit = _pw.logit.function
erf = _pw.erf.function
erfc = _pw.erfc.function
erfinv = _pw.erfinv.function
exp2 = _pw.exp2.function
expm1 = _pw.expm1.function
log1p = _pw.log1p.function
xlogy = _pw.xlogy.function
gammaln = _pw.lgamma.function
gammainc = _mm.igamma.function
gammaincc = _mm.igammac.function
digamma = psi = _pw.digamma.function
round = _pw.round.function
logsumexp = _red.logsumexp.function
polygamma = _mm.polygamma
multigammaln = _mm.mvlgamma.function
i0 = _mm.i0.function
sinc = _mm.sinc.function
i0e = _mm.special_i0e.function
i1 = _mm.special_i1.function
i1e = _mm.special_i1e.function
erfcx = _mm.special_erfcx.function
ndtri = _mm.special_ndtri.function
log_ndtr = _mm.special_log_ndtr.function
entr = _mm.special_entr.function
xlog1py = _mm.special_xlog1py.function
zeta = _mm.special_zeta.function

_SQRT1_2 = math.sqrt(0.5)


# No graph is recorded for these (their ops are declared not differentiable), as in PyTorch.
airy_ai = _mm.special_airy_ai.function
bessel_j0 = _mm.special_bessel_j0.function
bessel_j1 = _mm.special_bessel_j1.function
bessel_y0 = _mm.special_bessel_y0.function
bessel_y1 = _mm.special_bessel_y1.function
spherical_bessel_j0 = _mm.special_spherical_bessel_j0.function
modified_bessel_i0 = _mm.special_modified_bessel_i0.function
modified_bessel_i1 = _mm.special_modified_bessel_i1.function
modified_bessel_k0 = _mm.special_modified_bessel_k0.function
modified_bessel_k1 = _mm.special_modified_bessel_k1.function
scaled_modified_bessel_k0 = _mm.special_scaled_modified_bessel_k0.function
scaled_modified_bessel_k1 = _mm.special_scaled_modified_bessel_k1.function


def ndtr(input, *, out=None):
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2, computed as PyTorch does."""
    return _mm.into_out(out, (1 + erf(input * _SQRT1_2)) * 0.5)


def softmax(input, dim, *, dtype=None):
    """glasstorch.softmax, with dtype keyword-only as in torch.special."""
    return _loss.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """glasstorch.log_softmax, with dtype keyword-only as in torch.special."""
    return _loss.log_softmax(input, dim, dtype=dtype)


for _name, _decl in _mm.polynomial_ops.items():
    globals()[_name] = _decl.function      # (x, n), as PyTorch names them
