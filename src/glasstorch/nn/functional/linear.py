"""linear and bilinear as in torch.nn.functional."""

__all__: list[str] = []
