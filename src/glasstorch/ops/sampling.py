"""Resampling and rearranging images: padding, interpolation, grid sampling, pixel shuffle."""
