"""The threaded paths of the CPU kernels (backends/cpu/parallel.py), forced on small tensors
by lowering the size threshold, against NumPy and PyTorch; and the thread-count API."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as GF
from glasstorch.backends.cpu import parallel
from oracle import assert_same, oracle_torch, to_torch


@pytest.fixture
def threaded(monkeypatch):
    """Every kernel takes its threaded path, split over 3 threads (uneven chunks)."""
    monkeypatch.setattr(parallel, "GRAIN", 1)
    monkeypatch.setattr(parallel, "BLOCK", 7)
    gt.set_num_threads(3)
    yield
    gt.set_num_threads(parallel._default_threads())


def _rand(*shape, dtype=gt.float32, seed=0):
    return gt.tensor(np.random.default_rng(seed).standard_normal(shape)).to(dtype)


def _layouts(shape=(6, 5)):
    """Contiguous, transposed, stepped slice, offset and broadcast (stride 0) inputs."""
    base = _rand(shape[0] * 2, shape[1] * 2, seed=1)
    return {"contiguous": _rand(*shape, seed=2),
            "transposed": _rand(shape[1], shape[0], seed=3).t(),
            "stepped": base[::2, 1::2],
            "broadcast": _rand(1, shape[1], seed=4).expand(*shape)}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "broadcast"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "lt", "exp"])
def test_pointwise_threaded_layouts(threaded, layout, op):
    torch = oracle_torch()
    a = _layouts()[layout]
    b = _rand(6, 5, seed=5)
    fn = getattr(gt, op)
    tfn = getattr(torch, op)
    got = fn(a) if op == "exp" else fn(a, b)
    want = tfn(to_torch(a)) if op == "exp" else tfn(to_torch(a), to_torch(b))
    assert_same(got, want)
    if op != "exp":                             # broadcast operand on the right, too
        assert_same(fn(b, a[:1]), tfn(to_torch(b), to_torch(a[:1])))


def test_pointwise_threaded_casting_out_and_inplace(threaded):
    torch = oracle_torch()
    a = _rand(6, 5)
    i = gt.arange(30).reshape(6, 5)
    assert_same(a + i, to_torch(a) + to_torch(i))                       # int promoted
    h = _rand(6, 5, dtype=gt.float16)
    assert_same(h * 3.5, to_torch(h) * 3.5)                             # float16 in float32
    assert_same(gt.add(a, i, alpha=2), torch.add(to_torch(a), to_torch(i), alpha=2))
    out = gt.empty(6, 5, dtype=gt.float64)
    gt.mul(a, a, out=out)
    assert_same(out, torch.mul(to_torch(a), to_torch(a)).double())
    base = _rand(8, 10)
    tbase = to_torch(base)
    view = base[1::2, ::3]                                              # non-contiguous view
    view.add_(1.5)
    view.mul_(view)
    tview = tbase[1::2, ::3]
    tview.add_(1.5)
    tview.mul_(tview)
    assert_same(base, tbase)
    x = gt.arange(12.0)
    with pytest.raises(RuntimeError, match="single memory location"):   # as PyTorch
        x[1:].add_(x[:-1])                      # partly overlapping operands


def test_pointwise_threaded_matches_numpy_on_shapes(threaded):
    for shape in [(7,), (1, 9), (2, 1, 3), (1, 1, 5)]:
        a, b = _rand(*shape), _rand(*shape, seed=9)
        np.testing.assert_array_equal((a * b).numpy(), a.numpy() * b.numpy())


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "broadcast"])
def test_reductions_threaded(threaded, dim, layout):
    torch = oracle_torch()
    a = _layouts()[layout]
    t = to_torch(a)
    if dim is None:
        assert_same(a.sum(), t.sum(), rtol=1e-5)
        assert_same(a.mean(), t.mean(), rtol=1e-5)
        assert_same(a.max(), t.max())
        assert_same(a.amin(), t.amin())
        return
    assert_same(a.sum(dim), t.sum(dim), rtol=1e-5)
    assert_same(a.mean(dim, keepdim=True), t.mean(dim, keepdim=True), rtol=1e-5)
    assert_same(a.amax(dim), t.amax(dim))
    assert_same(a.sum(dim, dtype=gt.float64), t.sum(dim, dtype=torch.float64))


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("n", [512 * 9, 512 * 9 + 37, 300])
def test_float32_totals_by_rows_as_accurate_as_pairwise(monkeypatch, threads, n):
    """A large float32 total (einsum rows, float64 above them) errs no more than NumPy's
    pairwise sum, on one thread and split; inf and NaN come through."""
    monkeypatch.setattr(parallel, "GRAIN", 1)
    gt.set_num_threads(threads)
    try:
        rng = np.random.default_rng(n)
        for x in (rng.random(n, dtype=np.float32),
                  rng.lognormal(0, 3, n).astype(np.float32),
                  rng.standard_normal((n // 3, 3)).astype(np.float32)):
            exact = x.astype(np.float64).sum()
            scale = np.abs(x.astype(np.float64)).sum()
            ours = gt.from_numpy(x).sum()
            assert ours.dtype is gt.float32
            pairwise_error = abs(float(np.add.reduce(x.reshape(-1))) - exact)
            assert abs(float(ours) - exact) <= pairwise_error + 2 ** -24 * scale
            assert float(gt.from_numpy(x).mean()) == pytest.approx(exact / x.size, rel=1e-6)
        x[5] = np.inf
        assert float(gt.from_numpy(x).sum()) == np.inf
        x[7] = np.nan
        assert np.isnan(float(gt.from_numpy(x).sum()))
    finally:
        gt.set_num_threads(parallel._default_threads())


def test_reductions_threaded_nan_and_ints(threaded):
    oracle_torch()
    a = _rand(6, 5)
    a[4, 3] = float("nan")
    assert_same(a.amax(), to_torch(a).amax(), equal_nan=True)
    assert_same(a.amax(1), to_torch(a).amax(1), equal_nan=True)
    i = gt.arange(60, dtype=gt.int32).reshape(6, 10)
    assert_same(i.sum(), to_torch(i).sum())
    assert_same(i.prod(1), to_torch(i).prod(1))


@pytest.mark.parametrize("dtype", [gt.float32, gt.float64, gt.float16, gt.bfloat16])
@pytest.mark.parametrize("shape,dim", [((6, 9), -1), ((6, 9), 0), ((3, 4, 5), 1),
                                       ((2, 40, 3), 1), ((5,), 0), ((), 0), ((0, 3), 1)])
def test_softmax_threaded(threaded, dtype, shape, dim):
    torch = oracle_torch()
    x = _rand(*shape, dtype=dtype) * 3
    tx = to_torch(x)
    tol = 1e-6 if dtype in (gt.float32, gt.float64) else 1e-2
    assert_same(gt.softmax(x, dim), torch.softmax(tx, dim), rtol=tol, atol=tol)
    assert_same(gt.log_softmax(x, dim), torch.log_softmax(tx, dim), rtol=tol, atol=tol)
    g = _rand(*shape, dtype=dtype, seed=7)
    y, ly = torch.softmax(tx, dim), torch.log_softmax(tx, dim)
    assert_same(gt._softmax_backward_data(g, gt.softmax(x, dim), dim, dtype),
                torch._softmax_backward_data(to_torch(g), y, dim, y.dtype), rtol=tol, atol=tol)
    assert_same(gt._log_softmax_backward_data(g, gt.log_softmax(x, dim), dim, dtype),
                torch._log_softmax_backward_data(to_torch(g), ly, dim, ly.dtype),
                rtol=tol, atol=tol)


def test_softmax_blocks_stay_inside_their_threads_chunk(threaded):
    """Each row reaches the softmax part once: the parts work in place (`z -= log(sum)`),
    so a block running past its chunk's end into the next thread's rows took the sum off
    twice there when the threads interleaved (a flaky wrong loss, ~1% of large calls)."""
    from glasstorch.backends.cpu import loss
    rows = 11                    # 3 threads: chunks of 3, 4 and 4 rows, blocks of 3 rows
    x = gt.arange(rows, dtype=gt.float32).reshape(rows, 1).expand(rows, 2).contiguous()
    seen = []
    loss._softmax_into(gt.empty(rows, 2), (x,), 1, lambda a, o: seen.extend(a[:, 0].tolist()))
    assert sorted(seen) == list(range(rows))


def test_softmax_threaded_non_contiguous_inf_and_out(threaded):
    torch = oracle_torch()
    x = _rand(9, 6).t()[:, ::2]
    x[1, :] = float("-inf")
    x[2, 0] = float("inf")
    tx = to_torch(x)
    # Against the formula in float64 IEEE arithmetic, not torch's values: at ±inf its
    # vectorised exp differs by CPU. A slice holding +inf, or only -inf, is all nan.
    data = x.numpy().astype(np.float64)

    def log_softmax(dim):
        with np.errstate(invalid="ignore"):
            shifted = data - data.max(dim, keepdims=True)
            return shifted - np.log(np.exp(shifted).sum(dim, keepdims=True))

    for dim in (0, 1):
        assert_same(gt.softmax(x, dim), np.exp(log_softmax(dim)), rtol=1e-6, atol=1e-7)
        assert_same(gt.log_softmax(x, dim), log_softmax(dim), rtol=1e-6, atol=1e-7)
        assert gt.softmax(x, dim).stride() == torch.softmax(tx, dim).stride()
    out = gt.empty(5, 6).t()                     # a non-contiguous out= (torch writes it
    gt._softmax(x, 1, False, out=out)           # as if contiguous; values by position here)
    np.testing.assert_allclose(out.numpy(), np.exp(log_softmax(1)), rtol=1e-6, atol=1e-7)


def test_softmax_backward_data_gradients_and_errors():
    torch = oracle_torch()
    from glasstorch.autograd import gradgradcheck
    x = _rand(3, 4, 5, dtype=gt.float64).requires_grad_()
    for fn in (lambda a: gt.softmax(a, 1), lambda a: gt.log_softmax(a, -1)):
        assert gradgradcheck(fn, (x,))
    tx = to_torch(x.detach()).requires_grad_()
    (gx,) = gt.autograd.grad(gt.softmax(x, 1), x, gt.ones(3, 4, 5, dtype=gt.float64),
                             create_graph=True)
    (tgx,) = torch.autograd.grad(torch.softmax(tx, 1), tx, torch.ones(3, 4, 5,
                                 dtype=torch.float64), create_graph=True)
    assert gx.grad_fn.name() == tgx.grad_fn.name() == "SoftmaxBackwardDataBackward0"
    (gx,) = gt.autograd.grad(gt.log_softmax(x, 1), x, create_graph=True,
                             grad_outputs=gt.ones(3, 4, 5, dtype=gt.float64))
    assert gx.grad_fn.name() == "LogSoftmaxBackwardDataBackward0"
    g, y = gt.ones(2, 3), gt.ones(2, 3, dtype=gt.float64)
    with pytest.raises(RuntimeError) as ge:
        gt._softmax_backward_data(g, y, 1, gt.float32)
    with pytest.raises(RuntimeError) as te:
        torch._softmax_backward_data(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.float64),
                                     1, torch.float32)
    assert str(ge.value) == str(te.value)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Half"):
        gt._softmax_backward_data(g, gt.ones(2, 3), 1, gt.float16)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [gt.float32, gt.float64, gt.bfloat16])
def test_gelu_threaded(threaded, approximate, dtype):
    torch = oracle_torch()
    x = gt.linspace(-9, 9, 301).to(dtype).reshape(7, 43)[:, ::2]        # strided
    tol = {gt.float32: 1e-6, gt.float64: 1e-12, gt.bfloat16: 1e-2}[dtype]
    want = torch.nn.functional.gelu(to_torch(x), approximate=approximate)
    assert_same(GF.gelu(x, approximate=approximate), want, rtol=tol, atol=tol)
    assert_same(GF.gelu(gt.tensor(-5.0), approximate=approximate),
                torch.nn.functional.gelu(torch.tensor(-5.0), approximate=approximate))
    assert_same(GF.relu(x), torch.relu(to_torch(x)))


def test_parallel_for_chunks_and_errors(threaded):
    seen = []
    parallel.parallel_for(10, lambda s, e: seen.append((s, e)))
    assert sorted(seen) == [(0, 3), (3, 6), (6, 10)]

    def boom(start, stop):
        if start > 0:
            raise ValueError(f"chunk {start}")
    with pytest.raises(ValueError, match="chunk"):
        parallel.parallel_for(9, boom)
    main, nested = threading.get_ident(), []

    def record(start, stop):
        me, inner = threading.get_ident(), []
        parallel.parallel_for(5, lambda s, e: inner.append((threading.get_ident(), s, e)))
        if me != main:
            nested.append(inner == [(me, 0, 5)])
        else:
            time.sleep(0.01)                         # so that the workers start theirs
    for _ in range(20):
        parallel.parallel_for(3, record)             # a worker's nested call runs inline
    assert nested and all(nested)


def test_parallel_for_does_not_wait_for_busy_workers(threaded):
    """Chunks no worker has started run on the caller: a worker waiting for a core (here:
    held by other work) does not hold the call up."""
    release = threading.Event()
    pool = parallel._get_pool()
    blockers = [pool.submit(release.wait, 10) for _ in range(gt.get_num_threads())]
    try:
        main, seen = threading.get_ident(), []
        start = time.perf_counter()
        parallel.parallel_for(9, lambda s, e: seen.append((threading.get_ident(), s, e)))
        assert time.perf_counter() - start < 5
        assert sorted(seen) == [(main, 0, 3), (main, 3, 6), (main, 6, 9)]
    finally:
        release.set()
        for b in blockers:
            b.result()


def test_one_thread_runs_inline(threaded):
    gt.set_num_threads(1)
    assert gt.get_num_threads() == 1
    idents = set()
    parallel.parallel_for(100, lambda s, e: idents.add((threading.get_ident(), s, e)))
    assert idents == {(threading.get_ident(), 0, 100)}
    a = _rand(6, 5)
    np.testing.assert_array_equal((a + a).numpy(), a.numpy() * 2)


def test_workers_keep_the_callers_error_state(threaded):
    a = gt.tensor(np.full((6, 5), 1e30, np.float32))
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            parallel.ufunc(np.multiply, (a.numpy(), a.numpy()), np.empty((6, 5), np.float32))
    assert np.isinf((a * a).numpy()).all()               # kernels stay silent


@pytest.mark.parametrize("value", [0, -2, 1.5, "a", True, None])
def test_thread_count_errors_match_torch(value):
    torch = oracle_torch()
    for name in ("set_num_threads",):
        with pytest.raises(RuntimeError) as te:
            getattr(torch, name)(value)
        with pytest.raises(RuntimeError) as ge:
            getattr(gt, name)(value)
        assert str(ge.value) == str(te.value)


def test_interop_threads():
    assert gt.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive"):
        gt.set_num_interop_threads(0)


def test_set_num_threads_sets_numpys_blas_threads_too():
    """As torch.set_num_threads sets MKL's: a one-thread comparison is one thread in BLAS."""
    from glasstorch.backends.cpu.blas_threads import get_blas_threads
    before_blas, before = get_blas_threads(), gt.get_num_threads()
    if before_blas is None:
        pytest.skip("NumPy's BLAS library was not found among the loaded libraries")
    try:
        gt.set_num_threads(1)
        assert get_blas_threads() == 1
    finally:
        gt.set_num_threads(before)
    assert get_blas_threads() == before


def test_parallel_tasks_in_order_and_first_error():
    before = gt.get_num_threads()
    gt.set_num_threads(2)
    try:
        assert parallel.parallel_tasks(9, lambda i: i * i, parallel.GRAIN) == [
            i * i for i in range(9)]

        def fail(i):
            if i == 3:
                raise ValueError("task 3")
            return i
        with pytest.raises(ValueError, match="task 3"):
            parallel.parallel_tasks(6, fail, parallel.GRAIN)
    finally:
        gt.set_num_threads(before)


def test_parallel_tasks_caller_runs_what_a_busy_worker_has_not_taken():
    """The pool's one worker is held: the caller runs every task and returns at once."""
    before = gt.get_num_threads()
    gt.set_num_threads(2)
    release = threading.Event()
    try:
        held = parallel._get_pool().submit(release.wait, 10)
        ran_on = []
        parallel.parallel_tasks(4, lambda i: ran_on.append(threading.get_ident()),
                                parallel.GRAIN)
        assert ran_on == [threading.get_ident()] * 4
    finally:
        release.set()
        held.result()
        gt.set_num_threads(before)


def test_parallel_tasks_never_split_again():
    """Every task, the caller's included, runs as a worker's (its products and C kernels on
    one thread); the caller is itself again afterwards."""
    before = gt.get_num_threads()
    gt.set_num_threads(2)
    try:
        assert not parallel.in_worker()
        seen = parallel.parallel_tasks(8, lambda i: parallel.in_worker(), parallel.GRAIN)
        assert seen == [True] * 8
        assert not parallel.in_worker()
    finally:
        gt.set_num_threads(before)



def test_cheap_work_splits_only_when_larger(monkeypatch):
    """One-pass arithmetic splits from ARITHMETIC_FACTOR * GRAIN elements, a reduction from
    REDUCTION_FACTOR * GRAIN, a costlier ufunc (exp) from GRAIN; the results are NumPy's."""
    from glasstorch.backends.cpu.reduction import reduce
    monkeypatch.setattr(parallel, "GRAIN", 64)
    before = gt.get_num_threads()
    gt.set_num_threads(2)
    splits = []
    real = parallel.parallel_for

    def spy(n, fn, grain=1, factor=1):
        chunks = real(n, fn, grain, factor)
        splits.append(len(chunks))
        return chunks
    monkeypatch.setattr(parallel, "parallel_for", spy)
    rng = np.random.default_rng(5)
    try:
        for size in (64, 64 * parallel.REDUCTION_FACTOR, 64 * parallel.ARITHMETIC_FACTOR):
            a, b = (rng.standard_normal((size // 8, 8)).astype(np.float32) for _ in range(2))
            out = np.empty_like(a)
            cases = {"exp": (1, lambda: parallel.ufunc(np.exp, (a,), out), np.exp(a)),
                     "add": (parallel.ARITHMETIC_FACTOR,
                             lambda: parallel.ufunc(np.add, (a, b), out), a + b),
                     "sum": (parallel.REDUCTION_FACTOR,
                             lambda: out[:1].__setitem__(..., reduce(np.add, a, (0,))),
                             a.sum(0, keepdims=True))}
            for name, (factor, run, want) in cases.items():
                splits.clear()
                run()
                got = out[:1] if name == "sum" else out
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
                assert max(splits, default=1) == (2 if size >= 64 * factor else 1), \
                    (name, size, splits)
    finally:
        gt.set_num_threads(before)
