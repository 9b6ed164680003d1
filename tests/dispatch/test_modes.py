"""TorchDispatchMode (dispatch/modes.py) and OpOverload (_ops.py), run side by side with
PyTorch's: what a mode sees for a call (names, the args/kwargs split), nesting, the stack
inside a handler, autograd under a mode, per-thread stacks and errors in a handler."""
import threading

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, dispatch_module, oracle_torch


def logging_mode(T, log):
    class Logging(dispatch_module(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            log.append((str(func), len(args), tuple(sorted(kwargs))))
            return func(*args, **kwargs)
    return Logging()


# Programs whose ATen-level calls glasstorch already names as PyTorch does.
PROGRAMS = {
    "add": lambda T, x, w: T.add(x, x),
    "add_alpha": lambda T, x, w: T.add(x, x, alpha=2),
    "view": lambda T, x, w: x.view(12),
    "linear_2d": lambda T, x, w: T.nn.functional.linear(x, w, w[:, 0]),
    "softmax": lambda T, x, w: T.nn.functional.softmax(x, -1),
    "relu": lambda T, x, w: x.relu(),
    "sum_dim": lambda T, x, w: x.sum(1, keepdim=True),
    "add_": lambda T, x, w: x.clone().add_(1),
    "mse_loss": lambda T, x, w: T.nn.functional.mse_loss(x, x * 2),
    "index": lambda T, x, w: (x[0], x[:, 1:3]),
    "t": lambda T, x, w: x.t(),
    "cat": lambda T, x, w: T.cat([x, x], 1),
    "where": lambda T, x, w: T.where(x.gt(x * 0), x, -x),
    # the overload PyTorch's argument parser picks by the arguments' types
    "sum_all": lambda T, x, w: (x.sum(), T.sum(x), x.sum(dtype=T.float64)),
    "mean_prod_all": lambda T, x, w: (x.mean(), x.prod(), x.mean(0), x.prod(1)),
    "any_all_count_all": lambda T, x, w: (x.any(), x.all(), x.count_nonzero()),
    "compare_number": lambda T, x, w: (x > 0, x == 1, T.eq(x, 1), x != 1, x < 1, x <= 1.5,
                                       x >= True, x.gt(x)),
    "compare_inplace": lambda T, x, w: x.clone().gt_(0),
    "compare_out": lambda T, x, w: T.lt(x, 2, out=T.empty(3, 4, dtype=T.bool)),
    "div": lambda T, x, w: (x / 2, x / x, T.div(x, 2, rounding_mode="floor"),
                            x.clone().div_(2), T.true_divide(x, x)),
    "remainder_fmod": lambda T, x, w: (x % 2, x % x, T.fmod(x, 2), T.fmod(x, x)),
    "pow_rsub": lambda T, x, w: (x ** 2, x ** x, 2 ** x, T.pow(2.5, x), 1 - x, T.rsub(x, x)),
    "bitwise_number": lambda T, x, w: (x.long() & 1, T.bitwise_xor(x > 0, True)),
    "clamp_number": lambda T, x, w: (x.clamp(min=0), x.clamp(0, 1), x.clamp(max=x),
                                     T.clamp_min(x, 0), T.clamp_max(x, x), x.clip(-1, 1),
                                     x.clone().clamp_(max=1),
                                     T.nn.functional.hardtanh(x, 0.0, 6.0)),
    "lerp_xlogy_number": lambda T, x, w: (T.lerp(x, x * 2, 0.5), T.lerp(x, x, x),
                                          x.clone().lerp_(x, 0.25), T.xlogy(x, 2.0),
                                          T.xlogy(x, x)),
    "linear_no_bias": lambda T, x, w: T.nn.functional.linear(x, w),
    "linear_3d": lambda T, x, w: T.nn.functional.linear(x.view(1, 3, 4), w),
    "mm": lambda T, x, w: x.mm(w.t()),
    "isin": lambda T, x, w: (T.isin(x, x[0]), T.isin(x, 2.0), T.isin(3.0, x, invert=True)),
    "fill_": lambda T, x, w: (x.clone().fill_(2.0), x.clone().fill_(x[0, 0])),
    # nn.functional composites: the overloads PyTorch's C++ names (add_.Scalar, div_.Scalar)
    "rms_norm": lambda T, x, w: T.nn.functional.rms_norm(x, (4,), eps=1e-6),
    "l1_loss_cross_entropy": lambda T, x, w: (
        T.nn.functional.l1_loss(x, x * 2),
        T.nn.functional.cross_entropy(x, T.tensor([0, 3, 1]))),
    "dropout": lambda T, x, w: (T.nn.functional.dropout(x, 0.5),
                                T.nn.functional.alpha_dropout(x, 0.5, True)),
    # arguments given at their defaults, a positional int for an int list, a kernel's
    # redispatch of clone without its keyword-only default (conj's math-bits fallback)
    "explicit_defaults": lambda T, x, w: (
        T.add(x, x, alpha=1), x.sum(1, keepdim=False), T.ops.aten.sum.dim_IntList(x, 1),
        T.ops.aten.add.Tensor(x, x), T.ops.aten.clone.default(x, memory_format=None),
        T.nn.functional.leaky_relu(x, 0.01), (x * 1j).conj().add(1)),
    "scalar_overloads": lambda T, x, w: (
        T.ops.aten.add.Scalar(x, 1), T.ops.aten.sub.Scalar(x, 1, alpha=2),
        T.ops.aten.mul.Scalar(x, 3), T.ops.aten.div.Scalar(x, 4),
        T.ops.aten.div.Scalar_mode(x, 4, rounding_mode="floor"),
        T.ops.aten.mul_.Scalar(x.clone(), 2)),
}


def run_logged(T, program):
    x = T.tensor(np.arange(12.0).reshape(3, 4) - 5, dtype=T.float32)
    w = T.tensor(np.ones((5, 4)), dtype=T.float32)
    log = []
    with logging_mode(T, log):
        program(T, x, w)
    return log


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_mode_sees_the_calls_pytorch_makes(name):
    torch = oracle_torch()
    assert run_logged(gt, PROGRAMS[name]) == run_logged(torch, PROGRAMS[name])


# Programs whose backward passes reach a mode as PyTorch's do (AccumulateGrad's detach,
# which glasstorch does not dispatch, aside).
BACKWARD_PROGRAMS = {
    "sum": lambda T, x, w, b: x.exp().sum(),
    "linear_no_bias": lambda T, x, w, b: T.nn.functional.linear(x, w).sum(),
    "linear_3d": lambda T, x, w, b: T.nn.functional.linear(x.view(1, 3, 4), w).sum(),
    "linear_bias": lambda T, x, w, b: T.nn.functional.linear(x, w, b).sum(),
    "mm": lambda T, x, w, b: x.mm(w.t()).sum(),
    "layer_norm": lambda T, x, w, b: T.nn.functional.layer_norm(x, (4,)).mul(x).sum(),
    "select_slice": lambda T, x, w, b: x[1].sum() + x[:, 1:3].sum(),
}
# Programs whose results have PyTorch's grad_fn names (and gradients).
GRAD_FN_PROGRAMS = {
    "sum_mean_prod": lambda T, x, w, b: (x.sum(), x.mean(), x.prod(), x.sum(0), x.mean(0),
                                         x.prod(1), x.sum(dtype=T.float64)),
    "div": lambda T, x, w, b: (x / 2, x / b[:4], T.div(x, 2, rounding_mode="floor"),
                               T.div(x, b[:4], rounding_mode="trunc"), x.clone().div_(2)),
    "pow_rsub": lambda T, x, w, b: (x ** 2, x ** b[:4], x.clone().pow_(2), 2 ** x,
                                    T.pow(0, x), T.pow(-1.5, b), 1 - x, T.rsub(x, b[:4])),
    "remainder_fmod": lambda T, x, w, b: (x % 2, x % b[:4], T.fmod(x, 2), T.fmod(x, b[:4])),
    "scalar_overloads": lambda T, x, w, b: (
        T.ops.aten.add.Scalar(x, 1, alpha=3), T.ops.aten.sub.Scalar(x, 1),
        T.ops.aten.mul.Scalar(x, 3), T.ops.aten.div.Scalar(x, 4),
        T.ops.aten.div.Scalar_mode(x, 4, rounding_mode="floor"),
        T.ops.aten.div.Scalar_mode(x, 4, rounding_mode=None),
        T.nn.functional.rms_norm(x, (4,), eps=1e-6)),
    "clamp_lerp_xlogy": lambda T, x, w, b: (x.clamp(min=0), x.clamp(max=b[:4]),
                                            T.clamp_min(x, 0), T.clamp_max(x, 1),
                                            T.clamp_min(x, b[:4]), T.lerp(x, b[:4], 0.5),
                                            T.lerp(x, b[:4], b[1:]), T.xlogy(b[:4], 2.0),
                                            T.xlogy(b[:4], b[1:])),
}


def run_backward_logged(T, program):
    x = T.tensor(np.arange(12.0).reshape(3, 4) - 5.5, dtype=T.float32, requires_grad=True)
    w = T.tensor(np.arange(20.0).reshape(5, 4) / 7, dtype=T.float32, requires_grad=True)
    b = T.tensor(np.arange(5.0) + 1, dtype=T.float32, requires_grad=True)
    log = []
    with logging_mode(T, log):
        out = program(T, x, w, b)
        outs = out if isinstance(out, tuple) else (out,)
        names = [o.grad_fn.name() for o in outs]
        T.autograd.backward([o.sum() for o in outs])
    grads = [None if t.grad is None else t.grad.tolist() for t in (x, w, b)]
    return [entry for entry in log if entry[0] != "aten.detach.default"], names, grads


def assert_same_grads(ours, theirs):
    for grad, expected in zip(ours, theirs):
        assert (grad is None) == (expected is None)
        if grad is not None:
            np.testing.assert_allclose(grad, expected, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(BACKWARD_PROGRAMS))
def test_a_mode_sees_the_backward_calls_pytorch_makes(name):
    torch = oracle_torch()
    (log, _, grads), (expected_log, _, expected_grads) = (
        run_backward_logged(T, BACKWARD_PROGRAMS[name]) for T in (gt, torch))
    assert log == expected_log
    assert_same_grads(grads, expected_grads)


@pytest.mark.parametrize("name", sorted(GRAD_FN_PROGRAMS))
def test_each_overload_records_pytorchs_grad_fn(name):
    torch = oracle_torch()
    (_, names, grads), (_, expected_names, expected_grads) = (
        run_backward_logged(T, GRAD_FN_PROGRAMS[name]) for T in (gt, torch))
    assert names == expected_names
    assert_same_grads(grads, expected_grads)


def test_a_mode_sees_autograd_run_below_it(T):
    """The mode sits below autograd: the forward ops once, and the backward pass's ops."""
    log = []
    x = T.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    with logging_mode(T, log):
        y = (x * 3).relu()
        y.backward(T.ones(2, 2))
    names = [n for n, _, _ in log]
    assert names[:2] == ["aten.mul.Tensor", "aten.relu.default"]
    assert "aten.threshold_backward.default" in names
    assert_same(gt.tensor(x.grad.numpy()), [[3.0, 0.0], [3.0, 3.0]])
    assert y.grad_fn is not None


def test_modes_nest_and_a_handler_call_goes_to_the_mode_below(T):
    pd = dispatch_module(T)
    order = []

    class Named(pd.TorchDispatchMode):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            below = pd._get_current_dispatch_mode()
            order.append((self.name, str(func), below.name if below else None))
            return func(*args, **(kwargs or {}))

    x = T.ones(2)
    with Named("outer"), Named("inner") as inner:
        assert pd._get_current_dispatch_mode() is inner
        out = T.neg(x)
    assert order == [("inner", "aten.neg.default", "outer"),
                     ("outer", "aten.neg.default", None)]
    assert pd._get_current_dispatch_mode() is None
    assert out.tolist() == [-1.0, -1.0]


def test_a_mode_can_change_what_an_op_returns(T):
    class AddIsSub(dispatch_module(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is T.ops.aten.add.Tensor:
                func = T.ops.aten.sub.Tensor
            return func(*args, **(kwargs or {}))

    with AddIsSub():
        assert (T.ones(2) + T.ones(2)).tolist() == [0.0, 0.0]
    assert (T.ones(2) + T.ones(2)).tolist() == [2.0, 2.0]


def test_pop_mode_temporarily_and_disable_current_modes(T):
    pd = dispatch_module(T)
    log = []
    mode = logging_mode(T, log)
    x = T.ones(2)
    with mode:
        with pd._pop_mode_temporarily() as popped:
            assert popped is mode and pd._get_current_dispatch_mode() is None
            x.neg()
        assert pd._get_current_dispatch_mode() is mode
        x.neg()
    assert [n for n, _, _ in log] == ["aten.neg.default"]


def test_an_error_in_a_handler_leaves_the_stack_and_keys_as_they_were(T):
    pd = dispatch_module(T)

    class Refuses(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError(f"no {func}")

    x = T.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="no aten.mul.Tensor"):
        with Refuses():
            x * 2
    assert pd._get_current_dispatch_mode() is None
    y = (x * 2).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]
    if T is gt:
        assert gt.debug.local_keyset() == gt.debug.local_keyset()   # printable
        included, excluded = gt.debug.local_keyset()
        assert "Python" not in repr(included) and "Autograd" not in repr(excluded)


def test_modes_are_per_thread():
    log, other = [], []
    with logging_mode(gt, log):
        thread = threading.Thread(target=lambda: other.append(gt.ones(2).neg()))
        thread.start()
        thread.join()
    assert log == [] and other[0].tolist() == [-1.0, -1.0]


# ---- OpOverload and OpOverloadPacket ----------------------------------------------------

def test_op_overload_names_as_pytorch(T):
    add = T.ops.aten.add.Tensor
    assert str(add) == "aten.add.Tensor" and add.name() == "aten::add.Tensor"
    assert repr(add) == "<OpOverload(op='aten.add', overload='Tensor')>"
    assert add.overloadpacket is T.ops.aten.add and str(T.ops.aten.add) == "aten.add"
    assert repr(T.ops.aten.add) == "<OpOverloadPacket(op='aten.add')>"
    assert add._overloadname == "Tensor" and add is T.ops.aten.add.Tensor
    assert str(T.ops.aten.neg.default) == "aten.neg.default"
    assert T.ops.aten.neg.default.name() == "aten::neg"
    assert [(a.name, a.kwarg_only) for a in add._schema.arguments] == [
        ("self", False), ("other", False), ("alpha", True)]
    assert {"Tensor", "out"} <= set(T.ops.aten.add.overloads()) or T is gt
    assert (add(T.ones(2), T.ones(2), alpha=3)).tolist() == [4.0, 4.0]
    with pytest.raises(AttributeError, match="no overload name 'nope'"):
        T.ops.aten.add.nope


PACKET_CALLS = [     # (call, the overload PyTorch's packet picks, the value by NumPy)
    (lambda T, t: T.ops.aten.sum(t, [0], True), "aten.sum.dim_IntList",
     lambda a: a.sum(0, keepdims=True)),
    (lambda T, t: T.ops.aten.sum(t, [1]), "aten.sum.dim_IntList", lambda a: a.sum(1)),
    (lambda T, t: T.ops.aten.sum(t, dim=[1]), "aten.sum.dim_IntList", lambda a: a.sum(1)),
    (lambda T, t: T.ops.aten.sum(t), "aten.sum.default", lambda a: a.sum()),
    (lambda T, t: T.ops.aten.sum(t, dtype=T.float64), "aten.sum.default",
     lambda a: a.astype(np.float64).sum()),
    (lambda T, t: T.ops.aten.add(t, 2), "aten.add.Tensor", lambda a: a + 2),
    (lambda T, t: T.ops.aten.add(t, 2, alpha=3), "aten.add.Tensor", lambda a: a + 6),
    (lambda T, t: T.ops.aten.add(t, 2, 3), "aten.add.Scalar", lambda a: a + 6),
    (lambda T, t: T.ops.aten.div(t, 2, rounding_mode="floor"), "aten.div.Tensor_mode",
     lambda a: np.floor(a / 2)),
    (lambda T, t: T.ops.aten.max(t), "aten.max.default", lambda a: a.max()),
    (lambda T, t: T.ops.aten.max(t, 1)[0], "aten.max.dim", lambda a: a.max(1)),
]


@pytest.mark.parametrize("case", range(len(PACKET_CALLS)))
def test_packet_call_picks_the_overload_its_arguments_fit(T, case):
    call, expected, by_numpy = PACKET_CALLS[case]
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    log, t = [], T.tensor(data)
    with logging_mode(T, log):
        out = call(T, t)
    assert log[0][0] == expected
    reference = by_numpy(data)
    assert out.numpy().dtype == reference.dtype
    np.testing.assert_array_equal(out.numpy(), reference)


def test_packet_call_that_fits_no_overload_names_each_schema(T):
    with pytest.raises(RuntimeError, match="failed to match any schema") as info:
        T.ops.aten.sum(T.ones(2), "x")
    assert "sum.dim_IntList" in str(info.value) and "'dim'" in str(info.value)


def test_op_overload_is_the_dispatchers_operator_underneath():
    op = gt.ops.aten.add.Tensor
    assert op._op is gt.dispatch.dispatcher.find("aten::add.Tensor")
    assert "CPU:" in gt.debug.dispatch_table(op)
    assert gt.ops.aten is gt.ops.aten                         # one namespace object


def test_a_composite_op_reaches_a_mode_decomposed(T):
    """CompositeImplicitAutograd decomposes above the Python key, as PyTorch does at its
    Autograd key: a mode sees the ops the decomposition calls, not the op itself."""
    ns = f"modes_test_{T.__name__}"
    with T.library._scoped_library(ns, "DEF") as lib:
        lib.define("twice_plus_one(Tensor x) -> Tensor")
        lib.impl("twice_plus_one", lambda x: x * 2 + 1, "CompositeImplicitAutograd")
        log, x = [], T.ones(2)
        with logging_mode(T, log):
            out = getattr(T.ops, ns).twice_plus_one(x)
    assert [n for n, _, _ in log] == ["aten.mul.Tensor", "aten.add.Tensor"]
    assert out.tolist() == [3.0, 3.0]


def test_disable_current_modes_and_popping_an_empty_stack(T):
    pd = dispatch_module(T)
    log = []
    outer, inner = logging_mode(T, log), logging_mode(T, log)
    x = T.ones(2)
    with outer, inner:
        with pd._disable_current_modes() as saved:
            assert saved == [inner, outer] and pd._get_current_dispatch_mode() is None
            assert pd._len_torch_dispatch_stack() == 0
            x.neg()
        assert pd._get_current_dispatch_mode_stack() == [outer, inner]
    assert log == []
    with pytest.raises(RuntimeError, match="pop from empty mode stack"):
        pd._pop_mode()
