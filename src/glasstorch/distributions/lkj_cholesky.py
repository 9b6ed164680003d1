"""LKJCholesky(dim, concentration): Cholesky factors of correlation matrices, with density
proportional to det(L L^T)^(concentration - 1), sampled by the onion method."""
from __future__ import annotations

import math

import glasstorch

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """torch.distributions.LKJCholesky (Lewandowski, Kurowicka and Joe, 2009)."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = glasstorch.Size((dim, dim))
        # row i's squared norm off the diagonal is Beta(i/2, marginal - (i-1)/2)
        marginal = self.concentration + 0.5 * (self.dim - 2)
        offset = glasstorch.arange(self.dim - 1, dtype=self.concentration.dtype,
                                   device=self.concentration.device)
        offset = glasstorch.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=glasstorch.Size()):
        """The onion method: row i is a uniform direction in its first i coordinates scaled
        by the square root of a Beta draw, and the diagonal completes it to unit norm."""
        with glasstorch.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = glasstorch.randn(self._extended_shape(sample_shape), dtype=y.dtype,
                                      device=y.device).tril(-1)
            direction = normal / normal.norm(dim=-1, keepdim=True)
            direction[..., 0, :] = 0.0
            w = glasstorch.sqrt(y) * direction
            tiny = glasstorch.finfo(w.dtype).tiny
            diagonal = glasstorch.clamp(1 - glasstorch.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + glasstorch.diag_embed(diagonal)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = glasstorch.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = glasstorch.sum(order * diagonal.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = (0.5 * dm1 * math.log(math.pi) + glasstorch.mvlgamma(alpha - 0.5, dm1)
                      - glasstorch.lgamma(alpha) * dm1)
        return unnormalized - normalizer
