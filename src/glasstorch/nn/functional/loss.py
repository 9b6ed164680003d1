"""Loss functions as in torch.nn.functional."""

__all__: list[str] = []
