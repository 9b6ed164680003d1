"""Float sums over leading dims (bias and LayerNorm weight gradients) run row by row, bit for
bit eager's; kernel libraries load with OpenMP's passive wait policy and glibc's malloc
keeps freed blocks (compiler/inductor/process.py)."""
import os
import subprocess
import sys

import pytest

import glasstorch as torch
from glasstorch.compiler.inductor import build, host, process

from inductor_helpers import assert_same, compiled

needs_cc = pytest.mark.skipif(build.compiler() is None, reason="no C compiler")


def _column_grads(g, x, b):
    y = g * x
    return (g.sum(0), y.sum((0, 1)), g.mean(0) * 2, g.sum(0, keepdim=True) + b,
            g.double().sum(0), g.half().sum(0), y.sum(0).sum(0))


@needs_cc
def test_column_sums_run_row_by_row_and_match_eager_bit_for_bit():
    torch.manual_seed(0)
    g, x = torch.randn(3, 50, 70), torch.randn(3, 50, 70)
    b = torch.randn(1, 50, 70)
    c = compiled(_column_grads, g, x, b)
    assert_same(c(g, x, b), _column_grads(g, x, b))
    source = c.artefacts.kernel_source
    assert "_col = (" in source and "free(" in source      # accumulator arrays were made
    g2, x2 = g * 3 + 1, x.neg()                              # the same kernels, new values
    assert_same(c(g2, x2, b), _column_grads(g2, x2, b))


@needs_cc
def test_sums_that_cannot_run_row_by_row_keep_their_loops():
    """A variance (two passes), a sum reading a value of its own kernel, and a row sum."""
    torch.manual_seed(1)
    x = torch.randn(40, 30)

    def fn(x):
        return x.var(0), (x - x.mean(0)).sum(0), x.sum(1), x.amax(0)
    c = compiled(fn, x)
    assert_same(c(x), fn(x))
    assert "_col" not in c.artefacts.kernel_source


@needs_cc
def test_a_training_step_with_column_sums_matches_eager():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.LayerNorm(8),
                                torch.nn.Linear(8, 3))
    twin = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.LayerNorm(8),
                               torch.nn.Linear(8, 3))
    twin.load_state_dict(model.state_dict())
    step = torch.compile(twin)
    x = torch.randn(4, 5, 6)
    model(x).square().sum().backward()
    step(x).square().sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-5, atol=1e-6)


def test_kernel_address_is_data_ptr_for_offset_and_empty_tensors():
    t = torch.randn(4, 5)
    for tensor in (t, t[1:, 2:], t.t()[3], torch.empty(0), torch.ones(3, dtype=torch.int64)[1:]):
        assert host._address(tensor) == tensor.data_ptr()


def test_kernel_loads_set_the_wait_policy_only_while_loading(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GLASSTORCH_INDUCTOR_TUNE_PROCESS", raising=False)
    with process.kernel_library_load():
        assert os.environ["OMP_WAIT_POLICY"] == "passive"
    assert "OMP_WAIT_POLICY" not in os.environ
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")      # the user's choice stands
    with process.kernel_library_load():
        assert os.environ["OMP_WAIT_POLICY"] == "active"
    monkeypatch.setenv("GLASSTORCH_INDUCTOR_TUNE_PROCESS", "0")
    monkeypatch.delenv("OMP_WAIT_POLICY")
    with process.kernel_library_load():
        assert "OMP_WAIT_POLICY" not in os.environ


@needs_cc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libgomp and glibc")
def test_a_parallel_kernel_loads_libgomp_with_the_passive_policy():
    """libgomp prints its settings at load with OMP_DISPLAY_ENV (in a fresh process: this
    one may have loaded it already)."""
    code = ("import glasstorch as torch\n"
            "f = torch.compile(lambda x: (x * 2).relu())\n"
            "print(float(f(torch.ones(1 << 22)).sum()))\n"
            "import os; print('left', os.environ.get('OMP_WAIT_POLICY'))\n")
    env = dict(os.environ, OMP_DISPLAY_ENV="true")      # the tests' kernel cache
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GLASSTORCH_INDUCTOR_TUNE_PROCESS", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in result.stderr
    assert "8388608.0" in result.stdout and "left None" in result.stdout


@needs_cc
def test_sums_of_negative_zeros_are_positive_zero_as_eager():
    """Eager's sums (NumPy's and PyTorch's) start from +0.0, so a row or column of -0.0
    sums to +0.0: the generated row (pairwise), column and whole-tensor sums do too."""
    import numpy as np

    def sums(x):
        return x.sum(-1) * 1.0, x.sum(0) * 1.0, x.sum() * 1.0, x.mean(-1) * 1.0, x.mean(0)
    for shape in ((4, 8), (3, 300)):
        x = torch.full(shape, -0.0)
        for got, want in zip(compiled(sums, x)(x), sums(x)):
            assert not np.signbit(want.numpy()).any()
            assert not np.signbit(got.numpy()).any()
