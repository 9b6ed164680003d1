import pytest

import glasstorch as gt
from oracle import oracle_torch

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128"]


def test_dtype_names_aliases_and_repr():
    assert gt.float is gt.float32 and gt.double is gt.float64 and gt.half is gt.float16
    assert gt.long is gt.int64 and gt.int is gt.int32 and gt.short is gt.int16
    assert gt.cfloat is gt.complex64 and gt.cdouble is gt.complex128
    assert repr(gt.float32) == "torch.float32"


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_properties_match_torch(name):
    T = oracle_torch()
    ours, theirs = getattr(gt, name), getattr(T, name)
    assert ours.is_floating_point == theirs.is_floating_point
    assert ours.is_complex == theirs.is_complex
    assert ours.is_signed == theirs.is_signed
    assert ours.itemsize == theirs.itemsize
    assert gt.empty(2, dtype=ours).element_size() == T.empty(2, dtype=theirs).element_size()


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    T = oracle_torch()
    ours, theirs = gt.finfo(getattr(gt, name)), T.finfo(getattr(T, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, field) == getattr(theirs, field), field


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    T = oracle_torch()
    ours, theirs = gt.iinfo(getattr(gt, name)), T.iinfo(getattr(T, name))
    assert (ours.bits, ours.min, ours.max) == (theirs.bits, theirs.min, theirs.max)


def test_finfo_iinfo_reject_wrong_kinds():
    with pytest.raises(TypeError, match="requires a floating point"):
        gt.finfo(gt.int32)
    with pytest.raises(TypeError, match="requires an integer"):
        gt.iinfo(gt.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported"):
        gt.iinfo(gt.bool)


def test_default_dtype_controls_float_factories_and_is_restored():
    assert gt.get_default_dtype() is gt.float32
    try:
        gt.set_default_dtype(gt.float64)
        assert gt.tensor([1.5]).dtype is gt.float64
        assert gt.ones(2).dtype is gt.float64
        assert gt.tensor([1j]).dtype is gt.complex128
    finally:
        gt.set_default_dtype(gt.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        gt.set_default_dtype(gt.int64)
    assert gt.get_default_dtype() is gt.float32


def test_is_floating_point_and_is_complex_functions():
    assert gt.is_floating_point(gt.ones(1)) and not gt.is_floating_point(gt.ones(1).long())
    assert gt.is_complex(gt.zeros(1, dtype=gt.complex64))
