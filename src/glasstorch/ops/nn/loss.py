"""Softmax, log-softmax and the loss operators.

Where PyTorch's loss is a real operator (nll_loss_forward, mse_loss, binary_cross_entropy,
multi_margin_loss, _ctc_loss, ...) it is a `structured` declaration whose NumPy kernel is in
backends/cpu/loss.py, with its derivative in `loss_derivatives.py` and PyTorch's node name. Where PyTorch composes it
from other ops (l1_loss, kl_div, cross_entropy_loss, cosine_embedding_loss, ...) it is a
composite here too, so its graph has PyTorch's nodes. Kernels compute in float32 for
float16/bfloat16 inputs (PyTorch's opmath) and round once into the output. `reduction` is
PyTorch's enum: 0 none, 1 mean, 2 sum. nn.functional's wrappers are `nn/functional/loss.py`.
"""
from __future__ import annotations

import math
from math import prod

from ...core import dtype as dt
from ...core.shape import broadcast_shapes2, contiguous_strides, wrap_dim
from ...core.tensor import Tensor
from ...backends.cpu.normalization import fresh
from ..shape.joining import where
from ..pointwise.meta import pointwise_spec
from ...core.promotion import common_dtype
from ..registry import PLAIN_FLOATS, composite, spec, structured
from ..autocast import FP32, autocast_policy
from ...backends.cpu.loss import (MEAN, NONE, SUM, bce_kernel, bce_logits_kernel,
    ctc_backward_kernel, ctc_kernel, huber, log_softmax_backward_kernel, log_softmax_kernel,
    multi_margin_kernel, multilabel_kernel, nll_backward_kernel, nll_kernel, nll_reduced_rows,
    pointwise_loss_kernel, smooth_l1, soft_margin, softmax_backward_kernel,
    softmax_backward_last_dim, softmax_kernel, softmax_last_dim, squared_error)

# The top-level functions (torch.kl_div, torch.ctc_loss, ...) default to reduction 0: PyTorch's
# Python bindings read their schemas' `reduction=Mean` default as 0, so `torch.kl_div(x, y)`
# is unreduced. nn.functional always passes the reduction explicitly.


# ---- softmax, log_softmax ----------------------------------------------------------------

def _softmax_meta(name):
    def meta(self, dim, half_to_float):
        wrap_dim(dim, self.dim())
        if half_to_float:                   # float16 in, float32 out: a CUDA kernel's option
            if self.device.type != "cuda":
                raise RuntimeError(f"{name} with half to float conversion is not supported "
                                   "on CPU")
            if self.dtype is not dt.float16:
                raise RuntimeError("conversion is supported for Half type only")
            return spec(self._shape, dt.float32)
        if self.dtype.category != dt.FLOAT and self.numel():      # empty: no kernel runs
            kernel = f"{name}_lastdim_kernel_impl" if wrap_dim(dim, self.dim()) == \
                max(self.dim() - 1, 0) else f"{name}_kernel_impl"
            raise NotImplementedError(f'"{kernel}" not implemented for \'{self.dtype.cname}\'')
        return spec(self._shape, self.dtype)
    return meta


_softmax = structured("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
                      _softmax_meta("softmax"), method=False, inplace=False,
                      doc="softmax over `dim` (the op behind torch.softmax).")
_softmax.impl("CPU")(softmax_kernel)


_log_softmax = structured("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
                          _softmax_meta("log_softmax"), method=False, inplace=False,
                          doc="log(softmax(x)) over `dim`, computed as x - max - log(sum exp).")
_log_softmax.impl("CPU")(log_softmax_kernel)


def _last_dim_softmax(log: bool):
    """The fast path (`OpDeclaration.fast_path`) of _softmax (_log_softmax): over the last
    dim of a row-major float32/float64 Tensor, the C kernel that the general kernel runs
    there, on an output made by `softmax_last_dim`, without the meta function and the
    array checks (every attention block and every cross_entropy calls one)."""
    def fast_path(general):
        def kernel(self, dim, half_to_float):
            if self.__class__ is Tensor and self.dtype in PLAIN_FLOATS and \
                    dim.__class__ is int and not half_to_float:
                shape = self._shape
                if shape and (dim == -1 or dim == len(shape) - 1) and \
                        self._stride == contiguous_strides(shape):
                    out = softmax_last_dim(self, log)
                    if out is not None:
                        return out
            return general(self, dim, half_to_float)
        return kernel
    return fast_path


_softmax.fast_path(_last_dim_softmax(False))
_log_softmax.fast_path(_last_dim_softmax(True))


def _softmax_backward_meta(name):
    def meta(grad_output, output, dim, input_dtype):
        wrap_dim(dim, output.dim())
        if output.dtype is not grad_output.dtype:
            raise RuntimeError(f"expected scalar type {grad_output.dtype.cname} but found "
                               f"{output.dtype.cname}")
        if input_dtype is not grad_output.dtype and input_dtype in (dt.float16, dt.bfloat16):
            if grad_output.device.type != "cuda":    # half-to-float: not on CPU
                raise RuntimeError(f"expected scalar type {grad_output.dtype.cname} but found "
                                   f"{input_dtype.cname}")
            if grad_output.dtype is not dt.float32 or input_dtype is not dt.float16:
                raise RuntimeError("expected input and grad types to match, or input to be "
                                   "at::Half and grad to be at::Float")
            return spec(grad_output._shape, dt.float16)   # the float16 input's gradient
        if grad_output._shape != output._shape:
            raise RuntimeError(f"{name}: grad_output of shape {list(grad_output._shape)} does "
                               f"not match output of shape {list(output._shape)}")
        return spec(grad_output._shape, grad_output.dtype)
    return meta


_softmax_backward_data = structured(
    "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype)"
    " -> Tensor", _softmax_backward_meta("_softmax_backward_data"), method=False,
    inplace=False, doc="The gradient of softmax: output * (grad - sum(grad * output)).")
_softmax_backward_data.impl("CPU")(softmax_backward_kernel)


_log_softmax_backward_data = structured(
    "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
    "ScalarType input_dtype) -> Tensor", _softmax_backward_meta("_log_softmax_backward_data"),
    method=False, inplace=False,
    doc="The gradient of log_softmax: grad - exp(output) * sum(grad).")
_log_softmax_backward_data.impl("CPU")(log_softmax_backward_kernel)


def _last_dim_softmax_backward(log: bool):
    """The fast path (`OpDeclaration.fast_path`) of _softmax_backward_data
    (_log_softmax_backward_data): the gradient and the output row-major float32/float64
    Tensors of one shape and dtype, reduced over their last dim: the C kernel the general
    kernel runs there, on an output made by `softmax_backward_last_dim`, without the meta
    function and the array checks."""
    def fast_path(general):
        def kernel(grad_output, output, dim, input_dtype):
            d = output.dtype
            if grad_output.__class__ is Tensor and output.__class__ is Tensor and \
                    d in PLAIN_FLOATS and grad_output.dtype is d and input_dtype is d and \
                    dim.__class__ is int:
                shape = output._shape
                if shape and grad_output._shape == shape and \
                        (dim == -1 or dim == len(shape) - 1) and \
                        output._stride == grad_output._stride == contiguous_strides(shape):
                    out = softmax_backward_last_dim(grad_output, output, log)
                    if out is not None:
                        return out
            return general(grad_output, output, dim, input_dtype)
        return kernel
    return fast_path


_softmax_backward_data.fast_path(_last_dim_softmax_backward(False))
_log_softmax_backward_data.fast_path(_last_dim_softmax_backward(True))


def _with_dtype(name, input, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input if dtype is None else input.to(dtype)


@composite(method=True)
def softmax(input, dim, dtype=None):
    """softmax over `dim`; `dtype` casts the input first (e.g. float16 -> float32)."""
    return _softmax(_with_dtype("softmax", input, dtype), dim, False)


_log_softmax_function = _log_softmax.function


@composite(method=True)
def log_softmax(input, dim, dtype=None):
    """log_softmax over `dim`; `dtype` casts the input first."""
    return _log_softmax(_with_dtype("log_softmax", input, dtype), dim, False)


# ---- nll_loss --------------------------------------------------------------------------

def _check_target_dtype(target: Tensor) -> None:
    if target.dtype is not dt.int64 and target.dtype is not dt.uint8:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{target.dtype.cname}")


def _check_weight(weight, n_classes: int) -> None:
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                           "classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")


def _nll_meta(self, target, weight, reduction, ignore_index):
    _check_target_dtype(target)
    if not 1 <= self.dim() <= 2:
        raise RuntimeError(f"input tensor should be 1D or 2D, got {self.dim()}D")
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    no_batch = self.dim() == 1 and target.numel() == 1
    if not no_batch and (target.dim() == 0 or self._shape[0] != target._shape[0]):
        raise RuntimeError(f"size mismatch (got input: {list(self._shape)}, target: "
                           f"{list(target._shape)})")
    _check_weight(weight, self._shape[-1])
    shape = target._shape if reduction == NONE and self.dim() == 2 else ()
    return spec(shape, self.dtype), spec((), self.dtype)


def _nll2d_meta(self, target, weight, reduction, ignore_index):
    _check_target_dtype(target)
    if target.dim() != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {target.dim()}")
    if self.dim() != 4:
        raise RuntimeError("only batches of spatial inputs supported (4D tensors), but got "
                           f"input of dimension: {self.dim()}")
    s, t = self._shape, target._shape
    if s[0] != t[0] or s[2:] != t[1:]:
        raise RuntimeError(f"size mismatch (got input: {list(s)} , target: {list(t)}")
    _check_weight(weight, s[1])
    return spec(t if reduction == NONE else (), self.dtype), spec((), self.dtype)


nll_loss_forward = structured(
    "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "
    "SymInt ignore_index) -> (Tensor output, Tensor total_weight)", _nll_meta,
    method=False, function=False, inplace=False, out=False,
    doc="Negative log-likelihood of (N, C) or (C,) log-probabilities at the target classes.")
nll_loss_forward.impl("CPU")(nll_kernel)

def _rows_nll(general):
    """nll_loss_forward's fast path (`OpDeclaration.fast_path`): a row-major (N, C) float32
    or float64 input, N > 0, a dense (N,) int64 target, no class weights, a mean or a sum,
    as cross_entropy on a classifier's or a language model's logits calls it: the C kernel
    the general kernel runs there, on outputs made by `nll_reduced_rows`, without the meta
    function's checks, which such a call passes (with _log_softmax's: F.cross_entropy of
    (256, 65) with grad, 39.9 -> 26.3 us)."""
    def kernel(self, target, weight, reduction, ignore_index):
        if self.__class__ is Tensor and target.__class__ is Tensor and weight is None and \
                self.dtype in PLAIN_FLOATS and target.dtype is dt.int64 and \
                (reduction == MEAN or reduction == SUM):
            shape = self._shape
            if len(shape) == 2 and shape[0] and target._shape == shape[:1] and \
                    self._stride == contiguous_strides(shape) and \
                    (target._stride == (1,) or shape[0] == 1):
                outs = nll_reduced_rows(self, target, reduction, ignore_index)
                if outs is not None:
                    return outs
        return general(self, target, weight, reduction, ignore_index)
    return kernel


nll_loss_forward.fast_path(_rows_nll)
_nll_loss_forward_function = nll_loss_forward.function

nll_loss2d_forward = structured(
    "nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "
    "SymInt ignore_index) -> (Tensor output, Tensor total_weight)", _nll2d_meta,
    method=False, function=False, inplace=False, out=False,
    doc="nll_loss_forward for (N, C, H, W) inputs and (N, H, W) targets.")
nll_loss2d_forward.impl("CPU")(nll_kernel)



def _nll_backward_meta(grad_output, self, target, weight, reduction, ignore_index,
                       total_weight):
    return spec(self._shape, self.dtype)


def _check_nll_grad_output(grad_output, self, reduction) -> None:
    """nll_loss_backward's checks of grad_output's shape, PyTorch's errors."""
    g = grad_output._shape
    if reduction == NONE and len(self._shape) == 2:
        if not g:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        n = self._shape[0]
        if len(g) != 1 or g[0] != n:
            raise RuntimeError(f"Expected a tensor of dimension 1 and tensor.size[0] == {n} "
                               f"but got: dimension {len(g)} and tensor.size[0] = {g[0]}")
    elif len(g) > 1 or prod(g) != 1:
        raise RuntimeError(f"Expected a single element grad_output tensor, but got: {list(g)}")


def _nll_checked_backward_meta(grad_output, self, target, weight, reduction, ignore_index,
                               total_weight):
    _check_nll_grad_output(grad_output, self, reduction)
    return spec(self._shape, self.dtype)


_NLL_BACKWARD_ARGS = ("(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
                      "int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor")
nll_loss_backward = structured(
    "nll_loss_backward" + _NLL_BACKWARD_ARGS, _nll_checked_backward_meta,
    method=False, function=False, inplace=False, out=False,
    doc="nll_loss_forward's input gradient: -weight[t] * grad at each target's class.")
nll_loss_backward.impl("CPU")(nll_backward_kernel)


def _nll_backward_fast(general):
    """nll_loss_backward's fast path (`OpDeclaration.fast_path`): for a float32/float64
    Tensor self its meta function checks nothing and gives a row-major gradient of self's
    shape and dtype, made here (`fresh`) for the kernel to fill, which does all the checks
    (nll_loss_backward runs in every classifier's and language model's backward)."""
    def kernel(grad_output, self, target, weight, reduction, ignore_index, total_weight):
        if self.__class__ is not Tensor or self.dtype not in PLAIN_FLOATS:
            return general(grad_output, self, target, weight, reduction, ignore_index,
                           total_weight)
        _check_nll_grad_output(grad_output, self, reduction)
        out = fresh(self._shape, self.dtype)
        nll_backward_kernel(out, grad_output, self, target, weight, reduction, ignore_index,
                            total_weight)
        return out
    return kernel


nll_loss_backward.fast_path(_nll_backward_fast)

nll_loss2d_backward = structured(
    "nll_loss2d_backward" + _NLL_BACKWARD_ARGS, _nll_backward_meta,
    method=False, function=False, inplace=False, out=False,
    doc="nll_loss2d_forward's input gradient.")
nll_loss2d_backward.impl("CPU")(nll_backward_kernel)

def nll_loss_nd(self, target, weight=None, reduction=MEAN, ignore_index=-100):
    """nll_loss for any (N, C, d1, ..., dk) input: extra dims go through the 2-D kernel.
    (Every cross_entropy runs it: dims are read once, the op's function called directly.)"""
    dim, target_dim = self.dim(), target.dim()
    if dim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {dim})")
    if dim == 1 and target_dim == 1 and target.numel() != 1:
        raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                         f"{target.numel()}")
    batch = target._shape[0] if target_dim else 0
    if dim != 1 and self._shape[0] != batch:
        raise ValueError(f"Expected input batch_size ({self._shape[0]}) to match target "
                         f"batch_size ({batch}).")
    if dim <= 2:
        return _nll_loss_forward_function(self, target, weight, reduction, ignore_index)[0]
    if dim == 4:
        return nll_loss2d_forward(self, target, weight, reduction, ignore_index)[0]
    n, c = self._shape[0], self._shape[1]
    expected = [n, *self._shape[2:]]
    if list(target._shape) != expected:
        raise RuntimeError(f"Expected target size {expected}, got {list(target._shape)}")
    inner = prod(self._shape[2:])
    x = self.contiguous().view(n, c, 1, inner)
    t = target.contiguous().view(n, 1, inner)
    out = nll_loss2d_forward(x, t, weight, reduction, ignore_index)[0]
    return out.view(expected) if reduction == NONE else out


# ---- pointwise losses with a reduction --------------------------------------------------

def _float_inputs(name, self, target):
    d = common_dtype(self, target)
    if d.category != dt.FLOAT:
        raise NotImplementedError(f'"{name}" not implemented for \'{d.cname}\'')
    return d


def _pointwise_loss_meta(name):
    def meta(self, target, reduction=MEAN, *rest):
        d = _float_inputs(name, self, target)
        if reduction == NONE:             # laid out as its inputs, as TensorIterator does
            return pointwise_spec((self, target), d)
        broadcast_shapes2(self._shape, target._shape)
        return spec((), d)
    return meta


def _pointwise_loss(schema, name, elementwise, doc):
    decl = structured(schema, _pointwise_loss_meta(name), method=False, function=False,
                      inplace=False, doc=doc)
    decl.impl("CPU")(pointwise_loss_kernel(name, elementwise))
    return decl


mse_loss = _pointwise_loss(
    "mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", "mse_cpu",
    squared_error, "Squared error (x - y)^2, reduced.")


smooth_l1_loss = _pointwise_loss(
    "smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor",
    "smooth_l1_cpu", smooth_l1,
    "0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = x - y), reduced.")


huber_loss = _pointwise_loss(
    "huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor",
    "huber_cpu", huber, "0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), reduced.")

soft_margin_loss = _pointwise_loss(
    "soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
    "soft_margin_loss", soft_margin,
    "log(1 + exp(-y x)), reduced.")


def _bce_logits_meta(self, target, weight=None, pos_weight=None, reduction=NONE):
    d = _float_inputs("binary_cross_entropy_with_logits", self, target)
    if target._shape != self._shape:
        raise ValueError(f"Target size ({target._shape}) must be the same as input size "
                         f"({self._shape})")
    if reduction != NONE:
        return spec((), d)
    return pointwise_spec((target, self), d)   # PyTorch's composite starts from target


def _bce_meta(self, target, weight=None, reduction=MEAN):
    if target._shape != self._shape:
        raise ValueError(f"Using a target size ({target._shape}) that is different to the "
                         f"input size ({self._shape}) is deprecated. Please ensure they have "
                         "the same size.")
    d = _float_inputs("binary_cross_entropy", self, target)
    return pointwise_spec((self, target), d) if reduction == NONE else spec((), d)


binary_cross_entropy = structured(
    "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) "
    "-> Tensor", _bce_meta, method=False, function=False, inplace=False,
    doc="-w (y log x + (1 - y) log(1 - x)) with the logs clamped at -100, reduced.")
binary_cross_entropy.impl("CPU")(bce_kernel)


binary_cross_entropy_with_logits = structured(
    "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
    "Tensor? pos_weight=None, int reduction=0) -> Tensor",      # see NONE above
    _bce_logits_meta, method=False, inplace=False,
    doc="binary_cross_entropy(sigmoid(x), y) computed stably from the logits x, with an "
        "optional weight for the positive term.")
binary_cross_entropy_with_logits.impl("CPU")(bce_logits_kernel)


# ---- margin losses over classes ------------------------------------------------------------

def _multi_margin_meta(self, target, p=1, margin=1, weight=None, reduction=MEAN):
    """(N, C) or (C,) input with an (N,) or () class target."""
    if self.dim() > 2 or (self.dim() == 2 and self._shape[1] == 0) or (
            self.dim() <= 1 and self.numel() == 0):
        raise RuntimeError("multi_margin_loss: Expected non-empty vector or matrix with "
                           f"optional 0-dim batch size, but got: {list(self._shape)}")
    n = self._shape[0] if self.dim() == 2 else 1
    if target.dim() > 1 or target.numel() != n:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size, expected {n} but "
                           f"got {list(target._shape)}")
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    c = self._shape[-1] if self._shape else 1   # a 0-dim input is one class
    if weight is not None and (weight.dim() > 1 or weight.numel() != c):
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight._shape)}")
    shape = target._shape if reduction == NONE and self.dim() == 2 else ()
    return spec(shape, self.dtype)


multi_margin_loss = structured(
    "multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, "
    "Tensor? weight=None, int reduction=1) -> Tensor", _multi_margin_meta, method=False,
    function=False, inplace=False,
    doc="Sum over wrong classes i of max(0, margin - x[y] + x[i])^p (times weight[y]) / C.")
multi_margin_loss.impl("CPU")(multi_margin_kernel)


def _multilabel_meta(self, target, reduction):
    if self.dim() > 2 or (self.dim() <= 1 and self.numel() == 0) or (
            self.dim() == 2 and self._shape[1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(self._shape)}")
    if target._shape != self._shape:
        raise RuntimeError(f"inconsistent target size: {list(target._shape)} for input of "
                           f"size: {list(self._shape)}")
    shape = self._shape[:1] if reduction == NONE and self.dim() == 2 else ()
    return spec(shape, self.dtype), spec(self._shape, self.dtype)


multilabel_margin_loss_forward = structured(
    "multilabel_margin_loss_forward(Tensor self, Tensor target, int reduction) -> "
    "(Tensor output, Tensor is_target)", _multilabel_meta, method=False, function=False,
    inplace=False, out=False,
    doc="Sum over target classes j (the entries of target before the first -1) and "
        "non-target classes i of max(0, 1 - x[j] + x[i]) / C; also the target mask.")
multilabel_margin_loss_forward.impl("CPU")(multilabel_kernel)


def multilabel_margin_loss(self, target, reduction=MEAN):
    return multilabel_margin_loss_forward(self, target, reduction)[0]


# ---- losses PyTorch composes from other ops ------------------------------------------------

def apply_reduction(loss: Tensor, reduction: int) -> Tensor:
    if reduction == MEAN:
        return loss.mean()
    if reduction == SUM:
        return loss.sum()
    return loss


def l1_loss(self, target, reduction=MEAN):
    """|x - y|, reduced (AbsBackward0 then Mean/SumBackward0, as PyTorch's composite)."""
    return apply_reduction((self - target).abs(), reduction)


def _log_sigmoid(x):
    """log(sigmoid(x)) = -log(1 + exp(-x)), without overflow."""
    return -((-x).clamp_min(0) + (-x.abs()).exp().log1p())


def multilabel_soft_margin(input, target, weight=None, reduction=MEAN):
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return apply_reduction(loss, reduction)


def _label_smoothing_term(logp, target, weight, reduction, ignore_index, cdim):
    """The uniform part of a label-smoothed cross entropy: -sum over classes of w_c logp_c,
    ignored targets zeroed; 'mean' divides by the total weight of the counted targets."""
    ignored = target == ignore_index
    if weight is not None:
        shape = [1] * logp.dim()
        shape[cdim] = weight.numel()
        smooth = -(logp * weight.view(shape)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == MEAN:
        if weight is not None:
            kept = ignored.logical_not()
            return smooth.sum() / weight.take(target.masked_select(kept)).sum()
        return smooth.sum() / ignored.logical_not().sum()
    return smooth.sum() if reduction == SUM else smooth


def cross_entropy_loss(self, target, weight=None, reduction=MEAN, ignore_index=-100,
                       label_smoothing=0.0):
    """log_softmax over the class dim, then nll_loss (class indices) or
    -sum(target * logp) (class probabilities, when target has the input's shape)."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError("label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")
    dim = self.dim()
    cdim = 0 if dim == 1 else 1
    logp = _log_softmax_function(_with_dtype("log_softmax", self, None), cdim, False)
    n_classes = self._shape[cdim] if dim else 1
    if self._shape == target._shape:
        if target.dtype.category != dt.FLOAT:
            raise RuntimeError("Expected floating point type for target with class "
                               f"probabilities, got {target.dtype.cname}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        loss = logp * target
        if weight is not None:
            shape = [1] * self.dim()
            shape[cdim] = n_classes
            loss = loss * weight.view(shape)
        if reduction == MEAN:       # per sample position; an empty input gives 0/0 = nan
            return -loss.sum() / (self.numel() / n_classes if self.numel() else 0.0)
        return -loss.sum() if reduction == SUM else -loss.sum(cdim)
    nll = nll_loss_nd(logp, target, weight, reduction, ignore_index)
    if label_smoothing == 0:
        return nll
    smooth = _label_smoothing_term(logp, target, weight, reduction, ignore_index, cdim)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


@composite()
def kl_div(input, target, reduction=NONE, *, log_target=False):
    """Pointwise KL divergence target * (log target - input), input being log-probabilities
    (target too with log_target)."""
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    return apply_reduction(loss, reduction)


@composite()
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """Poisson negative log-likelihood; `full` adds Stirling's term where target > 1."""
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + (target * (2 * math.pi)).log() * 0.5
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return apply_reduction(loss, reduction)


@composite()
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=NONE):
    """1 - cos(x1, x2) for target 1, max(0, cos - margin) for target -1."""
    tdim = target.dim()
    if tdim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if tdim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if tdim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    dot = (input1 * input2).sum(tdim)
    norms = (((input1 * input1).sum(tdim) + 1e-12) * ((input2 * input2).sum(tdim) + 1e-12))
    cos = dot / norms.sqrt()
    zeros = cos.new_zeros(())
    pos = where(target == 1, 1 - cos, zeros)
    neg = where(target == -1, (cos - margin).clamp_min(0), zeros)
    return apply_reduction(pos + neg, reduction)


@composite()
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=NONE):
    """max(0, -y (x1 - x2) + margin)."""
    return apply_reduction((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@composite()
def hinge_embedding_loss(input, target, margin=1.0, reduction=NONE):
    """x where target is 1, max(0, margin - x) where target is -1."""
    zeros = input.new_zeros(())
    below = where(target != 1, (margin - input).clamp_min(0), zeros)
    return apply_reduction(below + where(target != -1, input, zeros), reduction)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    return (x1 - x2 + eps).norm(p, -1, keepdim)


def check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{p}D, and negative {n}D inputs")


@composite()
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=NONE):
    """max(0, margin + d(a, p) - d(a, n)); `swap` uses min(d(a, n), d(p, n))."""
    check_triplet_dims(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return apply_reduction((d_pos - d_neg + margin).clamp_min(0), reduction)


# ---- ctc_loss ------------------------------------------------------------------------------

def _ctc_meta(log_probs, targets, input_lengths, target_lengths, blank=0,
              zero_infinity=False):
    where_ = " (while checking arguments for ctc_loss_allocate_outputs)"
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 3-dimensional (T, N, C), got "
                           f"{log_probs.dim()} dims")
    if log_probs.dtype.category != dt.FLOAT:
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for '
                                  f"'{log_probs.dtype.cname}'")
    if targets.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"ctc_loss: expected targets to be Long or Int, got "
                           f"{targets.dtype.cname}")
    n_time, batch, n_classes = log_probs.shape
    if not 0 <= blank < n_classes:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    max_target = max(target_lengths, default=0)
    if targets.dim() == 1:
        if targets.numel() < sum(target_lengths):
            raise RuntimeError(f"Expected tensor to have size at least {sum(target_lengths)} "
                               f"at dimension 0, but got size {targets.numel()} for argument "
                               f"#2 'targets'{where_}")
    elif targets.dim() != 2 or targets._shape[0] != batch or targets._shape[1] < max_target:
        raise RuntimeError(f"Expected tensor to have size at least {max_target} at dimension "
                           f"1, but got size {targets._shape[-1]} for argument #2 "
                           f"'targets'{where_}")
    for length in input_lengths:
        if length > n_time:
            raise RuntimeError(f"Expected input_lengths to have value at most {n_time}, but "
                               f"got value {length}{where_}")
    return (spec((batch,), log_probs.dtype),
            spec((batch, n_time, 2 * max_target + 1), log_probs.dtype))


_ctc_loss = structured(
    "_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, "
    "int blank=0, bool zero_infinity=False) -> (Tensor, Tensor)", _ctc_meta, method=False,
    inplace=False, out=False,
    doc="Connectionist temporal classification loss per sample, and the log-alphas.")
_ctc_loss.impl("CPU")(ctc_kernel)
_ctc_loss.on_cuda = "host"     # a recursion over time steps built from host length lists


def _ctc_backward_meta(grad, log_probs, targets, input_lengths, target_lengths,
                       neg_log_likelihood, log_alpha, blank, zero_infinity=False):
    return spec(log_probs._shape, log_probs.dtype)


_ctc_loss_backward = structured(
    "_ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, int[] input_lengths, "
    "int[] target_lengths, Tensor neg_log_likelihood, Tensor log_alpha, int blank, "
    "bool zero_infinity=False) -> Tensor", _ctc_backward_meta, method=False, function=False,
    inplace=False, out=False, doc="The gradient of _ctc_loss by the beta recursion (PyTorch's formula).")
_ctc_loss_backward.on_cuda = "host"     # as _ctc_loss
_ctc_loss_backward.impl("CPU")(ctc_backward_kernel)


@composite()
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=NONE,
             zero_infinity=False):
    """CTC loss of (T, N, C) or unbatched (T, C) log-probabilities; lengths as tensors or
    int sequences; 'mean' divides each loss by its target length, then averages."""
    def as_list(x):
        return [int(v) for v in (x.reshape(-1).tolist() if isinstance(x, Tensor) else x)]
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    il, tl = as_list(input_lengths), as_list(target_lengths)
    nll = _ctc_loss(log_probs, targets, il, tl, blank, zero_infinity)[0]
    if zero_infinity:             # already zero there; recorded as PyTorch's composite does
        nll = where(nll == math.inf, 0.0, nll)
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == MEAN:
        lengths = nll.new_tensor([max(v, 1) for v in tl])
        return (nll / (lengths.squeeze(0) if unbatched else lengths)).mean()
    return nll.sum() if reduction == SUM else nll

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(binary_cross_entropy_with_logits, huber_loss, mse_loss, multi_margin_loss,
                multilabel_margin_loss_forward, nll_loss_forward, nll_loss2d_forward,
                smooth_l1_loss, soft_margin_loss, cpu=FP32, cuda=FP32)
autocast_policy(_ctc_loss, binary_cross_entropy, cpu=FP32)
autocast_policy(_softmax, _log_softmax, cuda=FP32)
