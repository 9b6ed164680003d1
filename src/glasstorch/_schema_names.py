"""torch.FunctionSchema and torch.parse_schema: an operator's signature in PyTorch's
notation, parsed (glasstorch's dispatcher keeps every operator's schema in this form)."""
from __future__ import annotations

from .dispatch.schema import Schema as FunctionSchema
from .dispatch.schema import parse_schema as _parse

__all__ = ["FunctionSchema", "parse_schema"]


def parse_schema(schema: str) -> FunctionSchema:
    """`parse_schema("aten::add.Tensor(Tensor self, Tensor other) -> Tensor")`: name
    'add', overload_name 'Tensor', its arguments and returns."""
    head = schema.partition("(")[0]
    namespace = head.split("::")[0].strip() if "::" in head else "aten"
    return _parse(schema, namespace=namespace)
