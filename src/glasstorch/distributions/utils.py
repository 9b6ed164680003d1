"""Helpers the distributions share: broadcasting parameters, probabilities and logits, and
properties computed once on first use."""
from __future__ import annotations

import numbers
from functools import update_wrapper

import glasstorch


def broadcast_all(*values):
    """Tensors (and Python numbers, made tensors of the first tensor's dtype and device)
    broadcast to one shape, as each distribution's parameters are."""
    if not all(isinstance(v, (glasstorch.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if all(isinstance(v, numbers.Number) for v in values):
        return tuple(glasstorch.tensor(float(v), dtype=glasstorch.get_default_dtype())
                     for v in values)
    like = next(v for v in values if isinstance(v, glasstorch.Tensor))
    tensors = [v if isinstance(v, glasstorch.Tensor)
               else glasstorch.tensor(v, dtype=like.dtype, device=like.device) for v in values]
    return tuple(glasstorch.broadcast_tensors(*tensors))


def _standard_normal(shape, dtype, device):
    """N(0, 1) draws of `shape` (the generator's stream, as torch.normal's)."""
    return glasstorch.normal(glasstorch.zeros(shape, dtype=dtype, device=device),
                             glasstorch.ones(shape, dtype=dtype, device=device))


def _sum_rightmost(value, dim: int):
    """Sum out the `dim` rightmost dimensions (an event's log-density terms)."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    return glasstorch.sigmoid(logits) if is_binary else glasstorch.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Probabilities kept inside (0, 1) by the dtype's eps, so their logs stay finite."""
    eps = glasstorch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    ps = clamp_probs(probs)
    if is_binary:
        return glasstorch.log(ps) - glasstorch.log1p(-ps)
    return glasstorch.log(ps)


def tril_matrix_to_vec(mat, diag: int = 0):
    n = mat.shape[-1]
    rows, cols = glasstorch.tril_indices(n, n, offset=diag, device=mat.device)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag: int = 0):
    n = int((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]) ** 0.5) / 2)
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    rows, cols = glasstorch.tril_indices(n, n, offset=diag, device=vec.device)
    mat[..., rows, cols] = vec
    return mat


class lazy_property:
    """A property computed on first access and then stored on the instance (so `probs` made
    from `logits` is made once)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with glasstorch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property is on the class: also a property, so introspection (and
    constraints' dependent_property) sees it as one."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


class BinaryProbsOrLogits:
    """For distributions parameterised by a success probability given either as `probs` or
    as `logits` (exactly one): the other is computed on first use, and expand() keeps
    whichever was given."""

    def _set_probs_or_logits(self, probs, logits, *others):
        """Broadcast `others` with the given parameter and store it; returns the others."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        *others, value = broadcast_all(*others, value)
        setattr(self, name, value)
        self._param = value
        return others

    def _expand_probs_or_logits(self, new, batch_shape) -> None:
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(batch_shape))
                new._param = getattr(new, name)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()
