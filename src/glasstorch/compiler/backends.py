"""Backends: what turns a captured graph into something to run (`torch._dynamo.backends`).

A backend is a callable `(gm: fx.GraphModule, example_inputs: list[Tensor]) -> callable`.
The graph is at the ATen level, as `make_fx` records it: each call_function node's target is
an `OpOverload` (`torch.ops.aten.mm.default`), placeholders are the real tensors the graph
reads (inputs, parameters, buffers, constants), in-place ops on them are the graph's
mutations of its inputs, and the output is a tuple of tensors. `example_inputs` are those
real tensors: a backend may read them but must not write them. The callable it returns
takes the same tensors and returns what the graph's output returns.

Built in: "inductor" (glasstorch's code generator, `glasstorch.compiler.inductor`, the
default), "eager" (runs the graph as captured), "aot_eager" (decomposes the graph with the
core ATen decomposition table, then runs it).

"inductor" and "aot_eager" also compile the backward (aot_autograd.py): a captured region
whose tensors require grad gets a forward graph and a backward graph, each compiled. A
user's backend does the same when made with `aot_autograd(fw_compiler=..., bw_compiler=...)`
(`torch._dynamo.backends.common.aot_autograd`, as in PyTorch); any other callable gets the
forward graphs only, and autograd's recorded graph runs the backward eagerly.
"""
from __future__ import annotations

import logging
import warnings
from typing import Callable

from .._decomp import core_aten_decompositions
from ..autograd.grad_mode import no_grad
from ..fx.experimental.proxy_tensor import make_fx
from .exc import InvalidBackend

log = logging.getLogger("glasstorch._dynamo")
_BACKENDS: dict = {}        # name -> (compiler_fn, tags)


def register_backend(compiler_fn: Callable | None = None, name: str | None = None,
                     tags=()):
    """Register `compiler_fn` under `name` (default: its __name__); usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    name = name or compiler_fn.__name__
    if name in _BACKENDS:
        raise AssertionError(f"duplicate name: {name}")
    _BACKENDS[name] = (compiler_fn, tuple(tags))
    return compiler_fn


def lookup_backend(compiler_fn) -> Callable:
    """A backend name or callable as the callable."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            raise InvalidBackend(compiler_fn)
        return _BACKENDS[compiler_fn][0]
    if not callable(compiler_fn):
        raise TypeError(f"backend must be a string or a callable, got {type(compiler_fn)}")
    return compiler_fn


class AotBackend:
    """A backend that compiles the backward too: `fw_compiler` gets forward graphs (and
    graphs with no backward), `bw_compiler` (default: `fw_compiler`) the backward graphs."""

    compiles_backward = True

    def __init__(self, fw_compiler: Callable, bw_compiler: Callable | None = None):
        self.fw_compiler = fw_compiler
        self.bw_compiler = bw_compiler or fw_compiler
        self.__name__ = getattr(fw_compiler, "__name__", type(self).__name__)

    def __call__(self, gm, example_inputs, **kwargs):
        return self.fw_compiler(gm, example_inputs)

    def __repr__(self):
        return f"aot_autograd({self.__name__})"


def aot_autograd(*, fw_compiler: Callable, bw_compiler: Callable | None = None,
                 **kwargs) -> AotBackend:
    """A backend from forward and backward compilers, each `(gm, example_inputs) ->
    callable` (PyTorch's `torch._dynamo.backends.common.aot_autograd`). The graphs are
    partitioned by glasstorch's own rule (docs/15-compiler.md); `partition_fn`,
    `decompositions` and the other options of PyTorch's are not supported."""
    if kwargs:
        raise NotImplementedError(f"aot_autograd: options {sorted(kwargs)} are not supported "
                                  "in glasstorch")
    return AotBackend(fw_compiler, bw_compiler)


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The names `torch.compile(backend=...)` accepts, sorted, leaving out backends with
    one of `exclude_tags` (by default the debugging ones: eager, aot_eager)."""
    exclude = set(exclude_tags or ())
    return sorted(name for name, (_, tags) in _BACKENDS.items() if not exclude & set(tags))


@register_backend(name="eager", tags=("debug",))
def eager(gm, example_inputs, **kwargs):
    """Run the captured graph as it is, op by op."""
    return gm.forward


def _aot_eager(gm, example_inputs, **kwargs):
    """Decompose the graph to core ATen ops (retraced on fake inputs, so nothing runs), then
    run the decomposed graph. The graph is below autograd (its backward, if any, is in it
    as ops), so it is retraced without grad mode."""
    with no_grad():
        decomposed = make_fx(gm, core_aten_decompositions(), tracing_mode="fake",
                             _allow_non_fake_inputs=True)(*example_inputs)
    return decomposed.forward


aot_eager = register_backend(AotBackend(_aot_eager), name="aot_eager", tags=("debug",))
_warned_no_inductor = False


def _inductor(gm, example_inputs, **kwargs):
    """glasstorch's code generator (`glasstorch.compiler.inductor.compile_fx`). Where this
    install has none, the graph runs as captured, with one warning."""
    global _warned_no_inductor
    try:
        from .inductor import compile_fx
    except ImportError as e:
        if not _warned_no_inductor:
            _warned_no_inductor = True
            warnings.warn(f"glasstorch.compiler.inductor is not available ({e}); compiled "
                          "graphs run with the 'eager' backend", stacklevel=2)
        return gm.forward
    return compile_fx(gm, example_inputs)


inductor = register_backend(AotBackend(_inductor), name="inductor")
