"""Embedding and EmbeddingBag."""

__all__: list[str] = []
