"""Distances and similarities: normalize, cosine_similarity, pairwise_distance, pdist
(cdist is `glasstorch.cdist`, as in PyTorch). The ops live in ops/distance.py.

    >>> import glasstorch as torch
    >>> import glasstorch.nn.functional as F
    >>> F.normalize(torch.tensor([[3.0, 4.0]]))
    tensor([[0.6000, 0.8000]])
"""
from __future__ import annotations

from ...core.tensor import Tensor
from ...ops.nn import distance as _D
from ...ops.pointwise.elementwise import div as _div

__all__ = ["normalize", "cosine_similarity", "pairwise_distance", "pdist"]

cosine_similarity = _D.cosine_similarity
pairwise_distance = _D.pairwise_distance
pdist = _D.pdist


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p, eps) along `dim`."""
    if out is None:
        denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
        return input / denom
    denom = input.norm(p, dim, keepdim=True).clamp_min_(eps).expand_as(input)
    return _div.function(input, denom, out=out)
