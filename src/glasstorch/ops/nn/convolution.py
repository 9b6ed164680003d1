"""Convolution and transposed convolution through strided windows (im2col) and BLAS.

A convolution reads every output position's receptive field as a window of one strided
NumPy view over the zero-padded input (no per-element loop), lays the windows out as
columns (one copy) and multiplies them with the weight in one `np.matmul` per group,
for a block of samples at a time (the block's columns stay in cache). A transposed
convolution is the adjoint: one matmul gives the columns, and col2im adds them back over
the kernel offsets (a loop over the few kernel positions, each a strided slice add).
`convolution_backward` computes the input, weight and bias gradients together, as
PyTorch's op of that name. The kernels are in backends/cpu/convolution.py. `im2col`/`col2im` (F.unfold/F.fold) are the same two steps on
their own. The kernels run on NumPy and CuPy arrays alike (on a GPU the batch is split
into far larger blocks: the columns need not fit a cache there).

    >>> x = glasstorch.ones(1, 1, 4, 4); w = glasstorch.ones(1, 1, 3, 3)
    >>> glasstorch.conv2d(x, w, padding=1)[0, 0, 0].tolist()
    [4.0, 6.0, 6.0, 4.0]
"""
from __future__ import annotations

import math

from ...core import dtype as dt
from ...core.device import META
from ...core.tensor import Tensor
from ..registry import composite, kernel_op, spec, structured, warn_user
from ..autocast import LOWER_PRECISION, autocast_policy
from ...backends.cpu.convolution import (_blocks, allocate_specs, col2im_cpu, conv_params,
    convolution_backward_into, convolution_cpu, im2col_cpu, suggest_layout)

# ---- convolution ------------------------------------------------------------------------

def _convolution_meta(input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups):
    *_, shape = conv_params(input, weight, bias, stride, padding, dilation, transposed,
                            output_padding, groups)
    return spec(shape, input.dtype, suggest_layout(shape, input, weight))


convolution = structured(
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,"
    " SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    _convolution_meta, method=False, inplace=False, promotes=False,
    doc="N-d convolution (transposed=True: its adjoint), the op behind conv*d and "
        "conv_transpose*d.")
convolution.impl("CPU")(convolution_cpu)


def _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride, padding,
                               dilation, transposed, output_padding, groups, output_mask):
    *_, shape = conv_params(input, weight, None, stride, padding, dilation, transposed,
                            output_padding, groups)
    if tuple(grad_output._shape) != shape:
        raise RuntimeError(f"convolution_backward: expected grad_output of size {list(shape)}, "
                           f"but got {list(grad_output._shape)}")
    layout = suggest_layout(input._shape, input, weight)
    return (spec(input._shape, input.dtype, layout) if output_mask[0] else None,
            spec(weight._shape, weight.dtype, suggest_layout(weight._shape, input, weight))
            if output_mask[1] else None,
            spec((shape[1],), input.dtype) if output_mask[2] else None)


convolution_backward = kernel_op(
    "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
    "SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, "
    "bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> "
    "(Tensor, Tensor, Tensor)", method=False, function=False,
    doc="The gradients of convolution for input, weight and bias (None where output_mask "
        "is False), computed together from one set of columns per operand.")
convolution_backward.on_cuda = "shared"


@convolution_backward.impl("CPU")
def _convolution_backward_cpu(grad_output, input, weight, bias_sizes, stride, padding,
                              dilation, transposed, output_padding, groups, output_mask):
    specs = _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride,
                                       padding, dilation, transposed, output_padding, groups,
                                       output_mask)
    g_input, g_weight, g_bias = allocate_specs(specs, input.device)
    convolution_backward_into(g_input, g_weight, g_bias, grad_output, input, weight, stride,
                              padding, dilation, transposed, output_padding, groups)
    return g_input, g_weight, g_bias


@convolution_backward.impl("Meta")
def _convolution_backward_meta_kernel(grad_output, input, weight, bias_sizes, stride, padding,
                                      dilation, transposed, output_padding, groups,
                                      output_mask):
    return allocate_specs(_convolution_backward_meta(
        grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
        output_padding, groups, output_mask), META)


# ---- conv1d/2d/3d and conv_transpose1d/2d/3d --------------------------------------------

def _tuple(value, nd: int) -> tuple:
    return (value,) * nd if isinstance(value, int) else tuple(value)


def _batchify(input, nd: int, name: str):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, ...)")
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input._shape)}")
    return input, False


def _same_padding(input, weight, stride, dilation, nd):
    """padding='same': symmetric padding, plus one extra zero row at the end of the dims
    whose total padding is odd (PyTorch pads the input for those)."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(dilation, weight._shape[2:])]
    padding = [t // 2 for t in totals]
    if any(t % 2 for t in totals):
        warn_user("Using padding='same' with even kernel lengths and odd dilation may "
                  "require a zero-padded copy of the input be created")
        from ..shape.joining import cat
        for i, t in enumerate(totals):
            if t % 2:
                dim = 2 + i
                shape = list(input._shape)
                shape[dim] = 1
                input = cat([input, input.new_zeros(shape)], dim)
    return input, padding


def _make_conv(nd: int):
    name = f"conv{nd}d"

    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        x, unbatched = _batchify(input, nd, name)
        stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
        if isinstance(padding, str):
            if padding == "same":
                x, padding = _same_padding(x, weight, stride, dilation, nd)
            elif padding == "valid":
                padding = (0,) * nd
            else:
                raise RuntimeError(f"Invalid padding string: '{padding}'")
        out = convolution(x, weight, bias, stride, _tuple(padding, nd), dilation, False,
                          (0,) * nd, groups)
        return out.squeeze(0) if unbatched else out
    conv.__name__ = conv.__qualname__ = name
    conv.__doc__ = (f"{name}(input, weight, bias=None, stride=1, padding=0, dilation=1, "
                    f"groups=1): {nd}-d convolution over a (N, C, ...) or unbatched input; "
                    "padding may be 'same' or 'valid'.")
    return composite(name)(conv)


def _make_conv_transpose(nd: int):
    name = f"conv_transpose{nd}d"

    def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                       groups=1, dilation=1):
        x, unbatched = _batchify(input, nd, name)
        out = convolution(x, weight, bias, _tuple(stride, nd), _tuple(padding, nd),
                          _tuple(dilation, nd), True, _tuple(output_padding, nd), groups)
        return out.squeeze(0) if unbatched else out
    conv_transpose.__name__ = conv_transpose.__qualname__ = name
    conv_transpose.__doc__ = (f"{name}(input, weight, bias=None, stride=1, padding=0, "
                              "output_padding=0, groups=1, dilation=1): the adjoint of "
                              f"conv{nd}d (weight is (C_in, C_out/groups, ...)).")
    return composite(name)(conv_transpose)


conv1d, conv2d, conv3d = (_make_conv(n) for n in (1, 2, 3))
conv_transpose1d, conv_transpose2d, conv_transpose3d = (_make_conv_transpose(n)
                                                        for n in (1, 2, 3))


# ---- im2col / col2im (F.unfold / F.fold) ------------------------------------------------

def _block_params(kernel_size, dilation, padding, stride, output_size=None):
    checks = (("kernel_size", kernel_size), ("dilation", dilation), ("padding", padding),
              ("stride", stride)) + ((("output_size", output_size),) if output_size else ())
    for name, v in checks:
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{kh} kernel_width: {kw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{dh} dilation_width: {dw}")
    if ph < 0 or pw < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} "
                           f"pad_width: {pw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {sh} "
                           f"stride_width: {sw}")


def _not_for(name: str, d: dt.dtype, allow_bool: bool) -> None:
    if d.category < 2 and not (allow_bool and d is dt.bool):
        raise NotImplementedError(f"\"{name}\" not implemented for '{d.cname}'")


def _im2col_meta(self, kernel_size, dilation, padding, stride):
    _block_params(kernel_size, dilation, padding, stride)
    s = self._shape
    if len(s) not in (3, 4) or 0 in s[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: {list(s)}")
    blocks = _blocks(s[-2:], kernel_size, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({s[-2]}, {s[-1]}), kernel_size="
                           f"{tuple(kernel_size)}, dilation={tuple(dilation)}, padding="
                           f"{tuple(padding)}, calculated shape of the array of sliding blocks "
                           f"as {blocks}, but its components must be at least one.")
    _not_for("im2col_out_cpu", self.dtype, True)
    return spec(s[:-3] + (s[-3] * math.prod(kernel_size), math.prod(blocks)), self.dtype)


im2col = structured("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding,"
                    " int[2] stride) -> Tensor", _im2col_meta, inplace=False, method=False,
                    function=False, promotes=False,
                    doc="Sliding blocks of a (N, C, H, W) input as (N, C*kh*kw, L) columns.")
im2col.impl("CPU")(im2col_cpu)


def _col2im_meta(self, output_size, kernel_size, dilation, padding, stride):
    _block_params(kernel_size, dilation, padding, stride, output_size)
    s = self._shape
    if len(s) not in (2, 3) or 0 in s[-2:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{list(s)}")
    k = math.prod(kernel_size)
    if s[-2] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={s[-2]} and "
                           f"kernel_size={tuple(kernel_size)}.")
    blocks = _blocks(output_size, kernel_size, dilation, padding, stride)
    if math.prod(blocks) != s[-1]:
        raise RuntimeError(f"Given output_size={tuple(output_size)}, kernel_size="
                           f"{tuple(kernel_size)}, dilation={tuple(dilation)}, padding="
                           f"{tuple(padding)}, stride={tuple(stride)}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {math.prod(blocks)}, but got "
                           f"input.size(2)={s[-1]}.")
    _not_for("col2im_out_cpu", self.dtype, False)
    return spec(s[:-2] + (s[-2] // k,) + tuple(output_size), self.dtype)


col2im = structured("col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, "
                    "int[2] dilation, int[2] padding, int[2] stride) -> Tensor", _col2im_meta,
                    inplace=False, method=False, function=False, promotes=False,
                    doc="Sum (N, C*kh*kw, L) columns back into a (N, C, H, W) image: the "
                        "adjoint of im2col.")
col2im.impl("CPU")(col2im_cpu)

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(convolution, cpu=LOWER_PRECISION, cuda=LOWER_PRECISION)
