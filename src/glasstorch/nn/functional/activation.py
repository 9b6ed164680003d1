"""Activation functions as in torch.nn.functional, over the ops in ops/activation.py.

`inplace=True` calls the op's in-place variant, which PyTorch's in-place checks and autograd
recording come with.

    >>> import glasstorch as torch
    >>> import glasstorch.nn.functional as F
    >>> F.relu(torch.tensor([-1.0, 0.0, 2.0]))
    tensor([0., 0., 2.])
"""
from __future__ import annotations

from ...core.tensor import Tensor
from ...ops.nn import activation as _A

__all__ = ["threshold", "threshold_", "relu", "relu_", "hardtanh", "hardtanh_", "relu6",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_",
           "prelu", "rrelu", "rrelu_", "glu", "gelu", "logsigmoid", "hardshrink",
           "tanhshrink", "softsign", "softplus", "softshrink", "tanh", "sigmoid",
           "hardsigmoid", "silu", "mish", "hardswish"]


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """value where input <= threshold, else input."""
    if inplace:
        return _A.threshold_(input, threshold, value)
    return _A.threshold.function(input, threshold, value)


threshold_ = _A.threshold_


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0)."""
    return input.relu_() if inplace else _A.relu.function(input)


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """input clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _A.hardtanh_(input, min_val, max_val)
    return _A.hardtanh.function(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(input, 0), 6) (a hardtanh)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """input where input > 0, else alpha * (exp(input) - 1)."""
    if inplace:
        return _A.elu_(input, alpha)
    return _A.elu.function(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _A.elu_(input, alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(input, alpha) with the SELU constants."""
    return _A.selu_(input) if inplace else _A.selu(input)


selu_ = _A.selu_


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, input) + min(0, alpha * (exp(input / alpha) - 1))."""
    if inplace:
        return _A.celu_(input, alpha)
    return _A.celu.function(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _A.celu_(input, alpha)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input where input > 0, else negative_slope * input."""
    if inplace:
        return _A.leaky_relu_(input, negative_slope)
    return _A.leaky_relu.function(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return _A.leaky_relu_(input, negative_slope)


prelu = _A.prelu


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky relu (slopes drawn from U(lower, upper) in training)."""
    if inplace:
        return _A.rrelu_(input, lower, upper, training)
    return _A.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return _A.rrelu_(input, lower, upper, training)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """first half of `dim` * sigmoid(second half)."""
    return _A.glu.function(input, dim)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """input * Phi(input); approximate='tanh' uses the tanh approximation."""
    return _A.gelu.function(input, approximate=approximate)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(input)), stable for large |input|."""
    return _A.log_sigmoid.function(input)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input where |input| > lambd, else 0."""
    return _A.hardshrink.function(input, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    """input - tanh(input)."""
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    """input / (1 + |input|)."""
    return input / (input.abs() + 1)


def softplus(input: Tensor, beta: float = 1, threshold: float = 20) -> Tensor:
    """log(1 + exp(beta * input)) / beta, linear where beta * input > threshold."""
    return _A.softplus.function(input, beta, threshold)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input -+ lambd outside [-lambd, lambd], else 0."""
    return _A.softshrink.function(input, lambd)


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(input + 3) / 6."""
    return _A.hardsigmoid_(input) if inplace else _A.hardsigmoid.function(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """input * sigmoid(input)."""
    return _A.silu_(input) if inplace else _A.silu.function(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """input * tanh(softplus(input))."""
    return _A.mish_(input) if inplace else _A.mish.function(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """input * relu6(input + 3) / 6."""
    return _A.hardswish_(input) if inplace else _A.hardswish.function(input)
