"""BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RMSNorm, LocalResponseNorm layers."""

__all__: list[str] = []
