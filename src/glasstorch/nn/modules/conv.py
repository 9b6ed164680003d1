"""Conv1d/2d/3d and ConvTranspose1d/2d/3d, with padding modes."""

__all__: list[str] = []
