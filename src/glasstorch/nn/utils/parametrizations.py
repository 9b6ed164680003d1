"""Parametrizations built on nn.utils.parametrize: weight_norm, spectral_norm, orthogonal."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm over every dim but `dim`, kept as size-1 dims (dim=-1: the whole tensor,
    a 0-dim result, as torch.norm_except_dim)."""
    from ...linalg import vector_norm
    if dim == -1:
        return vector_norm(v)
    ndim = v.dim()
    dim %= ndim
    if 0 < dim < ndim - 1:      # torch moves the dim to the front and back (strides follow)
        return _norm_except_dim(v.transpose(0, dim), 0).transpose(0, dim)
    others = tuple(d for d in range(ndim) if d != dim)
    return vector_norm(v, 2, others, keepdim=True) if others else v.abs()


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """weight = g * v / ||v||: the magnitude g (parametrizations.<name>.original0) and the
    direction v (original1) are learned separately (Salimans & Kingma, 2016)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                     unexpected_keys, error_msgs):
        # checkpoints made with the legacy nn.utils.weight_norm use <name>_g / <name>_v
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12):
        super().__init__()
        from ..functional import normalize
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = mat.new_empty(h).normal_(0, 1)
            v = mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat: Tensor, n_power_iterations: int) -> None:
        """Refine the singular-vector estimates u, v in place (no autograd history)."""
        from ..functional import normalize
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        from ..functional import normalize
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """weight / sigma(weight), sigma the largest singular value estimated by power
    iteration (one step per training-mode access) (Miyato et al., 2018)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules import conv
        transposed = tuple(getattr(conv, n) for n in ("ConvTranspose1d", "ConvTranspose2d",
                                                      "ConvTranspose3d") if hasattr(conv, n))
        dim = 1 if transposed and isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---- orthogonal ----------------------------------------------------------------------------

def _is_orthogonal(Q: Tensor) -> bool:
    from ...core.dtype import finfo
    from ...ops.creation.ranges import eye
    n, k = Q.size(-2), Q.size(-1)
    eye_k = eye(k, dtype=Q.dtype, device=Q.device)
    return (Q.mH @ Q).allclose(eye_k, atol=10.0 * n * finfo(Q.dtype).eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A = QR (A tall) with diag(R) real and non-negative."""
    from ...linalg import qr
    Q, R = qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i the i-th column
    of A below the diagonal and 1 on it (LAPACK's orgqr; differentiable, one step per
    reflector)."""
    from ...ops.creation.ranges import eye
    m, n = A.size(-2), A.size(-1)
    ident = eye(m, n, dtype=A.dtype, device=A.device)
    V = A.tril(-1) + ident
    Q = ident.expand(*A.shape[:-2], m, n)
    for i in reversed(range(tau.size(-1))):
        v = V[..., :, i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mH @ Q))
    return Q


def _geqrf(A: Tensor):
    """LAPACK's geqrf for real A (m >= n): R on and above the diagonal, the Householder
    vectors below it, and their scales tau (no autograd: used to initialise originals)."""
    from ...linalg import vector_norm
    from ...ops.shape.joining import stack
    A = A.clone()
    m, n = A.size(-2), A.size(-1)
    taus = []
    for j in range(min(m, n)):
        alpha = A[..., j, j].clone()
        xnorm = vector_norm(A[..., j + 1:, j], dim=-1) if j + 1 < m else alpha.new_zeros(
            alpha.shape)
        zero = xnorm == 0
        sign = (alpha >= 0).to(A.dtype) * 2 - 1
        beta = -sign * (alpha * alpha + xnorm * xnorm).sqrt()
        safe_beta = beta.where(~zero, beta.new_ones(()))
        tau = ((beta - alpha) / safe_beta).where(~zero, beta.new_zeros(()))
        scale = (1 / (alpha - beta).where(~zero, beta.new_ones(()))).where(
            ~zero, beta.new_zeros(()))
        A[..., j + 1:, j] *= scale.unsqueeze(-1)
        A[..., j, j] = beta.where(~zero, alpha)
        if j + 1 < n:    # apply H_j to the trailing columns
            v = A[..., j:, j:j + 1].clone()
            v[..., 0, 0] = 1
            trail = A[..., j:, j + 1:]
            trail -= tau.unsqueeze(-1).unsqueeze(-1) * (v @ (v.mT @ trail))
        taus.append(tau)
    return A, stack(taus, dim=-1)


_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        from ...ops.creation.ranges import eye
        from ...ops.shape.joining import cat
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = A.matrix_exp()
            else:
                from ...linalg import solve
                ident = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(ident - A * 0.5, ident + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        from ...ops.creation.factories import zeros_like
        from ...ops.random.samplers import randn
        from ...ops.shape.joining import cat
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        with no_grad():
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in ("cayley", "matrix_exp"):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations "
                                              "when use_trivialization=False.")
                A, tau = _geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                diag.copy_(diag.sign() * (1 - 2 * (tau == 0).to(A.dtype)))
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = randn(*(Q.shape[:-2] + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            neg_id = zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep module.<name> (a matrix or batch of them) orthogonal/unitary, as the image of an
    unconstrained original under matrix_exp, cayley or householder."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1)
                          or weight.is_complex() else "householder")
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
