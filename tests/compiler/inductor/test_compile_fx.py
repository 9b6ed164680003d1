"""Compiled equals eager: glasstorch's inductor against glasstorch's eager ops (and PyTorch
where it is installed), over the lowered ops, dtypes, broadcasting, strided inputs, views,
reductions and fused normalisations, with C kernels and with the NumPy fallback. Each test
compiles one graph holding many ops, so the file builds few kernels."""
import numpy as np
import pytest

import glasstorch as torch
import glasstorch.nn.functional as F
from glasstorch.compiler import inductor
from glasstorch.compiler.inductor import build

from inductor_helpers import assert_same, compiled


@pytest.fixture(autouse=True, params=["c", "numpy"])
def backend(request, monkeypatch):
    """Every test runs with C kernels and with NumPy kernels (no C compiler)."""
    if request.param == "numpy":
        monkeypatch.setenv("GLASSTORCH_INDUCTOR_CPP", "0")
        monkeypatch.setattr(inductor, "_warned_no_compiler", True)   # tested elsewhere
    elif build.compiler() is None:
        pytest.skip("no C compiler")
    return request.param


def _randn(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32))


def _pointwise(x, y, s):
    return (x + y, x - y * 2, x * y, x / (y.abs() + 1), -x, x.abs(), torch.relu(x),
            torch.maximum(x, y), torch.minimum(x, y), torch.clamp(x, -0.5, 0.5),
            torch.clamp_min(x, 0.1), torch.where(x > y, x, y), x > 0, x == y, x <= s,
            (x > 0) & (y > 0), torch.logical_not(x > 0), x * 3.5 + 1, 2 - x, x.pow(2),
            torch.sign(x), torch.floor(x * 3), torch.ceil(x * 3), torch.trunc(x * 3))


def _transcendental(x, y, s):
    p = x.abs() + 0.5
    return (torch.exp(x), torch.log(p), torch.sqrt(p), torch.rsqrt(p), torch.tanh(x),
            torch.sigmoid(x), torch.erf(x), torch.sin(x), torch.cos(x), torch.log1p(p),
            torch.expm1(x), p.pow(y), torch.reciprocal(p), F.gelu(x),
            F.gelu(x, approximate="tanh"), F.silu(x), torch.atan(x))


@pytest.fixture(scope="module")
def operands():
    x = _randn(6, 5, seed=1)
    y = _randn(5, seed=2)                    # broadcasts along dim 0
    s = _randn(5, 6, seed=3).t()             # a transposed (non-contiguous) input
    return x, y, s


def test_pointwise_ops_with_broadcasting_and_strided_inputs_match_eager_exactly(operands):
    out = compiled(_pointwise, *operands)(*operands)
    assert_same(out, _pointwise(*operands))


def test_transcendental_functions_match_eager_to_a_few_ulp(operands):
    out = compiled(_transcendental, *operands)(*operands)
    assert_same(out, _transcendental(*operands), rtol=1e-6, atol=1e-6)


def test_a_pointwise_chain_is_one_kernel_with_no_intermediate_buffer():
    a, b, c = _randn(64, 32, seed=1), _randn(64, 32, seed=2), _randn(32, seed=3)
    fn = compiled(lambda a, b, c: torch.relu(a * b + c), a, b, c)
    assert_same(fn(a, b, c), torch.relu(a * b + c))
    assert len(fn.artefacts.kernels) == 1
    assert fn.artefacts.host_source.count("_empty(") == 1       # the output alone


def _mixed(i, b, h, bf, f):
    return (i + 1, i * i, i > 2, i + 0.5, i // 1 if False else i - 3, b & (i > 0), b + b,
            h * h + h, h + 1.5, h.exp(), bf * bf - bf, (bf + 1).sigmoid(), h + f, bf + i,
            i.to(torch.float32) / 3, f.to(torch.int32), f.half(), f.bfloat16(), h.float(),
            torch.where(b, i, 7), i.abs(), -i)


def test_dtypes_promote_and_round_as_eager():
    rng = np.random.default_rng(0)
    i = torch.from_numpy(rng.integers(-5, 5, (4, 6)).astype(np.int64))
    b = torch.from_numpy(rng.random((4, 6)) > 0.5)
    f = _randn(4, 6, seed=4) * 3
    h, bf = f.half(), f.bfloat16()
    args = (i, b, h, bf, f)
    out = compiled(_mixed, *args)(*args)
    ref = _mixed(*args)
    exact = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]
    assert_same([out[k] for k in exact], [ref[k] for k in exact])
    assert_same([out[9], out[11]], [ref[9], ref[11]], rtol=1e-2, atol=1e-3)


def _reductions(x):
    return (x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(-1), x.mean(),
            x.amax(1), x.amin((1, 2), keepdim=True), x.var(2), x.var(0, correction=0),
            x.prod(2), x.max(), torch.softmax(x, -1), torch.log_softmax(x, 1),
            (x - x.mean(-1, keepdim=True)).sum(-1))


def test_reductions_with_dims_and_keepdim_match_eager():
    x = _randn(3, 7, 9, seed=5)
    out = compiled(_reductions, x)(x)
    assert_same(out, _reductions(x), rtol=2e-6, atol=2e-6)


def test_reductions_propagate_nan_as_eager():
    x = _randn(4, 9, seed=6)
    x[1, 3] = float("nan")
    fn = lambda x: (x.amax(1), x.amin(1), x.sum(1))     # noqa: E731
    assert_same(compiled(fn, x)(x), fn(x), rtol=1e-6, atol=1e-6)


def test_softmax_is_one_kernel_and_layer_norm_of_a_residual_sum_at_most_two():
    x = _randn(16, 64, seed=7)
    sm = compiled(lambda x: torch.softmax(x * 0.125, -1), x)
    assert_same(sm(x), torch.softmax(x * 0.125, -1), rtol=1e-6, atol=1e-7)
    assert len(sm.artefacts.kernels) == 1

    r, w, b = _randn(16, 64, seed=8), _randn(64, seed=9), _randn(64, seed=10)
    fn = lambda x, r, w, b: F.layer_norm(x + r, (64,), w, b)      # noqa: E731
    ln = compiled(fn, x, r, w, b)
    assert_same(ln(x, r, w, b), fn(x, r, w, b), rtol=1e-5, atol=1e-5)
    assert len(ln.artefacts.kernels) <= 2


def test_views_of_inputs_stay_views_and_computed_outputs_take_eagers_strides():
    x = _randn(4, 6, seed=11)
    def fn(x):
        return (x.t(), x[1:, ::2], x.view(2, 12), x.unsqueeze(0).expand(3, 4, 6),
                torch.relu(x).t(), (x * 2).reshape(24), x.t().reshape(24), x[2])
    out = compiled(fn, x)(x)
    assert_same(out, fn(x))
    for view in out[:4] + out[7:]:
        assert view.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_matrix_products_are_extern_calls_with_a_fused_epilogue():
    x, w, bias = _randn(8, 16, seed=12), _randn(4, 16, seed=13), _randn(4, seed=14)
    fn = lambda x, w, b: torch.relu(F.linear(x, w, b)) * 2      # noqa: E731
    c = compiled(fn, x, w, bias)
    assert_same(c(x, w, bias), fn(x, w, bias), rtol=1e-6, atol=1e-6)
    assert len(c.artefacts.kernels) == 1                  # bias, relu and * 2: one kernel
    assert "_product(aten.mm.default, product_cpu, " in c.artefacts.host_source   # no dispatch


def test_a_linear_layer_over_batched_rows_and_its_gelu_are_one_kernel():
    # a compiled GPT's MLP: addmm over the (batch*seq, features) rows (saved for the
    # backward), then GELU over its (batch, seq, out) view: one loop nest
    x, w, bias = _randn(2, 3, 8, seed=15), _randn(16, 8, seed=16), _randn(16, seed=17)

    def fn(x, w, b):
        rows = torch.addmm(b, x.view(6, 8), w.t())
        return rows, F.gelu(rows.view(2, 3, 16))
    c = compiled(fn, x, w, bias)
    assert_same(c(x, w, bias), fn(x, w, bias), rtol=1e-6, atol=1e-6)
    assert len(c.artefacts.kernels) == 1


def test_reshaped_values_join_a_kernel_only_where_both_walk_the_same_elements():
    a, b = _randn(4, 6, seed=18), _randn(6, 4, seed=19)
    same = lambda a: (a + 1, (a + 1).reshape(2, 2, 3, 2).sin())           # noqa: E731
    other_order = lambda a, b: ((a + 1).reshape(6, 4) * b).exp()          # noqa: E731
    transposed = lambda a, b: ((a + 1).t().reshape(4, 6) + b.reshape(4, 6)).neg()  # noqa: E731
    c = compiled(same, a)
    assert_same(c(a), same(a), rtol=1e-6, atol=1e-6)
    assert len(c.artefacts.kernels) == 1
    for fn in (other_order, transposed):
        c = compiled(fn, a, b)
        assert_same(c(a, b), fn(a, b), rtol=1e-6, atol=1e-6)


def test_ops_without_a_lowering_run_through_the_dispatcher_in_order():
    x = _randn(5, 6, seed=15)
    fn = lambda x: (torch.cumsum(x * 2, 1) + 1, torch.sort(x, 1).values.exp())    # noqa: E731
    c = compiled(fn, x)
    assert_same(c(x), fn(x), rtol=1e-6, atol=1e-6)
    assert any("cumsum" in op for op, _ in c.artefacts.lowering.fallbacks)


def test_in_place_ops_on_inputs_are_computed_then_written_back():
    def fn(x, y):
        total = x.sum()
        x.add_(y)
        x.mul_(2)
        y.copy_(x.flip(0))              # reads the new x; flip runs through the dispatcher
        return x * 3, total, x
    x, y = _randn(6, seed=16), _randn(6, seed=17)
    c = compiled(fn, x.clone(), y.clone())
    x1, y1, x2, y2 = x.clone(), y.clone(), x.clone(), y.clone()
    out, ref = c(x1, y1), fn(x2, y2)
    assert_same(out, ref)
    assert_same([x1, y1], [x2, y2])
    assert out[2] is x1                 # the input itself, as eager returns it


def test_an_optimizer_step_is_two_kernels():
    def adam(p, g, m, v):
        m.mul_(0.9).add_(g, alpha=0.1)
        v.mul_(0.999).addcmul_(g, g, value=0.001)
        p.addcdiv_(m, v.sqrt().add_(1e-8), value=-0.01)
    state = [_randn(300, seed=k) for k in range(4)]
    state[3] = state[3].abs()
    c = compiled(adam, *[t.clone() for t in state])
    ours, eager = [t.clone() for t in state], [t.clone() for t in state]
    assert c(*ours) is None
    adam(*eager)
    assert_same(ours, eager, rtol=1e-6, atol=1e-7)      # addcmul/addcdiv: decomposed
    assert len(c.artefacts.kernels) == 2               # new values, then the write-back


def test_overwriting_a_view_of_an_input_runs_eagerly():
    def fn(x):
        x[1:].mul_(10)
        return x + 1
    x = _randn(2, 3, seed=18)
    c = compiled(fn, x.clone())
    x1, x2 = x.clone(), x.clone()
    assert_same(c(x1), fn(x2))
    assert_same(x1, x2)
    assert c.artefacts is None                         # the whole graph ran eagerly


def test_inputs_with_other_strides_compile_again():
    x = _randn(4, 5, seed=17)
    c = compiled(lambda x: x * 2 + 1, x)
    t = _randn(5, 4, seed=18).t()
    assert_same(c(t), t * 2 + 1)
    assert_same(c(x), x * 2 + 1)
    assert len(c._compiled) == 2
    with pytest.raises(TypeError, match="takes 1 inputs, got 2"):
        c(x, x)


@pytest.mark.skipif(build.compiler() is None, reason="no C compiler")
def test_torch_oracle_agrees():
    T = pytest.importorskip("torch")
    a = np.random.default_rng(20).standard_normal((32, 48)).astype(np.float32)
    def fn(x):
        return torch.softmax(x, -1), F.layer_norm(x, (48,)), torch.relu(x * 2 + 1)
    out = compiled(fn, torch.from_numpy(a))(torch.from_numpy(a))
    t = T.from_numpy(a)
    ref = (T.softmax(t, -1), T.nn.functional.layer_norm(t, (48,)), T.relu(t * 2 + 1))
    for o, r in zip(out, ref):
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_draws_what_eager_draws_from_the_same_seed():
    x = _randn(16, 8, seed=21)
    fn = lambda x: F.dropout(torch.relu(x), 0.3) + 1     # noqa: E731
    c = compiled(fn, x)
    torch.manual_seed(5)
    out = c(x)
    torch.manual_seed(5)
    assert_same(out, fn(x), rtol=1e-6, atol=1e-6)
    assert "aten.empty_strided.default(" in c.artefacts.host_source    # no kernel for its shape


def test_a_module_with_parameters_compiles_its_parameters_as_constants():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.GELU(),
                                torch.nn.LayerNorm(24), torch.nn.Linear(24, 6))
    x = _randn(5, 12, seed=22)
    mask = x[:, :6] > 0
    fn = lambda x, mask: model(x).masked_fill(mask, float("-inf")).softmax(-1)   # noqa: E731
    with torch.no_grad():
        c = compiled(fn, x, mask)
        assert len(c.constants) == 6              # the weights and biases, lifted to inputs
        assert_same(c(x, mask), fn(x, mask), rtol=1e-5, atol=1e-6)


def _sums(x, h):
    return (x.sum(-1), x.mean(-1, keepdim=True), x.var(-1), x.sum(0), x.mean(0), x.sum(),
            (x * 3 - 1).sum(-1), x.t().contiguous().sum(-1), h.sum(-1), h.float().mean(-1))


@pytest.mark.parametrize("shape", [(3, 7), (5, 300), (2, 6000)])
def test_float_sums_add_in_eagers_order_so_results_are_bit_for_bit(shape):
    x = _randn(*shape, seed=23)
    h = x.half()
    assert_same(compiled(_sums, x, h)(x, h), _sums(x, h))


def test_empty_tensors_and_reductions_over_empty_dims_run_as_eager():
    x = torch.randn(3, 0)
    fn = lambda x: (x.sum(1), x.mean(0), x * 2, x.t())    # noqa: E731
    assert_same(compiled(fn, x)(x), fn(x))


def test_views_give_size_one_dims_eagers_strides():
    x = _randn(4, 6, seed=24)

    def fn(x):
        s = x.sum(-1, keepdim=True)
        return x.unsqueeze(1), x[:, :1], s.t().t(), (x * 2)[:1].unsqueeze(-1), s.expand(4, 1)
    assert_same(compiled(fn, x)(x), fn(x))
