"""Convolution, unfold and fold: torch.nn.functional's signatures over ops/convolution.py."""

__all__: list[str] = []
