"""The backward engine: dependency counting and a ready queue ordered as PyTorch's.

Nodes run when every gradient they wait for has arrived; among ready nodes the one with
the highest sequence number (the most recently recorded) runs first, and AccumulateGrad
(the highest of all) as soon as it is ready. Without retain_graph each node frees its saved
tensors once it has run.
"""
from __future__ import annotations

import itertools
import math
import threading
from heapq import heappop, heappush
from sys import getrefcount

import numpy as np

from .. import overrides
from ..backends.cpu import parallel
from ..core import dtype as dt
from ..core.grad_state import state as _grad_state
from ..core.shape import is_non_overlapping_and_dense
from ..core.tensor import Tensor, contiguous_format, strided
from ..dispatch import dispatcher
from ..dispatch.dispatcher import PLAIN_CPU_KEYSET, _tracers
from ..dispatch.keys import (AUTOGRAD_KEY_OF_DEVICE, MATH_BITS, TENSOR_KEYSETS,
                             threads_off_default)
from ..ops.copying.copies import copy_, fill_
from ..ops.creation.factories import (empty_like, new_empty_strided_op, ones_like,
                                      ones_like_op)
from ..ops.pointwise.elementwise import add
from ..profiler import _recorder
from . import grad_mode
from .anomaly_mode import check_nan, report_failure, state as _anomaly
from .graph import AccumulateGrad


# The profiler's names for a node's work (PyTorch's): the engine's evaluation of the node,
# around the node's own function.
_EVALUATE = "autograd::engine::evaluate_function: "
_ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"


_PLAIN_CPU_GRAD = PLAIN_CPU_KEYSET | AUTOGRAD_KEY_OF_DEVICE["cpu"]
_own_kernels: dict = {}   # what -> (dispatcher.generation, only glasstorch's kernels run)


def _only_own_kernels(what: str, operators) -> bool:
    """Whether every kernel `operators` may reach is glasstorch's own, rechecked after any
    registration: a torch.library kernel must still be called."""
    known = _own_kernels.get(what)
    if known is None or known[0] != dispatcher.generation:
        own = all(k is None or getattr(k, "__module__", "").startswith("glasstorch.")
                  or getattr(getattr(k, "func", None), "__module__", "")
                  .startswith("glasstorch.") for op in operators for k in op.table)
        known = _own_kernels[what] = (dispatcher.generation, own)
    return known[1]


def _ones_like_is_builtin() -> bool:
    return _only_own_kernels("ones_like", (ones_like_op, fill_.functional))


def _add_is_builtin() -> bool:
    return _only_own_kernels("add", (add.functional, add.inplace))


def _plain_thread() -> bool:
    """Whether this thread's dispatch is in its default state with nothing watching it (no
    mode, trace or profile): there a call to glasstorch's own kernels may be made directly."""
    return (not threads_off_default[0] and not _tracers and not overrides.anywhere.modes
            and not _recorder.collectors)


def implicit_gradient(t: Tensor) -> Tensor:
    """The gradient `backward()` starts a one-element output from: ones_like(t), made
    directly for a plain CPU tensor on a thread in its default state when ones_like runs
    only glasstorch's kernels (what it would do there), so that modes, traces and
    registered kernels still see the call everywhere else."""
    if (t.__class__ is Tensor and t._keyset == _PLAIN_CPU_GRAD and not threads_off_default[0]
            and not _tracers and not overrides.anywhere.modes and _ones_like_is_builtin()):
        g = Tensor._empty(t._shape, t.dtype)
        g._array().fill(1)
        return g
    return ones_like(t, memory_format=contiguous_format)


def _add(a, b):
    return b if a is None else (a if b is None else a + b)


_IN_PLACE_DTYPES = (dt.float32, dt.float64)
_META_KEYSET = TENSOR_KEYSETS["meta"]
# References to a buffered gradient nobody else holds, when `_accumulated` asks: the
# buffer's, run_backward's `old`, `_accumulated`'s and `_engine_only`'s parameters, and
# getrefcount's argument.
_BUFFER_REFS = 5
_DENSE_NUMEL: dict = {}


def _dense_numel(shape: tuple, stride: tuple) -> int:
    """The element count of a non-overlapping and dense layout, -1 for another (remembered
    per layout: a backward sums gradients of a few layouts many times)."""
    n = _DENSE_NUMEL.get((shape, stride))
    if n is None:
        n = math.prod(shape) if is_non_overlapping_and_dense(shape, stride) else -1
        if len(_DENSE_NUMEL) < 4096:
            _DENSE_NUMEL[(shape, stride)] = n
    return n


def _accumulated(old: Tensor, new: Tensor, create_graph: bool) -> Tensor:
    """old + new for a node's input buffer: added into old's memory when only the buffer
    holds old and its memory (PyTorch's InputBuffer::accumulate), else a new sum. In place
    for dense float tensors of one dtype and shape outside create_graph: on the CPU, in
    float32/float64 on a thread nothing watches where `+` would run glasstorch's own add
    kernel (the same IEEE sums, split across threads as its, without an output to allocate
    or an op to dispatch); on meta, by add_, so that memory planning sees the CPU's
    allocations."""
    keyset = old._keyset
    if (not create_graph and (keyset == PLAIN_CPU_KEYSET or keyset == _META_KEYSET)
            and new._keyset == keyset and old.__class__ is Tensor and new.__class__ is Tensor
            and old.dtype is new.dtype and old.dtype in _IN_PLACE_DTYPES
            and old._shape == new._shape and old._offset == 0
            and old._storage._nbytes == _dense_numel(old._shape, old._stride)
            * old.dtype.itemsize
            and _engine_only(old, _BUFFER_REFS)):
        if keyset == _META_KEYSET:
            return old.add_(new)
        if _plain_thread() and _add_is_builtin():
            a = old._array()
            parallel.ufunc(np.add, (a, new._array()), a)
            return old
    return old + new


def _accumulate(var: Tensor, grad: Tensor, create_graph: bool) -> None:
    """Add `grad` into var.grad, which keeps the variable's layout and is never aliased."""
    if var._hooks:
        grad = _leaf_hooked(var, grad)
    owned = _owned(grad, var) if var._grad is None and not create_graph else None
    if owned is not None:
        var._grad = owned             # the common case: nothing to compute, in any grad mode
    else:
        _accumulate_into(var, grad, create_graph)
    if var._post_acc_hooks:
        with overrides.user_code():
            for hook in var._post_acc_hooks:
                hook(var)


def _leaf_hooked(var: Tensor, grad: Tensor) -> Tensor:
    """`grad` as the leaf's own hooks (register_hook's, in order) leave it."""
    with overrides.user_code():
        for hook in var._hooks:
            new = hook(grad)
            if new is not None:
                grad = new
    return grad


def _accumulate_into(var: Tensor, grad: Tensor, create_graph: bool) -> None:
    with grad_mode.enable_grad() if create_graph else grad_mode.no_grad():
        if var._grad is None:
            if create_graph:
                var._grad = grad if grad._shape == var._shape else grad.expand(var._shape)
            elif grad.__class__ is not Tensor:     # a subclass makes its own copy
                var._grad = grad.detach().clone()
            else:
                var._grad = _fresh_grad(var, grad)
        elif create_graph or var._grad._requires_grad:
            var._grad = var._grad + grad
        else:
            var._grad.add_(grad.detach() if grad._requires_grad else grad)


def _copy_is_builtin() -> bool:
    return _only_own_kernels("new_empty_strided, copy_",
                             (new_empty_strided_op, copy_.functional))


def _fresh_grad(var: Tensor, grad: Tensor) -> Tensor:
    """var.grad's first value where the gradient cannot be stolen (a sum's expanded
    gradient, a view something else holds), as PyTorch's clone_obey_contract makes it: a
    copy in var's strides when var is dense (new_empty_strided, copy_), else a contiguous
    clone; a sparse one in var's layout (empty_like, copy_). Made directly for a plain
    dense CPU variable and gradient of one dtype on a thread in its default state, where
    those ops would run only glasstorch's kernels: the same tensor without their dispatch
    (x.sum().backward() on 16 floats: 30 -> 21 us)."""
    if var.layout is not strided or grad.layout is not strided:
        return empty_like(var).copy_(grad.detach())     # a sparse gradient or variable
    if not is_non_overlapping_and_dense(var._shape, var._stride):
        return grad.detach().clone(memory_format=contiguous_format)
    if (var._keyset == _PLAIN_CPU_GRAD and grad._keyset == PLAIN_CPU_KEYSET
            and var.__class__ is Tensor and grad.__class__ is Tensor
            and grad.dtype is var.dtype and grad._shape == var._shape and _plain_thread()
            and _copy_is_builtin()):
        fresh = Tensor._empty(var._shape, var.dtype, stride=var._stride)
        np.copyto(fresh._array(), grad._array())
        return fresh
    grad = grad.detach()
    return grad.new_empty_strided(var._shape, var._stride, dtype=var.dtype,
                                  device=var.device).copy_(grad)


# References to a gradient nobody else holds, when `_owned` asks: the engine's local,
# `_accumulate`'s, `_owned`'s and `_engine_only`'s parameters, and getrefcount's argument.
_ENGINE_REFS = 5


def _engine_only(grad: Tensor, refs: int) -> bool:
    """Whether nothing but the engine's `refs` references (see the callers) holds `grad`
    or its memory; a view of temporaries nobody else holds (a transposed product, a
    reshaped sum) counts as held by the engine alone."""
    if getrefcount(grad) > refs:
        return False
    root = grad._base
    if root is None:
        return getrefcount(grad._storage) <= 2
    views, t = 1, grad                # the views from root to grad, each held by the next
    while t._view_meta is not None and t._view_meta[0] is not root:
        t = t._view_meta[0]
        if getrefcount(t) > 3:        # the next view's record, `t`, getrefcount's argument
            return False
        views += 1
    # root: each view's _base, the first view's record, `root`, getrefcount's argument
    return getrefcount(root) <= views + 3 and getrefcount(grad._storage) <= views + 2


def _owned(grad: Tensor, var: Tensor):
    """`grad` as var's new .grad without a copy, or None (PyTorch's AccumulateGrad steals a
    gradient only the engine references): it must have var's dtype and layout, fill its
    whole storage, and nothing else may hold it (a view is taken as a plain alias)."""
    if not (grad.__class__ is Tensor and not grad._requires_grad and grad.dtype is var.dtype
            and grad._stride == var._stride and grad._shape == var._shape
            and grad._offset == 0
            and grad._storage._nbytes == math.prod(grad._shape) * grad.dtype.itemsize
            and _engine_only(grad, _ENGINE_REFS)):
        return None
    if grad._base is None:
        return grad
    owned = Tensor._make(grad._storage, 0, grad._shape, grad._stride, grad.dtype)
    owned._keyset |= grad._keyset & MATH_BITS        # a conj() view stays one (as PyTorch's)
    return owned


def _needed(roots, targets: set) -> set:
    """Nodes that lie on a path from the roots to a target node (iterative post-order, so
    deep graphs need no recursion)."""
    hit: dict = {}
    stack = [(r, False) for r in roots if r is not None]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            hit[node] = node in targets or any(
                hit.get(n, False) for n, _ in node.next_functions if n is not None)
            continue
        if node in hit:
            continue
        hit[node] = False          # visiting: a revisit before completion sees False
        stack.append((node, True))
        stack.extend((n, False) for n, _ in node.next_functions
                     if n is not None and n not in hit)
    return {n for n, h in hit.items() if h}


class _Task(threading.local):
    keep = None       # the running backward's nodes on a path to its inputs; None: every node


_task = _Task()


def task_needs(node) -> bool:
    """Whether the running backward wants the gradient an edge into `node` carries
    (PyTorch's task_should_compute_output: only nodes leading to autograd.grad's inputs)."""
    return node is not None and (_task.keep is None or node in _task.keep)


def run_backward(roots, root_grads, *, retain_graph: bool, create_graph: bool,
                 capture=None, accumulate: bool = True, through_captures: bool = False):
    """Propagate root_grads from the (node, input_nr) edges in `roots` through the graph.

    capture: optional list of (node, input_nr) whose incoming gradient is returned; only
    nodes on a path to them run. With accumulate (backward(inputs=...)) captured nodes run
    as any other: an AccumulateGrad accumulates, a non-leaf's retain_grad hook fills its
    .grad. Without it a captured node is where the walk stops (aot_autograd tracing a
    region's backward, which must not run what lies outside the region), unless
    through_captures (autograd.grad, as PyTorch's engine): then a captured node runs on
    when another capture lies beyond it, and at one that does not run, what is captured
    is what its tensors' hooks and retain_grad's make of the gradient.

    A node's input buffer in `buffers` is the gradient itself while only its output 0 has
    one (the common case: no dict per node), else a dict {output_nr: gradient}.
    """
    targets = {n for n, _ in capture} if capture else None
    keep = _needed([n for n, _ in roots], targets) if targets is not None else None
    deps = _dependencies(roots, keep)

    buffers: dict = {}
    captured: dict = {}
    order = itertools.count()
    ready: list = []
    # The node to run next when it is the only one ready (a chain's common case), kept out
    # of the queue: pushed there, it would be the next one popped all the same.
    single = None
    if len(roots) == 1 and len(root_grads) == 1:      # `loss.backward()`: the loops below
        node, nr = roots[0]
        if node is not None:
            g = root_grads[0]
            buffers[node] = g if nr == 0 and g is not None else {nr: g}
            g = None
            if node not in deps:
                single = node
    else:
        for (node, nr), g in zip(roots, root_grads):
            if node is None:
                continue
            buf = buffers.get(node)
            if buf is None:
                buffers[node] = {nr: g}
            else:
                buf[nr] = _add(buf.get(nr), g)
        for node, buf in buffers.items():
            if len(buf) == 1 and buf.get(0) is not None:
                buffers[node] = buf[0]
        buf = g = None
        for node in buffers:
            if node not in deps:
                heappush(ready, (-node._sequence_nr, next(order), node))
        if len(ready) == 1:
            single = ready.pop()[2]

    # The thread's flags are switched in the thread-local objects' dicts: one lookup of
    # the thread's dict each, where every attribute access would make one.
    grad_mode_flags, task = _grad_state.__dict__, _task.__dict__
    previous_mode = grad_mode_flags["enabled"]
    grad_mode_flags["enabled"] = bool(create_graph)
    previous_keep = task.get("keep")
    task["keep"] = keep
    # formulas reach no __torch_function__ (C++ in PyTorch): `overrides.builtin_code`'s
    # switch, inlined (its object and two calls are a tenth of a tiny backward's loop)
    protocol = overrides._state.__dict__
    previous_protocol = (protocol["subclasses_off"], protocol["all_off"], protocol["user"])
    protocol["user"] = previous_protocol[:2]
    protocol["subclasses_off"] = protocol["all_off"] = True
    # formula nodes are applied directly while neither anomaly mode nor a profile watches
    # (read again after anything that may run user code)
    plain = not _anomaly.enabled and not _recorder.collectors
    try:
        while True:
            if single is not None:
                node = single
                single = None
            elif ready:
                node = heappop(ready)[2]
            else:
                break
            buf = buffers.pop(node, None)
            if targets is not None and node in targets:
                buf = _as_dict(buf)
                # autograd.grad(loss, [y, x]) with y = f(x): y's node runs on (PyTorch's
                # needed_)
                runs = accumulate or through_captures and not isinstance(
                    node, AccumulateGrad) and any(n is not None and n in keep
                                                  for n, _ in node.next_functions)
                seen = buf if runs or not through_captures else _tensor_hooked(node, buf)
                for cn, cnr in capture:
                    if cn is node:
                        captured[(cn, cnr)] = seen.get(cnr)
                seen = None
                if not runs:
                    _release_children(node, deps, buffers, ready, order, keep)
                    continue
            if isinstance(node, AccumulateGrad):
                grad = buf.pop(0, None) if buf.__class__ is dict else buf
                if accumulate and grad is not None:
                    buf = None     # the engine's own references go, so a fresh grad is stolen
                    if _recorder.collectors:
                        with _recorder.span(_EVALUATE + _ACCUMULATE_GRAD), \
                                _recorder.span(_ACCUMULATE_GRAD):
                            _accumulate(node.variable, grad, create_graph)
                    else:
                        _accumulate(node.variable, grad, create_graph)
                    grad = None
                    plain = not _anomaly.enabled and not _recorder.collectors
                continue
            run = None
            if buf.__class__ is not dict and not node._hooked:
                # the common case: one output, no hooks
                if buf is None:
                    outs = ()
                elif plain and (run := node._formula) is not None:
                    # the commonest: a formula node, run directly (its apply, inlined); its
                    # run releases what it saved unless retain_graph. (Each node is of its
                    # own class: every attribute of one read here is a lookup in its dict.)
                    grads = (buf,)
                    buf = None
                    outs = run(grads, node, retain_graph)
                else:
                    grads = (buf,)
                    buf = None
                    outs = _evaluate(node, grads)
                    plain = not _anomaly.enabled and not _recorder.collectors
            else:
                grads = _grads_in(node, _as_dict(buf))
                buf = None
                outs = () if all(g is None for g in grads) else _evaluate(node, grads)
                plain = not _anomaly.enabled and not _recorder.collectors
            if run is None and not retain_graph:
                node.release()
            count = len(outs)
            for i, (nxt, nr) in enumerate(node.next_functions):
                if nxt is not None and (keep is None or nxt in keep):
                    g = outs[i] if i < count else None
                    if g is not None:
                        if nr == 0 and nxt not in buffers:
                            buffers[nxt] = g
                        else:
                            _buffer_add(buffers, nxt, nr, g, create_graph)
                    n = deps[nxt]
                    if n == 1:
                        if not ready and single is None:
                            single = nxt                # the only one ready so far
                        else:
                            if single is not None:      # queued first, as it became ready first
                                heappush(ready, (-single._sequence_nr, next(order), single))
                                single = None
                            heappush(ready, (-nxt._sequence_nr, next(order), nxt))
                    else:
                        deps[nxt] = n - 1
            grads = outs = g = None    # hold no gradient past its node (see _owned)
    finally:
        protocol["subclasses_off"], protocol["all_off"], protocol["user"] = previous_protocol
        grad_mode_flags["enabled"] = previous_mode
        task["keep"] = previous_keep
    return captured


def _as_dict(buf) -> dict:
    """A node's input buffer as {output_nr: gradient} (see run_backward)."""
    if buf.__class__ is dict:
        return buf
    return {} if buf is None else {0: buf}


def _buffer_add(buffers: dict, node, nr: int, g: Tensor, create_graph: bool) -> None:
    """Add the gradient `g` for `node`'s output `nr` into its input buffer (see
    run_backward), summing it with one already there."""
    old = buffers.get(node)
    if old is None:
        buffers[node] = g if nr == 0 else {nr: g}
    elif old.__class__ is dict:
        prev = old.get(nr)
        old[nr] = g if prev is None else _accumulated(prev, g, create_graph)
    elif nr == 0:
        buffers[node] = _accumulated(old, g, create_graph)
    else:
        buffers[node] = {0: old, nr: g}


def _dependencies(roots, keep) -> dict:
    """For each node reached from the roots (within `keep` when given), how many edges lead
    into it: the gradients it waits for. Nodes nothing leads into are absent."""
    deps: dict = {}
    get = deps.get
    if len(roots) == 1:               # `loss.backward()`: no other root for an edge to reach
        node = roots[0][0]
        stack = [] if node is None else [node]
        starts = ()
    else:
        stack = []
        starts = set()
        for node, _ in roots:
            if node is not None and node not in starts:
                starts.add(node)
                stack.append(node)
    # A node is walked once: a root at the start, any other node when its first edge is
    # counted (its count is then new).
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None or (keep is not None and nxt not in keep):
                continue
            n = get(nxt)
            if n is None:
                deps[nxt] = 1
                if nxt not in starts:
                    stack.append(nxt)
            else:
                deps[nxt] = n + 1
    return deps


def _release_children(node, deps, buffers, ready, order, keep):
    for nxt, _ in node.next_functions:
        if nxt is None or (keep is not None and nxt not in keep):
            continue
        deps[nxt] -= 1
        if deps[nxt] == 0:
            heappush(ready, (-nxt._sequence_nr, next(order), nxt))


def _grads_in(node, buf: dict) -> tuple:
    """The node's gradients by output (None for an output none reached; as many as the
    node's forward had outputs, as PyTorch's pre hooks see them), after its hooks."""
    if len(buf) == 1 and 0 in buf and not node._has_grad_hooks():
        return (buf[0],)            # the common case: one output
    n = max(max(buf, default=-1) + 1, node._num_outputs)
    grads = [buf.get(i) for i in range(n)]
    if not node._has_grad_hooks():
        return tuple(grads)
    with overrides.user_code():
        return _hooked_grads(node, grads, n)


def _hooked_grads(node, grads: list, n: int) -> tuple:
    """The gradients after the node's tensor pre hooks, retain_grad's and its pre hooks."""
    _tensor_hooks(node, grads, n)
    for hook in node._pre_hooks:
        new = hook(tuple(grads))
        if new is not None:
            grads = list(new)
    return tuple(grads)


def _tensor_hooks(node, grads: list, n: int) -> None:
    """Apply the hooks of the tensors whose gradients `grads` are (register_hook's, then
    retain_grad's) in place (PyTorch's call_tensor_pre_hooks)."""
    for nr, hooks in node._tensor_pre_hooks.items():
        if nr < n and grads[nr] is not None:
            for hook in hooks:
                new = hook(grads[nr])
                if new is not None:
                    if new._shape != grads[nr]._shape:
                        raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has "
                                           "changed the size of value")
                    grads[nr] = new
    for nr, hook in node._retain_grad_hooks.items():
        if nr < n and grads[nr] is not None:
            hook(grads[nr])


def _tensor_hooked(node, buf: dict) -> dict:
    """What autograd.grad captures at a node that will not run: the buffered gradients as
    their tensors' hooks leave them (a leaf's own hooks at its AccumulateGrad), not the
    node's pre hooks (PyTorch's order)."""
    if isinstance(node, AccumulateGrad):
        g = buf.get(0)
        if g is None or not node.variable._hooks:
            return buf
        return {0: _leaf_hooked(node.variable, g)}
    if not node._hooked:
        return buf
    n = max(max(buf, default=-1) + 1, node._num_outputs)
    grads = [buf.get(i) for i in range(n)]
    with overrides.user_code():
        _tensor_hooks(node, grads, n)
    return dict(enumerate(grads))


def _evaluate(node, grads: tuple) -> tuple:
    """The node's gradients for its inputs, outside the loop's commonest case: within the
    profiler's spans for the node while a profile records."""
    if _recorder.collectors:
        with _recorder.span(_EVALUATE + node.name()), _recorder.span(node.name()):
            return _run_node(node, grads)
    return _run_node(node, grads)


def _run_node(node, grads: tuple) -> tuple:
    """A node's apply with what the loop's common case leaves out: anomaly mode's checks,
    the cast of each gradient to its input's dtype (nodes that do not cast their own), and
    the node's post hooks."""
    if _anomaly.enabled:
        try:
            outs = node.apply(grads)
        except Exception:
            report_failure(node)
            raise
        if _anomaly.check_nan:
            check_nan(node, outs)
    else:
        outs = node.apply(grads)
    metas = None if node._formula is not None else getattr(node, "_input_meta", None)
    if metas is not None:
        fixed = []
        for g, meta in zip(outs, metas):
            if g is not None and meta is not None and g.dtype is not meta[1]:
                g = g.to(meta[1])
            fixed.append(g)
        outs = tuple(fixed)
    if node._hooks:
        with overrides.user_code():
            for hook in node._hooks:
                new = hook(outs, grads)
                if new is not None:
                    outs = tuple(new)
    return outs
