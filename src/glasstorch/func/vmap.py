"""vmap: a function of one example, run over a batch (functorch's vmap).

`vmap(f)(x)` pushes a vmap level, wraps each mapped input in a BatchedTensor of that level
(func/batched_tensor.py) and calls `f` once: every op inside runs on the whole batch through
its batching rule (func/batching_rules.py). The outputs are unwrapped with their batch
dimension moved to `out_dims`. While a vmap runs, the FuncTorchVmapMode key is included, so
random factories (`torch.rand` inside `f`) follow the `randomness` mode.
"""
from __future__ import annotations

import functools

from ..core.tensor import Tensor
from ..dispatch.dispatcher import overloads_of
from ..dispatch.keys import DispatchKey, include_keys
from ..ops.shape.joining import cat
from ..utils._pytree import tree_flatten, tree_unflatten
from . import batching, batching_rules  # noqa: F401  (the rules register themselves)
from ._levels import push_vmap, stack
from .batched_tensor import is_batched_at, wrap

__all__ = ["vmap"]

_VMAP_MODE_BIT = 1 << DispatchKey.FuncTorchVmapMode
_RANDOMNESS = ("error", "different", "same")


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


def _broadcast_dims(dims, tree, what: str, func, in_dims):
    """`dims` (an int/None or a tree prefix of `tree`) as one entry per leaf of `tree`."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(tree_flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) and len(
            dims) == len(tree):
        return [d for sub, t in zip(dims, tree) for d in _broadcast_dims(sub, t, what, func,
                                                                         in_dims)]
    if isinstance(dims, dict) and isinstance(tree, dict) and dims.keys() == tree.keys():
        return [d for k in tree for d in _broadcast_dims(dims[k], tree[k], what, func, in_dims)]
    raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): {what} is not "
                     f"compatible with the structure of `inputs`. {what} has structure "
                     f"{tree_flatten(dims)[1]} but inputs has structure {tree_flatten(tree)[1]}.")


def _batch_dims(func, in_dims, args):
    if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to "
                         "add inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    dims = in_dims if isinstance(in_dims, int) or in_dims is None else tuple(in_dims)
    if isinstance(dims, tuple) and len(dims) != len(args):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                         f"not compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(dims)[1]} but inputs has structure "
                         f"{tree_flatten(args)[1]}.")
    leaves, spec = tree_flatten(args)
    flat_dims = _broadcast_dims(dims, args, "in_dims", func, in_dims)
    sizes, normalized = [], []
    for leaf, d in zip(leaves, flat_dims):
        if d is None:
            normalized.append(None)
            continue
        if not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but in_dim must be either an integer "
                             "dimension or None.")
        if not isinstance(leaf, Tensor):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but the input is of type "
                             f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        n = leaf.dim()
        if not -n <= d < n:
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim "
                             f"< {n}.")
        normalized.append(d % n)
        sizes.append(leaf.shape[d % n])
    if not sizes:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): at least one "
                         "input should be a Tensor to map over: got in_dims=None for all of "
                         "them, or no Tensor inputs.")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return leaves, spec, normalized, sizes[0]


def _unwrap_output(out, out_dim, level: int, size: int, func):
    if not isinstance(out, Tensor):
        if out_dim is None:
            return out
        raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, "
                         f"got type {type(out)}. Did you mean to set out_dims= to None for "
                         "output?")
    if out_dim is None:
        if is_batched_at(out, level):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims=None): returned a Tensor "
                             "batched over the mapped dimension; out_dims=None requires it "
                             "not to depend on the mapped inputs")
        return out
    if is_batched_at(out, level):
        value, bdim = out._value, out._bdim
    else:        # the same for every example: expanded along the batch dimension
        value, bdim = out.unsqueeze(0).expand(size, *out.shape), 0
    rank = value.dim()
    if not -rank <= out_dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {out_dim})")
    out_dim %= rank
    return value if bdim == out_dim else value.movedim(bdim, out_dim)


def _call(func, leaves, spec, in_dims, size, randomness, out_dims, kwargs):
    with push_vmap(size, randomness) as entry, include_keys(_VMAP_MODE_BIT):
        batched = [leaf if d is None else wrap(leaf, d, entry.level)
                   for leaf, d in zip(leaves, in_dims)]
        output = func(*tree_unflatten(batched, spec), **kwargs)
        out_leaves, out_spec = tree_flatten(output)
        if isinstance(out_dims, (int, type(None))):
            flat_out_dims = [out_dims] * len(out_leaves)
        else:
            tree = output if isinstance(output, tuple) else (output,)
            dims = out_dims if isinstance(output, tuple) else tuple(out_dims)
            flat_out_dims = _broadcast_dims(dims, tree, "out_dims", func, out_dims)
        results = [_unwrap_output(o, d, entry.level, size, func)
                   for o, d in zip(out_leaves, flat_out_dims)]
    return tree_unflatten(results, out_spec), flat_out_dims


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`func` mapped over dimension `in_dims` of its inputs (per input: an int, None for an
    input shared by every example, or a tree matching the input); the outputs gain the batch
    dimension at `out_dims`. `chunk_size` runs the batch in chunks of that many examples.
    `randomness`: 'error' refuses random ops, 'different' draws per example, 'same' draws
    once for the whole batch."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        leaves, spec, dims, size = _batch_dims(func, in_dims, args)
        if chunk_size is None or chunk_size >= size:
            return _call(func, leaves, spec, dims, size, randomness, out_dims, kwargs)[0]
        chunks = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            part = [leaf if d is None else leaf.narrow(d, start, n)
                    for leaf, d in zip(leaves, dims)]
            chunks.append(_call(func, part, spec, dims, n, randomness, out_dims, kwargs))
        outs = [tree_flatten(c[0]) for c, _ in zip(chunks, range(len(chunks)))]
        spec_out, flat_dims = outs[0][1], chunks[0][1]
        merged = [pieces[0] if d is None else cat(list(pieces), d % pieces[0].dim())
                  for d, pieces in zip(flat_dims, zip(*(o[0] for o in outs)))]
        return tree_unflatten(merged, spec_out)
    return wrapped


# ---- random factories inside vmap ----------------------------------------------------------

_SIZE_ARG = {"aten::rand": "size", "aten::rand.generator": "size", "aten::randn": "size",
             "aten::randn.generator": "size", "aten::randint": "size",
             "aten::randint.generator": "size", "aten::randint.low": "size",
             "aten::randint.low_generator": "size", "aten::normal.float_float": "size"}


def _random_factory(op, ks, *args):
    """A random factory inside vmap: an error, one draw for the batch ('same'), or one draw
    per example ('different', the batch sizes prepended and the result wrapped per level)."""
    levels = stack.vmaps
    if any(entry.randomness == "error" for entry in levels):
        raise RuntimeError(batching.RANDOMNESS_ERROR)
    different = [entry for entry in levels if entry.randomness == "different"]
    if not different:
        return op.redispatch(ks, *args)
    position = [a.name for a in op.schema.arguments].index(_SIZE_ARG[op.name])
    args = list(args)
    args[position] = tuple(entry.batch_size for entry in different) + tuple(args[position])
    result = op.redispatch(ks, *args)
    for entry in different:
        result = wrap(result, 0, entry.level)
    return result


def _install() -> None:
    batching._install()
    for name in _SIZE_ARG:
        packet, _, overload = name.partition(".")
        op = overloads_of(packet).get(overload)
        if op is not None:
            op.register(DispatchKey.FuncTorchVmapMode, _random_factory)


_install()
