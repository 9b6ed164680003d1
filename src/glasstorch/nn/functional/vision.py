"""pad, interpolate, grid_sample, affine_grid and pixel_shuffle as in torch.nn.functional."""
from __future__ import annotations

import warnings

import numpy as np

from ...core.tensor import Tensor
from ...ops.nn import sampling as _s
from . import pooling as _pooling

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "grid_sample", "affine_grid"]


def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    """Pad the last len(pad)//2 dims of input: pad = (left, right) for the last dim, then
    the one before it, ...; negative pads crop. mode: 'constant' (with `value`, default 0),
    'reflect', 'replicate' or 'circular' (these pad 1 to 3 trailing dims of a batched or
    unbatched input)."""
    return _s.pad(input, pad, mode, value)


# ---- interpolate ---------------------------------------------------------------------------

_MODE_NAMES = ("nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
               "nearest-exact")
_INTERPOLATING = {("linear", 1): "linear", ("bilinear", 2): "bilinear",
                  ("bicubic", 2): "bicubic", ("trilinear", 3): "trilinear",
                  ("nearest", 1): "nearest", ("nearest", 2): "nearest",
                  ("nearest", 3): "nearest", ("nearest-exact", 1): "_nearest_exact",
                  ("nearest-exact", 2): "_nearest_exact", ("nearest-exact", 3): "_nearest_exact"}
_NEEDS = {"linear": 3, "bilinear": 4, "trilinear": 5}


def _is_integer(x) -> bool:
    if isinstance(x, (int, np.integer)):
        return True
    return isinstance(x, Tensor) and not x.is_floating_point()


def _output_and_scales(input, size, scale_factor, dim):
    """(output_size, scale_factors), exactly one of them a list, after F's checks."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, "
                                "int] or Tuple[int, int, int], but got size with types "
                                f"{[type(x) for x in size]}")
            return [int(x) for x in size], None
        if not _is_integer(size):
            raise TypeError(f"upsample(): argument 'output_size' must be tuple of ints, but "
                            f"found element of type {type(size).__name__}")
        return [int(size)] * dim, None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dim:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {list(input.shape[2:])} and "
                f"scale_factor of shape {scale_factor}. Please provide input tensor in (N, C, "
                "d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
        return None, [float(s) for s in scale_factor]
    return None, [float(scale_factor)] * dim


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners=None, recompute_scale_factor=None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an (N, C, d1, ..., dK) input, K = 1 to 3, to `size` or by
    `scale_factor`: nearest, nearest-exact, (bi/tri)linear, bicubic or area averaging.
    With a scale factor the source positions use it unless recompute_scale_factor=True
    (then only the output size derived from it counts). antialias=True is not supported."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    output_size, scale_factors = _output_and_scales(input, size, scale_factor, dim)
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [int(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode == "lanczos" and input.dim() == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if antialias:
        raise NotImplementedError(f"interpolate(): antialias=True ({mode} with an anti-alias "
                                  "filter) is not supported by glasstorch")
    if mode == "area" and dim in (1, 2, 3):
        return getattr(_pooling, f"adaptive_avg_pool{dim}d")(input, output_size)
    kind = _INTERPOLATING.get((mode, dim))
    if kind is not None:
        vec = _s.UPSAMPLE[kind, dim][2]
        if kind in ("nearest", "_nearest_exact"):
            return vec(input, output_size, scale_factors)
        return vec(input, output_size, align_corners, scale_factors)
    needs = _NEEDS.get(mode)
    if needs is not None and input.dim() in (3, 4, 5):
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {needs}D "
                                  "input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.dim()}D) for the modes: {_MODE_NAMES} (got {mode})")


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners=None) -> Tensor:
    """Deprecated alias of interpolate (warns, as torch)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- pixel and channel shuffles ----------------------------------------------------------

def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r), r = upscale_factor."""
    return _s.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), r = downscale_factor."""
    return _s.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the `groups` groups of channels of an (N, C, *) input."""
    return _s.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


# ---- grid sampling -------------------------------------------------------------------------

_GRID_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GRID_PADDING = {"zeros": 0, "border": 1, "reflection": 2}
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners=None) -> Tensor:
    """Sample input (N, C, H, W) or (N, C, D, H, W) at grid's points (N, *out, 2 or 3) in
    [-1, 1] (x first), by bilinear, nearest or (4-D only) bicubic interpolation; points
    outside read zeros, the border, or the reflected image."""
    if mode not in _GRID_MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _GRID_PADDING:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return _s.grid_sampler(input, grid, _GRID_MODES[mode], _GRID_PADDING[padding_mode],
                           align_corners)


def affine_grid(theta: Tensor, size, align_corners=None) -> Tensor:
    """The grid_sample grid of the affine maps theta: (N, 2, 3) for size (N, C, H, W),
    (N, 3, 4) for size (N, C, D, H, W)."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError("Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError("Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return _s.affine_grid_generator(theta, size, align_corners)
