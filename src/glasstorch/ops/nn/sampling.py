"""Resampling and rearranging images: padding, interpolation, grid sampling, pixel shuffle.

Padding (reflect, replicate) and interpolation (nearest, linear, cubic) are separable: along
each spatial axis every output position reads a few input positions (`taps`: an index
vector and a weight vector per tap), computed once per call from the sizes with PyTorch's
source-index formulas in its compute precision. The forward pass gathers axis by axis
(innermost first, as PyTorch's kernels nest their sums); the backward pass scatters the
gradient back through the same taps in reverse (a stable sort and `add.reduceat`, so it is
deterministic). Each backward is an op of its own (PyTorch's `*_backward` ops) whose
derivative is the forward op again, so double backward works.

Circular padding and the `pad` entry point are composite, as in PyTorch. Grid sampling
reads, per output point, a few input taps whose flat positions, masks and weights come from
the grid; its first gradients are a fused kernel, and when the backward is itself recorded
they are written in differentiable ops instead. Pixel and channel shuffles are reshapes and
transposes of the array.

The kernels (backends/cpu/sampling.py) run on NumPy and CuPy arrays alike. Taps are computed
on the host from the sizes and moved to the GPU with the data; there the backward passes
scatter with atomic adds (`add.at`), as PyTorch's CUDA kernels do, instead of sorting.
"""
from __future__ import annotations

import math

import numpy as np

from ...backends.arrays import asarray
from ...core import dtype as dt
from ...core.shape import iterator_strides
from ...core.tensor import Tensor
from ...dispatch.dispatcher import define
from ...backends.cpu.convolution import suggest_layout
from ..copying.copies import assign_array
from ...core.promotion import opmath
from ..registry import composite, spec, structured
from ...backends.cpu.sampling import (BICUBIC, _NEAREST, _const, _grid_taps, affine_grid_cpu,
    base_grid, channel_shuffle_cpu, constant_pad_cpu, grid_sampler_backward_kernel,
    grid_sampler_kernel, pad_backward_kernel, pad_geometry, pad_kernel, pixel_shuffle_cpu,
    pixel_unshuffle_cpu, upsample_backward_kernel, upsample_kernel)


def composite_op(schema: str, fn):
    """An aten operator whose kernel is `fn`, written in other ops (so its autograd graph
    is theirs): PyTorch's CompositeImplicitAutograd."""
    op = define(schema)
    op.register("CompositeImplicitAutograd", fn)
    return op


# ---- separable gathers and their adjoint ------------------------------------------------

def _not_for(name: str, d: dt.dtype, allowed) -> None:
    if d not in allowed:
        raise NotImplementedError(f"\"{name}\" not implemented for '{d.cname}'")


_FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
_SIZES = ("D", "H", "W")


# ---- constant padding -------------------------------------------------------------------

def _check_constant_pad(self, pad):
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) > 2 * self.dim():
        raise RuntimeError("Length of pad should be no more than twice the number of dimensions "
                           f"of the input. Pad length is {len(pad)}while the input has "
                           f"{self.dim()}dimensions.")


def _cropped(self: Tensor, pad) -> tuple:
    """Shape of self narrowed by the negative pads, and whether any pad grows."""
    shape, grows = list(self._shape), False
    n = self.dim()
    for k in range(len(pad) // 2):
        d = n - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        if left < 0:
            if shape[d] + left < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
            shape[d] += left
        if right < 0:
            if shape[d] + right < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
            shape[d] += right
        grows = grows or left > 0 or right > 0
    return tuple(shape), grows


def _constant_pad_meta(self, pad, value=0):
    _check_constant_pad(self, pad)
    shape, grows = _cropped(self, pad)
    if not grows:           # only crops: a copy of the narrowed view, layout preserved
        return spec(shape, self.dtype, iterator_strides(shape, [(shape, self._stride)]))
    n = self.dim()
    out = list(shape)
    for k in range(len(pad) // 2):
        out[n - 1 - k] += max(pad[2 * k], 0) + max(pad[2 * k + 1], 0)
    return spec(out, self.dtype, suggest_layout(out, self))


constant_pad_nd = structured(
    "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", _constant_pad_meta,
    method=False, inplace=False, promotes=False,
    doc="self padded with `value` (pad[0], pad[1] before/after the last dim, then the one "
        "before it, ...); negative pads crop.")
constant_pad_nd.impl("CPU")(constant_pad_cpu)


# ---- reflection and replication padding -------------------------------------------------

def _make_pad(kind: str, nd: int):
    mode = "reflect" if kind == "reflection" else "replicate"
    name = f"{kind}_pad{nd}d"

    def meta(self, padding):
        shape = pad_geometry(name, mode, nd, self, padding)
        return spec(shape, self.dtype, suggest_layout(shape, self))

    decl = structured(f"{name}(Tensor self, SymInt[{2 * nd}] padding) -> Tensor", meta,
                      method=False, function=False, inplace=False, promotes=False,
                      doc=f"self padded on its last {nd} dims by {kind} of its values.")

    decl.impl("CPU")(pad_kernel(kind, nd))

    def backward_meta(grad_output, self, padding):
        return spec(self._shape, grad_output.dtype, suggest_layout(self._shape, self))

    back = structured(f"{name}_backward(Tensor grad_output, Tensor self, SymInt[{2 * nd}] "
                      "padding) -> Tensor", backward_meta, method=False, function=False,
                      inplace=False, promotes=False,
                      doc=f"Gradient of {name}: grad_output summed back onto self's positions.")

    back.impl("CPU")(pad_backward_kernel(kind, nd))
    return decl, back


reflection_pad1d, reflection_pad1d_backward = _make_pad("reflection", 1)
reflection_pad2d, reflection_pad2d_backward = _make_pad("reflection", 2)
reflection_pad3d, reflection_pad3d_backward = _make_pad("reflection", 3)
replication_pad1d, replication_pad1d_backward = _make_pad("replication", 1)
replication_pad2d, replication_pad2d_backward = _make_pad("replication", 2)
replication_pad3d, replication_pad3d_backward = _make_pad("replication", 3)


# ---- circular padding and the pad dispatcher (composite, as in PyTorch) -----------------

def _pad_circular_impl(self, pad):
    pad = tuple(pad)
    nd = len(pad) // 2
    shape = tuple(self._shape)
    if len(pad) % 2 or self.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Invalid padding size, expected 1 or 2 non-padded dimensions, which "
                           f"would be equivalent to padding of length {2 * (self.dim() - 1)} or "
                           f"{2 * (self.dim() - 2)} respectively but got {len(pad)}")
    first = self.dim() - nd
    out_shape = list(shape)
    for i in range(nd):
        left, right = pad[2 * (nd - 1 - i)], pad[2 * (nd - 1 - i) + 1]
        size = shape[first + i]
        out_shape[first + i] = size + left + right
        if left > size or right > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out_shape[first + i] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = self.new_empty(out_shape)
    out_slice, in_slice = out, self
    for i in range(nd):
        d = self.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        out_slice = out_slice.narrow(d, max(left, 0),
                                     out_shape[d] - max(left, 0) - max(right, 0))
        in_slice = in_slice.narrow(d, max(-left, 0), shape[d] - max(-left, 0) - max(-right, 0))
    out_slice.copy_(in_slice)
    for i in range(nd):       # wrap the borders around, one dim at a time (corners too)
        d = self.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        start = out_shape[d] - left - max(right, 0)
        overlap = (left > 0 and start < left) or (
            right > 0 and max(left, 0) + right > out_shape[d] - right)
        if overlap:
            raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation.")
        if left > 0:
            out.narrow(d, 0, left).copy_(out.narrow(d, start, left))
        if right > 0:
            out.narrow(d, out_shape[d] - right, right).copy_(
                out.narrow(d, max(left, 0), right))
    return out


_pad_circular = composite_op("_pad_circular(Tensor self, SymInt[] pad) -> Tensor",
                              _pad_circular_impl)

_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_NONCONSTANT = {"reflect": (reflection_pad1d, reflection_pad2d, reflection_pad3d),
                "replicate": (replication_pad1d, replication_pad2d, replication_pad3d)}


def _pad_impl(self, pad, mode="constant", value=None):
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pad = tuple(pad)
    n = self.dim()
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * n:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{n}")
    if mode == "constant":
        return constant_pad_nd(self, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    nd = len(pad) // 2
    if nd in (1, 2, 3) and n in (nd + 1, nd + 2):
        if mode == "circular":
            return _pad_circular(self, pad)
        return _NONCONSTANT[mode][nd - 1](self, pad)
    raise NotImplementedError(
        f"Padding size {len(pad)} is not supported for {n}D input tensor.\nSupported "
        "combinations for non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads "
        "last dimension)\n  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n  - 4D "
        "or 5D input: padding size = 6 (pads last 3 dimensions)")


pad = composite_op("pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) "
                    "-> Tensor", _pad_impl)


# ---- interpolation ops ------------------------------------------------------------------

_MODES = {  # family -> (grad_fn name stem, whether its taps are weighted)
    "nearest": ("UpsampleNearest", False),
    "_nearest_exact": ("UpsampleNearestExact", False),
    "linear": ("UpsampleLinear", True),
    "bilinear": ("UpsampleBilinear", True),
    "trilinear": ("UpsampleTrilinear", True),
    "bicubic": ("UpsampleBicubic", True),
}
_NEAREST_DTYPES = _FLOATS + (dt.uint8,)


def _sizes_text(names, sizes) -> str:
    return ", ".join(f"{n}: {s}" for n, s in zip(names, sizes))


def _check_upsample(name, nd, input_size, output_size):
    if len(output_size) != nd:
        raise RuntimeError(f"It is expected output_size equals to {nd}, but got size "
                           f"{len(output_size)}")
    if len(input_size) != nd + 2:
        raise RuntimeError(f"It is expected input_size equals to {nd + 2}, but got size "
                           f"{len(input_size)}")
    sizes = tuple(input_size[2:])
    if any(s <= 0 for s in sizes) or any(s <= 0 for s in output_size):
        names = _SIZES[3 - nd:]
        sep = " and output" if nd == 1 else " output"
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({_sizes_text(names, sizes)}){sep} "
                           f"({_sizes_text(names, output_size)})")


def _make_upsample(kind: str, nd: int):
    node, weighted = _MODES[kind]
    name = f"upsample_{kind}{nd}d" if not kind.startswith("_") else f"_upsample{kind}{nd}d"
    scale_names = ("scales",) if nd == 1 else tuple(f"scales_{a.lower()}"
                                                    for a in _SIZES[3 - nd:])
    scales_text = ", ".join(f"float? {s}=None" for s in scale_names)
    ac = "bool align_corners, " if weighted else ""
    allowed = _FLOATS if weighted else _NEAREST_DTYPES

    def meta(self, output_size, *rest):
        _check_upsample(name, nd, self._shape, output_size)
        if self.numel() == 0 and 0 in self._shape[1:]:
            raise RuntimeError(f"Non-empty {nd + 2}D data tensor expected but got a tensor with "
                               f"sizes {list(self._shape)}")
        _not_for(name, self.dtype, allowed)
        shape = tuple(self._shape[:2]) + tuple(output_size)
        return spec(shape, self.dtype, suggest_layout(shape, self))

    decl = structured(f"{name}(Tensor self, SymInt[{nd}] output_size, {ac}{scales_text}) -> "
                      "Tensor", meta, method=False, function=False, inplace=False,
                      promotes=False, doc=f"{kind.strip('_')} interpolation of the last {nd} "
                                          "dims to output_size.")

    decl.impl("CPU")(upsample_kernel(kind, nd, weighted))

    def backward_meta(grad_output, output_size, input_size, *rest):
        _check_upsample(name, nd, input_size, output_size)
        shape = tuple(input_size)
        if tuple(grad_output._shape) != tuple(input_size[:2]) + tuple(output_size):
            raise RuntimeError(f"{name}_backward: expected grad_output of shape "
                               f"{list(input_size[:2]) + list(output_size)}, but got "
                               f"{list(grad_output._shape)}")
        return spec(shape, grad_output.dtype, suggest_layout(shape, grad_output))

    back = structured(f"{name}_backward(Tensor grad_output, SymInt[{nd}] output_size, "
                      f"SymInt[{nd + 2}] input_size, {ac}{scales_text}) -> Tensor",
                      backward_meta, method=False, function=False, inplace=False,
                      promotes=False, doc=f"Gradient of {name}.")

    back.impl("CPU")(upsample_backward_kernel(kind, nd, weighted))

    vec = composite_op(
        f"{name}.vec(Tensor input, SymInt[]? output_size, {ac}float[]? scale_factors) -> Tensor",
        _vec_impl(decl, nd, weighted))
    return decl, back, vec


def _vec_impl(decl, nd, weighted):
    """The .vec overload: output size from output_size or from scale_factors (then also
    passed on as the scales), as PyTorch's Python calls it."""
    def impl(input, output_size, *rest):
        align_corners, scale_factors = (rest[0], rest[1]) if weighted else (None, rest[0])
        spatial = input.dim() - 2
        if (output_size is None) == (scale_factors is None):
            raise RuntimeError("Must specify exactly one of output_size and scale_factors")
        if output_size is not None:
            if len(output_size) != spatial:
                raise RuntimeError(f"{decl.name}.vec: expected output_size to have one entry per "
                                   f"spatial dimension of the {input.dim()}-D input "
                                   f"({spatial}), but got {len(output_size)}")
            size, scales = tuple(output_size), (None,) * nd
        else:
            if len(scale_factors) != spatial:
                raise RuntimeError(f"{decl.name}.vec: expected scale_factors to have one entry "
                                   f"per spatial dimension of the {input.dim()}-D input "
                                   f"({spatial}), but got {len(scale_factors)}")
            size = tuple(int(n * s) for n, s in zip(input._shape[2:], scale_factors))
            scales = tuple(float(s) for s in scale_factors)
        if weighted:
            return decl(input, size, align_corners, *scales)
        return decl(input, size, *scales)
    return impl


UPSAMPLE = {}      # (kind, nd) -> (the op, its backward op, its .vec overload)
for _kind, _nds in (("nearest", (1, 2, 3)), ("_nearest_exact", (1, 2, 3)), ("linear", (1,)),
                    ("bilinear", (2,)), ("bicubic", (2,)), ("trilinear", (3,))):
    for _nd in _nds:
        UPSAMPLE[_kind, _nd] = _make_upsample(_kind, _nd)


# ---- pixel shuffle and channel shuffle -------------------------------------------------

def _shuffle_layout(shape, self):
    return suggest_layout(shape, self) if len(shape) == 4 else None


def _check_factor(name, what, factor, self):
    if self.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {self.dim()} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def _pixel_shuffle_meta(self, upscale_factor):
    r = upscale_factor
    _check_factor("pixel_shuffle", "upscale_factor", r, self)
    *batch, c, h, w = self._shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    shape = (*batch, c // (r * r), h * r, w * r)
    return spec(shape, self.dtype, _shuffle_layout(shape, self))


pixel_shuffle = structured("pixel_shuffle(Tensor self, int upscale_factor) -> Tensor",
                           _pixel_shuffle_meta, method=False, inplace=False, promotes=False,
                           doc="(*, C*r*r, H, W) -> (*, C, H*r, W*r): each group of r*r "
                               "channels becomes an r x r block of pixels.")
pixel_shuffle.impl("CPU")(pixel_shuffle_cpu)


def _pixel_unshuffle_meta(self, downscale_factor):
    r = downscale_factor
    _check_factor("pixel_unshuffle", "downscale_factor", r, self)
    *batch, c, h, w = self._shape
    for what, dim, n in (("height", -2, h), ("width", -1, w)):
        if n % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by "
                               f"downscale_factor, but input.size({dim})={n} is not divisible "
                               f"by {r}")
    shape = (*batch, c * r * r, h // r, w // r)
    return spec(shape, self.dtype, _shuffle_layout(shape, self))


pixel_unshuffle = structured("pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor",
                             _pixel_unshuffle_meta, method=False, inplace=False,
                             promotes=False, doc="The inverse of pixel_shuffle.")
pixel_unshuffle.impl("CPU")(pixel_unshuffle_cpu)


def _channel_shuffle_meta(self, groups):
    if self.dim() <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(self._shape)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = self._shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    return spec(self._shape, self.dtype, _shuffle_layout(self._shape, self))


channel_shuffle = structured("channel_shuffle(Tensor self, SymInt groups) -> Tensor",
                             _channel_shuffle_meta, method=False, inplace=False,
                             promotes=False, doc="Channels (g, C/g) reordered as (C/g, g): "
                                                 "interleave the groups.")
channel_shuffle.impl("CPU")(channel_shuffle_cpu)


@composite()
def native_channel_shuffle(input, groups):
    """channel_shuffle (PyTorch's native kernel entry point)."""
    return channel_shuffle(input, groups)


# ---- grid sampling ----------------------------------------------------------------------
# Source coordinates come from the grid (x indexes the last input dim), unnormalised
# from [-1, 1], then folded back by the padding mode. Each output point reads 2**k corners
# (bilinear), one pixel (nearest) or a 4x4 neighbourhood (bicubic, 2-d); every tap is a
# vector of flat input positions, weights and in-bounds masks over all output points.

def _check_grid_sampler(input, grid, interpolation_mode):
    if input._shape[0] != grid._shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input._shape)} and grid with sizes "
                           f"{list(grid._shape)}")
    if grid._shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in "
                           f"last dimension, but got grid with sizes {list(grid._shape)}")
    for i in range(2, input.dim()):
        if input._shape[i] <= 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input._shape)} with "
                               f"dimension {i} being empty")


def _check_grid_sampler_nd(nd, input, grid, interpolation_mode):
    if input.dim() != nd + 2 or grid.dim() != nd + 2:
        raise RuntimeError(f"grid_sampler(): expected {nd + 2}D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input._shape)} and "
                           f"grid with sizes {list(grid._shape)}")
    if nd == 3 and interpolation_mode == BICUBIC:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    _check_grid_sampler(input, grid, interpolation_mode)
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.cname} but found "
                           f"{grid.dtype.cname}")
    _not_for(f"grid_sampler_{nd}d_cpu_kernel_impl", input.dtype, _FLOATS)


def grid_sampler_grads(grad, input, grid, mode, padding_mode, align_corners):
    """The gradients of grid_sampler for input and grid written in differentiable ops
    (scatter_add, gather and arithmetic on the tap weights as functions of the grid), for
    a backward pass that is itself recorded (double backward)."""
    from ..registry import functions as fn
    n, c = input._shape[:2]
    sizes = tuple(input._shape[2:])
    k, total = len(sizes), math.prod(sizes)
    flat_grid = grid.reshape(n, -1, k)
    taps = _grid_taps(grid.detach()._array(), sizes, mode, padding_mode, align_corners,
                      True, flat_grid)
    points = flat_grid._shape[1]
    go = grad.reshape(n, c, points)
    x = input.reshape(n, c, total)
    index = _const(np.concatenate([f for f, *_ in taps], axis=1), grid)
    index = index.unsqueeze(1).expand(n, c, index._shape[1])
    masks = [_const(v.astype(np.float64), grid) for _, v, _, _ in taps]
    parts = [go * (m if w is None else w * m).unsqueeze(1) for (_, _, w, _), m in
             zip(taps, masks)]
    g_input = x.new_zeros((n, c, total)).scatter_add(2, index, fn["cat"](parts, 2))
    if mode == _NEAREST:
        return g_input.reshape(input._shape), grid.new_zeros(grid._shape)
    per_dim = [0] * k
    for t, ((flat, _, _, dw), m) in enumerate(zip(taps, masks)):
        read = x.gather(2, index[:, :, t * points:(t + 1) * points])
        common = (read * go).sum(1) * m
        for e in range(k):
            per_dim[e] = per_dim[e] + common * dw[e]
    g_grid = fn["stack"](per_dim, -1).reshape(grid._shape)
    return g_input.reshape(input._shape), g_grid


def _make_grid_sampler(nd: int):
    name = f"grid_sampler_{nd}d"

    def meta(input, grid, interpolation_mode, padding_mode, align_corners):
        _check_grid_sampler_nd(nd, input, grid, interpolation_mode)
        return spec(tuple(input._shape[:2]) + tuple(grid._shape[1:-1]), input.dtype)

    decl = structured(f"{name}(Tensor input, Tensor grid, int interpolation_mode, "
                      "int padding_mode, bool align_corners) -> Tensor", meta, method=False,
                      inplace=False, promotes=False,
                      doc=f"Sample the input at the {nd}-d grid's points.")

    decl.impl("CPU")(grid_sampler_kernel(nd))

    def backward_meta(grad_output, input, grid, interpolation_mode, padding_mode,
                      align_corners, output_mask):
        return spec(input._shape, input.dtype), spec(grid._shape, grid.dtype)

    back = structured(f"{name}_backward(Tensor grad_output, Tensor input, Tensor grid, "
                      "int interpolation_mode, int padding_mode, bool align_corners, "
                      "bool[2] output_mask) -> (Tensor, Tensor)", backward_meta, method=False,
                      function=False, inplace=False, out=False, promotes=False,
                      doc=f"Gradients of {name} for input and grid.")

    back.impl("CPU")(grid_sampler_backward_kernel(nd))
    return decl, back


grid_sampler_2d, grid_sampler_2d_backward = _make_grid_sampler(2)
grid_sampler_3d, grid_sampler_3d_backward = _make_grid_sampler(3)


def _grid_sampler_impl(input, grid, interpolation_mode, padding_mode, align_corners):
    _check_grid_sampler(input, grid, interpolation_mode)
    if input.dim() == 4:
        return grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)
    return grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners)


grid_sampler = composite_op("grid_sampler(Tensor input, Tensor grid, int interpolation_mode, "
                             "int padding_mode, bool align_corners) -> Tensor",
                             _grid_sampler_impl)


@composite(name="grid_sampler")
def _grid_sampler_function(input, grid, interpolation_mode, padding_mode, align_corners):
    """Sample input at the grid's points (2-d or 3-d by the input's rank); the modes are
    F.grid_sample's, as integers."""
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


# ---- affine grids -----------------------------------------------------------------------

def base_grid_tensor(theta: Tensor, sizes, align_corners: bool) -> Tensor:
    """base_grid as a tensor of theta's dtype (for the gradient formula)."""
    arr = base_grid(sizes, align_corners, opmath(theta.dtype).type)
    out = Tensor._empty(arr.shape, theta.dtype, theta.device)
    assign_array(out._array(), asarray(arr, like=out._array()))
    return out


def _affine_grid_meta(theta, size, align_corners):
    size = tuple(size)
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    k = len(size) - 2
    if theta.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if theta._shape[0] != size[0] or theta._shape[2] != k + 1:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {k + 1}] but got: [{theta._shape[0]}, "
                           f"{theta._shape[2]}].")
    if theta._shape[1] != k:
        raise RuntimeError(f"shape '{[size[0]] + list(size[2:]) + [k]}' is invalid for input of "
                           f"size {size[0] * math.prod(size[2:]) * theta._shape[1]}")
    _not_for("affine_grid_generator", theta.dtype, _FLOATS)
    return spec((size[0],) + size[2:] + (k,), theta.dtype)


affine_grid_generator = structured(
    "affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor",
    _affine_grid_meta, method=False, inplace=False, promotes=False,
    doc="The sampling grid of the affine maps theta (N, k, k+1) over an output of `size`.")
affine_grid_generator.impl("CPU")(affine_grid_cpu)
