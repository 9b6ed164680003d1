"""The recorded graph: Nodes (one per differentiable op call), edges, saved tensors.

A Node's `next_functions` are `(node, input_nr)` pairs, one per differentiable input, with
`(None, 0)` for inputs that need no gradient; leaves are reached through their
`AccumulateGrad` node. Nodes are numbered by a thread-local sequence counter so the engine
can run later-recorded nodes first, as PyTorch's does.
"""
from __future__ import annotations

import gc
import itertools
import sys
import threading
import weakref
from types import MappingProxyType

from .. import overrides
from ..core.tensor import Tensor
from ..dispatch.keys import MATH_BITS
from .saved_hooks import (disable_saved_tensors_hooks, hooks_open,  # noqa: F401 (public here)
                          save_on_cpu, saved_tensor_hooks, saved_tensors_hooks)

_SAVED_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")
ACCUMULATE_GRAD_SEQUENCE_NR = 2 ** 64 - 1


class _Sequence(threading.local):
    def __init__(self):
        self.counter = itertools.count()


_sequence = _Sequence()


def _version_hint() -> str:
    from .anomaly_mode import state
    if state.enabled:
        return ("Hint: the backtrace further above shows the operation that failed to compute "
                "its gradient. The variable in question was changed in there or anywhere "
                "later. Good luck!")
    return ("Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


class SavedTensor:
    """A tensor kept for backward, with the version it had when saved.

    Under `torch.autograd.graph.saved_tensors_hooks(pack, unpack)` the node keeps what
    `pack(tensor)` returned instead of the tensor, and `unpack` turns it back at backward."""

    __slots__ = ("tensor", "version", "producer", "vc", "packed", "unpack_hook")

    def __init__(self, tensor: Tensor, producer: str | None = None):
        if tensor._inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors "
                "created in inference mode in computation tracked by autograd. To work around "
                "this, you can make a clone to get a normal tensor and use it in autograd, or "
                "use `torch.no_grad()` instead of `torch.inference_mode()`.")
        self.tensor = tensor
        self.version = tensor._vc.version if tensor._vc is not None else 0
        self.producer = producer
        if hooks_open[0] and saved_tensor_hooks.stack:
            pack, self.unpack_hook = saved_tensor_hooks.stack[-1]
            self.vc, self.tensor = tensor._vc, None
            from .grad_mode import no_grad
            with no_grad():                      # as PyTorch: packing records nothing
                self.packed = pack(tensor)

    def unpack(self) -> Tensor:
        t = self.tensor
        if t is None:                   # kept by a pack hook
            return self._unpack_hooked()
        if t._vc is not None and t._vc.version != self.version:
            self._raise_modified(t, t._vc.version)
        return t

    def _unpack_hooked(self) -> Tensor:
        if self.vc is not None and self.vc.version != self.version:
            self._raise_modified(None, self.vc.version)
        with overrides.user_code():      # a user's hook, run inside the engine
            t = self.unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(t).__name__}")
        return t

    def _raise_modified(self, t, version: int):
        name = self.producer or (t.grad_fn.name() if t is not None and t.grad_fn is not None
                                 else None)
        op = name.removesuffix("Backward0").removesuffix("Backward") if name else ""
        made_by = f"output {t._output_nr} of {op}" if t is not None and name else \
            (f"saved by {op}" if name else "a leaf")
        what = f"[{t.type()} {list(t._shape)}]" if t is not None else "a saved tensor"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {what}, which is {made_by}, is at version {version}; "
            f"expected version {self.version} instead. " + _version_hint())


class Node:
    """A backward function of the graph: maps output gradients to input gradients."""

    # A formula node's run(grads, node, retain_graph), which the engine calls directly: its
    # gradients come shaped and typed as its inputs
    _formula = None

    # Hooks are rare: until one is registered a node shares these empty, read-only defaults
    # (recording a node is on every op's path).
    _pre_hooks: list | tuple = ()
    _hooks: list | tuple = ()
    _tensor_pre_hooks = MappingProxyType({})     # output_nr -> [hook]
    _retain_grad_hooks = MappingProxyType({})    # output_nr -> hook, run after the others
    _hooked = False     # True once any hook container is made: the engine's one check
    _num_outputs = 1    # outputs of the forward call (set where a call made several)

    def __init__(self):
        self._sequence_nr = next(_sequence.counter)
        self.next_functions: tuple = ()

    @property
    def metadata(self) -> dict:
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    def _own(self, name: str):
        """This node's own (mutable) container of hooks `name`, made on first use."""
        value = self.__dict__.get(name)
        if value is None:
            value = self.__dict__[name] = [] if name in ("_pre_hooks", "_hooks") else {}
            self._hooked = True
        return value

    def _has_grad_hooks(self) -> bool:
        return bool(self._tensor_pre_hooks or self._retain_grad_hooks or self._pre_hooks)

    def name(self) -> str:
        return type(self).__name__

    def _sequence(self) -> int:
        return self._sequence_nr

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) after the node runs; may return new grad_inputs."""
        from .hooks import RemovableHandle
        return RemovableHandle(self._own("_hooks"), fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) before the node runs; may return new grad_outputs."""
        from .hooks import RemovableHandle
        return RemovableHandle(self._own("_pre_hooks"), fn)

    def apply(self, grads: tuple) -> tuple:
        raise NotImplementedError

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph)."""

    def __call__(self, *grads):
        """The gradients for the node's inputs, as the engine computes them (C++ in PyTorch):
        a tuple, or the one gradient of a node with one input (PyTorch's return)."""
        with overrides.builtin_code():
            out = self.apply(grads)
        return out[0] if len(out) == 1 else out

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """The node of a leaf: adds the incoming gradient into `variable.grad`."""

    def __init__(self, variable: Tensor):
        next(_sequence.counter)      # Node.__init__, inlined (a leaf's every new graph
        self._sequence_nr = ACCUMULATE_GRAD_SEQUENCE_NR      # makes one): a number is taken
        self.next_functions = ()
        self.variable = variable

    def apply(self, grads: tuple) -> tuple:
        return ()


class FormulaNode(Node):
    """A node whose backward is a derivative formula declared beside its op: `formula(grads,
    node, retain_graph)` runs it on the node's saved values and returns one gradient per
    input, shaped and typed as the input; without retain_graph it then releases what the
    node saved (autograd/recording.py makes one per derivative, which unpacks the saved
    values, passes them by name, and checks what the formula returned with
    `conformed_gradients` only where it must)."""

    def __init__(self, formula, saved: dict, input_meta: list, next_functions: tuple = ()):
        # (the recorders' generated code makes their nodes as this does, inlined)
        self._sequence_nr = next(_sequence.counter)     # Node.__init__, inlined: a hot path
        self.next_functions = next_functions
        self._formula = formula
        self._saved = saved            # name -> SavedTensor | value
        self._input_meta = input_meta  # (shape, dtype) per differentiable input, or None
        self._released = False         # True once release() let the saved values go

    def apply(self, grads: tuple) -> tuple:
        return self._formula(grads, self, True)

    def release(self) -> None:
        for v in self._saved.values():
            if isinstance(v, SavedTensor):   # only nodes that saved tensors refuse a rerun
                self._released = True
                self._saved = {}
                return


class _SavedValue:
    """`grad_fn._saved_<name>` (`_saved_self`, `_saved_other`, ...), as PyTorch's nodes show
    what they saved: one descriptor per name on FormulaNode rather than a __getattr__, which
    would keep CPython from specialising any attribute read of a node (a node's run reads
    several each backward)."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def __get__(self, node, owner=None):
        if node is None:
            return self
        if node._released:
            raise RuntimeError(_SAVED_FREED)
        saved = node.__dict__.get("_saved", {})
        if self.key not in saved:
            raise AttributeError(f"'{type(node).__name__}' object has no attribute "
                                 f"'_saved_{self.key}'")
        v = saved[self.key]
        return v.unpack() if isinstance(v, SavedTensor) else v


def expose_saved(names) -> None:
    """Give formula nodes `_saved_<name>` for each of `names` (what a derivative saves)."""
    for name in names:
        if "_saved_" + name not in FormulaNode.__dict__:
            setattr(FormulaNode, "_saved_" + name, _SavedValue(name))


def conformed_gradients(out, metas: list) -> tuple:
    """A formula's result `out` (one gradient, or a tuple of them) as one gradient per input
    of `metas` ((shape, dtype) per differentiable input, or None): a broadcast gradient
    summed back to its input's shape, one of another dtype cast to the input's (as
    PyTorch's engine validates a node's outputs)."""
    if out.__class__ is tuple:
        if len(out) <= len(metas):
            for g, meta in zip(out, metas):
                if g is not None and meta is not None and (g._shape != meta[0]
                                                           or g.dtype is not meta[1]):
                    break
            else:
                return out      # the common case: every gradient as its input is
    elif not isinstance(out, tuple):            # one gradient
        if metas and (out is None or metas[0] is None or (
                out._shape == metas[0][0] and out.dtype is metas[0][1])):
            return (out,)
        out = (out,)
    result = []
    for g, meta in zip(out, metas):
        if g is not None and meta is not None:
            if g._shape != meta[0]:
                g = sum_to_shape(g, meta[0])
            if g.dtype is not meta[1]:       # the input's dtype, as PyTorch's engine
                g = g.to(meta[1])
        result.append(g)
    return tuple(result)


_node_classes: dict = {}


def node_class(name: str) -> type:
    """The FormulaNode subclass called `name` (`MulBackward0`), made once."""
    cls = _node_classes.get(name)
    if cls is None:
        cls = _node_classes[name] = type(name, (FormulaNode,), {"__module__": "torch.autograd"})
    return cls


def sum_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to an input's shape."""
    lead = grad.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and grad._shape[i + lead] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.view(shape) if grad._shape != tuple(shape) else grad


def refresh_view_history(t: Tensor) -> None:
    """A view's grad_fn goes stale when its base, or another view of it, is changed in place
    after the view was made (the base's history now runs through CopySlices or the in-place
    op's node): the view then reads the base's new history, as an as_strided of the base,
    which is how PyTorch regenerates it. Version counters tell when: all views share one."""
    version = t._grad_fn_version
    if version is None or t._vc.version == version:
        return
    from .grad_mode import enable_grad
    base = t._base
    if not base._requires_grad:
        # The view's history ran through a view of the base made a leaf by requires_grad_()
        # (the base itself needs no grad): PyTorch regenerates it all the same, and the
        # gradient through the new as_strided reaches nothing.
        base = Tensor._make(base._storage, base._offset, base._shape, base._stride,
                            base.dtype, base._vc).requires_grad_()
    with enable_grad():
        regenerated = base.as_strided(t._shape, t._stride, t._offset) if t.dtype is base.dtype \
            else real_view_of(base, t._shape, t._stride, t._offset, t._keyset & MATH_BITS)
    if base is not t._base:
        regenerated.grad_fn.next_functions = ((None, 0),)
    t.grad_fn, t._output_nr = regenerated.grad_fn, 0
    t._grad_fn_version = t._vc.version


def real_view_of(base: Tensor, shape, stride, offset, bits: int = 0) -> Tensor:
    """A real view (real, imag, view_as_real) of the complex tensor `base`, its geometry
    counted in real elements, regenerated as a recorded view op: as_strided keeps the base's
    dtype, so it reads view_as_real(base) (with the view's neg bit, imag of a conj()), as
    PyTorch's view function does."""
    from ..ops.math_bits import flip_bits
    from ..ops.shape.views import view_as_real
    pairs = flip_bits(view_as_real(base), bits)
    if (pairs._shape, pairs._stride, pairs._offset) == (tuple(shape), tuple(stride), offset):
        return pairs                                  # view_as_real(base) itself
    return pairs.as_strided(shape, stride, offset)


def adopt_views(base: Tensor, written: Tensor) -> None:
    """`base` has just started to require grad through an in-place write into itself or its
    view `written`: its other views, made before, require grad too, with an as_strided of the
    base as their history, as in PyTorch (whose views read their base's flag). Views keep no
    list of their siblings; the storage's reference count tells whether any other tensor
    shares it (base, `written` and the call's argument are the ones expected), and only then
    are they looked for among the base's referrers."""
    if sys.getrefcount(base._storage) <= (3 if written is not base else 2):
        return
    from .grad_mode import enable_grad
    for view in gc.get_referrers(base):
        if view.__class__ is Tensor and view._base is base and view is not written and \
                not view._requires_grad and view.dtype.category >= 2:
            with enable_grad():
                regenerated = base.as_strided(view._shape, view._stride, view._offset) \
                    if view.dtype is base.dtype else \
                    real_view_of(base, view._shape, view._stride, view._offset,
                                 view._keyset & MATH_BITS)
            view.grad_fn, view._output_nr = regenerated.grad_fn, 0
            view._grad_fn_version = view._vc.version
            view._set_requires_grad(True)


def gradient_edge(t: Tensor):
    """The (node, input_nr) through which gradient reaches `t`."""
    if t._base is not None:
        refresh_view_history(t)
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad:
        acc = t._accumulator
        if acc is None or acc() is None:
            node = AccumulateGrad(t)
            t.__dict__["_accumulator"] = weakref.ref(node)
            return (node, 0)
        return (acc(), 0)
    return (None, 0)
