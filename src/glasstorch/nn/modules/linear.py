"""Identity, Linear, Bilinear, LazyLinear-free: layers over nn.functional.linear/bilinear."""

__all__: list[str] = []
