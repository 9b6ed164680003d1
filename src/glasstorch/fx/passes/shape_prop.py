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
    of them) and `node.meta['type']`. With a `fake_mode` (a FakeTensorMode) the inputs and
    the tensors get_attr nodes read are converted to fake tensors and only metadata is
    computed (a leaf module's own parameters stay real: give the mode
    `allow_non_fake_inputs=True` for graphs with call_module nodes)."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = fake_mode
        self._fake_attrs: dict = {}

    def run_node(self, n: Node) -> Any:
        if self.fake_mode is not None:
            with self.fake_mode:
                result = super().run_node(n)
        else:
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

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        value = super().get_attr(target, args, kwargs)
        if self.fake_mode is None or not isinstance(value, Tensor):
            return value
        if target not in self._fake_attrs:
            self._fake_attrs[target] = self.fake_mode.from_tensor(value)
        return self._fake_attrs[target]

    def propagate(self, *args) -> Any:
        """Run the module on `args`, recording metadata on the way; returns its result."""
        if self.fake_mode is not None:
            args = tuple(self.fake_mode.from_tensor(a) if isinstance(a, Tensor) else a
                         for a in args)
        return super().run(*args)
