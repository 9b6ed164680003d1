"""Differences from PyTorch found by the campaign from seed 2100000 (tests/fuzz) and by its
new generators (advanced-indexing writes, batched matmul, dtype= of reductions), each
checked against PyTorch or against the arithmetic PyTorch's kernel does."""
import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, outcome, outcomes, to_numpy


def _same(fn):
    """The same error (class and text), or the same tensor (dtype, shape, values)."""
    ours, theirs = outcomes(fn)
    if isinstance(theirs, tuple) or isinstance(ours, tuple):
        assert ours == theirs
        return
    assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


# ---- index_add_'s three index checks ------------------------------------------------------

@pytest.mark.parametrize("shape, dim", [((3,), 0), ((), 0), ((3, 2), 0), ((3, 2), -1),
                                        ((2, 3, 2), 0), ((2, 3, 2), 1), ((2, 3, 2), 2)])
@pytest.mark.parametrize("alpha, index_dtype", [(1, "int64"), (0.5, "int64"), (1, "int32")])
@pytest.mark.parametrize("bad", [-1, "size"])
def test_index_add_refuses_an_index_as_pytorchs_path_for_it(shape, dim, alpha, index_dtype,
                                                            bad):
    """Over 2+ dims, along the first or last dim with alpha 1 and int64 indices, PyTorch
    runs scatter_add_ (RuntimeError naming the index); else its loop raises IndexError
    'index out of range in self'. Negative indices are refused either way."""
    def f(T):
        x = T.zeros(shape)
        size = x.shape[dim] if shape else 1
        index = T.tensor([0, size if bad == "size" else bad], dtype=getattr(T, index_dtype))
        source_shape = list(shape) or [2]
        source_shape[dim] = 2
        source = T.ones(source_shape) if shape else T.ones(2)
        return x.index_add_(dim, index, source, alpha=alpha)
    if not shape:            # a 0-d self takes no 2-element source: index 1 of 1 element
        def f(T):                                                      # noqa: F811
            return T.zeros(()).index_add_(0, T.tensor([1 if bad == "size" else bad]),
                                          T.ones(()), alpha=alpha)
    _same(f)


@pytest.mark.parametrize("self_shape, source_shape", [((0, 2), (1, 2)), ((2, 0), (1, 0))])
def test_index_add_over_an_empty_tensor_checks_no_index(self_shape, source_shape):
    _same(lambda T: T.zeros(self_shape).index_add_(0, T.tensor([5]), T.ones(source_shape)))


def test_index_add_in_range_still_accumulates():
    x = gt.zeros(3, 2).index_add_(0, gt.tensor([2, 0, 2]), gt.tensor([[1., 2], [3, 4], [5, 6]]))
    np.testing.assert_array_equal(x.numpy(), [[3, 4], [0, 0], [6, 8]])


# ---- scatter_reduce amax/amin have no complex kernel -------------------------------------

@pytest.mark.parametrize("reduce", ["amax", "amin", "sum", "prod", "mean"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_scatter_reduce_of_complex_values(reduce, dtype):
    def f(T):
        c = T.tensor([1 + 1j, 2 - 1j], dtype=getattr(T, dtype))
        return c.scatter_reduce(0, T.tensor([0, 0]), c, reduce, include_self=False)
    _same(f)


def test_scatter_reduce_of_complex_values_with_no_index_runs_no_kernel():
    _same(lambda T: T.tensor([1 + 1j]).scatter_reduce(0, T.tensor([], dtype=T.int64),
                                                      T.tensor([], dtype=T.complex64), "amax"))


# ---- an empty bmm runs no kernel: no dtype check -----------------------------------------

@pytest.mark.parametrize("a, b", [
    ((1, 0, 3), (1, 3, 1)), ((0, 2, 3), (0, 3, 1)), ((1, 2, 0), (1, 0, 1)), ((1, 2, 3), (1, 3, 1)),
])
@pytest.mark.parametrize("dtypes", [("bool", "bool"), ("bool", "int64"), ("int64", "bool")])
def test_bmm_and_matmul_of_empty_operands(a, b, dtypes):
    da, db = dtypes
    _same(lambda T: T.bmm(T.ones(a, dtype=getattr(T, da)), T.ones(b, dtype=getattr(T, db))))
    _same(lambda T: T.matmul(T.ones(a[1:], dtype=getattr(T, da)),
                             T.ones(b, dtype=getattr(T, db))))


# ---- pow's specialised Python-number exponents -------------------------------------------

_SPECIALS = [-0.0, 0.0, float("-inf"), float("inf"), float("nan"), 1e-30, 1e30]


def _values(dtype):
    rng = np.random.default_rng(0)
    return np.concatenate([_SPECIALS, rng.uniform(-4, 4, 2000)]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_by_these_numbers_is_pytorchs_arithmetic(dtype):
    """PyTorch computes x ** 3 as x * x * x, x ** -2 as 1 / (x * x), x ** -1 as 1 / x and
    x ** -0.5 as 1 / sqrt(x), every step rounded to the dtype (not a correctly rounded pow:
    the last bit differs, and -0.0 ** -0.5 is -inf)."""
    x = _values(dtype)
    one = dtype(1)
    with np.errstate(all="ignore"):
        expected = {3: x * x * x, 3.0: x * x * x, -2: one / (x * x), 2: x * x, -1: one / x,
                    -0.5: one / np.sqrt(x), 0.5: np.sqrt(x)}
    for exponent, want in expected.items():
        for got in (gt.from_numpy(x.copy()) ** exponent,
                    gt.from_numpy(x.copy()).pow_(exponent)):
            np.testing.assert_array_equal(got.numpy(), want, err_msg=str(exponent))


@pytest.mark.parametrize("exponent", [2, 3])
def test_pow_by_two_and_three_into_every_output(exponent):
    """x * x and x * x * x are written straight into the output where it is the input's
    dtype: the same bits into a fresh tensor, an out= tensor, the input itself (out=x), a
    strided input, and an out= overlapping the input by a shift (computed apart first),
    and into a float64 out= (cast once)."""
    x = _values(np.float32)[:1000]
    want = x * x if exponent == 2 else x * x * x
    src = gt.from_numpy(x.copy())
    out = gt.empty(1000)
    assert gt.pow(src, exponent, out=out) is out
    np.testing.assert_array_equal(out.numpy(), want)
    same = gt.from_numpy(x.copy())
    gt.pow(same, exponent, out=same)
    np.testing.assert_array_equal(same.numpy(), want)
    strided = gt.from_numpy(np.repeat(x, 2))[::2]
    np.testing.assert_array_equal((strided ** exponent).numpy(), want)
    buf = gt.from_numpy(np.concatenate([x, [1.0]]).astype(np.float32))
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        gt.pow(buf[:1000], exponent, out=buf[1:])        # as PyTorch: partial overlap
    wide = gt.empty(1000, dtype=gt.float64)
    gt.pow(src, exponent, out=wide)
    np.testing.assert_array_equal(wide.numpy(), want.astype(np.float64))


def test_pow_of_integers_by_these_numbers_computes_in_float32():
    x = np.array([3, -2, 7, 0], dtype=np.int16)
    with np.errstate(divide="ignore"):
        want = np.float32(1) / (x.astype(np.float32) ** 2)
    np.testing.assert_array_equal((gt.from_numpy(x) ** -2.0).numpy(), want)


@pytest.mark.parametrize("exponent", [3, -2, -1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_by_these_numbers_equals_pytorchs(exponent, dtype):
    # products and quotients only: IEEE arithmetic, the same on every vector path
    T = oracle_torch()
    x = _values(getattr(np, dtype))
    ours = (gt.from_numpy(x.copy()) ** exponent).numpy()
    theirs = (T.from_numpy(x.copy()) ** exponent).numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_pow_by_minus_a_half_at_zero_and_infinity():
    x = [-0.0, 0.0, float("-inf"), float("inf")]
    for dtype in (gt.float32, gt.float64, gt.bfloat16):
        got = (gt.tensor(x, dtype=dtype) ** -0.5).float().numpy()
        np.testing.assert_array_equal(got, [-np.inf, np.inf, np.nan, 0.0])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bfloat16"])
def test_pow_by_a_half_as_c_pow_where_pytorch_uses_it(dtype):
    """float16 ** 0.5 and any x ** (0-d tensor 0.5) run C's pow (+0 at -0, +inf at -inf);
    a float32/float64/bfloat16 ** 0.5 runs sqrt (-0 at -0, nan at -inf)."""
    def f(T):
        x = T.tensor([-0.0, float("-inf"), 4.0], dtype=getattr(T, dtype))
        return T.stack([x ** T.tensor(0.5, dtype=x.dtype), x ** 0.5,
                        x.clone().pow_(T.tensor(0.5, dtype=x.dtype)),
                        x.clone().pow_(0.5)]).float()      # in place: -inf read before
    ours, theirs = (to_numpy(r) for r in outcomes(f))
    np.testing.assert_array_equal(ours, theirs)
    number = ~np.isnan(theirs)                    # a NaN's sign is not specified
    np.testing.assert_array_equal(np.signbit(ours[number]), np.signbit(theirs[number]))


def test_complex_pow_in_place_at_a_zero_base_reads_the_base_before_writing():
    def f(T):
        z = T.tensor([0j, -0.0 + 0j, 0j, 2 + 1j], dtype=T.complex128)
        e = T.tensor([0.0, -1.0, 2.5, 1.5], dtype=T.complex128)
        return T.stack([z.clone().pow_(e), z.clone().pow_(-1.5), z ** e])
    ours, theirs = (to_numpy(r) for r in outcomes(f))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0, equal_nan=True)


# ---- x[:, idx] = values: the backward writes zeros through the same None-holding index -----

def _write_through_slice(self, values):
    out = self.clone()
    out[:, gt.tensor([2, 0])] = values
    return out


def test_setitem_after_a_slice_differentiates_both_operands():
    """The indices autograd records hold None for the dims the slice took whole: self's
    gradient zeroes the written positions through them (the Python method refuses None)."""
    self = gt.randn(3, 6, dtype=gt.float64)[:, ::2].requires_grad_()     # not contiguous
    values = gt.randn(2, 3, dtype=gt.float64).t().requires_grad_()
    assert gt.autograd.gradcheck(_write_through_slice, (self, values))
    assert gt.autograd.gradgradcheck(_write_through_slice, (self, values))


def test_setitem_after_a_slice_gradient_equals_pytorchs():
    def f(T):
        x = T.ones(3, 4, 2)
        v = T.tensor([-2.88, -1.75, 2.19, -0.58]).reshape(4, 1).requires_grad_()
        x[:, :, T.tensor([1])] = v
        (x * T.linspace(-1, 1, 24).reshape(3, 4, 2)).sum().backward()
        return v.grad
    ours, theirs = outcomes(f)
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-6)


# ---- kernels PyTorch does not run: a 0-d or empty scan, an empty nansum ------------------

@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("x", [lambda T: T.tensor(1.5), lambda T: T.zeros(0),
                               lambda T: T.zeros(1), lambda T: T.zeros(2, 3)])
def test_a_scan_into_bool_refuses_only_what_runs_its_kernel(op, x):
    """A 0-d scan is a copy and an empty one writes nothing: neither reaches the kernel
    that has no bool loop."""
    _same(lambda T: getattr(T, op)(x(T), 0, dtype=T.bool))
    _same(lambda T: getattr(T, op)(x(T), 0, out=T.empty(0, dtype=T.bool)))


@pytest.mark.parametrize("x", [lambda T: T.tensor([1.82]), lambda T: T.tensor(1.0),
                               lambda T: T.zeros(0), lambda T: T.zeros(2, 0),
                               lambda T: T.tensor([[3]], dtype=T.int32),
                               lambda T: T.tensor([True])])
@pytest.mark.parametrize("dim", [None, 0, ()])
def test_nansum_into_complex_has_no_kernel(x, dim):
    def f(T):
        kw = {} if dim is None else {"dim": dim}
        return T.nansum(x(T), dtype=T.complex64, **kw)
    _same(f)


# ---- PyTorch's stale view: glasstorch keeps the right answer -----------------------------

def _write_then_add(T, read_grad_fn):
    base = T.tensor([0.75, 2.0, 3.0])
    view = base[:2]                            # made while base requires no grad
    v = T.tensor(-0.99, requires_grad=True)
    view[0] = v                                # base (and view) now have history
    if read_grad_fn:
        view.grad_fn                           # PyTorch refreshes the view's history here
    view.add_(1)
    (view * T.tensor([2.0, 3.0])).sum().backward()
    return view.detach(), v.grad


def test_in_place_on_a_view_whose_base_gained_history_elsewhere():
    """PyTorch's in-place check takes such a view for a leaf that requires grad (and
    raises) until its grad_fn is read; glasstorch runs the op either way, with the result
    and gradient PyTorch gives once the view's history is refreshed."""
    torch = oracle_torch()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        _write_then_add(torch, read_grad_fn=False)
    theirs = _write_then_add(torch, read_grad_fn=True)
    for read in (False, True):
        ours = _write_then_add(gt, read)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(to_numpy(a), to_numpy(b))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float16"])
@pytest.mark.parametrize("source", ["float32", "float64", "bfloat16"])
def test_nansum_into_another_dtype_drops_nan_before_the_cast(dtype, source):
    """NaN counts as 0 before its cast to an integer sum (not the cast's junk value)."""
    def f(T):
        x = T.tensor([[float("nan"), 1.5], [2.5, float("nan")]], dtype=getattr(T, source))
        return T.stack([T.nansum(x, dtype=getattr(T, dtype)).reshape(1),
                        T.nansum(x, dim=0, dtype=getattr(T, dtype))[:1]])
    _same(f)


# ---- copy_ from another view of exactly its own elements writes nothing -------------------

@pytest.mark.parametrize("src", [lambda x: x.permute((0,)), lambda x: x.view(2),
                                 lambda x: x.double(), lambda x: x[:1]])
def test_copy_from_the_same_elements_is_a_no_op_even_when_expanded(src):
    """PyTorch returns before its overlap check when src has self's storage, offset,
    strides, shape, dtype and conj/neg bits; any other src into an expanded self is refused."""
    def f(T):
        x = T.tensor([3.0]).expand((2,))
        return x.copy_(src(x))
    _same(f)


# ---- ops with no complex form refuse it before looking at where they write ----------------

@pytest.mark.parametrize("op", ["sign", "trunc", "floor", "ceil"])
@pytest.mark.parametrize("how", ["inplace", "out"])
def test_a_complex_refusal_comes_before_the_overlap_check(op, how):
    def f(T):
        x = T.tensor([1 + 1j]).expand(3)
        return getattr(x, op + "_")() if how == "inplace" else getattr(T, op)(x, out=x)
    _same(f)


# ---- scans carry their running value in PyTorch's CPU accumulation type -------------------

@pytest.mark.parametrize("dtype", ["float32", "complex64", "float16", "float64"])
def test_cumsum_and_cumprod_accumulate_as_pytorchs_cpu_scans(dtype):
    """float32 (complex64) scans carry a double (complex128) running value, 16-bit floats a
    float32 one: after cancellation, or through an overflow of the stored dtype, the later
    elements keep what a running value in the stored dtype loses."""
    def f(T):
        big = 1e4 if dtype == "float16" else 1e8
        sums = T.tensor([big, 1.0, -big, 1.0] * 3, dtype=getattr(T, dtype)).cumsum(0)
        huge = 1e4 if dtype == "float16" else 1e20
        prods = T.tensor([huge, huge, 1 / huge, 1 / huge], dtype=getattr(T, dtype)).cumprod(0)
        return sums, prods
    for ours, theirs in zip(*outcomes(f)):
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def test_clamp_keeps_the_input_where_it_equals_the_bound():
    """PyTorch's clamp is `x < min ? min : x` (and `x > max ? max : x`): -0.0 clamped at 0
    stays -0.0, which rsqrt then tells apart (-inf, not inf)."""
    def f(T):
        x = T.tensor([-0.0, 0.0, float("nan"), -1.0, 2.0])
        return T.stack([x.clamp(min=0), x.clamp(max=-0.0), x.clamp(0, 0),
                        x.clamp(min=T.zeros(5)), (-x).clamp(max=0.0),
                        T.rsqrt(T.clamp(x, min=0, out=T.empty(0)))])
    ours, theirs = (to_numpy(r) for r in outcomes(f))
    np.testing.assert_array_equal(ours, theirs)
    number = ~np.isnan(theirs)
    np.testing.assert_array_equal(np.signbit(ours[number]), np.signbit(theirs[number]))


@pytest.mark.parametrize("op", ["remainder", "fmod"])
def test_a_number_divisor_saves_nothing_for_backward(op):
    """x % 2 and fmod(x, 2) pass the gradient straight through and save nothing (PyTorch's
    RemainderBackward0/FmodBackward0), so writing x in place afterwards is no error."""
    def f(T):
        x = T.tensor([5.3, -2.2], dtype=T.float64, requires_grad=True)
        y = x * 1
        z = getattr(T, op)(y, 2)
        y.add_(1)
        z.sum().backward()
        return x.grad
    ours, theirs = outcomes(f)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
