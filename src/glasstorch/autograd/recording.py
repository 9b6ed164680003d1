"""The Autograd dispatch key: record a graph Node for calls whose inputs require grad.

Registered as the fallback for the Autograd keys of every operator. When grad mode is off
or no input requires grad it only passes the call down. Otherwise it runs the op below
itself, then gives the outputs a `grad_fn`: a Node built from the derivative formula
declared on the op (ops/derivative.py), whose `next_functions` are the inputs' edges.
"""
from __future__ import annotations

import inspect
import threading
import weakref
from functools import partial

from ..core.shape import has_internal_overlap
from ..core.tensor import Tensor, make_alias
from ..dispatch.dispatcher import _LAST_BACKEND, _tracers, register_fallback, untraced
from ..dispatch.keys import AUTOGRAD_KEY_OF_DEVICE, MATH_BITS, DispatchKey
from ..ops.inplace_or_view import check_view_write
from ..ops.math_bits import flip_bits
from ..ops.registry import check_inplace_write
from . import grad_mode
from .anomaly_mode import record_forward_stack, state as _anomaly
from .engine import task_needs
from .graph import (_SAVED_FREED, FormulaNode, Node, SavedTensor, _sequence, adopt_views,
                    conformed_gradients, expose_saved, gradient_edge, node_class,
                    real_view_of)

_state = grad_mode.state


class NotImplementedNode(Node):
    """The grad_fn of an op that has no derivative formula yet: backward through it fails."""

    def __init__(self, op_name: str):
        super().__init__()
        self.op_name = op_name

    def name(self):
        return f"NotImplemented({self.op_name})"

    def apply(self, grads):
        raise RuntimeError(f"the derivative for '{self.op_name}' is not implemented")


def _differentiable(t) -> bool:
    return isinstance(t, Tensor) and t._requires_grad


def _any_requires_grad(op, args) -> bool:
    for i in op.tensor_positions:
        a = args[i]
        if a.__class__ is Tensor or isinstance(a, Tensor):
            if a._requires_grad:
                return True
        elif isinstance(a, (list, tuple)):
            if any(_differentiable(t) for t in a):
                return True
    return False


def autograd_kernel(op, ks, *args):
    """The Autograd key's kernel for every operator."""
    if not _state.enabled or not _any_requires_grad(op, args):
        return op.redispatch(ks, *args) if _tracers else untraced(op, ks, args)
    info = op.info
    if not info.get("mutated"):            # the common case: a functional op
        return _record(op, ks, args)
    if info.get("out"):        # set by the op declaration on every out= variant
        decl = info.get("decl")
        if decl is not None and decl.functional.info.get("autograd") == "not differentiable":
            return op.redispatch(ks, *args)
        raise RuntimeError(f"{op.schema.name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    decl = info.get("decl")
    if decl is not None and decl.inplace is op:
        if decl.functional.info.get("autograd") == "not differentiable":
            return _record_not_differentiable_inplace(op, ks, args)
        d = decl.functional.info.get("derivative")
        return _record_inplace(op, ks, decl.functional, args,
                               lambda: check_inplace_write(decl, args[0], decl.meta(*args),
                                                           args[1:]),
                               d.inplace_node_name if d is not None else None)
    through = info.get("recorded_through")
    if through is not None:
        return _record_inplace(op, ks, through[0], args, node_name=through[1])
    node_name = info.get("overwrites")
    if node_name is None:
        _check_inplace_target(args[0])
        raise RuntimeError(f"{op.name}: recording an in-place operation on a tensor that "
                           "requires grad is not supported for this operator yet")
    return _record_inplace(op, ks, _overwrite_functional(op, node_name), args)


def _record_not_differentiable_inplace(op, ks, args):
    """PyTorch's logical_*_ write through their out= form, which autograd does not see (a
    leaf may be written, its history stays); the comparisons (eq_, lt_, ...) give self a
    node with a zero derivative, cutting its history (EqBackward1 for a tensor operand)."""
    name = op.schema.name.removeprefix("aten::").rstrip("_")
    if name.startswith("logical_"):
        return op.redispatch(ks, *args)
    number = 1 if len(args) > 1 and isinstance(args[1], Tensor) else 0
    node_name = "".join(p.capitalize() for p in name.split("_")) + f"Backward{number}"
    return _record_inplace(op, ks, _overwrite_functional(op, node_name), args)


_NO_EDGE = (None, 0)

# Operators whose output takes no history when they convert to a dtype autograd cannot
# differentiate (PyTorch's output_differentiability condition on _to_copy)
_CASTS = frozenset(("aten::_to_copy",))


class _InPlace(threading.local):
    depth = 0       # > 0 while an in-place op records through its functional op


_in_place = _InPlace()


def recording_in_place() -> bool:
    """Whether the functional op now recording runs for an in-place op (PyTorch rebases that
    op's history instead of setting it: set_history's checks do not apply)."""
    return _in_place.depth > 0


def _functional_for_inplace(functional, self, args):
    """`functional(self, *args)` computing an in-place op's value, marked as such."""
    _in_place.depth += 1
    try:
        return functional(self, *args)
    finally:
        _in_place.depth -= 1


def _refuse_dtype(op, result) -> None:
    """PyTorch's set_history: a functional op's differentiable output of an integer or bool
    dtype cannot take a history ("Autograd not support dtype"). In-place ops rebase the
    history without that check, and casts declare such an output not differentiable."""
    if not _in_place.depth and op.name not in _CASTS:
        raise RuntimeError(f"Autograd not support dtype: {result.dtype.cname}")


def _edges_and_meta(op, args):
    """Per Tensor input of the schema (lists flattened): its gradient edge, and its (shape,
    dtype) for the engine to check gradients against; Python numbers and None give
    (None, 0) and None."""
    edges, meta = [], []
    for i in op.tensor_positions:
        a = args[i]
        if a.__class__ is Tensor:           # the common case, without the loop below
            if not a._requires_grad:
                edges.append(_NO_EDGE)
            elif a.grad_fn is not None and a._base is None:
                edges.append((a.grad_fn, a._output_nr))
            else:
                edges.append(gradient_edge(a))
            meta.append((a._shape, a.dtype))
            continue
        if isinstance(a, Tensor):
            items = (a,)
        elif isinstance(a, (list, tuple)):
            items = a
        else:
            edges.append(_NO_EDGE)
            meta.append(None)
            continue
        for t in items:
            if t is None:
                edges.append(_NO_EDGE)
                meta.append(None)
                continue
            if not t._requires_grad:
                edges.append(_NO_EDGE)
            elif t.grad_fn is not None and t._base is None:
                edges.append((t.grad_fn, t._output_nr))
            else:
                edges.append(gradient_edge(t))
            meta.append((t._shape, t.dtype))
    return edges, meta


def _direct_autograd(op, ks):
    """`autograd_kernel` for `op` with key set `ks` below it, on a thread in its default state
    (no trace): the kernels below called directly (`Operator._direct_kernel`), in one frame
    with the check whether to record. Every call with grad takes this path, and every call
    on a saved tensor inside backward."""
    below = op._direct_kernel(ks)
    if below is None:
        return partial(autograd_kernel, op, ks)
    positions = op.tensor_positions
    fusable = True

    def autograd_direct(*args):
        nonlocal fusable
        if _state.enabled:
            for i in positions:                       # `_any_requires_grad`, inlined
                a = args[i]
                if a.__class__ is Tensor:
                    if a._requires_grad:
                        break
                elif _wants_grad(a):
                    break
            else:
                return below(*args)
            info = op.info
            if info.get("mutated"):
                return autograd_kernel(op, ks, *args)
            result = below(*args)
            d = info.get("derivative")
            if d is None:
                return _history(op, args, result)
            if fusable and op.plain_cpu_grad is autograd_direct:    # its first recording
                fusable = _install_recording_kernel(op, d, below, autograd_direct)
            return (d.history or _history_of(d, op))(op, args, result)
        return below(*args)
    meta = getattr(below, "view_meta", None)
    returns = op.schema.returns
    if meta is not None and positions == (0,) and len(returns) == 1:
        if returns[0].type == "Tensor":
            return _view_with_history(op, below, meta, autograd_direct)
        if returns[0].type == "Tensor[]":
            return _views_with_history(op, below, meta, autograd_direct)
    return autograd_direct


def _wants_grad(a) -> bool:
    """Whether an argument at a Tensor position that is not a plain Tensor (a subclass, a
    list of tensors) asks to be recorded."""
    return isinstance(a, Tensor) and a._requires_grad or \
        isinstance(a, (list, tuple)) and any(_differentiable(t) for t in a)


def _install_recording_kernel(op, d, below, general) -> bool:
    """Make `op.plain_cpu_grad` (now `general`, `autograd_direct`) a function of its own for
    a functional op whose derivative `d` `_history_of` compiles: the check whether to
    record unrolled over its Tensor arguments, and the history's code in the same frame
    (one call fewer per recorded op: the tiny autograd step 28.0 -> 27.1 us). Made on the
    op's first recording call, not when its kernels are (compiled for every derivative at
    once they added about a second to the import). False where the op has none."""
    if op.info.get("mutated") or not op.tensor_positions:
        return False
    history = _history_lines(d, op)
    if history is None:
        return False
    lines = ["if not _state.enabled:",
             "    return below(*args)"]
    indent = ""
    for i in op.tensor_positions:                 # `autograd_direct`'s loop, unrolled
        lines += [f"{indent}a = args[{i}]",
                  f"{indent}if not (a._requires_grad if a.__class__ is Tensor else",
                  f"{indent}        a is not None and a.__class__ not in _PLAIN_NUMBERS",
                  f"{indent}        and _wants_grad(a)):"]
        indent += "    "
    lines += [f"{indent}return below(*args)",
              "result = below(*args)"]
    fused = _compiled(d, "def autograd_direct(*args):", lines + history, "recording kernel",
                      op=op, below=below, _state=_state, _wants_grad=_wants_grad)
    fused = fused["autograd_direct"]
    fused.func, fused.args = general.func, general.args     # what runs (_direct_kernel)
    op.plain_cpu_grad = fused
    return True


autograd_kernel.direct = _direct_autograd


def _fusable_derivative(op, self):
    """The view op's derivative where the fused view paths below may record it (its node
    of a fixed class, self not a view made under no_grad, an ordinary tensor, neither
    inference nor anomaly mode), else None: the general path then runs."""
    d = op.info.get("derivative")
    if d is None or d.outputs is not None or self._view_creation is not None or \
            self._vc is None or _state.inference or _anomaly.enabled:
        return None
    return d


def _view_with_history(op, below, meta, general):
    """`autograd_direct` for a view op of one Tensor argument and one output, made by the
    registry's view kernel under the ADInplaceOrView bookkeeping (`below`, from
    `_direct_views`): in the common case (grad mode on, self requiring grad, a view of the
    same dtype, the derivative's node of a fixed class) the view, its base and its node
    are made in this frame, with no dispatch, edge or meta loops between (views run some
    60 times in a small transformer's forward). Other calls take `general`."""
    def view_with_history(self, *args):
        if not _state.enabled or not self._requires_grad:
            return below(self, *args)
        d = _fusable_derivative(op, self)
        if d is None:
            return general(self, *args)
        m = meta(self, *args)
        if len(m) != 3:                        # a view of another dtype (view_as_real)
            return general(self, *args)
        out = make_alias(self, *m)
        base = self._base                      # the bookkeeping's common case
        out._base = self if base is None else base
        fn = self.grad_fn                      # `_edges_and_meta` for the one input
        edge = (fn, self._output_nr) if fn is not None and base is None else \
            gradient_edge(self)
        out.grad_fn = (d.recorder or _recorder_of(d))((self, *args), (edge,),
                                                      [(self._shape, self.dtype)], out)
        out._requires_grad = True              # `_history`'s one-output case
        out._keyset |= AUTOGRAD_KEY_OF_DEVICE[out._storage.device.type]
        out._grad_fn_version = out._vc.version
        return out
    return view_with_history


def _views_with_history(op, below, meta, general):
    """`_view_with_history` for a view op returning several views of its one Tensor
    argument (split, split_with_sizes, unbind): the views, their base, their bookkeeping as
    views returned together (ADInplaceOrView's `_finish_views`) and their one node made in
    this frame, where the general path takes some fifteen (a transformer splits its q, k, v
    in every block). The same calls as `_view_with_history` take `general`."""
    def views_with_history(self, *args):
        if not _state.enabled or not self._requires_grad:
            return below(self, *args)
        d = _fusable_derivative(op, self)
        if d is None:
            return general(self, *args)
        outs = [make_alias(self, *m) for m in meta(self, *args)]
        base = self._base
        root = self if base is None else base
        fn = self.grad_fn
        edge = (fn, self._output_nr) if fn is not None and base is None else \
            gradient_edge(self)
        node = (d.recorder or _recorder_of(d))((self, *args), (edge,),
                                               [(self._shape, self.dtype)], outs)
        name = d.node_name if d.node_name.__class__ is str else op.schema.name
        creation = ("multi_output", name.removesuffix("Backward0"))   # `_view_creation`'s
        grad_key = AUTOGRAD_KEY_OF_DEVICE[self._storage.device.type]
        node._num_outputs = len(outs)
        for nr, out in enumerate(outs):
            out._base = root
            out._view_creation = creation + (nr,)
            out.grad_fn = node
            out._output_nr = nr
            out._requires_grad = True
            out._keyset |= grad_key
        return outs
    return views_with_history


def _record(op, ks, args):
    if _tracers:
        result = op.redispatch(ks, *args)
    else:                            # `untraced`, inlined for a backend kernel below
        key = (ks & op.mask).bit_length() - 1
        result = (op.table[key](*args) if 0 <= key <= _LAST_BACKEND
                  else untraced(op, ks, args))
    return _history(op, args, result)


def _history(op, args, result):
    """Give the outputs of a functional op's call `result` their grad_fn: a node made from
    the op's derivative, saving what its formula reads."""
    d = op.info.get("derivative")
    if d is None and op.info.get("autograd") == "not differentiable":
        return result
    edges, meta = _edges_and_meta(op, args)
    if d is None:
        node = NotImplementedNode(op.name)
        node.next_functions = tuple(edges)
    else:
        node = (d.recorder or _recorder_of(d))(args, edges, meta, result)
    if _anomaly.enabled:
        record_forward_stack(node)
    if result.__class__ is Tensor or isinstance(result, Tensor):    # one output
        differentiable = d is None or d.outputs is None or 0 in d.outputs
        if differentiable and result.dtype.category < 2:
            _refuse_dtype(op, result)
        elif differentiable:      # (`_history_of` generates this case too: change both)
            result.grad_fn = node
            if result._output_nr:
                result._output_nr = 0
            result._requires_grad = True                  # `_set_requires_grad`, inlined
            result._keyset |= AUTOGRAD_KEY_OF_DEVICE[result._storage.device.type]
            if result._base is not None and result._vc is not None:
                result._grad_fn_version = result._vc.version   # see refresh_view_history
    else:
        differentiable = d.outputs if d is not None else None
        for nr, out in enumerate(result):      # (`_history_of` generates this too)
            if isinstance(out, Tensor) and out.dtype.category >= 2 and (
                    differentiable is None or nr in differentiable):
                out.grad_fn = node
                out._output_nr = nr
                out._set_requires_grad(True)
                # the gradients a pre hook sees: one per output up to the last with history
                # (PyTorch's node has an input for each; max's indices add none)
                node._num_outputs = nr + 1
    return result


def _recorder_of(d):
    """`d.recorder(args, edges, meta, result)`: the node of derivative `d` for one call, made
    once per derivative as straight-line code from its plan (a loop over the plan on every
    call costs about twice as much), as is the node's formula, which unpacks the saved
    values and passes them by name without building a dict. What it saves: a Tensor
    argument as a SavedTensor, or as None where `d.needs` says only gradients nobody asked
    for read it; other arguments as they are; `result<i>` as a _SavedOutput bound to the
    node; `<arg>_shape` and `<arg>_geometry` as metadata; `grad_input_mask` as one bool per
    input edge."""
    expose_saved(name for name, _, _ in d.plan)
    lines = _node_lines(d, "tuple([node is not None for node, _ in edges])", "tuple(edges)")
    lines.append("return node")
    source = "def record(args, edges, meta, result):\n" + "".join(f"    {ln}\n" for ln in lines)
    # the node's formula: the saved values unpacked, in the plan's order, passed by name
    # (by position where the formula takes them so, as the plan lists them: a faster call)
    positional = all(p.kind is p.POSITIONAL_OR_KEYWORD
                     for p in inspect.signature(d.formula).parameters.values())
    # (its nodes are of one class, a few where the name depends on the call: CPython
    # specialises its reads of their attributes, which the engine's reads cannot be)
    lines, passed = ["if node._released:",
                     "    raise RuntimeError(_SAVED_FREED)",
                     "saved = node._saved"], []
    tensors = any(kind in ("value", "result") for _, kind, _ in d.plan)
    if tensors:
        lines.append("held = False")
    for k, (name, kind, _) in enumerate(d.plan):
        lines.append(f"v{k} = saved[{name!r}]")
        if kind in ("value", "result"):
            lines += [f"if isinstance(v{k}, SavedTensor):",
                      f"    v{k} = v{k}.unpack()",
                      "    held = True"]
        passed.append(f"v{k}" if positional else f"{name}=v{k}")
    lines.append(f"out = formula(grads[0] if len(grads) == 1 else grads, {', '.join(passed)})")
    if tensors:               # FormulaNode.release, inlined: only a node that saved tensors
        lines += ["if held and not retain_graph:",
                  "    node._released = True",
                  "    node._saved = {}"]
    lines += ["metas = node._input_meta"] + _conforming_lines(d.tensor_inputs)
    source += "def run(grads, node, retain_graph):\n" + "".join(f"    {ln}\n" for ln in lines)
    namespace = {"Tensor": Tensor, "SavedTensor": SavedTensor, "_SavedOutput": _SavedOutput,
                 "_node_class_of": _node_class_of, "d": d, "formula": d.formula,
                 "conformed_gradients": conformed_gradients, "_new_object": object.__new__,
                 "_sequence": _sequence, "_SAVED_FREED": _SAVED_FREED,
                 "cls": _node_class_of(d, None) if isinstance(d.node_name, str) else None}
    name = d.node_name if isinstance(d.node_name, str) else "a derivative"
    exec(compile(source, f"<glasstorch.autograd recorder of {name}>", "exec"), namespace)
    d.recorder = namespace["record"]
    return d.recorder


def _conforming_lines(n) -> list:
    """The end of a formula node's `run`: its result `out` returned as it is where it holds
    one gradient per input of `metas`, each of its input's shape and dtype (the check
    unrolled for a schema of `n` Tensor inputs; None: a list of them), else as
    `conformed_gradients` makes it."""
    if not n:
        return ["return conformed_gradients(out, metas)"]
    gs, ms = (", ".join(f"{c}{k}" for k in range(n)) + ("," if n == 1 else "")
              for c in "gm")
    fits = " and ".join(f"(g{k} is None or m{k} is None or g{k}._shape == m{k}[0] "
                        f"and g{k}.dtype is m{k}[1])" for k in range(n))
    lines = [f"if out.__class__ is tuple and len(out) == {n} and len(metas) == {n}:",
             f"    {gs} = out",
             f"    {ms} = metas",
             f"    if {fits}:",
             "        return out"]
    if n == 1:
        lines += ["elif out.__class__ is Tensor and len(metas) == 1:",
                  "    g0, m0 = out, metas[0]",
                  f"    if {fits}:",
                  "        return (out,)"]
    return lines + ["return conformed_gradients(out, metas)"]


def _node_lines(d, mask: str, edges: str) -> list:
    """The lines making the node `node` of derivative `d` from `args`, `edges`, `meta` and
    `result`: what the plan saves, then the node; `mask` and `edges` are the expressions
    of the gradient mask and of the edges' tuple."""
    lines, names, bound = [], [], []
    if d.saves_result:
        lines.append("outputs = result if isinstance(result, (tuple, list)) else (result,)")
    for k, (name, kind, index) in enumerate(d.plan):
        v = f"v{k}"
        names.append(f"{name!r}: {v}")
        if kind == "value":
            lines.append(f"{v} = args[{index}]")
            if d.needs is not None and name in d.needs:
                wanted = " or ".join(f"edges[{i}][0] is not None" for i in d.needs[name])
                lines.append(f"if isinstance({v}, Tensor): "
                             f"{v} = SavedTensor({v}) if {wanted or 'False'} else None")
            else:
                lines.append(f"if isinstance({v}, Tensor): {v} = SavedTensor({v})")
        elif kind == "result":
            lines.append(f"{v} = _SavedOutput(outputs[{index}], {index})")
            bound.append(f"{v}.bind(node)")
        elif kind == "shape":            # a tuple of shapes for a list of tensors (cat's)
            lines += [f"{v} = args[{index}]",
                      f"{v} = {v}._shape if isinstance({v}, Tensor) else "
                      f"tuple(t._shape for t in {v})"]
        elif kind == "mask":
            lines.append(f"{v} = {mask}")
        else:                                                         # geometry
            lines += [f"{v} = args[{index}]", f"{v} = ({v}._shape, {v}._stride, {v}._offset)"]
    cls = "cls" if isinstance(d.node_name, str) else "_node_class_of(d, args)"
    # FormulaNode.__init__, inlined: every recorded op call makes a node
    lines += [f"node = _new_object({cls})",
              "node._sequence_nr = next(_sequence.counter)",
              f"node.next_functions = {edges}",
              "node._formula = run",
              f"node._saved = {{{', '.join(names)}}}",
              "node._input_meta = meta",
              "node._released = False"]
    return lines + bound


_PLAIN_NUMBERS = frozenset((int, float, bool, complex))


def _history_of(d, op):
    """`d.history(op, args, result)`: `_history` for a call of `op`, the operator `d` is
    declared on, as straight-line code in one frame (the recorder's, with
    `_edges_and_meta` unrolled over the op's Tensor arguments): every op call recording a
    node runs it (the tiny autograd step's forward, three ops: 10.6 -> 9.7 us). An op of
    several Tensor outputs (native_layer_norm, nll_loss_forward, native_dropout) takes the
    same code with `_history`'s several-output case unrolled over its outputs (F.layer_norm
    with grad: 18.9 -> 17.4 us). Calls it does not cover (a differentiable output not a
    Tensor of a floating dtype, a Tensor subclass or list argument) go to `_history`, as do
    all calls of a one-output op whose output is not differentiable."""
    lines = _history_lines(d, op)
    if lines is None:
        d.history = _history
        return _history
    d.history = _compiled(d, "def history(op, args, result):", lines, "history")["history"]
    return d.history


def _history_lines(d, op):
    """The body of `d.history` (see `_history_of`), reading `op`, `args` and `result`; None
    where `_history` itself must run."""
    returns = op.schema.returns
    several = len(returns) > 1
    if d.outputs is not None and not several or \
            any(r.type != "Tensor" for r in returns):
        return None
    if several:           # `_history`'s several-output case, for the differentiable ones
        wanted = [nr for nr in range(len(returns)) if d.outputs is None or nr in d.outputs]
        names = "".join(f"r{nr}, " for nr in range(len(returns)))
        refused = " or ".join(f"r{nr}.__class__ is not Tensor or r{nr}.dtype.category < 2"
                              for nr in wanted) or "False"
        lines = [f"if result.__class__ is not tuple or len(result) != {len(returns)}:",
                 "    return _history(op, args, result)",
                 f"{names}= result",
                 f"if {refused}:",
                 "    return _history(op, args, result)"]
        outputs = [f"node._num_outputs = {max(wanted, default=-1) + 1}"]   # see _history
        for nr in wanted:
            outputs += [f"r{nr}.grad_fn = node",
                        f"r{nr}._output_nr = {nr}" if nr else
                        f"if r{nr}._output_nr: r{nr}._output_nr = 0",
                        f"r{nr}._requires_grad = True         # `_set_requires_grad`, inlined",
                        f"r{nr}._keyset |= AUTOGRAD_KEY_OF_DEVICE[r{nr}._storage.device.type]"]
    else:
        lines = ["if result.__class__ is not Tensor or result.dtype.category < 2:",
                 "    return _history(op, args, result)"]
        outputs = ["result.grad_fn = node                 # `_history`'s one-output case",
                   "if result._output_nr:",
                   "    result._output_nr = 0",
                   "result._requires_grad = True",
                   "result._keyset |= AUTOGRAD_KEY_OF_DEVICE[result._storage.device.type]",
                   "if result._base is not None and result._vc is not None:",
                   "    result._grad_fn_version = result._vc.version"]
    n = len(op.tensor_positions)
    for k, i in enumerate(op.tensor_positions):
        lines += [f"a = args[{i}]",
                  "if a.__class__ is Tensor:",
                  "    if not a._requires_grad:",
                  f"        e{k} = _NO_EDGE",
                  "    elif a.grad_fn is not None and a._base is None:",
                  f"        e{k} = (a.grad_fn, a._output_nr)",
                  "    else:",
                  f"        e{k} = gradient_edge(a)",
                  f"    m{k} = (a._shape, a.dtype)",
                  "elif a is None or a.__class__ in _PLAIN_NUMBERS:",
                  f"    e{k}, m{k} = _NO_EDGE, None",
                  "else:          # its edges so far stay alive, the same for _history",
                  "    return _history(op, args, result)"]
    edges = "".join(f"e{k}, " for k in range(n))
    lines += [f"edges = ({edges})", f"meta = [{', '.join(f'm{k}' for k in range(n))}]"]
    lines += _node_lines(d, "(" + "".join(f"e{k}[0] is not None, " for k in range(n)) + ")",
                         "edges")
    lines += ["if _anomaly.enabled:",
              "    record_forward_stack(node)"]
    return lines + outputs + ["return result"]


def _compiled(d, header: str, lines: list, what: str, **names) -> dict:
    """The namespace after running generated code: `header` and its body `lines`, in the
    namespace of d's recorder (its node class, `run`, SavedTensor...) with `names` added."""
    record = d.recorder or _recorder_of(d)
    source = header + "\n" + "".join(f"    {ln}\n" for ln in lines)
    namespace = dict(record.__globals__, _history=_history, _NO_EDGE=_NO_EDGE,
                     gradient_edge=gradient_edge, _PLAIN_NUMBERS=_PLAIN_NUMBERS,
                     _anomaly=_anomaly, record_forward_stack=record_forward_stack,
                     AUTOGRAD_KEY_OF_DEVICE=AUTOGRAD_KEY_OF_DEVICE, **names)
    name = d.node_name if isinstance(d.node_name, str) else "a derivative"
    exec(compile(source, f"<glasstorch.autograd {what} of {name}>", "exec"), namespace)
    return namespace


def _node_class_of(d, args) -> type:
    """The grad_fn class a derivative's nodes get: made once for a fixed name (and kept on
    the derivative), per call where the name depends on the call's arguments."""
    if isinstance(d.node_name, str):
        d.node_class = node_class(d.node_name)
        return d.node_class
    return node_class(d.node_name(*args))


forward_ad_open = False    # set by autograd.forward_ad while a dual level is open


def _alias(t: Tensor) -> Tensor:
    """A history-free alias of `t` over the same storage and version counter, of the same
    class, with a subclass's own fields (a wrapper's inner tensors, a FakeTensor's device)."""
    alias = type(t)._make(t._storage, t._offset, t._shape, t._stride, t.dtype, t._vc)
    alias._np = t._np        # the same elements: a kernel reading it in backward reuses the view
    if t.__class__ is not Tensor:
        alias.__dict__.update((k, v) for k, v in t.__dict__.items() if not hasattr(Tensor, k))
    if forward_ad_open and "_fw_tangent" in t.__dict__:   # a saved output keeps its tangent
        from .forward_ad import copy_tangent
        copy_tangent(t, alias)
    return alias


class _SavedOutput(SavedTensor):
    """An op's own output saved for its backward, without a reference cycle: it keeps a
    grad_fn-less alias and a weak reference to the node, and reattaches it on unpack."""

    __slots__ = ("node", "output_nr")

    def __init__(self, out: Tensor, output_nr: int):
        alias = _alias(out)
        if output_nr:                  # (0 is the class's default: no instance dict made)
            alias._output_nr = output_nr
        SavedTensor.__init__(self, alias)
        self.node = None
        self.output_nr = output_nr

    def bind(self, node):
        self.node = weakref.ref(node)
        self.producer = node.name()          # names the op in a version error

    def unpack(self) -> Tensor:
        t = SavedTensor.unpack(self)
        node = self.node() if self.node is not None else None
        if node is not None and _state.enabled and t.dtype.category >= 2:
            t = _alias(t)
            t.grad_fn, t._output_nr = node, self.output_nr
            t._set_requires_grad(True)
        return t


def _check_inplace_target(self: Tensor):
    if self._view_creation is not None:
        check_view_write(self)
    if self.grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = self._base
    # a view that requires grad, of a leaf base (which need not require grad itself: a view
    # made a leaf by requires_grad_() passes requires_grad on to its own views)
    if base is not None and base.grad_fn is None and self._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _zero_gradient(grads, node, retain_graph):
    from ..ops.creation.factories import zeros_like
    return conformed_gradients((zeros_like(grads[0]),), node._input_meta)


def _overwritten(self: Tensor, result: Tensor, node_name: str) -> Tensor:
    """`result` replaces every value of self without depending on them: give it a node that
    passes a zero gradient to self, so that self's old history gets nothing."""
    node = node_class(node_name)(_zero_gradient, {}, [(self._shape, self.dtype)])
    node.next_functions = (gradient_edge(self) if _differentiable(self) else (None, 0),)
    result.grad_fn, result._output_nr = node, 0
    result._set_requires_grad(True)
    return result


def _overwrite_functional(op, node_name: str):
    """The out-of-place form of an in-place random fill (uniform_, normal_, ...)."""
    def functional(self, *args):
        with grad_mode.no_grad():
            out = self.detach().clone()
            op(out, *args)
        return _overwritten(self, out, node_name)
    return functional


def records_inplace(op) -> bool:
    """Whether an in-place op outside the structured declarations (copy_, fill_, the
    random fills) is recorded through a functional equivalent (ops/derivative.py)."""
    return "recorded_through" in op.info or "overwrites" in op.info


def _saves_first_argument(functional) -> bool:
    d = getattr(functional, "info", {}).get("derivative")
    return d is not None and any(kind == "value" and index == 0 for _, kind, index in d.plan)


def _record_inplace(op, ks, functional, args, check=None, node_name=None):
    """self.op_(...) while recording: compute op(self, ...) out of place with a graph, store
    it into self, and give self (and, for a view, its base) the new history. Node names are
    the functional op's, as PyTorch's, unless the op names its in-place node apart.

    An expanded self (elements sharing memory) cannot take a copy of the result: there the
    op's own kernel (`op` below the Autograd key `ks`) writes it, as in PyTorch, which lets
    the fills through (fill_, masked_fill_, index_fill_, index_put_) and refuses the rest.
    The kernel writes an empty self too: no value changes, and its errors are then PyTorch's,
    raised on self's own storage (index_fill_ restrides self, which a clone's empty storage
    refuses where self's would reach the index check)."""
    self = args[0]
    _check_inplace_target(self)
    expanded = 0 in self._stride and has_internal_overlap(self._shape, self._stride)
    if check is not None and not expanded:
        check()                                          # shape and cast rules first
    # the formula's copy of self must be the value before the write (PyTorch's original_self)
    keep_self = self._requires_grad or _saves_first_argument(functional)
    if node_name is not None:
        functional = _renamed(functional, node_name)
    by_kernel = expanded or 0 in self._shape
    if self._base is not None and self.dtype.category >= 2:    # an integer view has no history
        return _record_inplace_on_view(functional, args, (op, ks) if by_kernel else None)
    source = self.clone() if keep_self or by_kernel else self
    if by_kernel:
        _write_with_kernel(op, ks, args)
    result = _functional_for_inplace(functional, source, args[1:])
    if not by_kernel:
        with grad_mode.no_grad():
            self.copy_(result)
    if result.grad_fn is not None:
        self.grad_fn, self._output_nr = result.grad_fn, result._output_nr
        if not self._requires_grad:
            self._set_requires_grad(True)
            adopt_views(self, self)
        if result is not self:
            _save_self_as_output(result.grad_fn, self)
    return self


def _save_self_as_output(fn: Node, self: Tensor) -> None:
    """The op's node saved its output, computed apart; the output is now self, written in
    place. Save self instead (its storage and version counter), so that a later in-place
    write into self, or a view of it, makes backward fail as in PyTorch instead of reading a
    copy nobody can change."""
    saved = getattr(fn, "_saved", None)
    if not saved:
        return
    for name, value in saved.items():
        if value.__class__ is _SavedOutput:
            own = _SavedOutput(self, value.output_nr)
            own.bind(fn)
            saved[name] = own


def _renamed(functional, node_name: str):
    def run(*args):
        result = functional(*args)
        if result.grad_fn is not None:
            result.grad_fn.__class__ = node_class(node_name)
        return result
    return run


class CopySlices(Node):
    """The base's new history after an in-place op on one of its views: the gradient of the
    view's region goes through the op's node; the rest of the base's gradient passes on."""

    def __init__(self, base: Tensor, view: Tensor, fn, fn_self: int | None):
        super().__init__()
        self._base_geometry = (base._shape, base._stride, base._offset)
        # a real view of a complex base (real, imag, view_as_real) counts real elements
        self._real_view = view.dtype is not base.dtype
        self._view_geometry = (view._shape, view._stride,
                               view._offset - base._offset * (2 if self._real_view else 1))
        self._fn, self._fn_self = fn, fn_self
        self._view_bits = (view._keyset ^ base._keyset) & MATH_BITS   # a conj() view's
        self._released = False

    def name(self) -> str:
        return "torch::autograd::CopySlices"     # PyTorch's name for this node

    def apply(self, grads):
        from ..ops.creation.factories import empty_strided, zeros_like
        if self._released:       # PyTorch's drops its op's node: no second backward
            raise RuntimeError(_SAVED_FREED)
        (grad,) = grads[:1]
        shape, stride, _ = self._base_geometry
        vshape, vstride, voffset = self._view_geometry
        # Runs in the engine's grad mode: with create_graph these writes are recorded too,
        # so the gradient it returns can itself be differentiated.
        result = empty_strided(shape, stride, dtype=grad.dtype, device=grad.device).copy_(grad)
        region = real_view_of(result, vshape, vstride, voffset) if self._real_view else \
            result.as_strided(vshape, vstride, voffset)
        if self._view_bits:      # the view's values are the base's conjugated (negated)
            region = flip_bits(region, self._view_bits)
        if self._fn is None:
            region.fill_(0)
            return (result,)
        fn_grads = self._fn.apply((region.clone(),))
        others = tuple(g for i, g in enumerate(fn_grads) if i != self._fn_self)
        if not task_needs(self.next_functions[0][0]):   # the base's old values need none
            return (None,) + others
        g_self = fn_grads[self._fn_self] if self._fn_self is not None else None
        # an expanded view's region refuses the copy, as PyTorch's (its op may write there)
        region.copy_(zeros_like(region) if g_self is None else g_self)
        return (result,) + others

    def release(self):
        self._released = True
        if self._fn is not None:
            self._fn.release()


def _write_with_kernel(op, ks, args):
    """The in-place op itself writes self, below autograd (its checks and warnings too)."""
    with grad_mode.no_grad():
        op.redispatch(ks, *args)


def _record_inplace_on_view(functional, args, kernel=None):
    """`kernel`: (op, keys) to write an expanded or empty view with, else the result is
    copied in."""
    self, base = args[0], args[0]._base
    # The op runs on a copy of the view's old value; the copy keeps the view's history, so
    # what the op's node saves of it can be differentiated again (double backward).
    if self._requires_grad:
        snapshot = self.clone()
        snapshot_node = snapshot.grad_fn
    else:
        snapshot = self.detach().clone().requires_grad_(self.dtype.category >= 2)
        snapshot_node = None
    if kernel is not None:
        _write_with_kernel(*kernel, args)
    result = _functional_for_inplace(functional, snapshot, args[1:])
    base_edge = gradient_edge(base)
    if kernel is None:
        with grad_mode.no_grad():
            self.copy_(result)
    fn = result.grad_fn
    fn_self = None
    if fn is not None:
        for i, (node, _) in enumerate(fn.next_functions):
            if node is not None and (node is snapshot_node if snapshot_node is not None
                                     else getattr(node, "variable", None) is snapshot):
                fn_self = i
    node = CopySlices(base, self, fn, fn_self)
    extra = () if fn is None else tuple(e for i, e in enumerate(fn.next_functions)
                                         if i != fn_self)
    node.next_functions = (base_edge,) + extra
    base.grad_fn, base._output_nr = node, 0
    if not base._requires_grad:
        base._set_requires_grad(True)
        adopt_views(base, self)
    bits = (self._keyset ^ base._keyset) & MATH_BITS      # conj() views, imag of a conj()
    with grad_mode.enable_grad():             # the view now reads the new base
        regenerated = flip_bits(base.as_strided(self._shape, self._stride, self._offset), bits) \
            if self.dtype is base.dtype else \
            real_view_of(base, self._shape, self._stride, self._offset, bits)
    self.grad_fn, self._output_nr = regenerated.grad_fn, 0
    self._grad_fn_version = self._vc.version
    self._set_requires_grad(True)
    if fn is not None:
        _save_view_as_output(fn, self)
    return self


def _save_view_as_output(fn: Node, view: Tensor) -> None:
    """The op's node saved its output (computed on the snapshot); the output is now the view
    itself, whose history runs through CopySlices. Save that instead, so double backward
    differentiates through the base's new history rather than through `fn` on its own."""
    saved = getattr(fn, "_saved", None)
    if not saved:
        return
    for name, value in saved.items():
        if value.__class__ is _SavedOutput:
            alias = Tensor._make(view._storage, view._offset, view._shape, view._stride,
                                 view.dtype, view._vc)
            alias.grad_fn = view.grad_fn
            alias._set_requires_grad(True)
            saved[name] = SavedTensor(alias, producer=fn.name())


for _key in (DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA, DispatchKey.AutogradMeta):
    register_fallback(_key, autograd_kernel)

__all__ = ["FormulaNode"]
