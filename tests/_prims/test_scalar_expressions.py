"""Each elementwise primitive's scalar expression, rendered to Python and evaluated on
sample values (nan and ±inf included), computes what the primitive's NumPy implementation
does; the C rendering of every floating one, compiled, too (skipped without a C compiler)."""
from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import glasstorch as gt
from glasstorch._prims import prims, render, substitute
from glasstorch._prims.scalar import BinOp, Call, Const, Select, Unary, a, b, compile_python

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.7, 0.1, 1e-300, 700.0, 1e300,
           np.inf, -np.inf, np.nan]
INTEGERS = [0, 1, -1, 5, -7, 12, 3]
INTEGER_ONLY = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                "shift_right_arithmetic"}
ELEMENTWISE = [p for p in prims.values() if p.kind == "elementwise"
               and p.name != "convert_element_type"]


def _arity(p):
    return sum(arg.type == "Tensor" for arg in p.schema.arguments)


def _samples(p):
    """Rows of operands: every pair (or single value) from the sample set."""
    if p.name == "where":
        return [(c, x, y) for c in (True, False) for x in (1.5, np.nan) for y in (-np.inf, 2.0)]
    values = [v for v in INTEGERS if not ("shift" in p.name and v < 0)] \
        if p.name in INTEGER_ONLY else SPECIAL
    if _arity(p) == 1:
        return [(v,) for v in values]
    return [(x, y) for x in values for y in values]


def _impl(p, row):
    dtype = np.int64 if p.name in INTEGER_ONLY else None
    arrays = [np.array([v], dtype=bool if isinstance(v, bool) else dtype or np.float64)
              for v in row]
    with np.errstate(all="ignore"):
        return np.asarray(p.impl(*arrays))[0]


def _same(x, y) -> bool:
    x, y = float(x), float(y)
    if np.isnan(x) or np.isnan(y):
        return np.isnan(x) and np.isnan(y)
    return x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y))


@pytest.mark.parametrize("p", ELEMENTWISE, ids=lambda p: p.name)
def test_python_rendering_matches_the_implementation(p):
    fn = compile_python(p.expr, _arity(p))
    for row in _samples(p):
        got, expected = fn(*row), _impl(p, row)
        assert _same(got, expected), f"prims::{p.name}{row}: expression {got}, NumPy " \
                                     f"{expected} (expression: {render(p.expr, 'python')})"


def test_renderings():
    assert render(prims["exp"].expr, "c") == "exp(a)"
    assert render(prims["exp"].expr, "c", dtype="float") == "expf(a)"
    assert render(prims["exp"].expr, "python") == "m.exp(a)"
    assert render(prims["rsqrt"].expr, "c") == "(1.0 / sqrt(a))"
    assert render(prims["rsqrt"].expr, "cuda") == "rsqrt(a)"
    assert render(prims["rsqrt"].expr, "cuda", dtype="float") == "rsqrtf(a)"
    assert render(prims["where"].expr, "cuda") == "(a ? b : c)"
    assert render(prims["where"].expr, "python") == "(b if a else c)"
    assert render(prims["div"].expr, "python") == "m.div(a, b)"
    assert render(prims["isfinite"].expr, "c", dtype="float") == "(isfinite(a) != 0)"
    assert render(Unary("!", BinOp("&&", a, b)), "python") == "(not (a and b))"
    assert render(Select(Const(True), Const(2), Const(0.5)), "c", dtype="float") == \
        "(1 ? 2.0f : 0.5f)"
    with pytest.raises(ValueError, match="unknown scalar function"):
        Call("no_such_function", a)
    with pytest.raises(ValueError, match="unknown language"):
        render(a, "fortran")


def test_python_division_is_c_division():
    fn = compile_python(prims["div"].expr, 2)
    assert fn(1.0, 0.0) == np.inf and np.isnan(fn(0.0, 0.0))
    assert fn(-7, 2) == -3 and fn(7, 2) == 3          # integers truncate, as C's `/`


# ---- C -----------------------------------------------------------------------------------------

CC = shutil.which("cc")
C_CHECKED = [p.name for p in ELEMENTWISE if p.name not in INTEGER_ONLY]   # double arguments


@pytest.fixture(scope="module")
def c_library(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler (cc) on this machine")
    lines = ["#include <math.h>"]
    for name in C_CHECKED:
        p = prims[name]
        params = ", ".join(f"double {v}" for v in "abc"[:_arity(p)])
        lines.append(f"double prim_{name}({params}) {{ return {render(p.expr, 'c')}; }}")
    folder = tmp_path_factory.mktemp("prims_c")
    source, library = folder / "prims.c", folder / "prims.so"
    source.write_text("\n".join(lines) + "\n")
    subprocess.run([CC, "-O1", "-shared", "-fPIC", "-o", str(library), str(source), "-lm"],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(library))


@pytest.mark.parametrize("name", C_CHECKED)
def test_c_rendering_matches_the_implementation(c_library, name):
    p = prims[name]
    fn = getattr(c_library, f"prim_{name}")
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_double] * _arity(p)
    for row in _samples(p):
        got, expected = fn(*(float(v) for v in row)), _impl(p, row)
        assert _same(got, expected), f"C prims::{name}{row}: {got}, NumPy {expected}"


def test_every_scalar_function_renders_in_every_language():
    from glasstorch._prims.scalar import FUNCTIONS, PY_MATH
    for fn in FUNCTIONS:
        assert callable(getattr(PY_MATH, fn)), fn
        for lang in ("c", "cuda", "python"):
            assert render(Call(fn, *[a] * 2), lang)
    assert isinstance(gt.ops.prims.exp.default, type(gt.ops.aten.exp.default))


@pytest.fixture(scope="module")
def c_float_library(tmp_path_factory):
    """The single-precision renderings (expf, sqrtf, 2.0f, ...) compiled as float functions."""
    if CC is None:
        pytest.skip("no C compiler (cc) on this machine")
    lines = ["#include <math.h>"]
    for name in C_CHECKED:
        p = prims[name]
        params = ", ".join(f"float {v}" for v in "abc"[:_arity(p)])
        lines.append(f"float prim_{name}({params}) "
                     f"{{ return {render(p.expr, 'c', dtype='float')}; }}")
    folder = tmp_path_factory.mktemp("prims_c_float")
    source, library = folder / "prims.c", folder / "prims.so"
    source.write_text("\n".join(lines) + "\n")
    subprocess.run([CC, "-O1", "-shared", "-fPIC", "-o", str(library), str(source), "-lm"],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(library))


@pytest.mark.parametrize("name", C_CHECKED)
def test_c_float_rendering_matches_the_implementation(c_float_library, name):
    """In float32, within a few ulps (libm's float functions are not all correctly
    rounded)."""
    p = prims[name]
    fn = getattr(c_float_library, f"prim_{name}")
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float] * _arity(p)
    for row in _samples(p):
        with np.errstate(all="ignore"):          # 1e300 becomes inf in float32
            operands = [np.array([v], dtype=bool if isinstance(v, bool) else np.float32)
                        for v in row]
            expected = np.asarray(p.impl(*operands))[0]
        got = fn(*(float(v) for v in row))
        expected = float(expected)
        same = (np.isnan(got) and np.isnan(expected)) or got == expected or \
            abs(got - expected) <= 4e-7 * max(abs(got), abs(expected))
        assert same, f"C float prims::{name}{row}: {got}, NumPy {expected}"


def test_substitute_fuses_a_chain_of_prims():
    """sigmoid(x) = reciprocal(add(exp(neg(x)), 1)) as one expression, evaluating as the
    chain of NumPy implementations does."""
    one = Const(1.0)
    body = substitute(prims["reciprocal"].expr, {
        "a": substitute(prims["add"].expr, {
            "a": substitute(prims["exp"].expr, {"a": prims["neg"].expr}), "b": one})})
    assert render(body, "c", dtype="float") == "(1.0f / (expf((-a)) + 1.0f))"
    fused = compile_python(body, 1)
    for x in SPECIAL:
        with np.errstate(all="ignore"):
            chained = 1 / (np.exp(-np.float64(x)) + 1)
        assert _same(fused(x), chained), x
