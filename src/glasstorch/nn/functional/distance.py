"""Distances and similarities: normalize, cosine_similarity, pairwise_distance, cdist, pdist."""

__all__: list[str] = []
