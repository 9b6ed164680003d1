"""The shared kernels of reductions, indexing, scatters, sorting, convolution, pooling,
resampling, linear algebra and sampling on GPU tensors, where the operator database walk
(test_op_db_cuda.py) does not reach: duplicate indices, dtypes CuPy's scatters lack, index
tensors on the CPU, empty reductions, bfloat16 rounding that PyTorch does per step, the
random stream a sampler draws from. The CPU result of the same call is the reference
(itself tested against PyTorch), and against PyTorch where the GPU computes differently.

In simulation the `real_cupy_ufuncs` fixture narrows the simulated CuPy to what real CuPy
14.2 does with ufunc methods (cupy/_core/_kernel.pyx, _routines_indexing.pyx): `reduce` and
`accumulate` for add and multiply only (no `initial`), `reduceat` for add, `at` for add,
subtract, maximum, minimum and the bitwise ops in a few dtypes, and no 0-d NumPy array as
an operand, so a kernel relying on more fails here as it would on a GPU.
"""
import numpy as np
import pytest

import glasstorch as gt

_AT_DTYPES = {"add": "ilqILQefd", "subtract": "iI", "maximum": "ilqILQfd", "minimum": "ilqILQfd",
              "bitwise_and": "?bhilqBHILQ", "bitwise_or": "?bhilqBHILQ",
              "bitwise_xor": "?bhilqBHILQ"}
_REDUCING = {"add": ("reduce", "accumulate", "reduceat"), "multiply": ("reduce", "accumulate")}
_COMPARE = {"greater", "greater_equal", "less", "less_equal", "equal", "not_equal"}


@pytest.fixture(autouse=True)
def real_cupy_ufuncs(cuda_backend, monkeypatch):
    if cuda_backend != "simulated":
        return
    import simulated_cupy as sim
    methods = {name: [m for m in ms if m == "outer" or m in _REDUCING.get(name, ())
                      or (m == "at" and name in _AT_DTYPES)]
               for name, ms in sim._UFUNC_METHODS.items()}
    monkeypatch.setattr(sim, "_UFUNC_METHODS", methods)
    apply = sim._apply_ufunc

    def strict(function, method, inputs, kwargs):
        name = function.__name__
        if method in ("reduce", "accumulate") and set(kwargs) - {"axis", "dtype", "out",
                                                                 "keepdims"}:
            raise TypeError(f"CuPy's ufunc.{method} takes no {sorted(kwargs)}")
        if method == "at" and inputs[0].dtype.char not in _AT_DTYPES[name]:
            raise TypeError(f"cupy.{name}.at does not support {inputs[0].dtype}")
        for i, x in enumerate(inputs):
            if isinstance(x, np.ndarray) and not (name in _COMPARE or method == "at" and i):
                raise TypeError("Unsupported type <class 'numpy.ndarray'>")
        return apply(function, method, inputs, kwargs)
    monkeypatch.setattr(sim, "_apply_ufunc", strict)


def _gpu(t):
    return t.to("cuda")


def _same(got, expected, tol=0.0):
    assert got.device.type == "cuda"
    assert got.dtype is expected.dtype and tuple(got.shape) == tuple(expected.shape)
    g, e = got.cpu().numpy(), expected.numpy()
    if tol:
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(g, e)


def _values(shape, dtype, seed=0):
    a = np.random.default_rng(seed).normal(size=shape) * 3
    return gt.tensor(a).to(dtype)


# ---- reductions and scans ------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x: x.amax((0, 2)), lambda x: x.amin(1, keepdim=True), lambda x: x.max(),
    lambda x: x.max(1).values, lambda x: x.min(2).indices, lambda x: gt.aminmax(x, dim=0).max,
    lambda x: (x > 0).all(1), lambda x: (x > 0).any((0, 1)), lambda x: x.norm(float("inf"), 1),
    lambda x: x.norm(-float("inf")), lambda x: x.logsumexp((0, 2)), lambda x: x.cumsum(1),
    lambda x: x.cumprod(0), lambda x: x.logcumsumexp(2), lambda x: x.var(1)],
    ids=["amax", "amin", "max", "max_dim", "min_dim_indices", "aminmax", "all", "any",
         "norm_inf", "norm_neg_inf", "logsumexp", "cumsum", "cumprod", "logcumsumexp", "var"])
def test_reductions_and_scans_match_the_cpu(fn):
    x = _values((3, 4, 5), gt.float32)
    x[0, 1, 2] = float("nan")
    _same(fn(_gpu(x)), fn(x), 1e-5)


def test_logcumsumexp_of_complex_and_of_empty_inputs():
    z = gt.complex(_values((6, 3), gt.float64), _values((6, 3), gt.float64, 1))
    _same(_gpu(z).logcumsumexp(0), z.logcumsumexp(0), 1e-12)
    empty = gt.zeros(0, 3)
    _same(_gpu(empty).logsumexp(0), empty.logsumexp(0))
    _same(_gpu(empty).logcumsumexp(0), empty.logcumsumexp(0))


# ---- indexing ------------------------------------------------------------------------------

def test_advanced_indexing_takes_cpu_or_gpu_indices():
    x = _values((4, 6), gt.float32)
    rows = gt.tensor([3, 0, 0, -1])
    for index in (rows, _gpu(rows)):
        _same(_gpu(x)[index], x[rows])
        _same(_gpu(x)[index, 1::2], x[rows, 1::2])
        _same(_gpu(x)[:, gt.tensor([[1, 5], [0, 0]])], x[:, gt.tensor([[1, 5], [0, 0]])])
    mask = x > 0
    _same(_gpu(x)[_gpu(mask)], x[mask])
    _same(_gpu(x).masked_select(_gpu(mask)), x.masked_select(mask))
    _same(_gpu(x).nonzero(), x.nonzero())
    _same(_gpu(gt.tensor(2.0)).nonzero(), gt.tensor(2.0).nonzero())
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 0 with size 4"):
        _gpu(x)[gt.tensor([6])]


def test_bad_indices_raise_pytorchs_errors_and_write_nothing():
    x = _gpu(_values((3, 4), gt.float32))
    before = x.cpu().numpy()
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 4"):
        x.gather(1, _gpu(gt.tensor([[0, 5]])))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        x.scatter_add_(0, _gpu(gt.tensor([[0, -1]])), _gpu(gt.ones(1, 2)))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, _gpu(gt.tensor([3])))
    with pytest.raises(IndexError, match="tried to access index 12 on a tensor of 12 elements"):
        x.put_(_gpu(gt.tensor([12])), _gpu(gt.ones(1)))
    np.testing.assert_array_equal(x.cpu().numpy(), before)


@pytest.mark.parametrize("dtype", [gt.int8, gt.uint8, gt.int16, gt.bool, gt.float16,
                                   gt.complex64, gt.int64])
def test_accumulating_writes_add_repeated_positions_in_every_dtype(dtype):
    x = _values((4, 3), gt.float32).to(dtype)
    index = gt.tensor([0, 2, 0, 0])
    values = _values((4, 3), gt.float32, 1).to(dtype)
    expected = x.clone().index_put_((index,), values, accumulate=True)
    _same(_gpu(x).index_put_((_gpu(index),), _gpu(values), accumulate=True), expected)
    flat = gt.tensor([5, 5, 1, 5])
    _same(_gpu(x).put(_gpu(flat), _gpu(values[:, 0]), accumulate=True),
          x.put(flat, values[:, 0], accumulate=True))
    if dtype is not gt.bool:
        _same(_gpu(x).index_add(0, _gpu(index), _gpu(values)), x.index_add(0, index, values))
        distinct = gt.tensor([5, 0, 1, 7])     # a plain put's winner among repeats is undefined
        _same(_gpu(x).t().put(_gpu(distinct), _gpu(values[:, 0])),
              x.t().put(distinct, values[:, 0]))


@pytest.mark.parametrize("dtype, reduce", [
    (d, r) for d in (gt.float32, gt.int8, gt.float16, gt.int64, gt.bool)
    for r in ("sum", "prod", "mean", "amax", "amin") if d is not gt.bool or r in ("amax", "amin")])
def test_scatter_reduce_with_repeated_indices(dtype, reduce):
    x = (_values((3, 5), gt.float32) * 2).to(dtype)
    index = gt.tensor([[0, 0, 2, 0, 1], [2, 0, 2, 2, 2]])
    src = (_values((2, 5), gt.float32, 2) * 2).to(dtype)
    for include_self in (True, False):
        _same(_gpu(x).scatter_reduce(0, _gpu(index), _gpu(src), reduce, include_self=include_self),
              x.scatter_reduce(0, index, src, reduce, include_self=include_self), 1e-3)


def test_scatter_multiply_and_amax_propagate_nan():
    x = gt.ones(2, 4)
    src = gt.tensor([[2.0, float("nan"), 3.0, 4.0], [5.0, 6.0, 7.0, 0.5]])
    index = gt.tensor([[0, 0, 1, 1], [0, 1, 1, 1]])
    with pytest.warns(UserWarning, match="reduce argument"):
        got = _gpu(x).scatter(0, _gpu(index), _gpu(src), reduce="multiply")
    with pytest.warns(UserWarning, match="reduce argument"):
        expected = x.scatter(0, index, src, reduce="multiply")
    _same(got, expected)
    _same(_gpu(x).scatter_reduce(1, _gpu(index), _gpu(src), "amax"),
          x.scatter_reduce(1, index, src, "amax"))


# ---- sorting and friends -------------------------------------------------------------------

_WITH_NAN = [
    lambda x: x.sort(1, descending=True).values, lambda x: x.topk(2, 1).indices,
    lambda x: x.kthvalue(2, 0).values, lambda x: x.median(1).indices, lambda x: x.median(),
    lambda x: x.nanmedian(0).values, lambda x: x.mode(1).values, lambda x: x.mode(1).indices,
    lambda x: gt.unique(x, return_inverse=True, return_counts=True)[1],
    lambda x: gt.unique(x, dim=0, return_counts=True)[0],
    lambda x: gt.unique_consecutive(x, return_counts=True)[1],
    lambda x: gt.searchsorted(x.sort(1).values, x[:, :2]),
    lambda x: gt.bucketize(x, gt.tensor([-1.0, 0.0, 2.0], device=x.device), right=True),
    lambda x: x.tril(-1), lambda x: x.triu(1)]
_FINITE = [
    lambda x: gt.histc(x, 5, -2, 2), lambda x: gt.histogram(x, 4).hist,
    lambda x: x.abs().long().flatten().bincount(),
    lambda x: gt.repeat_interleave(gt.tensor([2, 0, 3], device=x.device))]


@pytest.mark.parametrize("fn", [pytest.param(f, id=f"nan{i}") for i, f in enumerate(_WITH_NAN)]
                         + [pytest.param(f, id=f"finite{i}") for i, f in enumerate(_FINITE)])
def test_sorting_selection_and_counting_match_the_cpu(fn):
    x = _values((5, 6), gt.float32).round()
    if fn in _WITH_NAN:
        x[1, 1] = x[2, 1] = float("nan")
    _same(fn(_gpu(x)), fn(x), 1e-6)


# ---- convolution, pooling, resampling: forward and backward --------------------------------

def _both_ways(fn, *inputs, tol=1e-4):
    """fn on the CPU and on the GPU: the outputs and the inputs' gradients agree."""
    cpu = [t.detach().requires_grad_() for t in inputs]
    gpu = [_gpu(t.detach()).requires_grad_() for t in inputs]
    out_c, out_g = fn(*cpu), fn(*gpu)
    _same(out_g.detach(), out_c.detach(), tol)
    weight = _values(tuple(out_c.shape), gt.float32, 9)
    (out_c * weight).sum().backward()
    (out_g * _gpu(weight)).sum().backward()
    for c, g in zip(cpu, gpu):
        _same(g.grad, c.grad, tol)


@pytest.mark.parametrize("fn", [
    lambda x, w: gt.nn.functional.conv2d(x, w, padding=1, stride=2),
    lambda x, w: gt.nn.functional.conv2d(x, w[:, :1], groups=2, dilation=2),
    lambda x, w: gt.nn.functional.conv_transpose2d(x, w.transpose(0, 1)[:, :3], stride=2,
                                                  output_padding=1)],
    ids=["conv2d", "grouped_dilated", "conv_transpose2d"])
def test_convolutions(fn):
    _both_ways(fn, _values((2, 2, 7, 6), gt.float32), _values((4, 2, 3, 3), gt.float32, 1))


@pytest.mark.parametrize("fn", [
    lambda x: gt.nn.functional.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
    lambda x: gt.nn.functional.avg_pool2d(x, 2, count_include_pad=False, padding=1),
    lambda x: gt.nn.functional.avg_pool2d(x, 3, divisor_override=4),
    lambda x: gt.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
    lambda x: gt.nn.functional.adaptive_max_pool2d(x, (4, 3)),
    lambda x: gt.nn.functional.interpolate(x, scale_factor=1.7, mode="bicubic"),
    lambda x: gt.nn.functional.interpolate(x, size=(3, 9), mode="nearest"),
    lambda x: gt.nn.functional.pad(x, (2, 1, 1, 2), mode="reflect"),
    lambda x: gt.nn.functional.grid_sample(
        x, _gpu_like(x, _values((2, 4, 5, 2), gt.float32, 3) / 2), align_corners=False),
    lambda x: gt.nn.functional.unfold(x, (2, 3), padding=1)],
    ids=["max_pool", "avg_pool", "avg_pool_divisor", "adaptive_avg", "adaptive_max",
         "bicubic", "nearest", "reflect_pad", "grid_sample", "unfold"])
def test_pooling_and_resampling(fn):
    _both_ways(fn, _values((2, 3, 7, 6), gt.float32))


def _gpu_like(x, t):
    return t.to(x.device)


def test_max_unpool_and_indices_on_the_gpu():
    x = _values((1, 2, 6, 6), gt.float32)
    values, indices = gt.nn.functional.max_pool2d(x, 2, return_indices=True)
    got = gt.nn.functional.max_unpool2d(_gpu(values), _gpu(indices), 2)
    _same(got, gt.nn.functional.max_unpool2d(values, indices, 2))


def _bfloat16_steps(a, b, mode):
    """PyTorch's bfloat16 rounded division of two tensors over float32 values: the quotient
    (trunc), or every step of c10's div_floor_floating (floor), rounded to bfloat16."""
    import ml_dtypes

    def r(x):
        return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    with np.errstate(all="ignore"):
        if mode == "trunc":
            return np.trunc(r(a / b))
        mod = r(np.fmod(a, b))
        q = r(r(a - mod) / b)
        q = np.where((mod != 0) & ((b < 0) != (mod < 0)), r(q - 1), q)
        floor = np.floor(q)
        floor = np.where(q - floor > 0.5, floor + 1, floor)
        result = np.where(q != 0, floor, np.copysign(np.zeros_like(q), a / b))
        return np.where(b == 0, a / b, result)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_bfloat16_rounded_division_rounds_its_steps_as_pytorch(mode):
    specials = [0.0, -0.0, 1.0, -1.0, 3.5, np.inf, -np.inf, np.nan, 300.0, -376.0, -37.0]
    a = np.concatenate([np.arange(-400, 400, dtype=np.float32) / 8, specials]).astype(np.float32)
    b = np.array([3.125, 1.5, 0.69921875, -0.69921875, 2.296875, 0.0, -1.0], np.float32)
    import ml_dtypes
    a, b = (v.astype(ml_dtypes.bfloat16).astype(np.float32)     # exact bfloat16 values
            for v in np.meshgrid(a, b, indexing="ij"))
    expected = _bfloat16_steps(a, b, mode)
    # the cases that tell the rounding apart: -37 / 0.699 is -52.92, -53 in bfloat16;
    # -376 - fmod(-376, 3.125) rounds to -378 in bfloat16, and -378 / 3.125 to -121
    assert gt.div(gt.tensor([-37.0, -376.0], dtype=gt.bfloat16),
                  gt.tensor([0.69921875, 3.125], dtype=gt.bfloat16),
                  rounding_mode=mode).tolist() == ([-53.0, -120.0] if mode == "trunc"
                                                   else [-53.0, -122.0])
    for device in ("cpu", "cuda"):
        x, y = (gt.tensor(v).to(gt.bfloat16).to(device) for v in (a, b))
        got = gt.div(x, y, rounding_mode=mode).cpu().float().numpy()
        np.testing.assert_array_equal(got, expected, err_msg=device)
        assert (np.signbit(got) == np.signbit(expected))[~np.isnan(expected)].all()
    torch = pytest.importorskip("torch")
    oracle = torch.div(torch.from_numpy(a).bfloat16(), torch.from_numpy(b).bfloat16(),
                       rounding_mode=mode)
    np.testing.assert_array_equal(oracle.float().numpy(), expected)


# ---- linear algebra --------------------------------------------------------------------------

def test_addbmm_rounds_bfloat16_after_every_batch_as_pytorch():
    torch = pytest.importorskip("torch")
    m, b1, b2 = (_values(s, gt.float32, i) for i, s in enumerate([(5, 4), (9, 5, 3), (9, 3, 4)]))
    expected = torch.addbmm(*(torch.from_numpy(t.numpy()).bfloat16() for t in (m, b1, b2)),
                            beta=0.5, alpha=2)
    for device in ("cpu", "cuda"):
        got = gt.addbmm(*(t.to(gt.bfloat16).to(device) for t in (m, b1, b2)), beta=0.5,
                        alpha=2)
        np.testing.assert_array_equal(got.cpu().float().numpy(), expected.float().numpy())


@pytest.mark.parametrize("dtype", [gt.bfloat16, gt.float16])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.3, 2.7), (0, 1.3)])
def test_addr_of_16_bit_floats_rounds_every_step_as_pytorch(dtype, beta, alpha):
    """PyTorch computes `beta * c + alpha * v1 * v2` in the tensors' dtype: beta, alpha and
    every product and sum rounded to it (about a third of the elements differ from one
    rounding of the float32 result)."""
    import ml_dtypes
    np_dtype = ml_dtypes.bfloat16 if dtype is gt.bfloat16 else np.float16

    def r(x):
        return np.asarray(x, np.float32).astype(np_dtype).astype(np.float32)
    rng = np.random.default_rng(7)
    c, v1, v2 = (r(rng.standard_normal(s)) for s in ((12, 40), 12, 40))
    product = r(r(r(alpha) * v1[:, None]) * v2[None, :])
    expected = r(r(r(beta) * c) + product) if beta else product
    for device in ("cpu", "cuda"):
        got = gt.addr(*(gt.tensor(t).to(dtype).to(device) for t in (c, v1, v2)), beta=beta,
                      alpha=alpha)
        np.testing.assert_array_equal(got.cpu().float().numpy(), expected, err_msg=device)
    torch = pytest.importorskip("torch")
    t_dtype = getattr(torch, str(dtype).split(".")[1])
    oracle = torch.addr(*(torch.from_numpy(t).to(t_dtype) for t in (c, v1, v2)), beta=beta,
                        alpha=alpha)
    np.testing.assert_array_equal(oracle.float().numpy(), expected)


@pytest.mark.parametrize("shapes", [((64, 48), (48, 40)), ((3, 64, 48), (3, 48, 40)),
                                    ((64, 48), (48,)), ((2, 3, 16, 8), (8, 5))])
def test_float16_products_on_the_gpu_are_the_float32_product_rounded(shapes):
    """On a GPU float16 products go to cuBLAS in float16 (float32 sums on tensor cores, as
    PyTorch's): within float16's rounding of the float32 product, in float16."""
    a, b = (_values(s, gt.float32, i).to(gt.float16) for i, s in enumerate(shapes))
    got = gt.matmul(_gpu(a), _gpu(b))
    expected = gt.matmul(a.float(), b.float())
    assert got.dtype is gt.float16 and got.device.type == "cuda"
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.cpu().float().numpy(), expected.numpy(), rtol=2e-3,
                               atol=2e-2)


def test_einsum_runs_on_the_gpu_and_keeps_pytorchs_views():
    x, y = _values((3, 3), gt.float32), _values((3, 4), gt.float32, 1)
    _same(gt.einsum("ij,jk->ik", _gpu(x), _gpu(y)), gt.einsum("ij,jk->ik", x, y), 1e-5)
    diagonal = gt.einsum("ii->i", _gpu(x))
    assert diagonal._storage is _gpu(x)._storage or diagonal._base is not None


def test_matrix_rank_and_power_give_gpu_tensors():
    a = _values((3, 3), gt.float64)
    _same(gt.linalg.matrix_rank(_gpu(a)), gt.linalg.matrix_rank(a))
    _same(gt.linalg.matrix_power(_gpu(a), 0), gt.linalg.matrix_power(a, 0))
    _same(gt.linalg.matrix_power(_gpu(a), 3), gt.linalg.matrix_power(a, 3), 1e-10)


# ---- sampling ------------------------------------------------------------------------------

@pytest.mark.parametrize("draw", [
    lambda t, g: t.normal_(2, 3, generator=g), lambda t, g: t.uniform_(-1, 1, generator=g),
    lambda t, g: t.bernoulli_(0.3, generator=g), lambda t, g: t.random_(0, 10, generator=g),
    lambda t, g: t.bernoulli_(gt.full(t.shape, 0.4, device=t.device), generator=g),
    lambda t, g: t.exponential_(generator=g),
    lambda t, g: gt.bernoulli(gt.full(t.shape, 0.4, device=t.device), generator=g),
    lambda t, g: gt.normal(gt.zeros(t.shape, device=t.device), 2.0, generator=g)],
    ids=["normal_", "uniform_", "bernoulli_", "random_", "bernoulli_tensor", "exponential_",
         "bernoulli", "normal"])
def test_samplers_draw_the_numbers_of_the_gpus_generator(draw):
    cuda_gen, cpu_gen = gt.Generator("cuda"), gt.Generator()
    cuda_gen.manual_seed(7)
    cpu_gen.manual_seed(7)
    _same(draw(gt.empty(3, 4, device="cuda")[:, ::2], cuda_gen),
          draw(gt.empty(3, 4)[:, ::2], cpu_gen))


def test_default_gpu_generator_is_the_one_seeded_by_cuda_manual_seed():
    gt.cuda.manual_seed(3)
    first = gt.randn(5, device="cuda")
    gt.cuda.manual_seed(3)
    again = gt.empty(5, device="cuda").normal_()
    np.testing.assert_array_equal(first.cpu().numpy(), again.cpu().numpy())
