"""functionalize: run a function with its mutations turned into out-of-place ops.

While the function runs, a dispatch mode gives every tensor it sees a `FunctionalTensor`
wrapper whose value can be *replaced*. An in-place op (`x.add_(y)`, `x[0] = 1`, an `out=`
write) runs as its functional form (`add`, `copy`, ...) and the result replaces the value of
the tensor written to. A view remembers its root tensor and how it was taken from it: writing
to the view writes the root's new value (the view scattered in), and every view of that root
takes itself again from the new value when next used. When the function returns, inputs it
mutated get their final values with one `copy_` each, as in PyTorch. Under `make_fx` the
captured graph is therefore free of mutations except those final copies.
"""
from __future__ import annotations

import functools

from ..core.tensor import Tensor
from ..dispatch.modes import TorchDispatchMode
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["functionalize"]


class FunctionalTensor(Tensor):
    """A tensor whose value a mutation replaces (functionalization's wrapper)."""

    @staticmethod
    def __new__(cls, elem: Tensor, parent=None, view_fn=None, scatter_fn=None):
        out = Tensor._make_wrapper_subclass(cls, elem.shape, elem.stride(), dtype=elem.dtype,
                                            device=elem.device,
                                            storage_offset=elem.storage_offset())
        out.elem = elem
        out.parent = parent          # the FunctionalTensor this one is a view of, or None
        out.view_fn = view_fn        # parent's value -> this view's value
        out.scatter_fn = scatter_fn  # (parent's value, new view value) -> new parent value
        out.root = parent.root if parent is not None else out
        out.generation = 0           # a root's: bumped when its value is replaced
        out.seen = out.root.generation
        return out

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("a FunctionalTensor was used outside the functionalize() call that "
                           "made it")

    def value(self) -> Tensor:
        """The current value, a view taken again if its root's value was replaced."""
        if self.parent is not None and self.seen != self.root.generation:
            self.elem = self.view_fn(self.parent.value())
            self.seen = self.root.generation
        return self.elem

    def replace(self, new: Tensor) -> None:
        """Give this tensor the value `new`: a view scatters it into its parent's."""
        if self.parent is None:
            self.elem = new
            self.generation += 1
        else:
            self.parent.replace(self.scatter_fn(self.parent.value(), new))
            # (this view takes itself again from the root's new value when next used)


def _scatter_for(func, rest):
    """How to write a view's new value back into its parent: the view's own scatter op
    where it has one (select_scatter, slice_scatter, diagonal_scatter), else
    as_strided_scatter over the view's geometry."""
    name = func._op.name
    if name == "aten::select.int":
        return lambda base, new: base.select_scatter(new, *rest)
    if name == "aten::slice.Tensor":
        return lambda base, new: base.slice_scatter(new, *rest)
    if name == "aten::diagonal":
        return lambda base, new: base.diagonal_scatter(new, *rest)

    def by_geometry(base, new, index=None):
        view = func(base, *rest)
        view = view if index is None else view[index]
        return base.as_strided_scatter(new, view.shape, view.stride(),
                                       view.storage_offset() - base.storage_offset())
    return by_geometry


def _unwrap(x):
    return x.value() if isinstance(x, FunctionalTensor) else x


def _wrap(x):
    return FunctionalTensor(x) if isinstance(x, Tensor) and not isinstance(
        x, FunctionalTensor) else x


def _is_view(op) -> bool:
    decl = op.info.get("decl")
    return decl is not None and decl.kind == "view"


def _full_like(self, value):
    from ..ops.creation.factories import full_like
    return full_like(self, value)


def _zeros_like(self):
    from ..ops.creation.factories import zeros_like
    return zeros_like(self)


_FUNCTIONAL_FILLS = {"aten::fill_.Scalar": _full_like, "aten::zero_": _zeros_like}


def _functional_form(op):
    """The out-of-place operator computing what an in-place or out= op writes, or None."""
    decl = op.info.get("decl")
    if decl is not None and decl.functional is not op:
        return decl.functional
    through = op.info.get("recorded_through")
    if through is not None:
        return through[0]
    return _FUNCTIONAL_FILLS.get(op.name)


_PIECES = ("aten::split.Tensor", "aten::split_with_sizes", "aten::unbind.int")


def _piece_scatter(name, rest, pieces):
    """Writing piece i of split/unbind back: a slice_scatter (select_scatter) of its range."""
    dim = rest[-1] if rest else 0
    if name == "aten::unbind.int":
        return lambda base, new, i: base.select_scatter(new, dim, i)
    starts, start = [], 0
    for p in pieces:
        starts.append(start)
        start += p.shape[dim]
    return lambda base, new, i: base.slice_scatter(new, dim, starts[i],
                                                   starts[i] + pieces[i].shape[dim])


class _FunctionalizeMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        op = func._op
        plain_args = tree_map(_unwrap, tuple(args))
        plain_kwargs = tree_map(_unwrap, kwargs)
        mutated = op.info.get("mutated") or ()
        if op.info.get("out"):
            return self._out_variant(op, func, args, kwargs, plain_args, plain_kwargs)
        if mutated:
            target = args[mutated[0]]
            functional = _functional_form(op)
            if functional is not None:
                from ..dispatch.dispatcher import bind_arguments
                bound = bind_arguments(op, plain_args, plain_kwargs)
                new = functional(*bound)
            else:           # no functional form (the random fills): mutate a fresh copy
                copy = plain_args[mutated[0]].clone()
                new_args = list(plain_args)
                new_args[mutated[0]] = copy
                func(*new_args, **plain_kwargs)
                new = copy
            if isinstance(target, FunctionalTensor):
                target.replace(new)
                return target
            return _wrap(new)
        result = func(*plain_args, **plain_kwargs)
        if _is_view(op) and isinstance(args[0], FunctionalTensor):
            return self._views(func, args, kwargs, result)
        return tree_map(_wrap, result)

    @staticmethod
    def _views(func, args, kwargs, result):
        from ..dispatch.dispatcher import bind_arguments
        parent = args[0]
        rest = bind_arguments(func._op, tree_map(_unwrap, tuple(args)),
                              tree_map(_unwrap, kwargs))[1:]
        plain_kwargs = {}
        scatter = _scatter_for(func, rest)
        if func._op.name in _PIECES:
            scatter = _piece_scatter(func._op.name, rest, result)
        if isinstance(result, Tensor):
            return FunctionalTensor(result, parent,
                                    lambda value: func(value, *rest, **plain_kwargs), scatter)
        return type(result)(
            FunctionalTensor(r, parent,
                             lambda value, i=i: func(value, *rest, **plain_kwargs)[i],
                             lambda base, new, i=i: scatter(base, new, i))
            for i, r in enumerate(result))

    @staticmethod
    def _out_variant(op, func, args, kwargs, plain_args, plain_kwargs):
        decl = op.info["decl"]
        n = len(decl.functional.schema.arguments)
        from ..dispatch.dispatcher import bind_arguments
        bound = bind_arguments(op, plain_args, plain_kwargs)
        result = decl.functional(*bound[:n])
        outs = [a for a in tuple(args) + tuple(kwargs.values()) if isinstance(a, Tensor)][-1:]
        if outs and isinstance(outs[0], FunctionalTensor) and isinstance(result, Tensor):
            outs[0].replace(result)
            return outs[0]
        return _wrap(result)


def functionalize(func, *, remove="mutations"):
    """`func` run with its mutations replaced by out-of-place ops (see the module
    docstring); inputs it mutates are updated once, at the end. Views stay views: with
    `remove='mutations_and_views'` too, as glasstorch has no `*_copy` view operators (the
    values are the same; a captured graph shows the views)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations': "
                           "all inplace and out= operators will be removed from the program, "
                           "and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing "
                           "operators {view} will be replaced with their non-aliasing "
                           "counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        leaves, spec = tree_flatten((args, kwargs))
        wrapped_leaves = [FunctionalTensor(x) if isinstance(x, Tensor) else x for x in leaves]
        with _FunctionalizeMode():
            fargs, fkwargs = tree_unflatten(wrapped_leaves, spec)
            out = func(*fargs, **fkwargs)
        out = tree_map(_unwrap, out)
        for original, w in zip(leaves, wrapped_leaves):     # mutated inputs: one copy_ each
            if isinstance(w, FunctionalTensor) and w.generation:
                original.copy_(w.value())
        return out
    return wrapped
