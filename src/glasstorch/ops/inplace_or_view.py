"""The ADInplaceOrView key: version counters and view bookkeeping (PyTorch's kernels of that key).

Mutating ops bump the version of every tensor they write, so autograd can tell that a saved
tensor changed; view ops give their result its root base and remember how the view was made,
so a later in-place write through it can be refused when its effect on the graph would be
ambiguous.
"""
from __future__ import annotations

from functools import partial

from ..core.grad_state import inference_anywhere, state as _grad_state
from ..core.tensor import Tensor, make_alias
from ..dispatch.dispatcher import _LAST_BACKEND, _tracers


def _mutated(op, args) -> list:
    """The tensors a mutating op writes (its `out` may be a list of tensors)."""
    out = []
    for i in op.info["mutated"]:
        arg = args[i]
        if isinstance(arg, (tuple, list)):
            out.extend(arg)
        else:
            out.append(arg)
    return out


def bump_versions_kernel(op, ks, *args):
    """ADInplaceOrView for mutating ops: run below, then bump the mutated tensors' versions
    (this key is skipped inside inference_mode, so an inference tensor here is an error)."""
    written = _mutated(op, args)
    for t in written:
        if t._view_creation is not None:
            check_view_write(t)
        if t._inference:
            raise RuntimeError(
                "Inplace update to inference tensor outside InferenceMode is not allowed.You "
                "can make a clone to get a normal tensor before doing inplace update.See "
                "https://github.com/pytorch/rfcs/pull/17 for more details.")
    result = _below(op, ks, args)
    for t in written:
        t._vc.version += 1
    return result


_NO_GRAD = ("no_grad",)


def _set_base(view, self, creation):
    view._base = self if self._base is None else self._base
    if creation is not None:
        view._view_creation = creation
        if creation[0] == "no_grad" and self._requires_grad:
            view._set_requires_grad(True)    # as PyTorch: a leaf that requires grad


def _view_creation(op, self, multi_output: bool):
    """Why an in-place write through the new view must later be refused (PyTorch's
    CreationMeta), or None: made without grad mode or in inference mode, or one of several
    views returned together (their graphs cannot be rewritten one at a time)."""
    if self._view_creation is not None:
        return self._view_creation                      # views of such views inherit it
    if _grad_state.inference:
        return ("inference_mode",)
    if not _grad_state.enabled:
        return _NO_GRAD
    if multi_output:
        d = op.info.get("derivative")
        name = d.node_name if d is not None and isinstance(d.node_name, str) else op.schema.name
        return ("multi_output", name.removesuffix("Backward0"))
    return None


def _below(op, ks, args):
    """`op.redispatch(ks, *args)`, with the backend kernel called directly when no trace
    is on (these kernels wrap every view and in-place call)."""
    key = (ks & op.mask).bit_length() - 1
    if 0 <= key <= _LAST_BACKEND and not _tracers:
        return op.table[key](*args)
    return op.redispatch(ks, *args)


def view_bookkeeping_kernel(op, ks, self, *args):
    """ADInplaceOrView for view ops: the result records its root base."""
    key = (ks & op.mask).bit_length() - 1      # `_below`, inlined: every view's path
    if 0 <= key <= _LAST_BACKEND and not _tracers:
        out = op.table[key](self, *args)
    else:
        out = op.redispatch(ks, self, *args)
    if out.__class__ is not list and self._view_creation is None and \
            not (inference_anywhere.blocks and _grad_state.inference):
        out._base = self if self._base is None else self._base      # the common cases:
        if not _grad_state.enabled:                                 # `_set_base`, inlined
            out._view_creation = _NO_GRAD
            if self._requires_grad:
                out._set_requires_grad(True)
        return out
    return _finish_views(op, self, out)


def _finish_views(op, self, out):
    """The bookkeeping of views the common case leaves out: several views (split, unbind),
    or views of a view made without grad mode or in inference mode."""
    if isinstance(out, list):
        creation = _view_creation(op, self, True)
        for nr, v in enumerate(out):
            _set_base(v, self, creation and creation + (nr,))
    else:
        _set_base(out, self, _view_creation(op, self, False))
    return out


def _direct_views(op, ks):
    """`view_bookkeeping_kernel` for `op` with key set `ks` below it, on a thread in its
    default state (no trace): the backend's view kernel called without a dispatch step, and
    the common case's bookkeeping in the same frame. Where that kernel is the registry's
    (`registry._view_kernel`), its work, the meta function and `make_alias`, is done here:
    a view's whole path, after its wrapper, is then this frame, the meta function and the
    alias."""
    below = op._direct_kernel(ks)
    if below is None:
        return partial(view_bookkeeping_kernel, op, ks)
    meta = getattr(below, "view_meta", None)    # the registry's view kernel: run it here

    def view_direct(self, *args):
        if meta is None:
            out = below(self, *args)
        else:
            m = meta(self, *args)
            out = make_alias(self, *m) if m.__class__ is not list else \
                [make_alias(self, *x) for x in m]
        if out.__class__ is not list and self._view_creation is None and \
                not (inference_anywhere.blocks and _grad_state.inference):
            out._base = self if self._base is None else self._base
            if not _grad_state.enabled:
                out._view_creation = _NO_GRAD
                if self._requires_grad:
                    out._set_requires_grad(True)
            return out
        return _finish_views(op, self, out)
    # autograd's fused path may make the view itself, with this bookkeeping (recording.py's
    # `_view_with_history`)
    view_direct.view_meta = meta
    return view_direct


view_bookkeeping_kernel.direct = _direct_views


def check_view_write(t: Tensor) -> None:
    """Refuse an in-place write, with grad mode on, through a view whose creation makes the
    write's effect on the graph ambiguous (see `_view_creation`)."""
    creation = t._view_creation
    if creation is None or not _grad_state.enabled or not t._base._requires_grad:
        return
    kind = creation[0]
    if kind == "multi_output":
        raise RuntimeError(
            f"Output {creation[2]} of {creation[1]} is a view and is being modified inplace. "
            "This view is the output of a function that returns multiple views. Such views "
            "cannot be written in place: use an out-of-place op (or clone() the view first).")
    mode = "no_grad" if kind == "no_grad" else "inference"
    raise RuntimeError(
        f"A view was created in {mode} mode and is being modified inplace with grad mode "
        f"enabled. Whether the write should be tracked is ambiguous, so it is refused: make "
        f"both the view and the in-place op inside the {mode} block (untracked), or both "
        "outside it (tracked).")
