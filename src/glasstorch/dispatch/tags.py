"""torch.Tag: the properties an operator declares (pointwise, inplace_view, core, ...).

Operators keep their tags as strings (`op.tags`); a Tag is a str enum, so `Tag.pointwise in
torch.ops.aten.add.Tensor.tags` holds, as in PyTorch.
"""
from __future__ import annotations

from enum import Enum


class Tag(str, Enum):
    core = "core"
    cudagraph_unsafe = "cudagraph_unsafe"
    data_dependent_output = "data_dependent_output"
    dynamic_output_shape = "dynamic_output_shape"
    flexible_layout = "flexible_layout"
    generated = "generated"
    inplace = "inplace"
    inplace_view = "inplace_view"
    maybe_aliasing_or_mutating = "maybe_aliasing_or_mutating"
    needs_contiguous_strides = "needs_contiguous_strides"
    needs_exact_strides = "needs_exact_strides"
    needs_fixed_stride_order = "needs_fixed_stride_order"
    nondeterministic_bitwise = "nondeterministic_bitwise"
    nondeterministic_seeded = "nondeterministic_seeded"
    out = "out"
    out_variant = "out_variant"
    pointwise = "pointwise"
    pt2_compliant_tag = "pt2_compliant_tag"
    reduction = "reduction"
    view_copy = "view_copy"

    def __str__(self):
        return f"Tag.{self.name}"

    __hash__ = str.__hash__
