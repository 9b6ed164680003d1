"""Every loss function as a module."""

__all__: list[str] = []
