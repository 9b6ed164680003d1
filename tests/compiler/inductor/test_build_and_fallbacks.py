"""The build machinery (disk cache, rebuilds, the NumPy fallback) and what the compiler
shows (logs, the debug directory), plus random graphs compiled against eager."""
import os
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import glasstorch as torch
from glasstorch.compiler import inductor
from glasstorch.compiler.inductor import build

from inductor_helpers import assert_same, compiled

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


def test_set_logs_turns_on_output_code_and_fusion(capsys):
    torch._logging.set_logs(output_code=True, fusion=True)
    try:
        compiled(lambda x: x.exp() * 3, _x(5, seed=6))
    finally:
        torch._logging.set_logs(output_code=False, fusion=False)
    err = capsys.readouterr().err
    assert "def call(args):" in err and "kernel0" in err


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
VIEW = [lambda v: v.t(), lambda v: v.reshape(-1).reshape(v.shape),
        lambda v: v.unsqueeze(0)[0], lambda v: v.reshape(v.shape + (1,))[..., 0]]


@st.composite
def programs(draw):
    steps = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 10),
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
        elif kind == 2:
            values.append(REDUCE[which % len(REDUCE)](u) + v)
        else:
            values.append(VIEW[which % len(VIEW)](u) * 2)
    return tuple(values[2:])


@settings(max_examples=10, deadline=None)
@given(programs())
# a returned value that a later step views (`y * 2`, then its transpose): eager's strides
@example(([(0, 0, 0, 0), (0, 0, 1, 0), (0, 0, 0, 0), (0, 0, 0, 0), (3, 0, 9, 0)], True))
def test_random_graphs_of_pointwise_ops_reductions_and_views_match_eager(program):
    steps, transpose = program
    x = _x(5, 5, seed=6)
    y = _x(5, 5, seed=7).t() if transpose else _x(5, seed=8)
    c = compiled(lambda x, y: _run(steps, x, y), x, y)
    assert_same(c(x, y), _run(steps, x, y), rtol=1e-6, atol=1e-6)


def test_fake_example_inputs_and_inputs_that_require_grad():
    from glasstorch._subclasses.fake_tensor import FakeTensorMode
    from glasstorch.compiler.inductor import compile_fx
    from glasstorch.fx.experimental.proxy_tensor import make_fx
    x, y = _x(4, 5, seed=9), _x(4, 5, seed=10).requires_grad_()
    fn = lambda x, y: (x * y).sum(1) + 1          # noqa: E731
    gm = make_fx(fn)(x, y)
    mode = FakeTensorMode()
    c = compile_fx(gm, [mode.from_tensor(x), mode.from_tensor(y)])
    out = c(x, y)
    assert not out.requires_grad                  # the backend runs below autograd
    assert_same(out, fn(x, y).detach(), rtol=1e-6, atol=1e-6)


def test_one_compiled_graph_called_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor
    x = _x(64, 33, seed=11)
    fn = lambda x: torch.softmax(x * 2, -1) - x       # noqa: E731
    c = compiled(fn, x)
    inputs = [x * k for k in range(8)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda t: c(t), inputs))
    for t, out in zip(inputs, outs):
        assert_same(out, c(t))
        assert_same(out, fn(t), rtol=1e-6, atol=1e-6)


_BUILD_IN_CHILD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("build", sys.argv[2])   # stdlib imports only
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)
print(build.load(sys.argv[1]).answer())
"""


@needs_cc
def test_processes_building_the_same_library_at_once_share_one_valid_file(tmp_path):
    import subprocess
    import sys
    source = "int answer(void) { return 42; }\n/* %s */\n" % tmp_path.name
    env = dict(os.environ, GLASSTORCH_CACHE_DIR=str(tmp_path))
    children = [subprocess.Popen([sys.executable, "-c", _BUILD_IN_CHILD, source, build.__file__],
                                 env=env, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    assert [c.communicate(timeout=120)[0].strip() for c in children] == ["42"] * 3
    (library,) = (tmp_path / "inductor").glob("*/*.so")
    assert library.read_bytes()[:4] == b"\x7fELF"
    assert not [p for p in (tmp_path / "inductor").rglob("*") if p.is_dir() and
                p.parent != tmp_path / "inductor"]       # no temporary build left behind


def test_a_compiler_that_fails_falls_back_to_numpy_code_with_a_warning(monkeypatch, tmp_path):
    build.vector_math_available()             # probed (and cached) with the real compiler
    fake_cc = tmp_path / "cc"
    fake_cc.write_text("#!/bin/sh\necho 'cc: error: no _Float16 here' >&2\nexit 1\n")
    fake_cc.chmod(0o755)
    monkeypatch.setenv("CC", str(fake_cc))
    monkeypatch.setenv("GLASSTORCH_CACHE_DIR", str(tmp_path / "cache"))
    x = _x(6, seed=12)
    with pytest.warns(RuntimeWarning, match="no _Float16 here"):
        c = compiled(lambda x: x * 2 - 1, x)
    assert c.artefacts.language == "numpy"
    assert_same(c(x), x * 2 - 1)


def test_kernel_times_name_every_kernel_of_a_call():
    x = _x(32, 16, seed=13)
    c = compiled(lambda x: (torch.softmax(x, -1), (x * 2).sum(0)), x)
    times = c.kernel_times(x)
    assert sorted(times) == sorted(k.name for k in c.artefacts.kernels)
    assert all(t > 0 for t in times.values())


DTYPES = {"float32": lambda t: t, "float64": lambda t: t.double(), "float16": lambda t: t.half(),
          "bfloat16": lambda t: t.bfloat16(), "int64": lambda t: (t * 3).to(torch.int64),
          "int32": lambda t: (t * 3).to(torch.int32), "bool": lambda t: t > 0}
MIXED_UNARY = [lambda v: v + 1, lambda v: v * 2.5, lambda v: v > 0, lambda v: v.float(),
               lambda v: v.half(), lambda v: v.to(torch.int32), lambda v: torch.where(v > 0, v, 1),
               lambda v: v.sum(-1, keepdim=True), lambda v: v.t().t()]
MIXED_BINARY = [torch.add, torch.mul, torch.maximum, lambda a, b: a == b]


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(DTYPES)),
       st.lists(st.tuples(st.booleans(), st.integers(0, 8), st.integers(0, 6),
                          st.integers(0, 6)), min_size=1, max_size=4))
def test_random_graphs_over_mixed_dtypes_match_eager_bit_for_bit(dx, dy, steps):
    x, y = DTYPES[dx](_x(4, 6, seed=14)), DTYPES[dy](_x(4, 6, seed=15))

    def fn(x, y):
        values = [x, y]
        for unary, which, i, j in steps:
            u, v = values[i % len(values)], values[j % len(values)]
            if unary:
                values.append(MIXED_UNARY[which % len(MIXED_UNARY)](u))
            elif torch.bool not in (u.dtype, v.dtype) or which % 4 == 3:
                values.append(MIXED_BINARY[which % len(MIXED_BINARY)](u, v))
        return tuple(values[2:]) or (x + 0,)
    assert_same(compiled(fn, x, y)(x, y), fn(x, y))
