"""Dropout variants as in torch.nn.functional."""

__all__: list[str] = []
