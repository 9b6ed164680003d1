"""Max, average, adaptive and power-average pooling over strided windows.

Fixed-size pools read every output's window from one strided view of the padded input
(-inf padding for max, zeros for average) and reduce over the kernel axes; a max pool's
indices are flat positions in the input's spatial plane, as PyTorch's. Adaptive average
pools are one small averaging matrix per spatial dim (separable, BLAS); adaptive max pools
gather each window, padded to the longest window by repeating its last element. The
gradients of max pools scatter-add through the indices; average pools add back through
col2im. 1-d pools are 2-d pools over an inserted dim, as in PyTorch. The kernels
(backends/cpu/pooling.py) run on NumPy and CuPy arrays alike; small index and weight tables are made on the host and moved
to the GPU with the data.

    >>> x = glasstorch.arange(16.).reshape(1, 1, 4, 4)
    >>> glasstorch.max_pool2d(x, 2).flatten().tolist()
    [5.0, 7.0, 13.0, 15.0]
"""
from __future__ import annotations

import math

from ...core import dtype as dt
from ...core.tensor import Tensor
from ...backends.cpu.convolution import suggest_layout
from ..registry import composite, spec, structured
from ...backends.cpu.pooling import (_avg_args, _pool_params, _sizes, _x,
    adaptive_avg_backward_kernel, adaptive_avg_kernel, adaptive_max_backward_kernel,
    adaptive_max_kernel, avg_pool_backward_kernel, avg_pool_kernel, max_pool_backward_kernel,
    max_pool_kernel, max_unpool_kernel)

_AXES = {2: ("H", "W"), 3: ("T", "H", "W")}


# ---- geometry and checks ----------------------------------------------------------------

def _out_size(n, k, s, p, d, ceil_mode) -> int:
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > ((k - 1) * d + 1) // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={p}, kernel_size={k} and dilation={d}")
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_geometry(self, nd, kernel, stride, padding, dilation, ceil_mode):
    """Output spatial sizes of a fixed-size pool, after PyTorch's shape checks."""
    shape = self._shape
    sizes = shape[-nd:] if len(shape) >= nd else ()
    out = tuple(_out_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in
                zip(sizes, kernel, stride, padding, dilation))
    axes = _AXES[nd]
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got "
                           + " ".join(f"k{a}: {k}" for a, k in zip(axes, kernel)))
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should be greater than zero, but got "
                           + " ".join(f"d{a}: {s}" for a, s in zip(axes, stride)))
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero, but got "
                           + " ".join(f"dilation{a}: {d}" for a, d in zip(axes, dilation)))
    if len(shape) not in (nd + 1, nd + 2) or 0 in shape[-nd - 1:]:
        if nd == 3:
            raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got:{list(shape)}")
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        if nd == 2:
            (kh, kw), (ph, pw) = kernel, padding
            got = f"padW = {pw}, padH = {ph}, kW = {kw}, kH = {kh}"
        else:
            (kt, kh, kw), (pt, ph, pw) = kernel, padding
            got = f"kT: {kt} kW: {kw} kH: {kh} padT: {pt} padW: {pw} padH: {ph}"
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"{got}")
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input size: ({_x(shape[-nd - 1:])}). Calculated output "
                           f"size: ({_x((shape[-nd - 1],) + out)}). Output size is too small")
    return out


def _not_for(name: str, d: dt.dtype, ints=True) -> None:
    if d is dt.bool or d.is_complex or (not ints and d.category < 2):
        raise NotImplementedError(f"\"{name}\" not implemented for '{d.cname}'")


# ---- max pooling ------------------------------------------------------------------------

def _make_max_pool(nd: int):
    name = f"max_pool{nd}d_with_indices"

    def meta(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
        k, s, p, d = _pool_params(f"max_pool{nd}d", nd, kernel_size, stride, padding, dilation)
        out = _pool_geometry(self, nd, k, s, p, d, ceil_mode)
        _not_for(f"max_pool{nd}d", self.dtype)
        shape = self._shape[:-nd] + out
        stride_ = suggest_layout(shape, self)
        return spec(shape, self.dtype, stride_), spec(shape, dt.int64, stride_)

    decl = structured(
        f"{name}(Tensor self, int[{nd}] kernel_size, int[{nd}] stride=[], int[{nd}] padding=0, "
        f"int[{nd}] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", meta,
        method=False, function=False, inplace=False, promotes=False,
        doc=f"{nd}-d max pooling giving the values and their flat indices in each input plane.")

    decl.impl("CPU")(max_pool_kernel(nd))
    return decl


max_pool2d_with_indices = _make_max_pool(2)
max_pool3d_with_indices = _make_max_pool(3)


def _scatter_meta(grad_output, self, indices):
    return spec(self._shape, self.dtype, suggest_layout(self._shape, self))


def _make_max_pool_backward(nd: int):
    def meta(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
        return _scatter_meta(grad_output, self, indices)

    decl = structured(
        f"max_pool{nd}d_with_indices_backward(Tensor grad_output, Tensor self, "
        f"int[{nd}] kernel_size, int[{nd}] stride, int[{nd}] padding, int[{nd}] dilation, "
        f"bool ceil_mode, Tensor indices) -> Tensor", meta, method=False, function=False,
        inplace=False, promotes=False,
        doc=f"Gradient of max_pool{nd}d_with_indices: grad_output added at the indices.")

    decl.impl("CPU")(max_pool_backward_kernel(nd))
    return decl


max_pool2d_with_indices_backward = _make_max_pool_backward(2)
max_pool3d_with_indices_backward = _make_max_pool_backward(3)


def _check_max_pool1d(self, kernel_size, stride, padding, dilation):
    if self.dim() not in (2, 3) or 0 in self._shape[-2:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional "
                           f"0 dim batch size for input, but got:{list(self._shape)}")
    for what, v in (("kernel_size", kernel_size), ("stride", stride or (1,)),
                    ("padding", padding), ("dilation", dilation)):
        if len(v) != 1:
            raise RuntimeError(f"max_pool1d() {what} must be an int, list of ints or tuple of "
                               f"ints of size 1 but got size {len(v)}")
    (k,), (p,), (d,) = kernel_size, padding, dilation
    s = stride[0] if stride else k
    for what, v, low in (("kernel_size", k, 1), ("stride", s, 1), ("padding", p, 0),
                         ("dilation", d, 1)):
        if v < low:
            relation = "non-negative" if low == 0 else "greater than zero"
            raise RuntimeError(f"max_pool1d() {what} must be {relation}, but got {v}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                           f"got padding={p} and kernel_size={k}")


def _as_tuple(v) -> tuple:
    return (v,) if isinstance(v, int) else tuple(v)


@composite()
def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """1-d max pooling with indices: the 2-d pool over an inserted dim of size one."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "max_pool1d)")
    stride = _as_tuple(stride)
    values, indices = max_pool2d_with_indices(
        input.unsqueeze(-2), (1,) + _as_tuple(kernel_size), (1,) + stride if stride else (),
        (0,) + _as_tuple(padding), (1,) + _as_tuple(dilation), ceil_mode)
    return values.squeeze(-2), indices.squeeze(-2)


@composite()
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-d max pooling over (N, C, L) or (C, L) inputs."""
    _check_max_pool1d(input, _as_tuple(kernel_size), _as_tuple(stride), _as_tuple(padding),
                      _as_tuple(dilation))
    return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation,
                                   ceil_mode)[0]


@composite()
def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-d max pooling over (N, C, H, W) or (C, H, W) inputs."""
    return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)[0]


@composite()
def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-d max pooling over (N, C, D, H, W) or (C, D, H, W) inputs."""
    return max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)[0]


def plane_gather(source: Tensor, indices: Tensor, nd: int) -> Tensor:
    """source's values at flat plane positions `indices` (same leading dims), in
    differentiable ops: the adjoint of scatter-adding into source's planes."""
    from ..creation.ranges import arange
    lead = indices.shape[:-nd]
    plane = math.prod(source.shape[-nd:])
    offsets = (arange(math.prod(lead), device=source.device) * plane).reshape(
        tuple(lead) + (1,) * nd)
    return source.take(indices + offsets)


# ---- average pooling --------------------------------------------------------------------

def _make_avg_pool(nd: int):
    name = f"avg_pool{nd}d"

    def meta(self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
             count_include_pad=True, divisor_override=None):
        k, s, p = _avg_args(nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override)
        out = _pool_geometry(self, nd, k, s, p, (1,) * nd, ceil_mode)
        _not_for(name, self.dtype)
        shape = self._shape[:-nd] + out
        return spec(shape, self.dtype, suggest_layout(shape, self) if nd == 2 else None)

    decl = structured(
        f"{name}(Tensor self, int[{nd}] kernel_size, int[{nd}] stride=[], int[{nd}] padding=0, "
        "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> "
        "Tensor", meta, method=False, function=False, inplace=False, promotes=False,
        doc=f"{nd}-d average pooling.")

    decl.impl("CPU")(avg_pool_kernel(nd))

    def backward_meta(grad_output, self, kernel_size, stride, padding, ceil_mode,
                      count_include_pad, divisor_override):
        stride = suggest_layout(self._shape, self) if nd == 2 else None
        return spec(self._shape, self.dtype, stride)

    backward = structured(
        f"{name}_backward(Tensor grad_output, Tensor self, int[{nd}] kernel_size, "
        f"int[{nd}] stride, int[{nd}] padding, bool ceil_mode, bool count_include_pad, "
        "int? divisor_override) -> Tensor", backward_meta, method=False, function=False,
        inplace=False, promotes=False,
        doc=f"Gradient of {name}: each output's share added back over its window.")

    backward.impl("CPU")(avg_pool_backward_kernel(nd))
    return decl, backward


avg_pool2d, avg_pool2d_backward = _make_avg_pool(2)
avg_pool3d, avg_pool3d_backward = _make_avg_pool(3)


@composite()
def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-d average pooling: the 2-d pool over an inserted dim of size one."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "avg_pool1d)")
    kernel_size, stride, padding = (_as_tuple(v) for v in (kernel_size, stride, padding))
    for what, v in (("kernel_size", kernel_size), ("stride", stride or (1,)),
                    ("padding", padding)):
        if len(v) != 1:
            raise RuntimeError(f"avg_pool1d() argument '{what}' should contain one int (got "
                               f"{len(v)})")
    out = avg_pool2d(input.unsqueeze(-2), (1,) + kernel_size, (1,) + stride if stride else (),
                     (0,) + padding, ceil_mode, count_include_pad)
    return out.squeeze(-2)


# ---- adaptive pooling -------------------------------------------------------------------

def _adaptive_checks(name, self, output_size, nd, colon=""):
    output_size = _sizes(output_size, nd)
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal "
                           f"to 0 but received {{{', '.join(str(o) for o in output_size)}}}")
    if self.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got"
                           f"{colon} {list(self._shape)}")
    for i in range(1, self.dim()):
        if self._shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(self._shape)} with "
                               f"dimension {i} being empty")
    return self._shape[:-nd] + tuple(output_size)


def _make_adaptive_avg(nd: int):
    name = f"adaptive_avg_pool{nd}d"

    def meta(self, output_size):
        shape = _adaptive_checks(name, self, output_size, nd)
        _not_for(name, self.dtype, ints=False)
        return spec(shape, self.dtype, suggest_layout(shape, self) if nd == 2 else None)

    decl = structured(f"_{name}(Tensor self, SymInt[{nd}] output_size) -> Tensor", meta,
                      method=False, inplace=False, promotes=False,
                      doc=f"{nd}-d adaptive average pooling (PyTorch's windows).")

    decl.impl("CPU")(adaptive_avg_kernel(nd))

    def backward_meta(grad_output, self):
        stride = suggest_layout(self._shape, self) if nd == 2 else None
        return spec(self._shape, self.dtype, stride)

    backward = structured(f"_{name}_backward(Tensor grad_output, Tensor self) -> Tensor",
                          backward_meta, method=False, function=False, inplace=False,
                          promotes=False, doc=f"Gradient of _{name}.")

    backward.impl("CPU")(adaptive_avg_backward_kernel(nd))
    return decl, backward


_adaptive_avg_pool2d, _adaptive_avg_pool2d_backward = _make_adaptive_avg(2)
_adaptive_avg_pool3d, _adaptive_avg_pool3d_backward = _make_adaptive_avg(3)


def _adaptive_avg(nd, inner):
    def pool(input, output_size):
        output_size = _sizes(_as_tuple(output_size), nd)
        if isinstance(input, Tensor) and len(output_size) == nd and all(
                o == 1 for o in output_size) and input.dim() in (nd + 1, nd + 2):
            return input.mean(tuple(range(-nd, 0)), keepdim=True)
        return inner(input, output_size)
    return pool


adaptive_avg_pool2d = composite("adaptive_avg_pool2d", function=False)(
    _adaptive_avg(2, _adaptive_avg_pool2d))
adaptive_avg_pool3d = composite("adaptive_avg_pool3d", function=False)(
    _adaptive_avg(3, _adaptive_avg_pool3d))
adaptive_avg_pool2d.__doc__ = "2-d adaptive average pooling (a mean when the output is 1x1)."
adaptive_avg_pool3d.__doc__ = "3-d adaptive average pooling (a mean when the output is 1x1x1)."


def _check_1d(name, input, output_size):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"{name})")
    output_size = _as_tuple(output_size)
    if len(output_size) != 1:
        raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got "
                           f"{len(output_size)})")
    return (1,) + output_size


@composite()
def adaptive_avg_pool1d(input, output_size):
    """1-d adaptive average pooling: the 2-d pool over an inserted dim of size one."""
    size = _check_1d("adaptive_avg_pool1d", input, output_size)
    return adaptive_avg_pool2d(input.unsqueeze(-2), size).squeeze(-2)


def _make_adaptive_max(nd: int):
    name = f"adaptive_max_pool{nd}d"

    def meta(self, output_size):
        shape = _adaptive_checks(name, self, output_size, nd, colon=":")
        _not_for(name, self.dtype, ints=False)
        stride = suggest_layout(shape, self)
        return spec(shape, self.dtype, stride), spec(shape, dt.int64, stride)

    decl = structured(f"{name}(Tensor self, int[{nd}] output_size) -> (Tensor, Tensor)", meta,
                      method=False, function=False, inplace=False, promotes=False,
                      doc=f"{nd}-d adaptive max pooling with flat indices.")

    decl.impl("CPU")(adaptive_max_kernel(nd))

    def backward_meta(grad_output, self, indices):
        return _scatter_meta(grad_output, self, indices)

    backward = structured(f"{name}_backward(Tensor grad_output, Tensor self, Tensor indices) "
                          "-> Tensor", backward_meta, method=False, function=False,
                          inplace=False, promotes=False,
                          doc=f"Gradient of {name}: grad_output added at the indices.")

    backward.impl("CPU")(adaptive_max_backward_kernel(nd))
    return decl, backward


adaptive_max_pool2d, adaptive_max_pool2d_backward = _make_adaptive_max(2)
adaptive_max_pool3d, adaptive_max_pool3d_backward = _make_adaptive_max(3)


@composite()
def adaptive_max_pool1d(input, output_size):
    """1-d adaptive max pooling (values, indices) over an inserted dim of size one."""
    size = _check_1d("adaptive_max_pool1d", input, output_size)
    values, indices = adaptive_max_pool2d(input.unsqueeze(-2), size)
    return values.squeeze(-2), indices.squeeze(-2)


# ---- max unpooling ----------------------------------------------------------------------

def _make_max_unpool(nd: int):
    name = f"max_unpool{nd}d"
    words = {2: "two elements (height, width)", 3: "three elements (depth, height, width)"}

    def meta(self, indices, output_size, stride=None, padding=None):
        output_size = tuple(output_size)
        if indices.dtype is not dt.int64:
            raise RuntimeError(f"elements in indices should be type int64 but got: "
                               f"{indices.dtype.cname}")
        if len(output_size) != nd:
            raise RuntimeError(f"There should be exactly {words[nd]} in output_size, but got "
                               f"{len(output_size)} elements.")
        if self.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or "
                               f"{nd + 2}d Tensor, but got a tensor with {self.dim()} "
                               "dimensions.")
        if indices._shape != self._shape:
            raise RuntimeError(f"Expected shape of indices to be same as that of the input "
                               f"tensor ({list(self._shape)}) but got indices tensor with "
                               f"shape: {list(indices._shape)}")
        if stride is not None and any(s <= 0 for s in stride):
            raise RuntimeError(f"strides should be greater than zero, but got stride: "
                               f"{list(stride)}")
        for i in range(self.dim() - nd - 1, self.dim()):
            if i > 0 and self._shape[i] == 0:
                raise RuntimeError(f"max_unpooling{nd}d_forward_out_cpu(): Expected input to "
                                   "have non-zero size for non-batch dimensions, but got "
                                   f"{list(self._shape)} with dimension {i} being empty.")
        _not_for(name, self.dtype, ints=False)
        shape = self._shape[:-nd] + output_size
        return spec(shape, self.dtype, suggest_layout(shape, self) if nd == 2 else None)

    if nd == 2:
        schema = f"{name}(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor"
    else:
        schema = (f"{name}(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, "
                  "int[3] padding) -> Tensor")
    decl = structured(schema, meta, method=False, function=False, inplace=False,
                      promotes=False,
                      doc=f"Place each value at its flat index in a zero {nd}-d output plane.")

    decl.impl("CPU")(max_unpool_kernel(nd))
    return decl


max_unpool2d = _make_max_unpool(2)
max_unpool3d = _make_max_unpool(3)
