"""The dispatch mode of a doctored run: it sees every op below autograd, forward and
backward, and passes what detectors need to the Watch: NaN/Inf made from finite inputs,
in-place writes, the op a crash came from, and the few ops some detector reads (softmax
and sigmoid outputs fed to losses, NLL inputs, gradients zeroed in place)."""
from __future__ import annotations

import weakref

from glasstorch import ops as glasstorch_ops
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.core.tensor import Tensor
from glasstorch.utils._python_dispatch import TorchDispatchMode

from .values import all_finite, float_tensors

_MAX_EVENTS = 32
_aten = glasstorch_ops.aten


def remember(table: dict, out, note=None):
    """Keep a weak reference to a recent op output, to recognise it as a later op's input."""
    if len(table) > 256:
        table.clear()
    table[id(out)] = (weakref.ref(out), note)


def recall(table: dict, t):
    entry = table.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else None


def _after_normalising(w, func, args, out):         # _softmax, _log_softmax
    if func is _aten._log_softmax.default:         # cross_entropy's first step
        w.check_logits_input(func, args[0])
    if args[0].dim() >= 2 and args[1] in (0, -args[0].dim()):
        remember(w.batch_normalised, out, (str(func), tuple(args[0].shape)))
    if func is _aten._softmax.default:
        remember(w.probabilities, out, "softmax")


def _after_sigmoid(w, func, args, out):
    remember(w.probabilities, out, "sigmoid")


def _after_logit_loss(w, func, args, out):         # binary_cross_entropy_with_logits
    w.check_logits_input(func, args[0])


def _after_matmul(w, func, args, out):             # a linear layer's raw scores
    remember(w.raw_scores, out, str(func))


def _after_probability_loss(w, func, args, out):   # binary_cross_entropy
    w.check_probabilities_input(func, args[0])


def _after_nll(w, func, args, out):
    w.check_log_probabilities(func, args[0])
    made = recall(w.batch_normalised, args[0])
    if made is not None:
        w.on_wrong_dimension(made, func)


def _after_zeroing(w, func, args, out):            # zero_() is fill_(0)
    if len(args) > 1 and isinstance(args[1], (int, float)) and args[1] == 0:
        w.zeroed.add(args[0].data_ptr())


_AFTER = {                                          # ops whose calls some detector reads
    _aten._softmax.default: _after_normalising,
    _aten._log_softmax.default: _after_normalising,
    _aten.sigmoid.default: _after_sigmoid,
    _aten.binary_cross_entropy_with_logits.default: _after_logit_loss,
    _aten.binary_cross_entropy.default: _after_probability_loss,
    _aten.addmm.default: _after_matmul,
    _aten.mm.default: _after_matmul,
    _aten.nll_loss_forward.default: _after_nll,
    _aten.nll_loss2d_forward.default: _after_nll,
    _aten.fill_.Scalar: _after_zeroing,
    _aten.mul_.Tensor: _after_zeroing,
}
_UNINITIALISED = ("empty", "new_empty", "resize")      # whatever memory held: not a NaN source


def _any_requires_grad(args) -> bool:
    """Whether autograd will record the op (a tensor argument, or one in a list, needs grad)."""
    for a in args:
        if isinstance(a, Tensor):
            if a._requires_grad:
                return True
        elif isinstance(a, (list, tuple)):
            if any(isinstance(t, Tensor) and t._requires_grad for t in a):
                return True
    return False


class WatchMode(TorchDispatchMode):
    """Runs each op, then the checks; costs one isfinite reduction per new float output."""

    def __init__(self, watch):
        super().__init__()
        self.watch = watch
        self.mutable: dict = {}
        self.valued: dict = {}

    def _produces_values(self, func) -> bool:
        """Whether the op's output holds new values to check: not a view of an input (whose
        values were checked when made), not uninitialised memory."""
        valued = self.valued.get(func)
        if valued is None:
            schema = func._schema
            name = schema.name.split("::")[-1]
            aliases = [getattr(r, "alias", None) or "" for r in schema.returns]
            view = any(a and "!" not in a for a in aliases)       # "a!": written in place
            valued = self.valued[func] = not (view or name.startswith(_UNINITIALISED))
        return valued

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        w = self.watch
        kwargs = kwargs or {}
        if w.in_backward:
            w.backward_ops += 1
        mutable = self.mutable.get(func)
        if mutable is None:
            mutable = self.mutable[func] = func._schema.is_mutable
        if mutable and args and isinstance(args[0], Tensor) and args[0]._requires_grad:
            w.on_inplace(func, args[0])
        if not w.in_backward and is_grad_enabled() and _any_requires_grad(args):
            w.on_recorded_op()
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            w.on_failed_op(func, args, kwargs, e)
            raise
        try:
            special = _AFTER.get(func)
            if special is not None and not w.in_backward:
                special(w, func, args, out)
            if len(w.obs.nonfinite) < _MAX_EVENTS and self._produces_values(func):
                for t in float_tensors(out):
                    if not all_finite(t):
                        w.on_nonfinite(func, t, args, kwargs)
                        break
        except Exception as e:               # the checks never break the user's run
            w.obs.internal_errors.append(f"{func}: {type(e).__name__}: {e}")
        return out
