"""grad, grad_and_value, vjp, jacrev: reverse-mode transforms of functions; jvp, jacfwd,
linearize: forward-mode ones; hessian: both.

Each call marks its differentiated inputs as fresh graph inputs, runs the function with grad
enabled and differentiates with `autograd.grad`. Inside `vmap`, the inputs are BatchedTensors
over physical tensors: a transform tracks the physical tensor (lifted into every active vmap
level first, so an unbatched parameter gets one gradient per example) and differentiates the
physical output, whose examples are independent, so one backward gives every example's
gradient. Nested transforms keep the graph (`create_graph`) so that an outer one can
differentiate the inner one's result: `grad(grad(f))`.

jvp, jacfwd, linearize are the forward-mode ones, on autograd.forward_ad's dual tensors: the
physical tensors under BatchedTensors carry the tangents, so jacfwd pushes every basis
tangent at once under vmap, and hessian is jacfwd(jacrev(f)).
"""
from __future__ import annotations

import functools

from .. import autograd
from ..autograd import forward_ad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..core.tensor import Tensor
from ..ops.creation.factories import ones_like, zeros, zeros_like
from ..ops.shape.joining import stack as stack_tensors
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten
from ._levels import grad_level, stack
from .batched_tensor import BatchedTensor, is_batched_at, peel, rebuild, wrap

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "hessian", "jvp", "jacfwd", "linearize"]


# ---- arguments ----------------------------------------------------------------------------

def _check_argnums(argnums, nargs: int) -> None:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if isinstance(argnums, tuple) and not argnums:
        raise RuntimeError("argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnum={n}, but only {nargs} positional inputs")
    if len({n % nargs for n in nums}) != len(nums):
        raise RuntimeError(f"argnums must be unique, got {argnums}")


def _selected(args: tuple, argnums):
    if isinstance(argnums, int):
        return args[argnums]
    return tuple(args[n] for n in argnums)


def _replace(args: tuple, argnums, new) -> tuple:
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = new
    else:
        for n, v in zip(argnums, new):
            args[n] = v
    return tuple(args)


def _check_tensors(leaves) -> None:
    for x in leaves:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


# ---- tracking inputs inside the active vmap levels ----------------------------------------

def lift(t: Tensor, levels=None) -> Tensor:
    """`t` batched at every active vmap level (or every one of `levels`): levels it lacks get
    an expanded batch dim, so that its gradient is per example."""
    physical, chain = peel(t)
    have = dict(chain)
    value = physical
    for entry in stack.vmaps if levels is None else levels:
        if entry.level in have:
            value = wrap(value, have[entry.level], entry.level)
        else:
            value = wrap(value.unsqueeze(0).expand(entry.batch_size, *value.shape), 0,
                         entry.level)
    return value


class _Tracked:
    """A differentiated input: what the function gets, and the physical tensor under it
    that autograd differentiates against."""

    __slots__ = ("logical", "physical", "chain")

    def __init__(self, x: Tensor, keep_graph: bool):
        physical, chain = peel(x)
        if keep_graph and physical.requires_grad:
            physical = physical.view_as(physical)     # its own node in the outer graph
        else:
            physical = _detach_keeping_tangent(physical).requires_grad_()
        self.logical = lift(rebuild(physical, chain))
        self.physical, self.chain = peel(self.logical)

    def gradient(self, g) -> Tensor:
        return rebuild(zeros_like(self.physical) if g is None else g, self.chain)


def _keep_graph(leaves) -> bool:
    """Whether results must stay differentiable: an outer transform (or the caller's own
    autograd) differentiates them again."""
    if not is_grad_enabled():
        return False
    return stack.grad_depth > 0 or any(peel(x)[0].requires_grad for x in leaves)


def _physical_output(out: Tensor, levels) -> Tensor:
    """The physical tensor under `out`, batched at every one of `levels` with the batch
    dimensions first, so that an output and its cotangent line up element for element."""
    return peel(_canonical(lift(out, levels)))[0] if levels else peel(out)[0]


def _detach_keeping_tangent(t: Tensor) -> Tensor:
    """t.detach(), keeping t's forward-mode tangent: leaving a reverse-mode transform must
    not cut the tangent an enclosing jvp follows (jacfwd(jacrev(f)))."""
    return forward_ad.with_tangents(t.detach(), forward_ad.tangents_of(t))


def _detach(tree, keep: bool):
    if keep:
        return tree
    return tree_map(lambda t: rebuild(_detach_keeping_tangent(peel(t)[0]), peel(t)[1])
                    if isinstance(t, Tensor) else t, tree)


def _differentiate(outputs, cotangents, tracked, keep: bool, retain: bool, levels):
    """Gradients (logical, per tracked input) of sum(outputs * cotangents), the vmap levels
    `levels` being those the inputs were tracked in."""
    physical_outs, physical_cts = [], []
    for out, ct in zip(outputs, cotangents):
        if not peel(out)[0].requires_grad:
            continue
        physical_outs.append(_physical_output(out, levels))
        physical_cts.append(_physical_output(ct, levels))
    if not physical_outs:
        return [t.gradient(None) for t in tracked]
    grads = autograd.grad(physical_outs, [t.physical for t in tracked], physical_cts,
                          retain_graph=retain or keep, create_graph=keep, allow_unused=True)
    return [t.gradient(g) for t, g in zip(tracked, grads)]


# ---- grad and grad_and_value --------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of `func` with respect to the arguments `argnums`,
    value of `func`); `func` must return a scalar Tensor (and an auxiliary value alongside
    when `has_aux`)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_argnums(argnums, len(args))
        diff_args = _selected(args, argnums)
        leaves, spec = tree_flatten(diff_args)
        _check_tensors(leaves)
        keep = _keep_graph(leaves)
        with grad_level(), enable_grad():
            tracked = [_Tracked(x, keep) for x in leaves]
            new_args = _replace(args, argnums, tree_unflatten([t.logical for t in tracked], spec))
            output = func(*new_args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                                       "be a tuple: (output, aux) if has_aux is True")
                output, aux = output
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            grads = _differentiate([output], [ones_like(output)], tracked, keep, False,
                                   list(stack.vmaps))
        grads = _detach(tree_unflatten(grads, spec), keep)
        output = _detach(output, keep)
        if has_aux:
            return grads, (output, _detach(aux, keep))
        return grads, output
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The function computing the gradient of `func` (a scalar-valued function) with respect
    to its arguments `argnums`; with `has_aux`, also the auxiliary value `func` returns."""
    transformed = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = transformed(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


# ---- vjp ----------------------------------------------------------------------------------

def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the vector-Jacobian product
    with respect to each primal, cotangents having the output's structure."""
    leaves, spec = tree_flatten(primals)
    _check_tensors(leaves)
    keep = _keep_graph(leaves)
    with grad_level(), enable_grad():
        tracked = [_Tracked(x, keep) for x in leaves]
        output = func(*tree_unflatten([t.logical for t in tracked], spec))
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            output, aux = output
    out_leaves, out_spec = tree_flatten(output)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has "
                               f"non-empty output, with tensor leaves; got {type(o)}")

    def vjp_fn(*cotangents, retain_graph=True, create_graph=None):
        ct_leaves, ct_spec = tree_flatten(cotangents[0] if len(cotangents) == 1 else cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{ct_spec}, primal output: {out_spec}")
        for i, (ct, o) in enumerate(zip(ct_leaves, out_leaves)):
            if ct.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{ct.shape} and output[{i}] has a shape of {o.shape}.")
        graph = keep or any(peel(c)[0].requires_grad for c in ct_leaves) if (
            create_graph is None) else create_graph
        return tree_unflatten(_apply_vjp(ct_leaves, graph, retain_graph), spec)

    def _apply_vjp(ct_leaves, graph, retain_graph):
        later = [e for e in stack.vmaps if e.level not in {v.level for v in levels}]
        if later:         # vmap(vjp_fn): the cotangents carry a batch the graph does not
            return _per_cotangent(later[-1], ct_leaves, graph, retain_graph)
        with enable_grad():
            grads = _differentiate(out_leaves, ct_leaves, tracked, graph, retain_graph, levels)
        return _detach(grads, graph)

    def _per_cotangent(entry, ct_leaves, graph, retain_graph):
        """One vjp per cotangent of `entry`'s batch (the graph was recorded outside that vmap),
        stacked into that level's batch."""
        per_example = []
        for b in range(entry.batch_size):
            cts = [c._value.select(c._bdim, b) if is_batched_at(c, entry.level) else c
                   for c in ct_leaves]
            with _outside(entry):
                per_example.append(_apply_vjp(cts, graph, retain_graph))
        return [wrap(stack_tensors(list(column)), 0, entry.level)
                for column in zip(*per_example)]

    levels = list(stack.vmaps)

    result = (_detach(output, keep), vjp_fn)
    return result + (_detach(aux, keep),) if has_aux else result


class _outside:
    """Run a block as if vmap level `entry` were not active (its examples one at a time)."""

    def __init__(self, entry):
        self.entry = entry

    def __enter__(self):
        self.index = stack.vmaps.index(self.entry)
        stack.vmaps.pop(self.index)

    def __exit__(self, *exc):
        stack.vmaps.insert(self.index, self.entry)


# ---- jacrev and hessian -------------------------------------------------------------------

def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of `func` with respect to the arguments `argnums`, by reverse mode: the
    vector-Jacobian products of every output element's basis vector at once, as one vmap over
    the cotangents (`chunk_size` of them at a time), each with its own batched forward and
    backward. Each output leaf gives a Jacobian of shape output.shape + input.shape."""
    from .vmap import vmap
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_argnums(argnums, len(args))
        diff_args = _selected(args, argnums)
        primals = (diff_args,) if isinstance(argnums, int) else diff_args

        def partial(*diff):
            return func(*_replace(args, argnums, diff[0] if isinstance(argnums, int) else diff),
                        **kwargs)
        result = vjp(partial, *primals, has_aux=has_aux)
        out_leaves, out_spec = tree_flatten(result[0])
        in_leaves, in_spec = tree_flatten(primals)
        sizes = [o.numel() for o in out_leaves]
        total = sum(sizes)
        basis, offset = [], 0
        for o, n in zip(out_leaves, sizes):
            b = zeros((total, n), dtype=o.dtype, device=o.device)
            if n:
                b[offset:offset + n] = _eye(n, o)
            basis.append(b.view((total,) + tuple(o.shape)))
            offset += n

        def pull(*cotangents):
            fn = vjp(partial, *primals, has_aux=has_aux)[1]
            return tuple(tree_flatten(fn(tree_unflatten(list(cotangents), out_spec)))[0])
        rows = vmap(pull, chunk_size=chunk_size)(*basis) if total else None
        per_output, start = [], 0
        for o, n in zip(out_leaves, sizes):
            jac = []
            for ii, x in enumerate(in_leaves):
                shape = tuple(o.shape) + tuple(x.shape)
                jac.append(rows[ii].narrow(0, start, n).reshape(shape) if rows is not None
                           else zeros(shape, dtype=x.dtype, device=x.device))
            start += n
            jac = tree_unflatten(jac, in_spec)
            per_output.append(jac[0] if isinstance(argnums, int) else jac)
        jacobian = tree_unflatten(per_output, out_spec)
        return (jacobian, result[2]) if has_aux else jacobian
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function: forward mode over reverse mode, the jacfwd of its
    jacrev (as PyTorch)."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---- forward mode: jvp, jacfwd, linearize ---------------------------------------------------

def _canonical(t: Tensor) -> Tensor:
    """`t` with every vmap level's batch dimension first in its physical tensor (outermost
    level innermost), so that two tensors batched at the same levels line up physically."""
    if t.__class__ is not BatchedTensor:
        return t
    value = t._value if t._bdim == 0 else t._value.movedim(t._bdim, 0)
    return wrap(_canonical(value), 0, t._level)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J·tangents): the Jacobian-vector product by forward-mode AD
    (dual tensors, autograd/forward_ad.py). Returns the auxiliary value too with `has_aux`."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    p_leaves, spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           f"the same python structure. For example, if primals is a tuple of "
                           f"3 tensors, tangents also must be. Got primals with structure "
                           f"{spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if not (isinstance(p, Tensor) and isinstance(t, Tensor)):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to "
                               "only contain Tensors")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to "
                               f"have the same shape, got {tuple(p.shape)} and "
                               f"{tuple(t.shape)}")
    with forward_ad._nested_level() as level:
        duals = []
        for p, t in zip(p_leaves, t_leaves):
            p, t = _canonical(lift(p)), _canonical(lift(t))
            physical, chain = peel(p)
            duals.append(rebuild(forward_ad.make_dual(physical, peel(t)[0], level=level),
                                 chain))
        output = func(*tree_unflatten(duals, spec))
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be a "
                                   "tuple: (output, aux) if has_aux is True")
            output, aux = output
        out_leaves, out_spec = tree_flatten(output)
        values, derivs = [], []
        for o in out_leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected f(*primals) to return "
                                   f"only tensors, got unsupported type {type(o)}")
            physical, chain = peel(_canonical(lift(o)) if stack.vmaps else o)
            primal, tangent = forward_ad.unpack_dual(physical, level=level)
            if tangent is None:
                tangent = zeros_like(primal)
            values.append(rebuild(primal, chain))
            derivs.append(rebuild(tangent, chain))
    result = (tree_unflatten(values, out_spec), tree_unflatten(derivs, out_spec))
    return result + (aux,) if has_aux else result


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of `func` with respect to the arguments `argnums`, by forward mode: one
    jvp per input element, all of them at once under vmap (the basis vectors are its batch)."""
    from .vmap import vmap

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_argnums(argnums, len(args))
        diff_args = _selected(args, argnums)
        primals = (diff_args,) if isinstance(argnums, int) else diff_args
        in_leaves, in_spec = tree_flatten(primals)
        _check_tensors(in_leaves)
        sizes = [x.numel() for x in in_leaves]
        total = sum(sizes)

        def partial(*diff):
            return func(*_replace(args, argnums, diff[0] if isinstance(argnums, int) else diff),
                        **kwargs)
        basis = []
        offset = 0
        for x, n in zip(in_leaves, sizes):
            b = zeros((total, n), dtype=x.dtype, device=x.device)
            if n:
                b[offset:offset + n] = _eye(n, x)
            basis.append(b.view((total,) + tuple(x.shape)))
            offset += n

        def push(*tangent_leaves):
            out = jvp(partial, primals, tree_unflatten(list(tangent_leaves), in_spec),
                      has_aux=has_aux)
            return (out[1], out[2]) if has_aux else out[1]
        pushed = vmap(push, randomness=randomness)(*basis)
        tangents_out, aux = pushed if has_aux else (pushed, None)
        out_leaves, out_spec = tree_flatten(tangents_out)
        per_output = []
        for t in out_leaves:
            out_shape = tuple(t.shape[1:])
            pieces, start = [], 0
            for x, n in zip(in_leaves, sizes):
                piece = t.narrow(0, start, n).movedim(0, -1) if t.dim() > 1 else t.narrow(
                    0, start, n)
                pieces.append(piece.reshape(out_shape + tuple(x.shape)))
                start += n
            jac = tree_unflatten(pieces, in_spec)
            per_output.append(jac[0] if isinstance(argnums, int) else jac)
        jacobian = tree_unflatten(per_output, out_spec)
        if has_aux:
            return jacobian, tree_map(lambda a: a.select(0, 0) if isinstance(a, Tensor) else a,
                                      aux)
        return jacobian
    return wrapper


def _eye(n: int, like: Tensor) -> Tensor:
    from ..ops.creation.ranges import eye
    return eye(n, dtype=like.dtype, device=like.device)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is the Jacobian-vector product at primals.
    (PyTorch traces the linear function once with make_fx; here each call runs a jvp, with
    the same values.)"""
    output = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn
