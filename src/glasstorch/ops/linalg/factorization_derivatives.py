"""geqrf and the LDL^T factorization and solve have no derivative, as in PyTorch: their
outputs require grad, and backward through them raises."""
from __future__ import annotations

from ..derivative import derivative_not_implemented
from . import householder, ldl

derivative_not_implemented(householder.geqrf, ldl.linalg_ldl_factor_ex, ldl.linalg_ldl_solve)
