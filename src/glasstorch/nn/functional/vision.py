"""pad, interpolate, grid_sample, affine_grid and pixel_shuffle as in torch.nn.functional."""

__all__: list[str] = []
