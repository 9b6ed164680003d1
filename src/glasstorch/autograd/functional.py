"""autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp, built on autograd.grad.

Forward-mode products (jvp, hvp) use the double-backward trick: the vjp is linear in its
vector u, so differentiating u -> vjp(u) against v gives J v.
"""
from __future__ import annotations

from ..core.tensor import Tensor
from . import grad as _grad
from .grad_mode import enable_grad


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph):
    """Inputs as fresh leaves that require grad (detached unless building a graph on them)."""
    return tuple(t if create_graph and t.requires_grad else t.detach().requires_grad_()
                 for t in _tuple(inputs))


def _unwrap(values, was_tensor: bool):
    return values[0] if was_tensor else values


def _zeros_for_none(grads, like):
    from ..ops.creation.factories import zeros_like
    return tuple(zeros_like(x) if g is None else g for g, x in zip(grads, like))


def _finish(t, create_graph):
    return t if create_graph else t.detach()


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ J): the vector-Jacobian product at `inputs`."""
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs, create_graph)
    with enable_grad():
        out = func(*xs)
        outs = _tuple(out)
        vs = _tuple(v) if v is not None else tuple(None for _ in outs)
        grads = _grad(outs, xs, vs if v is not None else None, create_graph=create_graph,
                      allow_unused=True)
    grads = _zeros_for_none(grads, xs)
    return (_finish(out, create_graph) if isinstance(out, Tensor) else
            tuple(_finish(o, create_graph) for o in out),
            _unwrap(tuple(_finish(g, create_graph) for g in grads), single))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product at `inputs`."""
    from ..ops.creation.factories import ones_like, zeros_like
    xs = _prepare(inputs, create_graph)
    vs = _tuple(v) if v is not None else tuple(ones_like(x) for x in xs)
    with enable_grad():
        out = func(*xs)
        outs = _tuple(out)
        us = tuple(zeros_like(o).requires_grad_() for o in outs)
        gs = _grad(outs, xs, us, create_graph=True, allow_unused=True)
        pairs = [(g, vv) for g, vv in zip(gs, vs) if g is not None]
        jv = _grad([g for g, _ in pairs], us, [vv for _, vv in pairs],
                   create_graph=create_graph, allow_unused=True)
    jv = _zeros_for_none(jv, outs)
    result = tuple(_finish(t, create_graph) for t in jv)
    return (_finish(out, create_graph) if isinstance(out, Tensor) else
            tuple(_finish(o, create_graph) for o in out),
            result[0] if isinstance(out, Tensor) else result)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian d func / d inputs, shaped output.shape + input.shape (per input)."""
    from ..ops.creation.factories import zeros_like
    from ..ops.shape.joining import stack
    single_in = isinstance(inputs, Tensor)
    xs = _prepare(inputs, create_graph)
    with enable_grad():
        out = func(*xs)
        outs = _tuple(out)
        rows = []          # rows[o][i]: d outs[o] / d xs[i]
        for o in outs:
            flat = o.reshape(-1)
            per_input = [[] for _ in xs]
            for k in range(flat.numel()):
                gs = _grad(flat[k], xs, retain_graph=True, create_graph=create_graph,
                           allow_unused=True)
                for i, (g, x) in enumerate(zip(gs, xs)):
                    per_input[i].append(zeros_like(x) if g is None else g)
            rows.append(tuple(
                _finish((stack(parts) if parts else zeros_like(x).reshape(0, *x.shape))
                        .reshape(*o.shape, *x.shape), create_graph)
                for parts, x in zip(per_input, xs)))
    if isinstance(out, Tensor):
        return rows[0][0] if single_in else rows[0]
    return tuple(r[0] if single_in else r for r in rows)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    single = isinstance(inputs, Tensor)

    def gradient(*xs):
        with enable_grad():
            gs = _grad(func(*xs), xs, create_graph=True, allow_unused=True)
        gs = _zeros_for_none(gs, xs)
        return gs[0] if single else gs
    return jacobian(gradient, inputs, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ H) for a scalar function."""
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs, create_graph)
    vs = _tuple(v)
    with enable_grad():
        out = func(*xs)
        gs = _grad(out, xs, create_graph=True, allow_unused=True)
        pairs = [(g, vv) for g, vv in zip(gs, vs) if g is not None]
        h = _grad([g for g, _ in pairs], xs, [vv for _, vv in pairs],
                  create_graph=create_graph, allow_unused=True)
    h = _zeros_for_none(h, xs)
    return _finish(out, create_graph), _unwrap(tuple(_finish(t, create_graph) for t in h),
                                               single)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function (H is symmetric, so this is vᵀ H)."""
    return vhp(func, inputs, v, create_graph, strict)
