"""Pooling: torch.nn.functional's signatures over ops/pooling.py."""

__all__: list[str] = []
