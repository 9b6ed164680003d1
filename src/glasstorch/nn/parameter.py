"""nn.Parameter and nn.Buffer."""

__all__: list[str] = []
