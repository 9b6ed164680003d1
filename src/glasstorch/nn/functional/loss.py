"""Loss functions as in torch.nn.functional.

Each function checks its arguments as PyTorch's does, turns `reduction` (or the legacy
`size_average`/`reduce` pair, with PyTorch's deprecation warning) into the ops' enum and
calls the operators of `ops/loss.py`.
"""
from __future__ import annotations

import math
import warnings

from ...autograd import grad_mode
from ...ops.nn import loss as _ops
from ...ops.shape.joining import broadcast_tensors

__all__ = ["nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss",
           "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "hinge_embedding_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "soft_margin_loss", "ctc_loss"]


# ---- reduction arguments --------------------------------------------------------------------

def _enum(reduction: str) -> int:
    if reduction == "none":
        return _ops.NONE
    if reduction == "mean":
        return _ops.MEAN
    if reduction == "sum":
        return _ops.SUM
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use "
                      "reduction='mean' instead.", stacklevel=3)
        return _ops.MEAN
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy(size_average, reduce) -> str:
    """The reduction the deprecated size_average/reduce pair stands for (with a warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{result}' instead.", stacklevel=3)
    return result


def _reduction(size_average, reduce, reduction) -> int:
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce)
    return _enum(reduction)


def _warn_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=3)


def _weighted(errors, weight, input, reduction: int):
    """The weighted form of mse_loss/l1_loss: 'mean' divides by the sum of the weights."""
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    errors = errors * weight
    if reduction == _ops.MEAN:
        return errors.sum() / weight.sum()
    return _ops.apply_reduction(errors, reduction)


# ---- class losses ---------------------------------------------------------------------------

def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities `input` (N, C, d1, ...) or (C,) at the
    class indices `target` (N, d1, ...) or ()."""
    return _ops.nll_loss_nd(input, target, weight, _reduction(size_average, reduce, reduction),
                            ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for unbatched input) followed by nll_loss;
    a float `target` of the input's shape holds class probabilities."""
    return _ops.cross_entropy_loss(input, target, weight,
                                   _reduction(size_average, reduce, reduction), ignore_index,
                                   label_smoothing)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: sum over i != y of max(0, margin - x[y] + x[i])^p / C."""
    r = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    return _ops.multi_margin_loss(input, target, p, margin, weight, r)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss; each row of `target` lists classes up to its first -1."""
    return _ops.multilabel_margin_loss(input, target,
                                       _reduction(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class logistic loss averaged over classes."""
    r = _reduction(size_average, reduce, reduction)
    return _ops.multilabel_soft_margin(input, target, weight, r)


# ---- regression losses ------------------------------------------------------------------------

def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, broadcast (with a warning when the sizes differ), reduced."""
    _warn_size(input, target)
    r = _reduction(size_average, reduce, reduction)
    x, y = broadcast_tensors(input, target)
    if weight is not None:
        return _weighted((x - y) ** 2, weight, input, r)
    return _ops.mse_loss(x, y, r)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, broadcast (with a warning when the sizes differ), reduced."""
    _warn_size(input, target)
    r = _reduction(size_average, reduce, reduction)
    x, y = broadcast_tensors(input, target)
    if weight is not None:
        return _weighted((x - y).abs(), weight, input, r)
    return _ops.l1_loss(x, y, r)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    """Quadratic below `beta`, linear above (l1_loss when beta is 0)."""
    _warn_size(input, target)
    r = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, y = broadcast_tensors(input, target)
    if beta == 0.0:
        return _ops.l1_loss(x, y, r)
    return _ops.smooth_l1_loss(x, y, r, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Quadratic below `delta`, delta-scaled linear above."""
    _warn_size(input, target)
    r = _enum(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, y = broadcast_tensors(input, target)
    if weight is None:
        return _ops.huber_loss(x, y, r, delta)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = _ops.huber_loss(x, y, _ops.NONE, delta) * weight
    return _ops.apply_reduction(loss, r)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)) for targets y in {1, -1}."""
    return _ops.soft_margin_loss(input, target, _reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log var + (x - y)^2 / var), var clamped at eps (without affecting its gradient);
    `var` may lack the last dim or differ from input in one broadcast dim."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(input.shape, float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with grad_mode.no_grad():
        var.clamp_(min=eps)
    loss = ((input - target) ** 2 / var + var.log()) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _ops.apply_reduction(loss, _enum(reduction))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log-likelihood of `target` with rate exp(input) (or input)."""
    r = _reduction(size_average, reduce, reduction)
    return _ops.poisson_nll_loss(input, target, log_input, full, eps, r)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence of log-probabilities `input` from `target`; 'batchmean' divides the sum
    by the batch size (the mathematical KL divergence), 'mean' by the element count."""
    if size_average is not None or reduce is not None:
        r = _enum(_legacy(size_average, reduce))
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size "
                          "and the support size.'batchmean' divides only by the batch size, "
                          "and aligns with the KL div math definition.'mean' will be changed "
                          "to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        r = _ops.SUM if reduction == "batchmean" else _enum(reduction)
    loss = _ops.kl_div(input, target, r, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        loss = loss / input.shape[0]
    return loss


# ---- binary losses ----------------------------------------------------------------------------

def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)) for probabilities x in [0, 1], logs clamped at
    -100 so that x = 0 or 1 gives a finite loss."""
    r = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the "
                         f"input size ({input.shape}) is deprecated. Please ensure they have "
                         "the same size.")
    if weight is not None:
        weight = weight.expand(broadcast_tensors(target, weight)[0].shape)
    return _ops.binary_cross_entropy(input, target, weight, r)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits;
    `pos_weight` scales the positive term (broadcast along the last dim)."""
    r = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    return _ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight, r)


# ---- embedding and ranking losses -------------------------------------------------------------

def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    r = _reduction(size_average, reduce, reduction)
    return _ops.cosine_embedding_loss(input1, input2, target, margin, r)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target (x1 - x2) + margin)."""
    r = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError("margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {input1.shape}, input2: "
                           f"{input2.shape}, target: {target.shape} ")
    return _ops.margin_ranking_loss(input1, input2, target, margin, r)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where target is 1, max(0, margin - x) where target is -1."""
    r = _reduction(size_average, reduce, reduction)
    return _ops.hinge_embedding_loss(input, target, margin, r)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + ||a - p|| - ||a - n||) with p-norm distances."""
    r = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _ops.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, r)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance function (pairwise_distance by default)."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater "
                         f"than 0, got {margin} instead")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _ops.check_triplet_dims(anchor, positive, negative)
    dist = distance_function if distance_function is not None else _ops.pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    loss = (d_pos - d_neg + margin).clamp_min(0)
    return _ops.apply_reduction(loss, _enum(reduction))


# ---- sequence losses --------------------------------------------------------------------------

def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification loss of (T, N, C) log-probabilities against
    padded (N, S) or concatenated targets; `zero_infinity` zeroes impossible alignments."""
    return _ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _enum(reduction), zero_infinity)
