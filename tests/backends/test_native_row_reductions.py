"""The C reductions over trailing dims (native/reduction.c: sum_trailing, extreme_trailing)
against the NumPy path they replace, bit for bit: sums and means over the last dims, max
and min with and without their indices, over rows of every length around the pairwise
sum's blocks, NaN, infinities and zeros of both signs, keepdim, out= tensors, strided inputs
and any thread count; where they run and where NumPy still does; and the ops against
PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import glasstorch as gt
from glasstorch.backends.cpu import reduction
from native_paths import both_paths, needs_compiler, spy_kernels, threaded_kernels
from oracle import assert_same, oracle_torch, to_torch

LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 130, 136,
           200, 255, 256, 257, 1000, 1031]


@pytest.fixture
def few_rows(monkeypatch):
    """The C extremes from one row on (by default a max alone waits for 16 rows and an
    argmax alone for 4096, below which NumPy's calls cost as little)."""
    monkeypatch.setattr(reduction, "_ROW_EXTREMES_MIN", 0)
    monkeypatch.setattr(reduction, "_ROW_ARGS_MIN", 0)


def _rows(shape, dtype, seed=0, specials=True) -> np.ndarray:
    """Values spread over many magnitudes (a float32 sum's order shows in its last bits),
    with NaN, infinities and zeros of both signs in some rows where `specials`, and a last
    row of -0.0 (whose sum is 0.0); no row's max or min is a zero held with both signs (as
    `test_zero_extremes_are_the_rows_last_zero` has them)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * rng.lognormal(0, 3, shape)
    if specials and a.size > 4:
        flat = a.reshape(-1, shape[-1])
        picks = rng.integers(0, flat.size, max(1, flat.size // 50))
        flat.flat[picks] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], picks.size)
        flat[:, 0] = np.where(rng.random(flat.shape[0]) < 0.1, -0.0, flat[:, 0])
        if flat.shape[0] > 2:
            flat[-1] = -0.0
    a = a.astype(dtype)
    if a.size:                                # a row with zeros of both signs: all -0.0
        flat = a.reshape(-1, shape[-1])
        zeros = flat == 0
        mixed = (zeros & np.signbit(flat)).any(1) & (zeros & ~np.signbit(flat)).any(1)
        flat[mixed] = np.where(zeros[mixed], -0.0, flat[mixed])
    return a


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    """The same bits, NaN where NaN is (its sign aside: inf + -inf makes x86's default NaN,
    and which of two NaN operands an add passes on depends on the compiler's operand
    order)."""
    nan = np.isnan(x)
    return (x.shape == y.shape and x.dtype == y.dtype and np.array_equal(nan, np.isnan(y))
            and x[~nan].tobytes() == y[~nan].tobytes())


def _same_values(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal, NaN where NaN is (its payload aside: NumPy's vector max makes its own NaN),
    and of the same sign where zero."""
    return (x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
            and np.array_equal(np.signbit(x[x == 0]), np.signbit(y[y == 0])))


def _sums(x: gt.Tensor, dims, keepdim=False) -> list:
    return [x.sum(dims, keepdim).numpy(), x.mean(dims, keepdim).numpy()]


def _extremes(x: gt.Tensor, keepdim=False) -> list:
    values, indices = x.max(-1, keepdim)
    low, low_at = x.min(-1, keepdim)
    return [values.numpy(), indices.numpy(), low.numpy(), low_at.numpy(),
            x.amax(-1, keepdim).numpy(), x.amin(-1, keepdim).numpy(),
            x.argmax(-1, keepdim).numpy(), x.argmin(-1, keepdim).numpy()]


def _assert_extremes_equal(ours: list, numpys: list) -> None:
    for k, (got, want) in enumerate(zip(ours, numpys)):
        assert _same_values(got, want), k


@needs_compiler
def test_the_c_kernels_run_where_they_apply(monkeypatch):
    calls = spy_kernels(monkeypatch, "reduction")
    x = gt.randn(8, 32, 64)
    x.sum(-1), x.mean(-1, keepdim=True), x.sum((1, 2)), x.double().sum((-1, -2))
    x.mean(), x[:, 5].sum(-1), gt.randn(64, 10).mean(1)
    assert calls == ["sum_trailing_f32"] * 3 + ["sum_trailing_f64"] + ["sum_trailing_f32"] * 3
    calls.clear()
    x.max(-1), x.min(2), x.amax(-1), x.amin(-1), gt.randn(16, 5).amax(1), gt.randn(2, 3).max(1)
    gt.randn(4096, 3).argmax(-1), gt.randn(5000, 7).argmin(1), gt.randn(3).max(0)
    assert calls == ["extreme_trailing_f32"] * 9


@needs_compiler
def test_numpy_runs_where_they_do_not(monkeypatch):
    calls = spy_kernels(monkeypatch, "reduction")
    x = gt.randn(8, 32, 64)
    x.transpose(1, 2).sum(-1), x[:, :, ::2].mean(-1), x.sum(1), x.max(1), x.amin(0)
    x.half().sum(-1), x.bfloat16().amax(-1), x.to(gt.int32).sum(-1), x.int().max(-1)
    x.sum(-1, dtype=gt.float64), x.mean(-1, dtype=gt.float64), x.cdouble().sum(-1)
    x.unsqueeze(-1).sum(-1), x.unsqueeze(-1).amax(-1)         # rows of one: NumPy copies
    gt.randn(3, 0).sum(-1), gt.randn(3, 0).mean(-1)            # empty rows
    gt.randn(15, 64).amax(-1), gt.randn(4095, 8).argmax(-1)    # few rows
    x.amax((1, 2)), x.amax(), x.max(), x.argmax(), x.sum()     # more than the last dim
    assert not [c for c in calls if "trailing" in c]


@needs_compiler
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_of_every_length_give_numpys_bits(n, dtype, monkeypatch, few_rows):
    x = gt.from_numpy(_rows((37, n), dtype, seed=n))
    ours, numpys = both_paths(lambda: _sums(x, -1), monkeypatch)
    assert all(_same_bits(a, b) for a, b in zip(ours, numpys))
    ours, numpys = both_paths(lambda: _extremes(x), monkeypatch)
    _assert_extremes_equal(ours, numpys)


@needs_compiler
@pytest.mark.parametrize("shape, dims", [((3000, 5), -1), ((64, 11, 48), -1),
                                         ((6, 7, 8, 9), (2, 3)), ((4, 5, 6), (1, 2)),
                                         ((2, 3, 4, 5), (-3, -2, -1)), ((300, 1), -1),
                                         ((5, 4), (0, 1)), ((1, 1), -1), ((0, 7), -1)])
def test_trailing_dims_and_keepdim(shape, dims, monkeypatch, few_rows):
    x = gt.from_numpy(_rows(shape, np.float32, seed=len(shape)))
    for keepdim in (False, True):
        ours, numpys = both_paths(lambda: _sums(x, dims, keepdim), monkeypatch)
        assert all(_same_bits(a, b) for a, b in zip(ours, numpys))
        if x.numel():
            ours, numpys = both_paths(lambda: _extremes(x, keepdim), monkeypatch)
            _assert_extremes_equal(ours, numpys)


@needs_compiler
def test_strided_rows_take_c_where_their_leading_dims_collapse(monkeypatch, few_rows):
    """A slice that keeps each row contiguous (logits[:, -1], a column range) runs in C
    with its rows' stride; rows that are not contiguous run on NumPy; both give NumPy's."""
    base = gt.from_numpy(_rows((6, 5, 40), np.float32))
    rows = [base[:, -1], base[:, :, 3:30], base[2:4], base[1, :, 5:9], base[0, 0].expand(7, 40),
            base[:, 2:3].expand(6, 1, 40)]
    others = [base[:, 1:4], base[:, ::2], base[::2, 1:], base.expand(3, 6, 5, 40),
              base.transpose(1, 2), base[:, :, ::2]]
    calls = spy_kernels(monkeypatch, "reduction")
    for v in rows + others:
        ours, numpys = both_paths(lambda: _sums(v, -1) + _extremes(v), monkeypatch)
        assert all(_same_bits(a, b) for a, b in zip(ours[:2], numpys[:2]))
        _assert_extremes_equal(ours[2:], numpys[2:])
    assert calls.count("sum_trailing_f32") == 2 * len(rows)


@needs_compiler
def test_out_tensors_straight_through_a_buffer_or_cast(monkeypatch, few_rows):
    """Straight into a contiguous out= of the input's dtype (the output is out), through a
    buffer into a strided one, an overlapping one (the input's own column) and one of
    another dtype (a mean into float64: computed in float32 and cast, as NumPy's path)."""
    a = _rows((50, 70), np.float32, seed=3)

    def run():
        x = gt.from_numpy(a.copy())
        got = []
        for out in (gt.empty(50), gt.empty(50, 2)[:, 0], x[:, 0]):
            assert gt.sum(x, -1, out=out) is out
            got.append(out.numpy().copy())
        x = gt.from_numpy(a.copy())
        wide = gt.empty(50, dtype=gt.float64)
        gt.mean(x, -1, out=wide)
        values, indices = gt.empty(50, 1), gt.empty(50, 1, dtype=gt.int64)
        assert gt.max(x, -1, keepdim=True, out=(values, indices))[0] is values
        strided = gt.empty(50, 3)[:, 1]
        gt.amin(x, -1, out=strided)
        at = gt.empty(50, dtype=gt.int64)
        gt.argmin(x, -1, out=at)
        return got + [wide.numpy(), values.numpy(), indices.numpy(), strided.numpy(),
                      at.numpy()]
    ours, numpys = both_paths(run, monkeypatch)
    assert all(_same_values(p, q) for p, q in zip(ours, numpys))
    with np.errstate(invalid="ignore"):                    # inf + -inf
        assert _same_bits(ours[0], np.add.reduce(a, axis=-1))


@needs_compiler
@pytest.mark.parametrize("n", [1, 5, 64, 100, 1000])
def test_the_same_bits_on_any_thread_count(n, monkeypatch, few_rows):
    x = gt.from_numpy(_rows((97, n), np.float64, seed=n))
    results = []
    for threads in (1, 2, 3):
        with threaded_kernels(monkeypatch, threads):
            results.append(_sums(x, -1) + _extremes(x))
    for other in results[1:]:
        assert all(p.tobytes() == q.tobytes() for p, q in zip(results[0], other))


def _extreme_by_rule(row: np.ndarray, take_min: bool):
    """A row's extreme and its index as the C kernel defines them: the first NaN, else the
    first extreme by value, and for a zero extreme the sign of the row's last zero."""
    nans = np.flatnonzero(np.isnan(row))
    if nans.size:
        return row[nans[0]], nans[0]
    at = int(np.argmin(row) if take_min else np.argmax(row))
    if row[at] == 0:
        return row[np.flatnonzero(row == 0)[-1]], at
    return row[at], at


@needs_compiler
@pytest.mark.parametrize("n", [2, 3, 9, 40, 64, 65, 300])
def test_zero_extremes_are_the_rows_last_zero(n, monkeypatch, few_rows):
    """Where a row's max (min) is 0 held as both -0.0 and 0.0, the value is its last zero,
    as NumPy's loop gives ([0.0, -0.0] -> -0.0, [-0.0, 0.0] -> 0.0; NumPy's vector loop
    takes the zeros of a longer row in an order of its own lanes), and the index is the
    first zero's, as np.argmax gives."""
    rng = np.random.default_rng(n)
    a = np.where(rng.random((200, n)) < 0.5, -0.0, 0.0)
    a[:100] -= rng.random((100, n)) * (rng.random((100, n)) < 0.5)    # some rows below 0
    for dtype in (np.float32, np.float64):
        x = gt.from_numpy(a.astype(dtype))
        values, indices = x.max(-1)
        low, low_at = x.min(-1)
        for r, row in enumerate(x.numpy()):
            for (v, i), take_min in (((values, indices), False), ((low, low_at), True)):
                want, at = _extreme_by_rule(row, take_min)
                assert v[r].item() == want and np.signbit(v.numpy()[r]) == np.signbit(want)
                assert i[r].item() == at
    for pair in ([0.0, -0.0], [-0.0, 0.0]):
        x = gt.tensor([pair])
        assert np.signbit(x.amax(-1).numpy()) == np.signbit(np.maximum.reduce(pair))
        assert np.signbit(x.amin(-1).numpy()) == np.signbit(np.minimum.reduce(pair))


@needs_compiler
def test_nan_rows_give_their_first_nan_and_its_index(monkeypatch, few_rows):
    a = np.arange(3 * 130, dtype=np.float32).reshape(3, 130)
    a[0, [5, 90]] = np.nan
    a[1, 129] = np.nan
    a[2, [0, 64]] = [np.nan, np.inf]
    x = gt.from_numpy(a)
    for values, indices in (x.max(-1), x.min(-1)):
        assert np.isnan(values.numpy()).all() and indices.tolist() == [5, 129, 0]
    assert x.argmax(-1).tolist() == [5, 129, 0] and np.isnan(x.amin(-1).numpy()).all()


@needs_compiler
def test_empty_and_wrong_inputs_fail_as_before(monkeypatch):
    for fn in (lambda: gt.randn(3, 0).amax(-1), lambda: gt.randn(3, 0).max(-1),
               lambda: gt.randn(3, 0).argmax(-1), lambda: gt.randn(3, 4).sum(-1, out=gt.empty(
                   3, dtype=gt.int64), dtype=gt.float32)):
        errors = []
        for enabled in (True, False):
            monkeypatch.setattr(reduction.native, "ENABLED", enabled)
            with pytest.raises(Exception) as caught:
                fn()
            errors.append((type(caught.value), str(caught.value)))
        assert errors[0] == errors[1]


@needs_compiler
@settings(deadline=None, max_examples=60,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=40),
       trailing=st.integers(1, 4), keepdim=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_any_shape_gives_numpys_bits(shape, trailing, keepdim, dtype, monkeypatch, few_rows):
    dims = tuple(range(-min(trailing, len(shape)), 0))
    x = gt.from_numpy(_rows(shape, dtype, seed=sum(shape)))
    ours, numpys = both_paths(lambda: _sums(x, dims, keepdim), monkeypatch)
    assert all(_same_bits(a, b) for a, b in zip(ours, numpys))
    if shape[-1]:
        ours, numpys = both_paths(lambda: _extremes(x, keepdim), monkeypatch)
        _assert_extremes_equal(ours, numpys)


@pytest.mark.parametrize("shape", [(256, 64), (64, 11, 48), (128, 10), (7, 1000), (5000, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_ops_as_torch(shape, dtype, kernel_path):
    """Sums to the rounding of another order (ATen's vectorised sums are not pairwise), the
    extremes and their indices exactly, NaN and infinities included."""
    oracle_torch()
    a = np.random.default_rng(len(shape)).standard_normal(shape).astype(dtype)
    a.reshape(-1, shape[-1])[1, 2] = np.nan
    a.reshape(-1, shape[-1])[3, :2] = [np.inf, -np.inf]
    x = gt.from_numpy(a)
    t = to_torch(x)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for keepdim in (False, True):
        assert_same(x.sum(-1, keepdim), t.sum(-1, keepdim), rtol=rtol)
        assert_same(x.mean(-1, keepdim), t.mean(-1, keepdim), rtol=rtol)
        assert_same(x.pow(2).mean(-1, keepdim=keepdim), t.pow(2).mean(-1, keepdim=keepdim),
                    rtol=rtol)
        for ours, theirs in ((x.max(-1, keepdim), t.max(-1, keepdim)),
                             (x.min(-1, keepdim), t.min(-1, keepdim))):
            assert_same(ours[0], theirs[0], rtol=0, atol=0)
            assert_same(ours[1], theirs[1])
        assert_same(x.amax(-1, keepdim), t.amax(-1, keepdim), rtol=0, atol=0)
        assert_same(x.amin(-1, keepdim), t.amin(-1, keepdim), rtol=0, atol=0)
        assert_same(x.argmax(-1, keepdim), t.argmax(-1, keepdim))
        assert_same(x.argmin(-1, keepdim), t.argmin(-1, keepdim))
