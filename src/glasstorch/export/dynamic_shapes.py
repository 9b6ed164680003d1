"""`torch.export.Dim`: a dimension that may change between calls, with its range.

glasstorch has no symbolic shapes: an exported graph is traced at the example inputs'
sizes. A `Dim` records the range a dimension may take; `ExportedProgram.module()` checks each
call against it (a size outside the range, or a change in a static dimension, fails as
PyTorch's guards do), and the graph runs at the new size when its ops do not hold sizes
fixed at the example's (elementwise ops, matmuls, convolutions, norms, reductions over
named dims); ops that do (a `view` to a literal shape) fail at run time with their own error.
"""
from __future__ import annotations

import sys

from ..core.tensor import Tensor

_INT_MAX = sys.maxsize - 1


class Dim:
    """A named dynamic dimension: `Dim("batch", min=1, max=1024)`."""

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim name must be a valid identifier, got {name!r}")
        lo = 0 if min is None else int(min)
        hi = _INT_MAX if max is None else int(max)
        if hi < lo:
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min, self.max = lo, hi

    AUTO = STATIC = DYNAMIC = None    # set below: PyTorch's markers for dynamic_shapes

    def __repr__(self) -> str:
        parts = [repr(self.__name__)]
        if self.min > 2:
            parts.append(f"min={self.min}")
        if self.max < _INT_MAX:
            parts.append(f"max={self.max}")
        return f"Dim({', '.join(parts)})"


class _Marker:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Dim.{self.name}"


Dim.AUTO, Dim.STATIC, Dim.DYNAMIC = _Marker("AUTO"), _Marker("STATIC"), _Marker("DYNAMIC")


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple:
    """Several Dims with the same range."""
    return tuple(Dim(name, min=min, max=max) for name in names)


def ranges_of(dynamic_shapes, names: list, leaves: list) -> dict:
    """{(input position, dim): (name, min, max)} from `dynamic_shapes` (a dict by argument
    name, or a tuple in argument order, of {dim: Dim} or [Dim | None, ...] per tensor)."""
    if dynamic_shapes is None:
        return {}
    if isinstance(dynamic_shapes, dict):
        unknown = set(dynamic_shapes) - set(names)
        if unknown:
            raise ValueError(f"dynamic_shapes names {sorted(unknown)}, which are not "
                             f"arguments of forward ({names})")
        per_input = [dynamic_shapes.get(n) for n in names]
    else:
        per_input = list(dynamic_shapes) + [None] * (len(names) - len(dynamic_shapes))
    ranges = {}
    for position, (spec, value) in enumerate(zip(per_input, leaves)):
        if spec is None:
            continue
        if not isinstance(value, Tensor):
            raise ValueError(f"dynamic_shapes: {names[position]} is not a tensor; glasstorch "
                             "takes dynamic dimensions of tensor arguments only")
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for d, dim in items:
            if dim is None or dim is Dim.STATIC:
                continue
            if d >= value.dim():
                raise ValueError(f"dynamic_shapes: {names[position]} has {value.dim()} "
                                 f"dimensions, no dimension {d}")
            if isinstance(dim, _Marker):
                dim = Dim(f"{names[position]}_dim{d}")
            size = value.shape[d]
            if not dim.min <= size <= dim.max:
                raise ValueError(f"Received user-specified dim hint range [{dim.min}, "
                                 f"{dim.max}] for {names[position]}.size()[{d}], but the "
                                 f"example input has size {size}")
            ranges[(position, d)] = (dim.__name__, dim.min, dim.max)
    return ranges


def check_call(ranges: dict, names: list, example_shapes: list, leaves: list) -> None:
    """Fail as PyTorch's guards do when a call's tensors leave the exported ranges."""
    if len(leaves) != len(example_shapes):
        raise TypeError(f"expected {len(example_shapes)} tensor inputs, got {len(leaves)}")
    for position, (name, shape, value) in enumerate(zip(names, example_shapes, leaves)):
        if value.dim() != len(shape):
            raise AssertionError(f"Guard failed: {name}.dim() == {len(shape)}")
        for d, (expected, actual) in enumerate(zip(shape, value.shape)):
            bound = ranges.get((position, d))
            if bound is None:
                if actual != expected:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] == {expected}")
            elif actual < bound[1]:
                raise AssertionError(f"Guard failed: {name}.size()[{d}] >= {bound[1]}")
            elif actual > bound[2]:
                raise AssertionError(f"Guard failed: {name}.size()[{d}] <= {bound[2]}")
