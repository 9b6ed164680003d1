"""arange, range, linspace, logspace and eye against PyTorch: values, dtypes, shapes, errors.

Integer results must be identical, except where integer linspace truncates a double that
lies within rounding of an integer (_integer_linspace). linspace and logspace follow
PyTorch's arithmetic closely enough to agree to the last bit on floats too (checked to one
ulp here); arange's float values may differ from PyTorch's SIMD kernel in the last bits, so
they are checked against a few ulps of the largest magnitude involved.
"""
import ast
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import glasstorch as gt
from oracle import assert_same, oracle_torch, to_numpy

INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8"]
FLOAT_DTYPES = ["float64", "float32", "float16", "bfloat16"]
EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10,
       "bfloat16": 2.0 ** -7, "complex128": 2.0 ** -52, "complex64": 2.0 ** -23}
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


def _run(lib, expr, **names):
    """('ok', result, warnings) or ('err', type name, message) for `expr` with torch=lib."""
    env = {"torch": lib, "inf": float("inf"), "nan": float("nan"), **names}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = eval(expr, env)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return ("err", type(e).__name__, str(e))
    return ("ok", result, [str(w.message).split(" (Triggered internally")[0] for w in caught
                           if w.category is UserWarning])


def _check(expr, *, ulps=None, scale=1.0, messages=True, **names):
    """Run expr with both libraries; compare errors or dtype, shape and values."""
    T = oracle_torch()
    ours, theirs = _run(gt, expr, **names), _run(T, expr, **names)
    if theirs[0] == "err":
        assert ours[0] == "err" and ours[1] == theirs[1], (expr, ours, theirs)
        if messages:
            assert ours[2] == theirs[2], (expr, ours, theirs)
        return None
    assert ours[0] == "ok", (expr, ours, theirs)
    mine, ref = ours[1], theirs[1]
    assert str(mine.dtype) == str(ref.dtype) and tuple(mine.shape) == tuple(ref.shape), (
        expr, mine.dtype, ref.dtype, mine.shape, ref.shape)
    a, b = to_numpy(mine), to_numpy(ref)
    name = str(ref.dtype).replace("torch.", "")
    allowed = _integer_linspace(expr) if name in INT_DTYPES else None
    if allowed is not None:
        for values in (a, b):            # glasstorch's, and torch's as a check of the model
            assert all(int(v) in ok for v, ok in zip(values, allowed)), (expr, values, allowed)
    elif ulps is None or name not in EPS:
        np.testing.assert_array_equal(a, b, err_msg=expr)
    else:
        np.testing.assert_allclose(a, b, rtol=ulps * EPS[name],
                                   atol=ulps * EPS[name] * scale, equal_nan=True, err_msg=expr)
    assert ours[2] == theirs[2], (expr, ours[2], theirs[2])
    return mine


def _integer_linspace(expr):
    """For `torch.linspace(start, end, steps, dtype=<integer dtype>)` of plain numbers: per
    element, the integers it may be. The value is start + (end - start) * i / (steps - 1)
    (start and end first truncated to integers), computed in double and truncated, so where
    the exact value is an integer or within rounding of one, double rounding decides which
    side of it the truncation lands: PyTorch's answer there depends on the CPU (fused
    multiply-add in its AVX2 and AVX-512 kernels, none in its scalar path) and is off by one
    from the exact value on some machines. Elsewhere exactly one integer is right."""
    call = ast.parse(expr, mode="eval").body
    if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "torch.linspace"
            and len(call.args) == 3 and [k.arg for k in call.keywords] == ["dtype"]):
        return None
    try:
        start, end, steps = (ast.literal_eval(arg) for arg in call.args)
    except ValueError:
        return None
    if not all(isinstance(v, (int, float)) for v in (start, end)) or steps < 2 or (
            "uint8" in expr and min(start, end) < 0):       # uint8 wraps negative ends
        return None
    s, e = Fraction(int(start)), Fraction(int(end))
    slack = Fraction(4 * max(abs(s), abs(e), 1)) * Fraction(2) ** -52
    exact = [s + (e - s) * i / (steps - 1) for i in range(steps)]
    return [{int(x - slack), int(x), int(x + slack)} for x in exact]   # int() truncates


# ---- arange -------------------------------------------------------------------------

def _number(allow_float=True):
    ints = st.integers(-300, 300)
    if not allow_float:
        return ints
    return st.one_of(ints, st.integers(-3000, 3000).map(lambda k: k / 10),
                     st.integers(-30000, 30000).map(lambda k: k / 100),
                     st.sampled_from([1 / 3, -2 / 3, 0.1, 0.3, 0.7, 1e-9, 2.5]),
                     st.floats(-300, 300, allow_nan=False, width=32))


@SETTINGS
@given(start=_number(), end=_number(), step=_number().filter(lambda s: s != 0),
       dtype=st.sampled_from([None] + INT_DTYPES + FLOAT_DTYPES))
def test_arange_matches_torch(start, end, step, dtype):
    assume(abs(end - start) / abs(step) < 3000)
    d = "" if dtype is None else f", dtype=torch.{dtype}"
    _check(f"torch.arange({start!r}, {end!r}, {step!r}{d})", ulps=4,
           scale=max(abs(start), abs(end), abs(step)))


ARANGE_CASES = [
    "torch.arange(5)", "torch.arange(1, 1.3, 0.1)", "torch.arange(0, 1, 0.1)",
    "torch.arange(1, 1.3, 0.1, dtype=torch.float64)", "torch.arange(-1.5, 1.5, dtype=torch.int64)",
    "torch.arange(0.5, 5, dtype=torch.int64)", "torch.arange(0, 5, 1.5, dtype=torch.int64)",
    "torch.arange(0.9, 5.9, 1.5, dtype=torch.int32)",
    "torch.arange(-0.5, 3.7, 1.2, dtype=torch.int32)",
    "torch.arange(0, -5, -1.5, dtype=torch.int64)", "torch.arange(0, -5, -1.5, dtype=torch.int32)",
    "torch.arange(0, 300, 1, dtype=torch.uint8)", "torch.arange(-3, 3, dtype=torch.uint8)",
    "torch.arange(0, 5, 0.5, dtype=torch.int32)", "torch.arange(0, 10, 2.5, dtype=torch.uint8)",
    "torch.arange(0, 300, 100, dtype=torch.int8)", "torch.arange(5, 5)", "torch.arange(True)",
    "torch.arange(torch.tensor(3))", "torch.arange(torch.tensor(3.))",
    "torch.arange(torch.tensor(1), torch.tensor(2.5), torch.tensor(0.5))",
    "torch.arange(2**53, 2**53 + 4)", "torch.arange(2**53, 2**53 + 4, 1.0, dtype=torch.int64)",
    "torch.arange(2**60, 2**60 + 4, 1)", "torch.arange(-5, 5, 3)", "torch.arange(5, -5, -3)",
    "torch.arange(5, -5, -3, dtype=torch.int32)", "torch.arange(end=5)",
    "torch.arange(start=1, end=5)", "torch.arange(1, 5, step=2)", "torch.arange(1, end=4)",
    "torch.arange(0, 1e39, 1e38, dtype=torch.float32)",
    "torch.arange(0.5, 3, 1, dtype=torch.bfloat16)",
    "torch.arange(0, 1, 1/3, dtype=torch.float16)", "torch.arange(0., 10, 3, requires_grad=True)",
    "torch.arange(5, dtype=torch.float32, device='cpu')",
    # errors
    "torch.arange(0, 5, 0)", "torch.arange(0, 5, -1)", "torch.arange(5, 0, 1)",
    "torch.arange(0, inf)", "torch.arange(nan)", "torch.arange(0, 1e20, 1e-5)",
    "torch.arange(0, 1, 1e-300)", "torch.arange(0, 5, 0.5, dtype=torch.int64)",
    "torch.arange(1j)", "torch.arange(0, 1e19, 1e18, dtype=torch.int64)",
    "torch.arange(0, 10, 3, dtype=torch.float64, out=torch.zeros(0))",
    "torch.arange(0, 10, 3, dtype=torch.float32, out=torch.zeros(0, dtype=torch.int64))",
]


@pytest.mark.parametrize("expr", ARANGE_CASES)
def test_arange_cases_match_torch(expr):
    _check(expr, ulps=4, scale=1e39 if "e39" in expr else 10.0)


@pytest.mark.parametrize("expr", ["torch.arange(5, dtype=torch.bool)",
                                  "torch.arange(0, 1, 0.3, dtype=torch.complex64)",
                                  "torch.arange(torch.tensor([3]))",
                                  "torch.arange(0, 10, 3, requires_grad=True)"])
def test_arange_errors_have_torch_types(expr):
    _check(expr, messages=False)


def test_arange_out_resizes_with_torchs_warning_and_writes_strided_outs():
    for expr in ("torch.arange(5, out=torch.zeros(3))",
                 "torch.arange(0, 10, 3, out=torch.zeros(0))",
                 "torch.arange(5, out=torch.zeros(5, dtype=torch.int32))",
                 "torch.arange(5, out=torch.zeros(2, 3))"):
        _check(expr)
    base = gt.full((10,), -1.0)
    out = base.as_strided((5,), (2,), 0)
    v = base._version
    assert gt.arange(5, out=out) is out
    assert to_numpy(base).tolist() == [0, -1, 1, -1, 2, -1, 3, -1, 4, -1]
    assert base._version == v + 1


def test_arange_on_meta_makes_only_metadata():
    t = gt.arange(0, 1e10, dtype=gt.int32, device="meta")
    assert t.shape == (10_000_000_000,) and t.dtype is gt.int32 and t.device.type == "meta"
    assert gt.arange(5, device="meta").dtype is gt.int64


# ---- range (deprecated, inclusive) ----------------------------------------------------

RANGE_CASES = [
    "torch.range(0, 3)", "torch.range(0, 3, 0.5)", "torch.range(0, 3, dtype=torch.int64)",
    "torch.range(3, 0, -1)", "torch.range(0, 1, 0.3)", "torch.range(0, 0.9, 0.3)",
    "torch.range(-2.5, 2, 1.5, dtype=torch.int32)", "torch.range(1, 2, 0.25, dtype=torch.float16)",
    "torch.range(0, 3, out=torch.zeros(2))", "torch.range(0, 3, -1)", "torch.range(0, 3, 0)",
    "torch.range(0, inf)",
]


@pytest.mark.parametrize("expr", RANGE_CASES)
def test_range_matches_torch_and_warns(expr):
    _check(expr, ulps=4, scale=3.0)


def test_range_needs_an_end_and_a_step_the_dtype_can_hold():
    with pytest.raises(TypeError, match="end"):
        gt.range(5)
    # PyTorch dies with SIGFPE here (the step truncates to 0 and it divides by it).
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="step must be nonzero"):
        gt.range(0, 3, 0.5, dtype=gt.int64)


# ---- linspace / logspace ---------------------------------------------------------------

@SETTINGS
@given(start=_number(), end=_number(), steps=st.integers(0, 80),
       dtype=st.sampled_from([None] + INT_DTYPES + FLOAT_DTYPES))
def test_linspace_matches_torch(start, end, steps, dtype):
    d = "" if dtype is None else f", dtype=torch.{dtype}"
    _check(f"torch.linspace({start!r}, {end!r}, {steps}{d})", ulps=1,
           scale=max(abs(start), abs(end)))


def _fits(start, end, base, dtype):
    if dtype not in INT_DTYPES:
        return True
    top = max(abs(base) ** int(start), abs(base) ** int(end))
    return top < {"int8": 127, "uint8": 255, "int16": 3e4}.get(dtype, 2e9)


@SETTINGS
@given(start=st.integers(-300, 300).map(lambda k: k / 100), end=_number().map(lambda x: x / 100),
       steps=st.integers(0, 60), base=st.sampled_from([10.0, 2, 1.5, 0.5, 7.3, 3]),
       dtype=st.sampled_from([None] + INT_DTYPES + FLOAT_DTYPES))
def test_logspace_matches_torch(start, end, steps, base, dtype):
    assume(_fits(start, end, base, dtype))
    d = "" if dtype is None else f", dtype=torch.{dtype}"
    _check(f"torch.logspace({start!r}, {end!r}, {steps}, {base!r}{d})", ulps=1, scale=1e-30)


SPACED_CASES = [
    "torch.linspace(0, 1, 5)", "torch.linspace(0, 1, 0)", "torch.linspace(0, 1, 1)",
    "torch.linspace(3, 1, 1)", "torch.linspace(0, 10, 20, dtype=torch.int64)",
    "torch.linspace(77, -34, 55, dtype=torch.int64)",
    "torch.linspace(-70, 52, 7, dtype=torch.int8)",
    "torch.linspace(-156.3, 256, 7, dtype=torch.int32)",
    "torch.linspace(0.5, 10.7, 6, dtype=torch.int64)",
    "torch.linspace(-1, 1, 3, dtype=torch.uint8)", "torch.linspace(-255, 1, 3, dtype=torch.uint8)",
    "torch.linspace(0, 1+1j, 3)", "torch.linspace(0, 1, 3, dtype=torch.complex64)",
    "torch.linspace(torch.tensor(0.), torch.tensor(1.), 3)", "torch.linspace(True, False, 3)",
    "torch.linspace(torch.tensor(0, dtype=torch.int64), 10, 3)",
    "torch.linspace(torch.tensor(0., dtype=torch.float64), 1, 3)",
    "torch.linspace(0, 1, 3, out=torch.zeros(2))",
    "torch.linspace(0, 1, 3, out=torch.zeros(2, dtype=torch.int64))",
    "torch.linspace(0, inf, 3)", "torch.linspace(nan, 1, 3)", "torch.linspace(0, 1e39, 1)",
    "torch.linspace(1e39, 1, 0)", "torch.linspace(0, 1, 1000, dtype=torch.float16)",
    "torch.linspace(0, 1, 3, requires_grad=True)",
    "torch.logspace(0, 2, 3)", "torch.logspace(0, 2, 3, 2)",
    "torch.logspace(0, 2, 3, base=2, dtype=torch.int64)",
    "torch.logspace(0, 2.5, 4, dtype=torch.int64)", "torch.logspace(0, 1, 1)",
    "torch.logspace(1.5, 1, 1)",
    "torch.logspace(0, 1, 0)", "torch.logspace(0, 1, 3, base=-2)",
    "torch.logspace(0, 1, 3, dtype=torch.float16)",
    "torch.logspace(0.5, 2.5, 3, base=1.1, dtype=torch.int32)",
    "torch.logspace(0, 1, 3, base=1e40)",
    "torch.logspace(-5.589, -2.72, 63, 2, dtype=torch.float16)", "torch.logspace(0, 1j, 3)",
    # errors
    "torch.linspace(0, 1, -1)", "torch.linspace(torch.tensor([0.]), 1, 3)",
    "torch.linspace(0, 1+1j, 3, dtype=torch.int64)", "torch.linspace(0, 300, 3, dtype=torch.uint8)",
    "torch.linspace(-256, 1, 3, dtype=torch.uint8)",
    "torch.linspace(255.5, 1, 3, dtype=torch.uint8)",
    "torch.linspace(-0.5, 1, 3, dtype=torch.uint8)",
    "torch.linspace(0, 1e39, 3, dtype=torch.float32)",
    "torch.linspace(1e39, 1, 1, dtype=torch.float32)",
    "torch.linspace(0, 1e6, 3, dtype=torch.float16)",
    "torch.linspace(0, inf, 3, dtype=torch.int64)", "torch.linspace(0, nan, 3, dtype=torch.int32)",
    "torch.linspace(0, 1e39, 3, dtype=torch.bfloat16)", "torch.logspace(0, 1, -2)",
    "torch.logspace(100, 1, 1, dtype=torch.int64)",
]


@pytest.mark.parametrize("expr", SPACED_CASES)
def test_linspace_and_logspace_cases_match_torch(expr):
    _check(expr, ulps=1, scale=1.0)


@pytest.mark.parametrize("expr", ["torch.linspace(0, 1)", "torch.linspace(0, 1, 3.0)",
                                  "torch.linspace(0, 1, 3, dtype=torch.bool)",
                                  "torch.logspace(0, 3, 4, dtype=torch.bool)"])
def test_spaced_errors_have_torch_types(expr):
    _check(expr, messages=False)


def test_spaced_ranges_on_meta_and_strided_out():
    t = gt.linspace(0, 1, 2 ** 40, device="meta")
    assert t.shape == (2 ** 40,) and t.dtype is gt.float32
    assert gt.logspace(0, 1, 5, device="meta", dtype=gt.float64).dtype is gt.float64
    base = gt.zeros(2, 4)
    out = base.as_strided((4,), (2,), 0)
    gt.linspace(0, 3, 4, out=out)
    assert to_numpy(base).ravel().tolist() == [0, 0, 1, 0, 2, 0, 3, 0]


# ---- eye ---------------------------------------------------------------------------

EYE_CASES = [
    "torch.eye(3)", "torch.eye(2, 3, dtype=torch.int64)", "torch.eye(0)", "torch.eye(3, 0)",
    "torch.eye(3, dtype=torch.bool)", "torch.eye(2, 3, dtype=torch.complex64)",
    "torch.eye(2, m=3)", "torch.eye(3, 2, dtype=torch.bfloat16)",
    "torch.eye(2, requires_grad=True)",
    "torch.eye(2, out=torch.zeros(5))", "torch.eye(2, 3, out=torch.zeros(3, 2).t())",
    "torch.eye(-1)", "torch.eye(2, -1)", "torch.eye(2.0)",
]


@pytest.mark.parametrize("expr", EYE_CASES)
def test_eye_matches_torch(expr):
    T = oracle_torch()
    result = _check(expr)
    if result is not None and result.numel() > 1:
        assert_same(result, _run(T, expr)[1])          # strides too (the transposed out)


def test_eye_accepts_m_none_and_meta():
    assert gt.eye(2, m=None).shape == (2, 2)
    m = gt.eye(4, 2, device="meta", dtype=gt.float64)
    assert m.shape == (4, 2) and m.device.type == "meta"


@pytest.mark.parametrize("args", [(32,), (0, 32), (0, 0), (0, 32, 3), (-7, 5, 2), (5, 5, 7),
                                  (3, 1), (0, 10, -1), (2 ** 62, 2 ** 62 + 3), (True, 4)])
@pytest.mark.parametrize("kwargs", [{}, {"dtype": "long"}, {"dtype": "long", "device": "cpu"},
                                    {"dtype": "float32"}])
def test_arange_of_ints_equals_torch(args, kwargs):
    """Python-int aranges (the direct int64 path, and the general one for the rest): values,
    dtype and errors as torch's."""
    from oracle import oracle_torch
    torch = oracle_torch()

    def result(T):
        kw = {k: getattr(T, v) if k == "dtype" else v for k, v in kwargs.items()}
        try:
            t = T.arange(*args, **kw)
        except Exception as e:                  # noqa: BLE001  (compared by type and text)
            return type(e).__name__, str(e)
        return str(t.dtype), t.tolist()
    assert result(gt) == result(torch)
