"""Custom autograd Functions: user-written forward/backward pairs recorded as graph Nodes.

`Fn.apply(*args)` runs `Fn.forward(ctx, *args)` without recording, then gives the tensor
outputs a `grad_fn` of class `FnBackward`, made once per Function subclass. As in PyTorch the
node is also the `ctx`: what forward saves on it is there when the engine calls
`Fn.backward(ctx, *grads)`, which must return one gradient (or None) per forward argument;
the node's `next_functions` have one edge per tensor argument.
"""
from __future__ import annotations

import warnings

from .. import overrides
from ..core.tensor import Tensor
from . import grad_mode
from .graph import _SAVED_FREED, Node, SavedTensor, gradient_edge, sum_to_shape


class FunctionCtx:
    """What forward and backward may call on `ctx`."""

    def save_for_backward(self, *tensors):
        """Keep tensors for backward; they are checked against in-place changes."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self.to_save = tensors

    def mark_non_differentiable(self, *tensors):
        """These outputs will not require grad (backward still gets a grad for them)."""
        self._non_differentiable = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool):
        """With False, gradients of unused outputs reach backward as None, not zeros."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        raise RuntimeError("ctx.mark_dirty (in-place custom Functions) is not supported by "
                           "glasstorch yet")


class BackwardCFunction(Node, FunctionCtx):
    """The grad_fn of a custom Function's outputs; the ctx its forward and backward see."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self)
        self.to_save = ()
        self._saved = None
        self._released = False
        self._non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._arg_meta = []      # (shape, dtype) per forward argument, None for non-tensors
        self._input_meta = []    # the same for tensor arguments only (the engine casts)
        self._output_meta = []

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            raise RuntimeError(_SAVED_FREED)
        if self._saved is None:
            return tuple(self.to_save)
        return tuple(None if s is None else s.unpack() for s in self._saved)

    def apply(self, grads: tuple) -> tuple:
        grads = list(grads) + [None] * (len(self._output_meta) - len(grads))
        if self.materialize_grads:
            from ..ops.creation.factories import zeros
            for i, meta in enumerate(self._output_meta):
                if grads[i] is None and meta is not None:
                    grads[i] = zeros(meta[0], dtype=meta[1], device=meta[2])
        with overrides.user_code():      # the engine's formulas run without the protocol
            out = self._forward_cls.backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        return self._check_grads(out)

    def _check_grads(self, out: tuple) -> tuple:
        name = self.name()
        expected = len(self._arg_meta)
        if len(out) != expected:
            if len(out) > expected and all(g is None for g in out[expected:]):
                out = out[:expected]
            else:
                raise RuntimeError(f"function {name} returned an incorrect number of "
                                   f"gradients (expected {expected}, got {len(out)})")
        result = []
        for i, (g, meta) in enumerate(zip(out, self._arg_meta)):
            if g is None:
                if meta is not None:
                    result.append(None)
                continue
            if not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            if meta is None:
                raise RuntimeError(f"function {name} returned a gradient different than None "
                                   f"at position {i + 1}, but the corresponding forward "
                                   "input was not a Variable")
            if g._shape != meta[0]:
                if not _expandable(meta[0], g._shape):
                    raise RuntimeError(f"Function {name} returned an invalid gradient at "
                                       f"index {i} - got {list(g._shape)} but expected shape "
                                       f"compatible with {list(meta[0])}")
                g = sum_to_shape(g, meta[0])
            result.append(g)
        return tuple(result)

    def release(self) -> None:
        if self._saved:
            self._released = True
            self._saved = ()


def _expandable(shape, target) -> bool:
    """Whether `shape` broadcasts to `target` (so a grad of `target` can be summed to it)."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


class Function:
    """Base class of custom autograd operations: subclass it with static forward/backward
    and call `Fn.apply(*args)`."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": cls.__module__})

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class "
                      "itself. Instantiating an autograd function will raise an error in a "
                      "future version of PyTorch.", DeprecationWarning, stacklevel=2)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        if cls is Function:
            raise RuntimeError("apply must be called on a subclass of autograd.Function")
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad
                                     for a in args)
        record = grad_mode.is_grad_enabled() and any(ctx.needs_input_grad)
        split = cls.setup_context is not Function.setup_context
        with grad_mode.no_grad():
            if split:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        inputs = {id(a) for a in args if isinstance(a, Tensor)}
        if any(isinstance(o, Tensor) and id(o) in inputs for o in outs):
            with grad_mode.no_grad():   # an input returned as is comes back as an alias
                aliased = tuple(o.view_as(o) if isinstance(o, Tensor) and id(o) in inputs
                                else o for o in outs)
            if ctx._non_differentiable:  # marks made on the inputs apply to their aliases
                ctx._non_differentiable = set(ctx._non_differentiable) | {
                    id(a) for o, a in zip(outs, aliased) if id(o) in ctx._non_differentiable}
            outs = aliased
        if record:
            _connect(ctx, args, outs)
        elif ctx.to_save:
            ctx._saved = tuple(None if t is None else SavedTensor(t) for t in ctx.to_save)
            ctx.to_save = ()
        return outs[0] if single else outs


def _connect(ctx, args, outs):
    """Make ctx the grad_fn of the outputs, with edges to the forward's tensor inputs."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    ctx.next_functions = tuple(gradient_edge(a) if a._requires_grad else (None, 0)
                               for a in tensors)
    ctx._arg_meta = [(a._shape, a.dtype) if isinstance(a, Tensor) else None for a in args]
    ctx._input_meta = [(a._shape, a.dtype) for a in tensors]
    ctx._output_meta = [(o._shape, o.dtype, o.device) if isinstance(o, Tensor) else None
                        for o in outs]
    ctx._num_outputs = len(outs)
    for nr, o in enumerate(outs):
        if not isinstance(o, Tensor):
            continue
        if id(o) in ctx._non_differentiable or o.dtype.category < 2:
            o._set_requires_grad(False)
            continue
        o.grad_fn = ctx
        o._output_nr = nr
        o._set_requires_grad(True)
    ctx._saved = tuple(None if t is None else SavedTensor(t) for t in ctx.to_save)
    ctx.to_save = ()


__all__ = ["Function", "FunctionCtx"]
