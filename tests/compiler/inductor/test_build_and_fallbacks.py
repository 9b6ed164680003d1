"""The build machinery (disk cache, rebuilds, the NumPy fallback) and what the compiler
shows (logs, the debug directory), plus random graphs compiled against eager."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as torch
from glasstorch.compiler import inductor
from glasstorch.compiler.inductor import build

from conftest import assert_same, compiled

needs_cc = pytest.mark.skipif(build.compiler() is None, reason="no C compiler")


def _x(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32))


@needs_cc
def test_a_second_compile_of_the_same_graph_hits_the_disk_cache():
    x = _x(7, 3)
    fn = lambda x: torch.tanh(x) * 3 - x      # noqa: E731
    compiled(fn, x)
    before = build.builds
    again = compiled(fn, x)
    assert build.builds == before
    assert_same(again(x), fn(x), rtol=1e-6, atol=1e-6)


@needs_cc
def test_a_corrupt_cache_file_is_rebuilt(monkeypatch, tmp_path):
    x = _x(5, seed=1)
    fn = lambda x: x * x + 0.25               # noqa: E731
    source = compiled(fn, x).artefacts.kernel_source
    monkeypatch.setenv("GLASSTORCH_CACHE_DIR", str(tmp_path))      # a cache not loaded yet
    key = build.key_of(source, build.libs(build.vector_math_available())[:-1])
    path = build.cache_dir() / key[:2] / f"{key}.so"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"half a library")       # as a build killed without the atomic rename
    before = build.builds
    again = compiled(fn, x)
    assert build.builds == before + 1
    assert_same(again(x), fn(x))
    assert path.read_bytes()[:4] == b"\x7fELF"


def test_without_a_compiler_numpy_code_runs_with_one_warning(monkeypatch):
    monkeypatch.setenv("GLASSTORCH_INDUCTOR_CPP", "0")
    monkeypatch.setattr(inductor, "_warned_no_compiler", False)
    x, y = _x(4, 6, seed=2), _x(6, seed=3)
    h = x.half()
    def fn(x, y, h):
        return (torch.softmax(x * 0.5, -1), torch.relu(x + y).t(), x.var(0),
                x.amax(1, keepdim=True), h * h + 1, torch.where(x > 0, x, y))
    with pytest.warns(RuntimeWarning, match="NumPy"):
        c = compiled(fn, x, y, h)
    assert c.artefacts.language == "numpy"
    assert_same(c(x, y, h), fn(x, y, h), rtol=1e-6, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(lambda x: x + 1, x)          # the warning is given once


def test_logs_show_fusion_groups_and_generated_code(monkeypatch, capsys):
    monkeypatch.setenv("GLASSTORCH_LOGS", "output_code,fusion")
    x = _x(3, 8, seed=4)
    compiled(lambda x: torch.softmax(x, -1) + x.sum(0), x)
    err = capsys.readouterr().err
    assert "kernel0: loops [3] x [8]" in err
    assert "not fused" in err
    assert "def call(args):" in err


def test_the_debug_directory_holds_every_artefact(monkeypatch, tmp_path):
    monkeypatch.setenv("GLASSTORCH_COMPILE_DEBUG", "1")
    monkeypatch.chdir(tmp_path)
    x = _x(4, seed=5)
    compiled(lambda x: x.exp() * 2, x)
    (run,) = (tmp_path / "glasstorch_compile_debug").iterdir()
    names = sorted(p.name for p in run.iterdir())
    assert {"fx_graph.py", "fx_graph_decomposed.py", "ir.txt", "fusion.txt",
            "host.py"} <= set(names)
    assert "kernels.c" in names or "kernels.py" in names


# ---- random graphs ---------------------------------------------------------------------------

UNARY = [lambda v: v * 2, lambda v: v + 1, torch.relu, torch.neg, torch.abs,
         lambda v: v.clamp(-1, 1), lambda v: v * v]
BINARY = [torch.add, torch.sub, torch.mul, torch.maximum, torch.minimum,
          lambda u, v: torch.where(u > v, u, v)]
REDUCE = [lambda v: v.sum(-1, keepdim=True), lambda v: v.amax(-1, keepdim=True),
          lambda v: v.amin(0, keepdim=True)]


@st.composite
def programs(draw):
    steps = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6), st.integers(0, 10),
                                    st.integers(0, 10)), min_size=1, max_size=6))
    transpose = draw(st.booleans())
    return steps, transpose


def _run(steps, x, y):
    values = [x, y]
    for kind, which, i, j in steps:
        u, v = values[i % len(values)], values[j % len(values)]
        if kind == 0:
            values.append(UNARY[which % len(UNARY)](u))
        elif kind == 1:
            values.append(BINARY[which % len(BINARY)](u, v))
        else:
            values.append(REDUCE[which % len(REDUCE)](u) + v)
    return tuple(values[2:])


@needs_cc
@settings(max_examples=8, deadline=None)
@given(programs())
def test_random_pointwise_and_reduction_graphs_match_eager(program):
    steps, transpose = program
    x = _x(5, 5, seed=6)
    y = _x(5, 5, seed=7).t() if transpose else _x(5, seed=8)
    c = compiled(lambda x, y: _run(steps, x, y), x, y)
    assert_same(c(x, y), _run(steps, x, y), rtol=1e-6, atol=1e-6)
