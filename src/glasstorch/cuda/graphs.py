"""CUDA graphs (torch.cuda.graphs): record a stream's kernels once and replay them.

glasstorch does not capture CUDA graphs: its GPU kernels are launched through CuPy with
host-side decisions (allocation, dtype dispatch) that a replay would skip. The names exist
so programs that test for them import; using them raises and says so. No stream is ever
being captured, so is_current_stream_capturing() is False.
"""
from __future__ import annotations

from ..backends.cuda import runtime

__all__ = ["is_current_stream_capturing", "graph_pool_handle", "CUDAGraph", "graph",
           "make_graphed_callables"]


def _unsupported(what: str):
    runtime.require()
    return NotImplementedError(f"{what}: glasstorch does not capture CUDA graphs; run the "
                               "code eagerly or compile it with torch.compile")


def is_current_stream_capturing() -> bool:
    return False


def graph_pool_handle():
    raise _unsupported("torch.cuda.graph_pool_handle")


class CUDAGraph:
    def __init__(self, keep_graph: bool = False):
        raise _unsupported("torch.cuda.CUDAGraph")


class graph:
    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        raise _unsupported("torch.cuda.graph")


def make_graphed_callables(callables, sample_args, num_warmup_iters=3,
                           allow_unused_input=False, pool=None):
    raise _unsupported("torch.cuda.make_graphed_callables")
