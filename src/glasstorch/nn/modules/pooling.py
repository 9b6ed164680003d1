"""Max, average, adaptive and power-average pooling layers."""

__all__: list[str] = []
