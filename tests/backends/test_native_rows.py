"""The row kernels of backends/cpu/native (softmax.c: softmax, log_softmax and their
gradients; normalization.c: native_layer_norm and its backward; embedding.c:
embedding_dense_backward) against the NumPy formulas
they replace (each operator's tests against PyTorch run on both paths through the
`kernel_path` fixture): that they are used where they apply and only there, agree to a few
ulps, handle empty, zero-size and non-finite rows alike, and give the same bits on any
number of threads."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import loss, native
from native_paths import both_paths, needs_compiler, spy_kernels, threaded_kernels

aten = gt.ops.aten


@pytest.fixture(autouse=True)
def short_rows_too(monkeypatch):
    """Rows of every length take the C softmax here (by default rows under 16 stay with
    NumPy, which is faster there), so that the kernels' partial blocks are tested."""
    monkeypatch.setattr(loss, "_NATIVE_MIN_ROW", 0)


@needs_compiler
def test_many_short_rows_stay_with_numpy_by_default(monkeypatch):
    """Rows shorter than 16 go to C only when there are few of them (a classifier's
    logits); many (minGPT's attention) stay with NumPy, which works across rows."""
    monkeypatch.undo()                                  # the autouse fixture's threshold
    calls = spy_kernels(monkeypatch)
    gt.softmax(gt.randn(2112, 11), -1)
    assert calls == []
    gt.softmax(gt.randn(64, 10), -1)
    gt.softmax(gt.randn(2112, 16), -1)
    assert calls == ["softmax_f32", "softmax_f32"]


@pytest.fixture
def calls(monkeypatch):
    """The names of the native functions handed out while a test runs (native kernels on)."""
    return spy_kernels(monkeypatch)


def _rows(shape, dtype, seed=0, scale=4.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _softmax_family(x: np.ndarray, g: np.ndarray, dim=-1):
    """softmax, log_softmax and their gradients (for upstream g) as NumPy arrays."""
    t, gt_ = gt.from_numpy(x), gt.from_numpy(g)
    y, ly = aten._softmax(t, dim, False), aten._log_softmax(t, dim, False)
    return [a.numpy() for a in (y, ly, aten._softmax_backward_data(gt_, y, dim, y.dtype),
                                aten._log_softmax_backward_data(gt_, ly, dim, ly.dtype))]


def _layer_norm(x, w, b, g, normalized, mask=(True, True, True)):
    """native_layer_norm's outputs and native_layer_norm_backward's, as NumPy arrays (None
    where absent)."""
    t, gw, gb = (None if a is None else gt.from_numpy(a) for a in (x, w, b))
    out, mean, rstd = aten.native_layer_norm(t, normalized, gw, gb, 1e-5)
    grads = aten.native_layer_norm_backward(gt.from_numpy(g), t, normalized, mean, rstd, gw,
                                            gb, list(mask))
    return [None if a is None else a.numpy() for a in (out, mean, rstd, *grads)]


def assert_close(got, want, dtype, ulps=8):
    """Equal NaN patterns and values within a few ulps of the row's scale (the sums round
    apart: pairwise against einsum's or BLAS's order)."""
    for a, b in zip(got, want):
        if a is None or b is None:
            assert a is None and b is None
            continue
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        assert np.array_equal(np.isnan(a), np.isnan(b))
        eps = np.finfo(dtype).eps
        scale = max(1.0, float(np.nanmax(np.abs(b), initial=0)))
        np.testing.assert_allclose(a, b, rtol=ulps * eps, atol=ulps * eps * scale)


@needs_compiler
def test_the_c_kernels_run_where_they_apply(calls):
    x = gt.randn(8, 5)
    g = gt.randn(8, 5)
    y = aten._softmax(x, -1, False)
    aten._log_softmax(x.double(), 1, False)
    aten._softmax_backward_data(g, y, -1, gt.float32)
    aten._log_softmax_backward_data(g.double(), y.double(), 1, gt.float64)
    aten._softmax(x.reshape(8, 5, 1), 1, False)        # only dims of size 1 after `dim`
    out, mean, rstd = aten.native_layer_norm(x, [5], gt.ones(5), None, 1e-5)
    aten.native_layer_norm_backward(g, x, [5], mean, rstd, gt.ones(5), None, [True] * 3)
    assert calls == ["softmax_f32", "softmax_f64", "softmax_backward_f32",
                     "softmax_backward_f64", "softmax_f32", "layer_norm_f32",
                     "layer_norm_backward_f32"]


@needs_compiler
def test_layouts_and_dtypes_the_kernels_do_not_take_fall_back(calls):
    x = gt.randn(6, 5)
    aten._softmax(x, 0, False)                          # not the last dim
    aten._log_softmax(x.t(), 1, False)                  # not C-contiguous
    aten._softmax(x[:, ::2], 1, False)
    aten._softmax(x.half(), 1, False)                   # float16: NumPy in float32
    aten._softmax_backward_data(x.t(), x.t().contiguous(), 1, gt.float32)
    aten._log_softmax(gt.ones(0, 5), 1, False)          # zero-size
    aten.native_layer_norm(x.t(), [6], None, None, 1e-5)
    aten.native_layer_norm(x.bfloat16(), [5], None, None, 1e-5)
    _, mean, rstd = aten.native_layer_norm(x.half(), [5], gt.ones(5), None, 1e-5)
    aten.native_layer_norm(gt.ones(3, 0), [0], None, None, 1e-5)
    aten.native_layer_norm_backward(x.t().contiguous().t(), x, [5], mean.float(),
                                    rstd.float(), None, None, [True] * 3)
    assert calls == []


@needs_compiler
def test_an_output_overlapping_its_input_falls_back(calls, monkeypatch):
    x = _rows((7, 33), np.float32)
    monkeypatch.setattr(native, "ENABLED", False)
    want = aten._log_softmax(gt.from_numpy(x), -1, False).numpy()
    monkeypatch.setattr(native, "ENABLED", True)
    calls.clear()
    y = gt.from_numpy(x.copy())
    aten._log_softmax.out(y, -1, False, out=y)
    assert calls == []
    np.testing.assert_array_equal(y.numpy(), want)


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [1, 3, 16, 65, 128, 1025])
def test_softmax_agrees_with_the_numpy_formulas(dtype, cols, monkeypatch):
    """The same arithmetic in the same order; the row sums and exp (libmvec's against
    NumPy's) may round a few ulps apart."""
    x, g = _rows((37, cols), dtype), _rows((37, cols), dtype, seed=1, scale=1.0)
    c, py = both_paths(lambda: _softmax_family(x, g), monkeypatch)
    assert_close(c, py, dtype)


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,normalized", [((37, 1), [1]), ((37, 3), [3]),
                                              ((4, 9, 65), [65]), ((300, 128), [128]),
                                              ((3, 4, 300), [4, 300])])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_agrees_with_the_numpy_formulas(dtype, shape, normalized, affine,
                                                   monkeypatch):
    x = _rows(shape, dtype, scale=3.0) + 2
    g = _rows(shape, dtype, seed=1, scale=1.0)
    w, b = (_rows(normalized, dtype, seed=s) if on else None for s, on in zip((2, 3), affine))
    c, py = both_paths(lambda: _layer_norm(x, w, b, g, normalized), monkeypatch)
    assert_close(c, py, dtype, ulps=32)


@needs_compiler
@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False),
                                  (False, False, True), (False, True, True)])
def test_layer_norm_backward_gives_what_the_mask_asks_for(mask, monkeypatch):
    x, g = _rows((130, 24), np.float64), _rows((130, 24), np.float64, seed=1)
    w, b = _rows(24, np.float64, seed=2), _rows(24, np.float64, seed=3)
    c, py = both_paths(lambda: _layer_norm(x, w, b, g, [24], mask), monkeypatch)
    assert [a is None for a in c[3:]] == [not m for m in mask]
    assert_close(c, py, np.float64, ulps=32)


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_rows_match_the_numpy_formulas(dtype, monkeypatch):
    """A row with NaN, +inf, -inf or only -inf gives the NumPy path's NaN or values."""
    x = _rows((6, 20), dtype)
    x[0, 3] = np.nan
    x[1, 7] = np.inf
    x[2, 0] = -np.inf
    x[3] = -np.inf
    x[4, :2] = np.inf
    g = _rows((6, 20), dtype, seed=1)
    g[5, 4] = np.nan
    with np.errstate(all="ignore"):
        c, py = both_paths(lambda: _softmax_family(x, g), monkeypatch)
        assert_close(c, py, dtype)
        c, py = both_paths(lambda: _layer_norm(x, None, None, g, [20]), monkeypatch)
        assert_close(c, py, dtype)


@needs_compiler
def test_results_do_not_depend_on_threads(monkeypatch):
    monkeypatch.setattr(native, "ENABLED", True)
    x, g = _rows((1000, 65), np.float32), _rows((1000, 65), np.float32, seed=1)
    w, b = _rows(65, np.float32, seed=2), _rows(65, np.float32, seed=3)
    serial = _softmax_family(x, g) + _layer_norm(x, w, b, g, [65])
    with threaded_kernels(monkeypatch):
        assert native.threads(x.size) == 3
        threaded = _softmax_family(x, g) + _layer_norm(x, w, b, g, [65])
    for a, b in zip(threaded, serial):
        np.testing.assert_array_equal(a, b)


@needs_compiler
def test_a_row_does_not_depend_on_the_rows_around_it(monkeypatch):
    monkeypatch.setattr(native, "ENABLED", True)
    x, g = _rows((9, 70), np.float64), _rows((9, 70), np.float64, seed=1)
    whole = _softmax_family(x, g)
    for i in (0, 4, 8):
        for a, b in zip(_softmax_family(x[i:i + 1].copy(), g[i:i + 1].copy()), whole):
            np.testing.assert_array_equal(a, b[i:i + 1])


@needs_compiler
def test_float64_gradcheck_through_the_kernels(monkeypatch):
    monkeypatch.setattr(native, "ENABLED", True)
    x = gt.from_numpy(_rows((5, 7), np.float64, scale=1.0)).requires_grad_()
    w = gt.from_numpy(_rows(7, np.float64, seed=2)).requires_grad_()
    b = gt.from_numpy(_rows(7, np.float64, seed=3)).requires_grad_()
    assert gt.autograd.gradcheck(lambda a: gt.softmax(a, -1), (x,))
    assert gt.autograd.gradcheck(lambda a: gt.log_softmax(a, 1), (x,))
    assert gt.autograd.gradcheck(lambda a, w, b: gt.layer_norm(a, (7,), w, b), (x, w, b))


def _embedding_grad(g, idx, num_weights, padding_idx=-1, scale=False):
    return aten.embedding_dense_backward(gt.from_numpy(g), gt.from_numpy(idx), num_weights,
                                         padding_idx, scale).numpy()


@needs_compiler
def test_embedding_backward_runs_the_c_kernel_where_it_applies(calls):
    g, idx = gt.randn(4, 6, 8), gt.from_numpy(np.arange(24).reshape(4, 6) % 5)
    aten.embedding_dense_backward(g, idx, 5, -1, False)
    aten.embedding_dense_backward(g.double(), idx.int(), 5, 2, False)
    assert calls == ["embedding_backward_f32", "embedding_backward_f64"]
    calls.clear()
    aten.embedding_dense_backward(g, idx, 5, -1, True)             # scale_grad_by_freq
    aten.embedding_dense_backward(g.bfloat16(), idx, 5, -1, False)
    aten.embedding_dense_backward(g.transpose(0, 1), idx.t(), 5, -1, False)
    aten.embedding_dense_backward(g[:, :0], idx[:, :0], 5, -1, False)
    assert calls == []


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding_idx", [-1, 0, 3])
def test_embedding_backward_agrees_with_the_numpy_path(dtype, padding_idx, monkeypatch):
    """Repeated, distinct and unused indices, a padding row and a non-finite gradient
    row; the sums round apart from the NumPy path's one-hot product or sort by a few ulps
    of the summed magnitudes."""
    rng = np.random.default_rng(3)
    g = _rows((600, 33), dtype, scale=1.0)
    g[7, 4] = np.inf
    g[9, 1] = np.nan
    for idx, n in ((rng.integers(0, 9, 600), 11), (rng.permutation(600), 600),
                   (rng.integers(0, 65, (20, 30)), 65)):
        go = g[:idx.size].reshape(idx.shape + (33,))
        c, py = both_paths(lambda: _embedding_grad(go, idx, n, padding_idx), monkeypatch)
        assert np.array_equal(np.isnan(c), np.isnan(py))
        scale = _embedding_grad(np.abs(np.nan_to_num(go, posinf=0)), idx, n, padding_idx)
        tol = 16 * np.finfo(dtype).eps * (scale + 1)
        with np.errstate(invalid="ignore"):              # inf - inf
            assert (np.isnan(c) | (np.abs(c - py) <= tol) | (c == py)).all()
        if padding_idx >= 0:
            assert (c[padding_idx] == 0).all()


@needs_compiler
def test_embedding_backward_leaves_indices_out_of_range_to_the_numpy_path(monkeypatch, calls):
    """The C kernel checks the indices first and writes nothing when one is out of range:
    the NumPy path then reports it (or, for -1 below the padding check, gives its sums)."""
    g = gt.randn(3, 4)
    for bad in ([0, 5, 1], [0, -1, 1], [0, -2, 1]):
        outcomes = []
        for enabled in (True, False):
            monkeypatch.setattr(native, "ENABLED", enabled)
            try:
                outcomes.append(aten.embedding_dense_backward(g, gt.tensor(bad), 5, -1,
                                                              False).numpy())
            except IndexError as e:
                outcomes.append(str(e))
        assert type(outcomes[0]) is type(outcomes[1])
        assert np.array_equal(*outcomes) if isinstance(outcomes[0], np.ndarray) else \
            outcomes[0] == outcomes[1]
    assert calls == ["embedding_backward_f32"] * 3       # it checked, wrote nothing


@needs_compiler
def test_embedding_forward_runs_the_c_kernel_and_copies_the_rows(calls, monkeypatch):
    """int64 indices into a row-major weight of any dtype: the C kernel's row copies are the
    NumPy path's np.take exactly; an index out of range raises PyTorch's error on both
    paths; int32 indices or a transposed weight take the NumPy path."""
    rng = np.random.default_rng(5)
    idx = gt.from_numpy(rng.integers(0, 9, (4, 6)))
    for dtype in (gt.float32, gt.float64, gt.float16, gt.int64, gt.bool):
        w = gt.from_numpy(rng.standard_normal((9, 5)) * 3).to(dtype)
        for index in (idx, idx[:, ::2], idx[1, 2]):
            c, py = both_paths(lambda: aten.embedding(w, index).numpy(), monkeypatch)
            assert c.shape == tuple(index.shape) + (5,) and np.array_equal(c, py)
        for bad in ([0, 9], [-1, 2]):
            for enabled in (True, False):
                monkeypatch.setattr(native, "ENABLED", enabled)
                with pytest.raises(IndexError, match="^index out of range in self$"):
                    aten.embedding(w, gt.tensor(bad))
    one_row = gt.randn(5).expand(1, 5)                # stride 0 along its one row
    c, py = both_paths(lambda: aten.embedding(one_row, gt.zeros(7, dtype=gt.int64)).numpy(),
                       monkeypatch)
    assert np.array_equal(c, py) and np.array_equal(c, np.repeat(py[:1], 7, 0))
    assert set(calls) == {"embedding_forward"}
    calls.clear()
    monkeypatch.setattr(native, "ENABLED", True)
    aten.embedding(w, idx.int())
    aten.embedding(gt.randn(5, 9).t(), idx)
    assert calls == []


@needs_compiler
def test_embedding_backward_does_not_depend_on_threads(monkeypatch):
    monkeypatch.setattr(native, "ENABLED", True)
    g = _rows((5000, 70), np.float32)
    idx = np.random.default_rng(4).integers(0, 40, 5000)
    serial = _embedding_grad(g, idx, 40)
    with threaded_kernels(monkeypatch):
        assert native.threads(g.size) == 3
        threaded = _embedding_grad(g, idx, 40)
    np.testing.assert_array_equal(threaded, serial)
