"""Forward-mode automatic differentiation: dual tensors (torch.autograd.forward_ad).

Inside `dual_level()`, `make_dual(x, t)` gives a tensor whose *tangent* is `t`; every op on
dual tensors gives its result the tangent J·t (the Jacobian-vector product), and
`unpack_dual(y)` reads it back. A dispatch mode sits on the thread while a level is open: it
sees each operator call (below autograd, so also the calls a backward pass makes, which is
how forward-over-reverse works) and, when an argument has a tangent, computes the result's
from the op's jvp rule, in this order:

1. a formula declared with `ops.derivative.forward_derivative`;
2. ops declared `linear_in_inputs` and every view: the op applied to the tangents;
3. element-wise ops (tag 'pointwise'): the backward formula with the tangent as gradient,
   summed over inputs (the Jacobian is diagonal);
4. any other op with a backward formula: the vjp u -> uᵀJ is linear in u, so its gradient
   with respect to u against the tangents is J·t (one extra small backward);
5. otherwise PyTorch's "Trying to use forward AD with ... that does not support it".

Tangent computations run with the keys above the Python key on again, so autograd records
them (reverse over forward) and vmap batches them (jacfwd).
"""
from __future__ import annotations

import contextlib
import weakref
from typing import NamedTuple

from ..core.tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.keys import AUTOGRAD_MASK, DispatchKey, local_keys
from ..dispatch.modes import TorchDispatchMode, enable_reentrant_dispatch
from ..ops.derivative import AUTO_LINEAR
from . import grad as _autograd_grad, recording
from .grad_mode import enable_grad, is_grad_enabled
from .graph import sum_to_shape

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]


class _Level:
    """An open forward-AD level: its number, its dispatch mode, and the tensors holding a
    tangent of it (id -> weak reference), whose tangents it drops when it closes."""

    __slots__ = ("number", "mode", "duals")

    def __init__(self, number: int):
        self.number, self.mode, self.duals = number, _ForwardADMode(number), {}


class _State:
    levels: list = []      # the open levels, outermost first


_state = _State()
_TANGENT = "_fw_tangent"   # a tensor's {level number: tangent}
_RECORDING_KEYS = AUTOGRAD_MASK | (1 << DispatchKey.ADInplaceOrView)


class UnpackedDualTensor(NamedTuple):
    """(primal, tangent) of a dual tensor; tangent is None for a tensor without one."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Open a forward-AD level and return its number. As in PyTorch, the public API opens one
    at a time; torch.func's jvp nests levels (jacfwd(jacfwd(f))) through `_enter_level`."""
    if _state.levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    return _enter_level()


def _enter_level() -> int:
    level = _Level(len(_state.levels))
    _state.levels.append(level)
    level.mode.__enter__()
    recording.forward_ad_open = True
    return level.number


def exit_dual_level(*, level=None) -> None:
    """Close the innermost level: every tangent of it is dropped."""
    if not _state.levels or (level is not None and level != _state.levels[-1].number):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    closing = _state.levels.pop()
    recording.forward_ad_open = bool(_state.levels)
    closing.mode.__exit__(None, None, None)
    for ref in list(closing.duals.values()):
        t = ref()
        if t is not None:
            tangents = t.__dict__.get(_TANGENT)
            if tangents is not None:
                tangents.pop(closing.number, None)
                if not tangents:
                    del t.__dict__[_TANGENT]


class dual_level:
    """Context manager: a forward-AD level for the block (`with dual_level(): ...`)."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapped


class _nested_level:
    """A level inside any already open (torch.func's jvp); `as` gives its number."""

    def __enter__(self) -> int:
        return _enter_level()

    def __exit__(self, *exc):
        exit_dual_level()


def _level_number(level, what: str) -> int:
    if not _state.levels:
        raise RuntimeError(f"Trying to {what} but no level exists, make sure to "
                           "enter_dual_level() first.")
    if level is None:
        return _state.levels[-1].number
    if not 0 <= level < len(_state.levels):
        raise RuntimeError(f"Invalid level given to {what}")
    return level


def tangent_of(t, level=None):
    """t's tangent at `level` (the innermost open one by default), or None."""
    if not isinstance(t, Tensor):
        return None
    tangents = t.__dict__.get(_TANGENT)
    if not tangents:
        return None
    if level is None:
        if not _state.levels:
            return None
        level = _state.levels[-1].number
    return tangents.get(level)


def tangents_of(t) -> dict:
    """Every level's tangent of t: {level number: tangent}."""
    return dict(t.__dict__.get(_TANGENT) or {}) if isinstance(t, Tensor) else {}


def _set_tangent(t: Tensor, tangent, level: int) -> None:
    tangents = t.__dict__.get(_TANGENT)
    if tangent is None:
        if tangents is not None:
            tangents.pop(level, None)
            if not tangents:
                del t.__dict__[_TANGENT]
        return
    if tangents is None:
        tangents = t.__dict__[_TANGENT] = {}
    tangents[level] = tangent
    duals = _state.levels[level].duals
    key = id(t)      # (tensors compare elementwise: no set of them; a dead entry just waits)
    duals[key] = weakref.ref(t, lambda _, key=key, duals=duals: duals.pop(key, None))


def copy_tangent(source: Tensor, alias: Tensor) -> None:
    """Give `alias` (autograd's saved copy of an output) the tangents of `source`."""
    for number, tangent in tangents_of(source).items():
        if number < len(_state.levels):
            _set_tangent(alias, tangent, number)


def with_tangents(t: Tensor, tangents: dict) -> Tensor:
    """t, or a dual view of it carrying `tangents` (what tangents_of gave)."""
    for number in sorted(tangents):
        if number < len(_state.levels):
            t = make_dual(t, tangents[number], level=number)
    return t


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` carrying `tangent` as its forward gradient at `level` (the
    innermost open one by default)."""
    level = _level_number(level, "create a dual Tensor for forward AD")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    dual = dispatcher.find("aten::alias")(tensor)
    _set_tangent(dual, tangent, level)
    return dual


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """(primal, tangent) of `tensor` at `level`: the primal is a view without that tangent."""
    if not _state.levels:
        return UnpackedDualTensor(tensor, None)
    level = _level_number(level, "unpack a dual Tensor")
    tangent = tangent_of(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = dispatcher.find("aten::alias")(tensor)
    _set_tangent(primal, None, level)
    return UnpackedDualTensor(primal, tangent)


# ---- the mode: tangents through every op ------------------------------------------------------

def _unsupported(op):
    if op.info.get("autograd") == "not implemented" or (
            op.info.get("decl") is not None and
            op.info["decl"].functional.info.get("autograd") == "not implemented"):
        name = f"{op.schema.namespace}::{op.schema.name}"
        return NotImplementedError(f"Trying to use forward AD with {name} that does not "
                                   "support it.")
    return NotImplementedError(
        f"Trying to use forward AD with {op.schema.name} that does not support it because it "
        "has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/"
        "pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its "
        "implementation.")


def _tangents(op, args, level: int):
    """One entry per argument: its tangent at `level` (a list for a Tensor[] argument), or
    None."""
    out = [None] * len(args)
    found = False
    for i in op.tensor_positions:
        a = args[i]
        if isinstance(a, (list, tuple)):
            ts = [tangent_of(t, level) for t in a]
            if any(t is not None for t in ts):
                out[i], found = ts, True
        else:
            t = tangent_of(a, level)
            if t is not None:
                out[i], found = t, True
    return out if found else None


def _any_requires_grad(args) -> bool:
    return any(getattr(a, "requires_grad", False) or (
        isinstance(a, (list, tuple)) and any(getattr(t, "requires_grad", False) for t in a))
        for a in args)


def _differentiable(t) -> bool:
    return isinstance(t, Tensor) and (t.is_floating_point() or t.is_complex())


def _zeros_for(t):
    from ..ops.creation.factories import zeros_like
    return zeros_like(t)


def auto_linear(op, primals, tangents, result):
    """The op applied to the tangents (zeros where a floating input has none)."""
    args = list(primals)
    for i in op.tensor_positions:
        a, t = primals[i], tangents[i]
        if isinstance(a, (list, tuple)):
            args[i] = [(tt if tt is not None else _zeros_for(x)) if _differentiable(x) else x
                       for x, tt in zip(a, t or [None] * len(a))]
        elif _differentiable(a):
            args[i] = t if t is not None else _zeros_for(a)
        elif isinstance(a, (int, float, complex)) and not isinstance(a, bool):
            args[i] = 0          # a number standing for a tensor (x + 1): constant
    return op(*args)


def _saved_values(d, primals, result, grad_mask):
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    values = {}
    for name, kind, index in d.plan:
        if kind == "value":
            values[name] = primals[index]
        elif kind == "result":
            values[name] = outputs[index]
        elif kind == "shape":
            values[name] = primals[index]._shape
        elif kind == "mask":
            values[name] = grad_mask
        else:
            t = primals[index]
            values[name] = (t._shape, t._stride, t._offset)
    return values


def _flat_inputs(op, primals, tangents):
    """(input, tangent) per Tensor input of the schema, lists flattened, as formulas count."""
    pairs = []
    for i in op.tensor_positions:
        a, t = primals[i], tangents[i]
        if isinstance(a, (list, tuple)):
            pairs.extend(zip(a, t or [None] * len(a)))
        else:
            pairs.append((a, t))
    return pairs


def auto_element_wise(op, d, primals, tangents, result):
    """Σ over inputs of the backward formula with the input's tangent as the gradient."""
    pairs = _flat_inputs(op, primals, tangents)
    total = None
    for k, (x, t) in enumerate(pairs):
        if t is None:
            continue
        mask = tuple(j == k for j in range(len(pairs)))
        grad = t.expand(result.shape) if tuple(t.shape) != tuple(result.shape) else t
        part = d.formula(grad, **_saved_values(d, primals, result, mask))
        part = part[k] if isinstance(part, tuple) else part
        if part is None:
            continue
        total = part if total is None else total + part
    return total if total is not None else _zeros_for(result)


def _touches_complex(op, primals, result) -> bool:
    """Whether a complex tensor is among the inputs or the result: an element-wise op's
    backward formula is then its Jacobian's conjugate (or, non-holomorphic as abs or angle,
    not a complex multiple at all), so its tangent comes from the transposed vjp."""
    if result.is_complex():
        return True
    for i in op.tensor_positions:
        a = primals[i]
        if any(isinstance(x, Tensor) and x.is_complex()
               for x in (a if isinstance(a, (list, tuple)) else (a,))):
            return True
    return False


def transposed_vjp(op, d, primals, tangents, result):
    """J·t as the gradient, with respect to the cotangent u, of <t, vjp(u)>."""
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    us = [_zeros_for(o).requires_grad_() if _differentiable(o) else None for o in outputs]
    pairs = _flat_inputs(op, primals, tangents)
    mask = tuple(t is not None for _, t in pairs)
    with enable_grad(), _recording_on():
        grads = us[0] if len(us) == 1 else tuple(us)
        gs = d.formula(grads, **_saved_values(d, primals, result, mask))
        gs = gs if isinstance(gs, tuple) else (gs,)
        total = None
        for (x, t), g in zip(pairs, gs):
            if t is None or g is None:
                continue
            if tuple(g.shape) != tuple(x.shape):
                g = sum_to_shape(g, x._shape)
            # <t, vjp(u)> under the real inner product Re(sum(conj(a) * b)), of which the
            # jvp is the adjoint of the vjp also for complex (non-holomorphic) functions
            term = (g * t.conj()).real.sum() if t.is_complex() else (g * t).sum()
            total = term if total is None else total + term
        wanted = [u for u in us if u is not None]
        if total is None:
            return None
        found = _autograd_grad(total, wanted, create_graph=True, allow_unused=True)
    found = [(_zeros_for(u) if g is None else g) for u, g in zip(wanted, found)]
    it = iter(found)
    out = tuple(next(it) if u is not None else None for u in us)
    return out if isinstance(result, (tuple, list)) else out[0]


@contextlib.contextmanager
def _recording_on():
    """Autograd recording on for transposed_vjp's own small backward, also when this level's
    handler runs inside an inner level's call (below autograd, where it is off)."""
    inside = local_keys.excluded
    local_keys.excluded = inside & ~_RECORDING_KEYS
    try:
        yield
    finally:
        local_keys.excluded = inside


def _derivative_of(op):
    """(derivative, functional op) for `op`, an in-place or out= form using its functional's."""
    d = op.info.get("derivative")
    if d is not None:
        return d, op
    decl = op.info.get("decl")
    if decl is not None and decl.functional is not op:
        return decl.functional.info.get("derivative"), decl.functional
    return None, op


def jvp_of(op, primals, tangents, result):
    """The tangent(s) of `result` = op(*primals) (see the module docstring for the order)."""
    rule = op.info.get("jvp")
    if callable(rule):
        return rule(primals, tangents, result)
    decl = op.info.get("decl")
    if rule == AUTO_LINEAR or (decl is not None and decl.kind == "view"):
        return auto_linear(op, primals, tangents, result)
    if op.info.get("autograd") == "not differentiable":
        return None
    d, functional = _derivative_of(op)
    if d is None:
        if functional is not op:
            rule = functional.info.get("jvp")
            if callable(rule):
                return rule(primals, tangents, result)
            if rule == AUTO_LINEAR:
                return auto_linear(functional, primals, tangents, result)
        raise _unsupported(op)
    if "pointwise" in op.tags and isinstance(result, Tensor) and not _touches_complex(
            functional, primals, result):
        return auto_element_wise(functional, d, primals, tangents, result)
    return transposed_vjp(functional, d, primals, tangents, result)


class _ForwardADMode(TorchDispatchMode):
    """Gives each op's result the tangent its inputs' tangents imply, at one level. While it
    handles a call it is off the mode stack, so the call and the tangent's own computation
    reach the modes of the outer levels: forward over forward."""

    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        op = func._op
        bound = dispatcher.bind_arguments(op, tuple(args), kwargs)
        tangents = _tangents(op, bound, self.level)
        if tangents is None:
            return func(*args, **kwargs)
        mutated = op.info.get("mutated") or ()
        if mutated and op.info.get("decl") is not None and op.info["decl"].inplace is not op \
                and not op.info.get("out"):
            return self._other_inplace(op, func, args, kwargs, bound, mutated[0])
        primals = list(bound)
        for i in mutated:          # the formula needs the values before the write
            primals[i] = bound[i].clone()
        result = func(*args, **kwargs)
        with enable_reentrant_dispatch():
            seen = result
            if not mutated and is_grad_enabled() and _any_requires_grad(bound):
                # autograd gives `result` its history only once this handler returns: the
                # formulas read a recorded recomputation, so the tangent's own graph reaches
                # the inputs (reverse over forward)
                seen = op(*bound)
            tangent = jvp_of(op, tuple(primals), tangents, seen)
        if mutated:
            with enable_reentrant_dispatch():
                _set_written_tangent(bound[mutated[0]], tangent, self.level)
            return result
        if isinstance(result, Tensor):
            if _differentiable(result):
                _set_tangent(result, tangent, self.level)
        elif isinstance(result, (tuple, list)) and tangent is not None:
            for r, t in zip(result, tangent):
                if isinstance(r, Tensor) and _differentiable(r) and t is not None:
                    _set_tangent(r, t, self.level)
        return result

    def _other_inplace(self, op, func, args, kwargs, bound, index):
        """An in-place op that is no structured op's in-place form (copy_, fill_, the random
        fills): its tangent is that of its functional form (`recorded_through`), computed with
        this mode on again; a fill that ignores the old values gets a zero tangent."""
        through = op.info.get("recorded_through")
        tangent = None
        if through is not None:
            with enable_reentrant_dispatch(), self:
                tangent = tangent_of(through[0](*bound), self.level)
        elif op.info.get("overwrites") is None:
            raise _unsupported(op)
        result = func(*args, **kwargs)
        target = bound[index]
        with enable_reentrant_dispatch():
            _set_written_tangent(target, tangent if tangent is not None else _zeros_for(target),
                                 self.level)
        return result


def _set_written_tangent(target: Tensor, tangent, level: int) -> None:
    """The tangent of a tensor an in-place op wrote; written through a view, the base's
    tangent gets it in the view's place too (zeros elsewhere if the base had none)."""
    _set_tangent(target, tangent, level)
    base = target._base
    if base is None or tangent is None:
        return
    from ..ops.creation.factories import zeros_like
    old = tangent_of(base, level)
    base_tangent = (zeros_like(base) if old is None else old).clone()
    offset = base_tangent.storage_offset() + target.storage_offset() - base.storage_offset()
    base_tangent.as_strided(target.shape, target.stride(), offset).copy_(tangent)
    _set_tangent(base, base_tangent, level)
