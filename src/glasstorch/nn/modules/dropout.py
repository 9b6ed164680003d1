"""The dropout layers."""

__all__: list[str] = []
