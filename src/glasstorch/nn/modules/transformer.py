"""MultiheadAttention and the Transformer layers."""

__all__: list[str] = []
