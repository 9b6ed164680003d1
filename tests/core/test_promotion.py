"""The whole type-promotion table against PyTorch.

Every dtype pair, for 1-d and 0-dim tensors in both positions, and every dtype against
Python bool, int, float and complex on either side: `glasstorch.result_type` and the dtype
of `add`/`mul` results must equal PyTorch's; `promote_types` and `can_cast` too (float16
with a complex number or a complex 0-dim tensor gives complex32). The partial dtypes
(uint16/32/64, float8, ...) are checked in test_dtypes_extra.py.
"""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
from oracle import dtype_name, oracle_torch

torch = oracle_torch()

NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex64", "complex128")
PAIRS = tuple(itertools.product(NAMES, NAMES))
NUMBERS = (True, False, 3, -2, 2.5, -0.0, 1j, 2 + 0.5j)


def make(name: str, zero_dim: bool):
    shape = () if zero_dim else (2,)
    return (gt.ones(shape, dtype=getattr(gt, name)),
            torch.ones(shape, dtype=getattr(torch, name)))


def same_dtype(g, t) -> bool:
    return dtype_name(g) == dtype_name(t)


def test_promote_types_and_can_cast_every_pair():
    for a, b in PAIRS:
        expected = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert same_dtype(gt.promote_types(getattr(gt, a), getattr(gt, b)), expected), (a, b)
        assert gt.can_cast(getattr(gt, a), getattr(gt, b)) == torch.can_cast(
            getattr(torch, a), getattr(torch, b)), (a, b)


@pytest.mark.parametrize("dims", [(1, 1), (1, 0), (0, 1), (0, 0)],
                         ids=lambda d: f"{d[0]}d-{d[1]}d")
def test_tensor_with_tensor(dims):
    for a, b in PAIRS:
        ga, ta = make(a, dims[0] == 0)
        gb, tb = make(b, dims[1] == 0)
        expected = torch.result_type(ta, tb)
        assert same_dtype(gt.result_type(ga, gb), expected), (a, b, dims)
        assert same_dtype(gt.add(ga, gb).dtype, torch.add(ta, tb).dtype), (a, b, dims)
        assert same_dtype((ga * gb).dtype, (ta * tb).dtype), (a, b, dims)


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("zero_dim", [False, True], ids=["1d", "0d"])
def test_tensor_with_python_number(zero_dim, default):
    gt.set_default_dtype(getattr(gt, default))
    torch.set_default_dtype(getattr(torch, default))
    try:
        for name, number in itertools.product(NAMES, NUMBERS):
            g, t = make(name, zero_dim)
            for t_args, g_args in (((t, number), (g, number)), ((number, t), (number, g))):
                expected = torch.result_type(*t_args)
                where = (name, number, zero_dim, default)
                assert same_dtype(gt.result_type(*g_args), expected), where
                assert same_dtype(gt.mul(*g_args).dtype, torch.mul(*t_args).dtype), where
                if not (name == "bool" and isinstance(number, bool)):
                    assert same_dtype(gt.add(*g_args).dtype, torch.add(*t_args).dtype), where
    finally:
        gt.set_default_dtype(gt.float32)
        torch.set_default_dtype(torch.float32)


_bound = st.one_of(st.none(), st.tuples(st.sampled_from(NAMES), st.booleans()),
                   st.sampled_from((True, 2, -3, 0.5)))


@settings(max_examples=50, deadline=None)
@given(self_=st.tuples(st.sampled_from(NAMES), st.booleans()), low=_bound, high=_bound)
def test_three_operand_promotion_through_clamp(self_, low, high):
    """clamp promotes input, min and max together, numbers included."""
    if isinstance(low, tuple) != isinstance(high, tuple) and low is not None \
            and high is not None:
        return                    # PyTorch's argument parser mixes bound kinds erratically
    g, t = make(*self_)
    g_args, t_args = [g], [t]
    for bound in (low, high):
        if isinstance(bound, tuple):
            gb, tb = make(*bound)
            g_args.append(gb)
            t_args.append(tb)
        else:
            g_args.append(bound)
            t_args.append(bound)
    try:
        expected = torch.clamp(*t_args)
    except (RuntimeError, TypeError, NotImplementedError):
        return                    # no bounds, or no kernel for the dtype
    if expected.dtype == torch.complex32:
        return
    assert same_dtype(gt.clamp(*g_args).dtype, expected.dtype)


def test_result_type_errors_on_non_numbers():
    with pytest.raises(TypeError):
        gt.result_type(gt.ones(2), "a")
