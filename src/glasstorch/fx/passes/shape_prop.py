"""`torch.fx.passes.shape_prop`: record each node's tensor shape, dtype and strides by
running the graph on example inputs."""
from __future__ import annotations

from typing import Any, NamedTuple

from ...core.tensor import Tensor, channels_last, channels_last_3d, contiguous_format
from ..interpreter import Interpreter
from ..node import Node, map_aggregate


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result: Tensor) -> TensorMetadata:
    """The metadata of `result`; memory_format is the first layout it is contiguous in
    (None when it is contiguous in none, as for a transpose)."""
    memory_format = None
    for candidate in (contiguous_format, channels_last, channels_last_3d):
        if result.dim() != {channels_last: 4, channels_last_3d: 5}.get(candidate, result.dim()):
            continue
        if result.is_contiguous(memory_format=candidate):
            memory_format = candidate
            break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """`ShapeProp(gm).propagate(*example_inputs)` runs `gm` and stores, on every node whose
    value holds tensors, `node.meta['tensor_meta']` (a TensorMetadata, or the same structure
    of them) and `node.meta['type']`."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        if fake_mode is not None:
            raise NotImplementedError("ShapeProp(fake_mode=...): glasstorch runs ShapeProp "
                                      "on real tensors only")
        self.fake_mode = None

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found_tensor = False

        def extract(obj):
            nonlocal found_tensor
            if isinstance(obj, Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        """Run the module on `args`, recording metadata on the way; returns its result."""
        return super().run(*args)
