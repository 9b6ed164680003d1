"""Flatten, Unflatten, padding, PixelShuffle, Upsample, CosineSimilarity, PairwiseDistance."""

__all__: list[str] = []
