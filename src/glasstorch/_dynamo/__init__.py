"""`torch._dynamo`: PyTorch's name for the compiler's capture (glasstorch.compiler)."""
from ..compiler import config  # noqa: F401
from ..compiler.backends import list_backends, lookup_backend, register_backend  # noqa: F401
from ..compiler.eval_frame import OptimizedModule, disable, is_compiling, reset  # noqa: F401
from ..compiler.explain import ExplainOutput, explain  # noqa: F401
from ..compiler import exc  # noqa: F401
from . import eval_frame  # noqa: F401


def optimize(backend="inductor", *, nopython: bool = False, dynamic=None, disable=False):
    """The older spelling of torch.compile: `optimize(backend)(fn)`."""
    from ..compiler.eval_frame import compile as compile_
    return lambda fn: compile_(fn, backend=backend, fullgraph=nopython, dynamic=dynamic,
                               disable=disable)


def mark_dynamic(t, index, *, min=None, max=None) -> None:
    """Say that dimension(s) `index` of `t` vary between calls: a change in them is not a
    guard failure (no recompile is counted). Graphs stay static: a new size compiles a new
    graph within the same cache entry (see docs/15-compiler.md)."""
    indices = index if isinstance(index, (list, tuple)) else [index]
    for i in indices:
        if not -t.dim() <= i < t.dim():
            raise IndexError(f"mark_dynamic: dimension {i} out of range for a {t.dim()}-d tensor")
    dims = set(getattr(t, "_dynamo_dynamic_indices", set()))
    dims.update(i % t.dim() for i in indices)
    t._dynamo_dynamic_indices = dims


def mark_static(t, index=None) -> None:
    """Undo mark_dynamic for `index` (all dimensions when None)."""
    dims = set(getattr(t, "_dynamo_dynamic_indices", set()))
    if index is None:
        dims.clear()
    else:
        dims.discard(index % t.dim())
    t._dynamo_dynamic_indices = dims
