"""Embeddings and one_hot as in torch.nn.functional."""

__all__: list[str] = []
