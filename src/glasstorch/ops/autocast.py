"""Which ops autocast runs in another precision, declared beside the ops (PyTorch's lists in
aten/src/ATen/autocast_mode.cpp):

- lower precision (matrix products, convolutions): floating inputs to the autocast dtype;
- fp32 (losses, and on CUDA the numerically touchy pointwise ops): inputs to float32;
- promote (cat, stack, ...): inputs to the widest floating dtype among them.

The policy is kept on the operator; the amp layer gives every operator that has one an
Autocast kernel for each device named (amp/autocast_mode.py).
"""
from __future__ import annotations

from .registry import operator_of

LOWER_PRECISION = "lower_precision_fp"
FP32 = "fp32"
PROMOTE = "promote"
POLICIES = (LOWER_PRECISION, FP32, PROMOTE)


def autocast_policy(*ops, cpu: str | None = None, cuda: str | None = None) -> None:
    """Declare how autocast treats `ops` (declarations or operators) on each device."""
    for policy in (cpu, cuda):
        if policy is not None and policy not in POLICIES:
            raise ValueError(f"unknown autocast policy {policy!r}: one of {POLICIES}")
    for op in ops:
        policies = operator_of(op).info.setdefault("autocast", {})
        for device_type, policy in (("cpu", cpu), ("cuda", cuda)):
            if policy is not None:
                policies[device_type] = policy
