"""The per-op fast paths for plain CPU tensors: generated wrappers call `Operator.plain_cpu`
directly; add/sub/mul/div run their ufunc, sum()/prod() one reduction and matmul of two
matrices one `np.matmul` straight from the CPU kernel on small same-dtype float operands;
view keeps the strides it computed per layout. Each must give PyTorch's results (and the
general kernel's, bit for bit), and each must step aside the
moment anything that the dispatcher would honour is in force: a dispatch mode, autocast, a
dispatch trace, a kernel registered above or at CPU, grad mode with inputs that need grad."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.dispatch.dispatcher import find, register_fallback, _fallbacks
from glasstorch.dispatch.keys import DispatchKey
from oracle import op_log

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def _pair(shape, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype) + 3
    return a, b


def _check(ours, theirs):
    assert ours.dtype == getattr(gt, str(theirs.dtype).split(".")[1])
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride())
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


CALLS = [
    lambda t, a, b: a + b, lambda t, a, b: a - b, lambda t, a, b: a * b, lambda t, a, b: a / b,
    lambda t, a, b: t.add(a, b, alpha=2),
    lambda t, a, b: t.sub(a, b, alpha=1.5), lambda t, a, b: t.div(a, b, rounding_mode="floor"),
    lambda t, a, b: a + 2, lambda t, a, b: a * 2.5, lambda t, a, b: a - 1e40,
    lambda t, a, b: a / 3, lambda t, a, b: a + True, lambda t, a, b: 2 - a,
    lambda t, a, b: a[:, :1] * b, lambda t, a, b: a.t() + b.t(), lambda t, a, b: a[0] + b[1],
    lambda t, a, b: a + b.double(), lambda t, a, b: a.half() * b.half(),
    lambda t, a, b: a.to(t.int32) + b.to(t.int32), lambda t, a, b: a.to(t.int32) / 2,
    lambda t, a, b: a.sum() * b.sum(), lambda t, a, b: a[:0] + b[:0],
    # one value expanded, as a sum's gradient: row-major outputs on the fast path
    lambda t, a, b: a[0, 0].expand(3, 4) * 2, lambda t, a, b: a[0, :1].expand(3, 4) / b,
    lambda t, a, b: a[1, 2].expand(3, 4) - b.t().contiguous().t(),
    lambda t, a, b: a[0, 0].expand(3, 4) + b.double(), lambda t, a, b: b - a[0, 0].expand(3, 4),
    lambda t, a, b: t.add(a[0, 0].expand(3, 4), b, alpha=3),
    # a row-major operand of the trailing dims (on the fast path when it is `other`)
    lambda t, a, b: a + b[1], lambda t, a, b: a - b[0], lambda t, a, b: a * b[2],
    lambda t, a, b: a / b[1], lambda t, a, b: a + b[1, 2], lambda t, a, b: b[0] + a,
    lambda t, a, b: a + b[:, 1:2], lambda t, a, b: a.t() * b[:, 0], lambda t, a, b: a + b[:1],
    lambda t, a, b: t.add(a, b[0], alpha=2), lambda t, a, b: a[0, 0].expand(3, 4) + b[0],
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index", range(len(CALLS)))
def test_results_match_pytorch_on_and_off_the_fast_path(index, dtype):
    a, b = _pair((3, 4), dtype)
    call = CALLS[index]
    ours = call(gt, gt.from_numpy(a.copy()), gt.from_numpy(b.copy()))
    theirs = call(torch, torch.from_numpy(a.copy()), torch.from_numpy(b.copy()))
    _check(ours, theirs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_fast_path_computes_what_pytorch_computes_bit_for_bit(dtype):
    a, b = _pair(16, dtype)
    for call in (lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y,
                 lambda x, y: x / y, lambda x, y: x * 2, lambda x, y: x + 0.1,
                 lambda x, y: x / 3, lambda x, y: x - 7):
        ours = call(gt.from_numpy(a.copy()), gt.from_numpy(b.copy()))
        theirs = call(torch.from_numpy(a.copy()), torch.from_numpy(b.copy()))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trailing_dims_broadcast_on_the_fast_path_is_bit_for_bit_pytorch(dtype):
    """A batch and a row-major tensor of its trailing dims (nanoGPT's token and position
    embeddings): the ufunc on the fast path, the general (out=) kernel's values exactly."""
    a, b = _pair((4, 8, 16), dtype)
    for name, pick in (("add", lambda y: y[0]), ("sub", lambda y: y[1, 2]),
                       ("mul", lambda y: y[3]), ("div", lambda y: y[2, 1])):
        x, y = gt.from_numpy(a.copy()), pick(gt.from_numpy(b.copy()))
        ours = getattr(gt, name)(x, y)
        theirs = getattr(torch, name)(torch.from_numpy(a.copy()), pick(torch.from_numpy(b)))
        general = gt.empty(0, dtype=ours.dtype)
        getattr(gt, name)(x, y, out=general)
        assert ours.stride() == theirs.stride() == general.stride()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        np.testing.assert_array_equal(ours.numpy(), general.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_expanded_value_on_the_fast_path_is_bit_for_bit_pytorch(dtype):
    a, b = _pair(16, dtype)
    for call in (lambda x, y: x[3].expand(16) * y, lambda x, y: x[3].expand(16) / y,
                 lambda x, y: x[3].expand(16) * 2, lambda x, y: x[3].expand(16) + 0.1,
                 lambda x, y: x[2:3].sum().expand(16) / 3, lambda x, y: x[:1].expand(16) - y):
        ours = call(gt.from_numpy(a.copy()), gt.from_numpy(b.copy()))
        theirs = call(torch.from_numpy(a.copy()), torch.from_numpy(b.copy()))
        assert ours.stride() == theirs.stride()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_a_bool_alpha_is_refused_as_pytorch_refuses_it():
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
            lib.add(lib.ones(2), lib.ones(2), alpha=True)


@pytest.mark.parametrize("alpha", [True, 2, 1.5, 1j])
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "complex64"])
def test_alpha_is_checked_against_the_dtype_in_pytorchs_order(alpha, dtype):
    """An int32 tensor with a complex alpha fails the integral check first, as PyTorch's."""
    outcomes = []
    for lib in (gt, torch):
        t = lib.ones(2, dtype=getattr(lib, dtype))
        try:
            outcomes.append(lib.add(t, t, alpha=alpha).tolist())
        except RuntimeError as e:
            outcomes.append(str(e))
    assert outcomes[0] == outcomes[1]


def test_outputs_are_fresh_aligned_and_writable():
    a = gt.ones(16)
    out = a + a
    assert out.data_ptr() % 64 == 0 and out.data_ptr() != a.data_ptr()
    out.add_(1)
    assert out.tolist() == [3.0] * 16 and a.tolist() == [1.0] * 16
    assert out._version == 1 and out.is_contiguous()


def test_inference_mode_outputs_are_inference_tensors():
    a = gt.ones(4)
    with gt.inference_mode():
        out = a * 2
    assert out.is_inference() and not (a * 2).is_inference()


@pytest.mark.parametrize("op", [lambda a: a * 2, lambda a: a + a, lambda a: a.sum(),
                                lambda a: a.reshape(2, 2) @ a.reshape(2, 2)],
                         ids=["mul", "add", "sum", "matmul"])
def test_fast_path_outputs_match_the_general_path_in_and_out_of_inference_mode(op):
    """The fast paths build their outputs themselves (`new_cpu_tensor`) except in inference
    mode: both kinds are fresh, aligned, row-major, own a version counter when they should,
    and hold the general path's values."""
    values = np.arange(1, 5, dtype=np.float32)
    a = gt.from_numpy(values).clone()
    expected = op(values)                          # NumPy's answer
    for inference in (False, True):
        with gt.inference_mode(inference):
            out = op(a)
        assert out.is_inference() is inference and out.dtype is gt.float32
        assert out.data_ptr() % 64 == 0 and out.is_contiguous() and out.grad_fn is None
        np.testing.assert_array_equal(out.numpy(), expected)
        if not inference:
            out.add_(1)
            assert out._version == 1


def test_a_dispatch_mode_sees_every_call():
    a = gt.ones(4)
    with op_log() as log:
        a + a, a * 2, a.sum(), a.neg()
    assert log.seen == ["aten.add.Tensor", "aten.mul.Tensor", "aten.sum.default",
                        "aten.neg.default"]


def test_a_dispatch_trace_sees_every_call():
    a = gt.ones(4)
    with gt.debug.dispatch_trace() as trace:
        a + a
        a.sum()
    assert [e.op for e in trace.events] == ["aten::add.Tensor", "aten::sum"]


def test_autocast_casts_inside_its_region():
    a = gt.ones(4, 4)
    with gt.autocast("cpu", dtype=gt.bfloat16):
        assert (a @ a).dtype is gt.bfloat16
    assert (a @ a).dtype is gt.float32


def test_grad_mode_records_and_no_grad_does_not():
    w = gt.ones(4, requires_grad=True)
    assert (w * 2).grad_fn is not None
    with gt.no_grad():
        assert (w * 2).grad_fn is None
    assert (gt.ones(4) * 2).grad_fn is None


def test_a_library_kernel_registered_for_cpu_replaces_the_plain_kernel():
    op = find("aten::mul.Tensor")
    before = op.plain_cpu
    lib = gt.library.Library("aten", "IMPL")
    with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
        lib.impl("mul.Tensor", lambda a, b: gt.zeros(a.shape), "CPU")
    try:
        assert op.plain_cpu is not before
        assert (gt.ones(3) * 5).tolist() == [0.0, 0.0, 0.0]
    finally:
        lib._destroy()
    assert op.plain_cpu is before
    assert (gt.ones(3) * 5).tolist() == [5.0, 5.0, 5.0]


def test_a_kernel_above_cpu_takes_the_calls():
    calls = []
    op = find("aten::add.Tensor")
    previous = _fallbacks.get(DispatchKey.ADInplaceOrView)

    def watch(op, ks, *args):
        calls.append(op.name)
        return op.redispatch(ks, *args)

    register_fallback(DispatchKey.ADInplaceOrView, watch)
    try:
        assert op.plain_cpu.func is watch and op.plain_cpu.args[0] is op
        assert (gt.ones(2) + 1).tolist() == [2.0, 2.0]
        assert "aten::add.Tensor" in calls
    finally:
        register_fallback(DispatchKey.ADInplaceOrView, previous)
    assert op.plain_cpu is op.table[DispatchKey.CPU]


def test_tensors_that_require_grad_take_the_autograd_kernel_until_another_is_registered():
    op = find("aten::mul.Tensor")
    previous = _fallbacks.get(DispatchKey.AutogradCPU)
    assert op.plain_cpu_grad.func is previous and op.plain_cpu_grad.args[0] is op
    calls = []

    def watch(op, ks, *args):
        calls.append(op.name)
        return previous(op, ks, *args)

    register_fallback(DispatchKey.AutogradCPU, watch)
    try:
        assert op.plain_cpu_grad.func is watch
        w = gt.ones(3, requires_grad=True)
        assert (w * 4).tolist() == [4.0, 4.0, 4.0] and calls == ["aten::mul.Tensor"]
        assert (gt.ones(3) * 4).tolist() == [4.0, 4.0, 4.0] and len(calls) == 1
    finally:
        register_fallback(DispatchKey.AutogradCPU, previous)
    assert op.plain_cpu_grad.func is previous
    w = gt.ones(3, requires_grad=True)
    y = w * 4
    assert len(calls) == 1 and y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    assert w.grad.tolist() == [4.0, 4.0, 4.0]


def test_a_dispatch_mode_sees_calls_on_tensors_that_require_grad():
    w = gt.ones(2, requires_grad=True)
    with op_log() as log:
        y = w * 3 + 1
    assert log.seen == ["aten.mul.Tensor", "aten.add.Tensor"]
    assert y.grad_fn.name() == "AddBackward0"


def test_views_and_in_place_ops_keep_their_bookkeeping():
    a = gt.ones(4)
    v = a.view(2, 2)
    assert v._base is a
    a.add_(1)
    assert a._version == 1 and v.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    view, add_ = find("aten::view"), find("aten::add_.Tensor")
    assert view.plain_cpu.func is view.table[DispatchKey.ADInplaceOrView]
    assert add_.plain_cpu.func is add_.table[DispatchKey.ADInplaceOrView]
    assert view.plain_cpu.args == (view, 1 << DispatchKey.CPU)    # the keys below, as dispatch
    w = gt.ones(2, requires_grad=True).clone()
    w.mul_(2)                                   # needs grad: the Autograd key records it
    assert w.grad_fn.name() == "MulBackward0"


def test_an_op_without_a_cpu_kernel_still_says_so():
    lib = gt.library.Library("plain_path_test", "DEF")
    try:
        lib.define("only_meta(Tensor x) -> Tensor")
        lib.impl("only_meta", lambda x: x, "Meta")
        op = find("plain_path_test::only_meta")
        assert op.plain_cpu is None
        with pytest.raises(NotImplementedError, match="only available for these backends"):
            gt.ops.plain_path_test.only_meta(gt.ones(2))
    finally:
        lib._destroy()


def test_an_argument_equal_to_the_default_but_of_another_type_takes_the_general_path():
    a, b = _pair((3, 4), np.float32)
    for call in (lambda t, x, y: t.add(x, y, alpha=1.0), lambda t, x, y: t.sub(x, y, alpha=1.0),
                 lambda t, x, y: t.div(x, y, rounding_mode=None)):
        ours = call(gt, gt.from_numpy(a.copy()), gt.from_numpy(b.copy()))
        theirs = call(torch, torch.from_numpy(a.copy()), torch.from_numpy(b.copy()))
        _check(ours, theirs)


TOTALS = [  # (x, what to reduce): on the fast path, and past it
    lambda t, x: x.sum(), lambda t, x: x.prod(), lambda t, x: t.sum(x), lambda t, x: t.prod(x),
    lambda t, x: x.t().sum(), lambda t, x: x[:, 1].prod(), lambda t, x: x[:0].sum(),
    lambda t, x: x[:0].prod(), lambda t, x: x[0, 0].sum(), lambda t, x: x.sum(dtype=t.float64),
    lambda t, x: x.half().sum(), lambda t, x: x.to(t.int32).sum(), lambda t, x: x.sum(0),
    lambda t, x: x.double().prod(), lambda t, x: (x > 0).sum(),
]


@pytest.mark.parametrize("index", range(len(TOTALS)))
def test_totals_match_pytorch_on_and_off_the_fast_path(index):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    ours = TOTALS[index](gt, gt.from_numpy(a.copy()))
    theirs = TOTALS[index](torch, torch.from_numpy(a.copy()))
    assert ours.dtype == getattr(gt, str(theirs.dtype).split(".")[1])
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 16, 1000])
def test_a_total_on_the_fast_path_is_the_general_kernels_bit_for_bit(dtype, n):
    a = rng.standard_normal(n).astype(dtype)
    x, d = gt.from_numpy(a), getattr(gt, np.dtype(dtype).name)
    for fast, general, reference in ((x.sum(), x.sum(dtype=d), np.add.reduce(a)),
                                     (x.prod(), x.prod(dtype=d), np.multiply.reduce(a))):
        assert fast.dtype is d and fast.shape == () and fast._base is None
        np.testing.assert_array_equal(fast.numpy(), general.numpy())
        np.testing.assert_array_equal(fast.numpy(), reference)


def test_totals_step_aside_for_a_mode_and_record_gradients():
    x = gt.ones(4)
    with op_log() as log:
        x.sum(), x.prod()
    assert log.seen == ["aten.sum.default", "aten.prod.default"]
    w = gt.full((3,), 2.0, requires_grad=True)
    w.prod().backward()
    assert w.grad.tolist() == [4.0, 4.0, 4.0]


MATMULS = [  # on the fast path (two matrices of one float dtype), and past it
    lambda a, b: a @ b, lambda a, b: a.t() @ b.t(), lambda a, b: a[:, :2] @ b[:2],
    lambda a, b: a[:0] @ b, lambda a, b: a[:, :0] @ b[:0], lambda a, b: a @ b[:, 0],
    lambda a, b: a[0] @ b, lambda a, b: a.unsqueeze(0) @ b, lambda a, b: a.double() @ b.double(),
    lambda a, b: a.half() @ b.half(), lambda a, b: a[None].expand(2, 4, 4) @ b,
]


@pytest.mark.parametrize("index", range(len(MATMULS)))
def test_matmuls_match_pytorch_on_and_off_the_fast_path(index):
    a, b = _pair((4, 4), np.float32)
    ours = MATMULS[index](gt.from_numpy(a.copy()), gt.from_numpy(b.copy()))
    theirs = MATMULS[index](torch.from_numpy(a.copy()), torch.from_numpy(b.copy()))
    _check(ours, theirs) if ours.dtype is not gt.float16 else np.testing.assert_allclose(
        ours.float().numpy(), theirs.float().numpy(), rtol=1e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_matmul_on_the_fast_path_is_the_general_kernels_bit_for_bit(dtype):
    a, b = _pair((5, 7), dtype)
    x, y = gt.from_numpy(a), gt.from_numpy(b.T.copy())
    fast = x @ y
    general = gt.empty(0, dtype=fast.dtype)
    gt.matmul(x, y, out=general)                  # the out= kernel: meta, then matmul_cpu
    assert fast.shape == (5, 5) and fast.stride() == (5, 1)
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    np.testing.assert_array_equal(fast.numpy(), np.matmul(a, b.T))



ADDMMS = [  # nn.Linear's call (on the fast path: a bias row or a whole bias), and past it
    lambda b, a, w: b.addmm(a, w.t()), lambda b, a, w: b[None].addmm(a, w.t()),
    lambda b, a, w: (b[None] + a @ w.t()).addmm(a, w.t()), lambda b, a, w: b[:1].addmm(a, w.t()),
    lambda b, a, w: b.addmm(a[:0], w.t()), lambda b, a, w: b.addmm(a[:, :0], w.t()[:0]),
    lambda b, a, w: b.addmm(a, w.t(), beta=2), lambda b, a, w: b.addmm(a, w.t(), alpha=0.5),
    lambda b, a, w: b.addmm(a, w.t(), beta=0), lambda b, a, w: b.double().addmm(a, w.t()),
    lambda b, a, w: b.double().addmm(a.double(), w.t().double()),
    lambda b, a, w: b.addmm(a, w.t(), beta=1.0, alpha=1.0),
]


@pytest.mark.parametrize("index", range(len(ADDMMS)))
def test_addmms_match_pytorch_on_and_off_the_fast_path(index):
    a, w = _pair((5, 4), np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    args = (b, a, w)
    try:
        theirs = ADDMMS[index](*(torch.from_numpy(v.copy()) for v in args))
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e).split("(")[0][:40]):
            ADDMMS[index](*(gt.from_numpy(v.copy()) for v in args))
        return
    _check(ADDMMS[index](*(gt.from_numpy(v.copy()) for v in args)), theirs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_linear_addmm_on_the_fast_path_is_the_general_kernels_bit_for_bit(dtype):
    a, w = _pair((6, 7), dtype)
    b = rng.standard_normal(6).astype(dtype)
    x, wt, bias = gt.from_numpy(a), gt.from_numpy(w).t(), gt.from_numpy(b)
    fast = gt.nn.functional.linear(x, gt.from_numpy(w), bias)
    general = gt.empty(0, dtype=fast.dtype)
    gt.addmm(bias, x, wt, out=general)            # the out= kernel: meta, then gemm_into
    assert fast.shape == (6, 6) and fast.stride() == (6, 1)
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    expected = np.matmul(a, w.T)
    expected += b
    np.testing.assert_array_equal(fast.numpy(), expected)

def test_bad_matmuls_keep_pytorchs_errors():
    for lib in (gt, torch):
        a = lib.ones(2, 3)
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                               r"\(2x3 and 2x3\)"):
            a @ a
        with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
            a @ lib.ones(3, 2, dtype=lib.float64)
        with pytest.raises(TypeError):
            a @ 2


def test_a_subclass_keeps_its_class_through_the_fast_paths():
    class Sub(gt.Tensor):
        pass

    x = gt.ones(2, 2).as_subclass(Sub)
    assert type(x @ x) is Sub and type(x.sum()) is Sub and type(x + x) is Sub


VIEWS = [(lambda x: x.view(16), (4, 4)), (lambda x: x.view(2, -1), (4, 4)),
         (lambda x: x.t().view(4, 4), (4, 4)), (lambda x: x[1:3].view(-1), (4, 4)),
         (lambda x: x[:, 1:3].view(4, 2), (4, 4)), (lambda x: x[2].view(2, 2), (4, 4)),
         (lambda x: x.view(()), (1,)), (lambda x: x.view(0, 3), (0,)),
         (lambda x: x[:, :1].view(4), (4, 4)), (lambda x: x.view([4, 4]), (16,))]


def test_views_match_pytorch_each_time_the_same_layout_is_viewed():
    a = rng.standard_normal(16).astype(np.float32)
    for _ in range(2):                      # the second round: the shapes and strides cached
        for call, shape in VIEWS:
            n = int(np.prod(shape))
            ours = call(gt.from_numpy(a[:n].reshape(shape).copy()))
            theirs = call(torch.from_numpy(a[:n].reshape(shape).copy()))
            assert tuple(ours.shape) == tuple(theirs.shape)
            assert ours.stride() == theirs.stride()
            assert ours.storage_offset() == theirs.storage_offset()
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_bad_views_raise_each_time():
    for _ in range(2):
        for lib in (gt, torch):
            x = lib.ones(4, 4)
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                x.t().view(16)
            with pytest.raises(RuntimeError, match=r"shape '\[5\]' is invalid for input of "
                                                   "size 16"):
                x.view(5)
            with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
                x.view(-1, -1)


def test_python_written_functions_with_varargs_get_their_keyword_only_arguments():
    from glasstorch.overrides import overridable

    sentinel = object()

    @overridable
    def f(x, *sizes, scale=2, tag=sentinel):
        return x, sizes, scale, tag

    @overridable
    def g(x, *sizes, required, flag=False):
        return x, sizes, required, flag

    assert f(1, 2, 3) == (1, (2, 3), 2, sentinel)
    assert f(1, 2, scale=5) == (1, (2,), 5, sentinel)
    assert f(1, tag=None) == (1, (), 2, None)
    assert g(1, 2, required=3) == (1, (2,), 3, False)
    assert g(1, required=None, flag=True) == (1, (), None, True)
    with pytest.raises(TypeError):
        g(1, 2)

    class Handler(gt.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return func, args, kwargs

    x = gt.ones(4).as_subclass(Handler)
    func, args, kwargs = x.view(2, 2)
    assert func is gt.Tensor.view and args[1:] == (2, 2)
    assert gt.ones(4).view(gt.int32).dtype is gt.int32
    assert gt.ones(4).view(dtype=gt.int32).dtype is gt.int32


def test_handlers_see_tensor_view_on_both_of_its_paths():
    """A view by shape skips view's dtype dispatch; handlers and modes still get the public
    Tensor.view, with the arguments as written, on that path and on the dtype path."""
    class Handler(gt.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return func, args, kwargs

    class Record(gt.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((func, args[1:], kwargs))
            return func(*args, **(kwargs or {}))

    x = gt.ones(4).as_subclass(Handler)
    for call, expected in [(lambda: x.view(2, 2), ((2, 2), None)),
                           (lambda: x.view(gt.int32), ((gt.int32,), None)),
                           (lambda: x.view(dtype=gt.int32), ((), {"dtype": gt.int32}))]:
        func, args, kwargs = call()
        assert func is gt.Tensor.view and (args[1:], kwargs or None) == expected
    seen = []
    y = gt.ones(4)
    with Record():
        assert y.view(2, 2).shape == (2, 2) and y.view(gt.int32).dtype is gt.int32
    assert [(f, a) for f, a, _ in seen] == [(gt.Tensor.view, (2, 2)),
                                            (gt.Tensor.view, (gt.int32,))]


def test_a_view_by_a_symbolic_size_is_not_kept_for_later_views():
    x = gt.ones(4, 4)
    first = gt.ops.aten.view.default(x, (gt.SymInt(16),))
    assert first.shape == (16,)
    later = x.view(16)
    assert [type(n) for n in later._shape] == [int] and later.stride() == (1,)


def _record_of(t):
    """What a view or a recorded call leaves on its result, for comparing the two paths."""
    base = t._base
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.requires_grad,
            None if t.grad_fn is None else t.grad_fn.name(),
            None if base is None else (tuple(base.shape), base._base is None),
            t._view_creation, t._version)


@pytest.mark.parametrize("call", [
    lambda x: x.t(), lambda x: x.view(6), lambda x: x.transpose(-1, 0),
    lambda x: x.view(3, 2).t().reshape(6), lambda x: x.split(1), lambda x: x.unbind(1),
    lambda x: x * 2, lambda x: (x + 1).sum(), lambda x: x @ x.t()])
@pytest.mark.parametrize("grad", ["requires_grad", "plain", "no_grad", "view_of_no_grad"])
def test_the_fused_direct_kernels_leave_what_the_dispatched_path_leaves(call, grad):
    # The wrappers call the Autograd and ADInplaceOrView layers fused with the kernels below
    # them; under a dispatch mode every call goes through the dispatcher instead.
    def run():
        x = gt.arange(6.0).view(2, 3)
        if grad == "requires_grad":
            x.requires_grad_()
        if grad == "view_of_no_grad":
            x.requires_grad_()
            with gt.no_grad():
                x = x.view(3, 2)
        if grad == "no_grad":
            with gt.no_grad():
                out = call(x.requires_grad_())
        else:
            out = call(x)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        records = [_record_of(o) for o in outs]
        if outs[0].requires_grad:
            sum(o.sum() for o in outs).backward()
            records.append(x.grad.tolist() if x.grad is not None else None)
        return records

    fused = run()
    with op_log():
        dispatched = run()
    assert fused == dispatched


def test_autocast_on_one_thread_is_counted_per_thread_and_sends_every_call_the_general_way():
    """The wrappers' fast path reads how many threads have include/exclude sets away from
    the default; another thread entering and leaving autocast must not hide this one's."""
    import threading
    from glasstorch.dispatch.keys import threads_off_default
    a, b = (gt.from_numpy(x).clone() for x in _pair((4, 4), np.float32))
    assert threads_off_default[0] == 0
    entered, leave = threading.Event(), threading.Event()

    def other():
        with gt.autocast("cpu", dtype=gt.bfloat16):
            entered.set()
            leave.wait(5)

    worker = threading.Thread(target=other)
    worker.start()
    entered.wait(5)
    assert threads_off_default[0] == 1
    assert (a @ b).dtype == gt.float32          # this thread: no autocast, general path
    with gt.autocast("cpu", dtype=gt.bfloat16):
        assert threads_off_default[0] == 2
        leave.set()
        worker.join()
        assert threads_off_default[0] == 1
        assert (a @ b).dtype == gt.bfloat16     # still autocast here
    assert threads_off_default[0] == 0
    ours = a @ b
    theirs = torch.from_numpy(a.numpy()) @ torch.from_numpy(b.numpy())
    _check(ours, theirs)
