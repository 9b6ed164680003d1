"""Autograd: the define-by-run graph, the backward engine and grad modes.

Ops record a Node (`grad_fn`) when an input requires grad (autograd/recording.py, the
Autograd dispatch key); `backward`/`grad` walk those nodes (autograd/engine.py).
"""
from __future__ import annotations

import weakref

from .. import overrides
from ..core.tensor import Tensor
from . import recording  # noqa: F401  (registers the Autograd kernel)
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .engine import implicit_gradient, run_backward
from .function import Function, FunctionCtx
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad, set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node, gradient_edge
from .hooks import RemovableHandle
from . import profiler, profiler_util  # noqa: F401,E402  (torch.autograd.profiler)


def _as_tuple(x):
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _root_grads(tensors, grad_tensors):
    grads = list(_as_tuple(grad_tensors)) or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} gradients for {len(tensors)} tensors")
    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if g is None:
            g = _implicit_root(t, i)
        elif not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        elif g._shape != t._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"torch.Size({list(g._shape)}) and output[{i}] has a shape "
                               f"of torch.Size({list(t._shape)}).")
        out.append(g)
    return out


def _implicit_root(t: Tensor, i: int) -> Tensor:
    """The gradient backward() starts root `t` (element `i` of its tensors) from when none is
    given: ones for a one-element tensor that requires grad."""
    if not t._requires_grad:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                           "have a grad_fn")
    if t.numel() != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    return implicit_gradient(t)


def _overridden(relevant: tuple) -> bool:
    """Whether backward/grad go to __torch_function__ handlers, as PyTorch's (written in
    Python) do: a mode is on, or a tensor's class overrides; then no handler sees the
    engine's own calls, which run inside the handler's call (modes are off the stack there)."""
    return (overrides.anywhere.modes or any(t.__class__ is not Tensor for t in relevant)) \
        and overrides.has_torch_function(relevant)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's .grad."""
    tensors = _as_tuple(tensors)
    relevant = tensors + _as_tuple(inputs)
    if _overridden(relevant):
        return overrides.handle_torch_function(
            backward, relevant, tensors, grad_tensors=grad_tensors, retain_graph=retain_graph,
            create_graph=create_graph, inputs=None if inputs is None else _as_tuple(inputs))
    grads = _root_grads(tensors, grad_tensors)
    retain = create_graph if retain_graph is None else retain_graph
    roots = [gradient_edge(t) for t in tensors]
    capture = [gradient_edge(t) for t in _as_tuple(inputs)] or None
    # with inputs=, only the nodes on a path to them run; as in PyTorch, they run as
    # always (a leaf's AccumulateGrad accumulates), and a non-leaf input retains its grad,
    # which its node's retain_grad hook then fills, after the tensor's own hooks
    for t in _as_tuple(inputs):
        if t.grad_fn is not None:
            t.retain_grad()
    run_backward(roots, grads, retain_graph=retain, create_graph=create_graph,
                 capture=capture)


_unwrapped_backward = backward


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """Gradients of outputs with respect to inputs, returned (not accumulated into .grad).
    `only_inputs` is PyTorch's deprecated argument, ignored as there."""
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    if _overridden(outputs + inputs):
        return overrides.handle_torch_function(
            grad, outputs + inputs, outputs, inputs, grad_outputs=grad_outputs,
            retain_graph=retain_graph, create_graph=create_graph, only_inputs=only_inputs,
            allow_unused=allow_unused, is_grads_batched=is_grads_batched,
            materialize_grads=materialize_grads)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grads = _root_grads(outputs, grad_outputs)
    retain = create_graph if retain_graph is None else retain_graph
    capture = [gradient_edge(t) for t in inputs]
    captured = run_backward([gradient_edge(t) for t in outputs], grads, retain_graph=retain,
                            create_graph=create_graph, capture=capture, accumulate=False,
                            through_captures=True)
    result = []
    for i, (t, edge) in enumerate(zip(inputs, capture)):
        g = captured.get(edge)
        if g is None:
            if materialize_grads:
                from ..ops.creation.factories import zeros_like
                g = zeros_like(t)
            elif not (allow_unused or materialize_grads):
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not "
                                   "have been used in the graph. Set allow_unused=True if "
                                   "this is the desired behavior.")
        result.append(g)
    return tuple(result)


# ---- Tensor methods --------------------------------------------------------------------

def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False,
                     inputs=None):
    """Accumulate the gradient of this tensor into the leaves' .grad."""
    if (overrides.anywhere.modes or self.__class__ is not Tensor) and \
            overrides.has_torch_function_unary(self):
        return overrides.handle_torch_function(
            _tensor_backward, (self,), self, gradient=gradient, retain_graph=retain_graph,
            create_graph=create_graph, inputs=inputs)
    if gradient is None and inputs is None and self.__class__ is Tensor and \
            backward is _unwrapped_backward:
        # `loss.backward()`: backward()'s work for one plain tensor, without its argument
        # handling (the tiny autograd step: -3 us of 43); not while a tool (the doctor)
        # wraps autograd.backward to see every backward
        # (`gradient_edge`'s common case, inlined)
        grads = [_implicit_root(self, 0)]
        fn = self.grad_fn
        run_backward([(fn, self._output_nr) if fn is not None and self._base is None
                      else gradient_edge(self)], grads,
                     retain_graph=create_graph if retain_graph is None else retain_graph,
                     create_graph=create_graph)
        return
    backward(self, gradient, retain_graph, create_graph, inputs)


def _register_hook(self, hook):
    """hook(grad) runs when this tensor's gradient is computed; it may return a new one."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        hooks = self.grad_fn._own("_tensor_pre_hooks").setdefault(self._output_nr, [])
        return RemovableHandle(hooks, hook)
    if self._hooks is None:
        self._hooks = []
    return RemovableHandle(self._hooks, hook)


def _register_post_accumulate_grad_hook(self, hook):
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    if self._post_acc_hooks is None:
        self._post_acc_hooks = []
    return RemovableHandle(self._post_acc_hooks, hook)


def _retain_grad(self):
    """Keep this non-leaf's gradient in .grad after backward (a no-op on leaves)."""
    if not self._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self._retains_grad:
        return
    ref = weakref.ref(self)

    def keep(g):
        t = ref()
        if t is not None:
            t._grad = g.detach().clone() if t._grad is None else t._grad + g.detach()
    self.grad_fn._own("_retain_grad_hooks")[self._output_nr] = keep   # after other hooks
    self._retains_grad = True


_tensor_backward.__name__, _tensor_backward.__qualname__ = "backward", "Tensor.backward"
Tensor.backward = _tensor_backward
Tensor.register_hook = _register_hook
Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
Tensor.retain_grad = _retain_grad
Tensor.retains_grad = property(lambda self: self._retains_grad)

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "detect_anomaly", "set_detect_anomaly", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "Node",
           "gradcheck", "gradgradcheck", "GradcheckError", "Function", "FunctionCtx"]

from . import functional  # noqa: E402  (built on grad, defined above)
from .grad_mode import (enforce_grad_layout_policy,  # noqa: E402,F401
                        set_multithreading_enabled)
from .variable import Variable, variable  # noqa: E402,F401
from . import forward_ad  # noqa: E402  (its tangents through formulas use grad, above)
