"""Tensor subclasses with __torch_dispatch__ (the Python key), run side by side with
PyTorch: wrapper subclasses that unwrap and rewrap ("TwoTensor", "LoggingTensor") under
autograd, what their handlers see, where they sit below a TorchDispatchMode, the order of
several subclasses, NotImplemented, and the key sets that mark them."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, dispatch_module, oracle_torch


def tree_map(fn, value):
    """Apply fn to every leaf of nested lists/tuples/dicts (enough of pytree for these)."""
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(tree_map(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: tree_map(fn, v) for k, v in value.items()}
    return fn(value)


def two_tensor(T, log):
    """A wrapper holding two tensors; every op runs on both."""
    class TwoTensor(T.Tensor):
        @staticmethod
        def __new__(cls, a, b):
            out = T.Tensor._make_wrapper_subclass(
                cls, a.shape, a.stride(), a.storage_offset(), dtype=a.dtype, device=a.device,
                requires_grad=a.requires_grad)
            out.a, out.b = a, b
            return out

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            log.append((str(func), tuple(t.__name__ for t in types)))
            out_a = func(*tree_map(lambda x: x.a if isinstance(x, TwoTensor) else x, args),
                         **kwargs)
            out_b = func(*tree_map(lambda x: x.b if isinstance(x, TwoTensor) else x, args),
                         **kwargs)
            if isinstance(out_a, T.Tensor) and not isinstance(out_a, TwoTensor):
                return TwoTensor(out_a, out_b)
            if isinstance(out_a, (list, tuple)):
                return type(out_a)(TwoTensor(x, y) for x, y in zip(out_a, out_b))
            return out_a
    return TwoTensor


def pair(T, a, b, requires_grad=False):
    return (T.tensor(np.asarray(a, dtype=np.float32), requires_grad=requires_grad),
            T.tensor(np.asarray(b, dtype=np.float32), requires_grad=requires_grad))


def parts(t):
    return (t.a.detach().numpy(), t.b.detach().numpy())


PROGRAMS = {
    "mul_add": lambda T, t, x: t * 2 + x,
    "sin": lambda T, t, x: t.sin(),
    "add_alpha": lambda T, t, x: T.add(t, t, alpha=3),
    "mm": lambda T, t, x: T.mm(t, x),
    "relu": lambda T, t, x: T.relu(t - 2),
    "where": lambda T, t, x: T.where(x > 2, t, x),
    "exp_": lambda T, t, x: (t * 1).exp_(),
}


def run_program(T, program):
    log = []
    TwoTensor = two_tensor(T, log)
    t = TwoTensor(*pair(T, [[1, 2], [3, 4]], [[5, 6], [7, 8]]))
    x = T.tensor(np.array([[1.0, 0.5], [2.0, 3.0]], dtype=np.float32))
    out = program(T, t, x)
    assert type(out) is TwoTensor
    return log, parts(out)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_wrapper_subclass_runs_as_in_pytorch(name):
    torch = oracle_torch()
    (log, (a, b)), (expected_log, (ea, eb)) = (run_program(gt, PROGRAMS[name]),
                                               run_program(torch, PROGRAMS[name]))
    assert log == expected_log
    np.testing.assert_allclose(a, ea, rtol=1e-6)
    np.testing.assert_allclose(b, eb, rtol=1e-6)


def test_autograd_runs_above_a_wrapper_subclass(T):
    log = []
    TwoTensor = two_tensor(T, log)
    a, b = pair(T, [1, 2, 3], [4, 5, 6], requires_grad=True)
    t = TwoTensor(a.detach().requires_grad_(), b.detach().requires_grad_())
    assert t.requires_grad and t.is_leaf
    y = (t * t).sin().sum()
    assert type(y) is TwoTensor and y.grad_fn is not None
    y.backward()
    grad_a, grad_b = parts(t.grad)
    expected = np.cos(np.array([1.0, 2, 3]) ** 2) * 2 * np.array([1.0, 2, 3])
    np.testing.assert_allclose(grad_a, expected, rtol=1e-5)
    np.testing.assert_allclose(grad_b, np.cos(np.array([4.0, 5, 6]) ** 2) * 2 * [4, 5, 6],
                               rtol=1e-5)
    # the forward ops reach the handler once each, below autograd
    assert [f for f, _ in log[:3]] == ["aten.mul.Tensor", "aten.sin.default",
                                       "aten.sum.default"]


def test_a_wrapper_has_metadata_and_no_data(T):
    TwoTensor = two_tensor(T, [])
    t = TwoTensor(*pair(T, [[1, 2, 3]], [[4, 5, 6]]))
    assert tuple(t.shape) == (1, 3) and t.stride() == (3, 1) and t.dtype == T.float32
    assert t.device.type == "cpu" and t.dim() == 2
    w = T.Tensor._make_wrapper_subclass(TwoTensor, (2, 3), dtype=T.float64)
    assert w.stride() == (3, 1) and w.dtype == T.float64 and not w.requires_grad


def test_a_dispatch_mode_sits_above_the_subclass(T):
    seen = []

    class Mode(dispatch_module(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(("mode", str(func), tuple(t.__name__ for t in types)))
            return func(*args, **(kwargs or {}))
    log = []
    TwoTensor = two_tensor(T, log)
    t = TwoTensor(*pair(T, [1, 2], [3, 4]))
    with Mode():
        out = t.neg()
    # the mode first; its call reaches the subclass, whose own calls the mode (off the
    # stack while its handler runs) does not see
    assert seen == [("mode", "aten.neg.default", ("TwoTensor",))]
    assert log == [("aten.neg.default", ("TwoTensor",))]
    assert_same(gt.tensor(parts(out)[0]), [-1.0, -2.0], check_dtype=False)


def test_types_list_only_dispatch_subclasses(T):
    """A __torch_function__-only subclass and a Parameter do not count in `types`."""
    seen = []

    class Mode(dispatch_module(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(tuple(t.__name__ for t in types))
            return func(*args, **(kwargs or {}))

    class Plain(T.Tensor):
        pass
    TwoTensor = two_tensor(T, [])
    p = T.nn.Parameter(T.ones(2))
    s = T.ones(2).as_subclass(Plain)
    t = TwoTensor(*pair(T, [1, 2], [3, 4]))
    with Mode():
        T.add(s, p)
        T.add(t, p)
    assert seen == [(), ("TwoTensor",)]


def test_subclasses_before_superclasses_and_not_implemented(T):
    log = []

    class Base(T.Tensor):
        @staticmethod
        def __new__(cls, elem):
            out = T.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)
            out.elem = elem
            return out

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            log.append((cls.__name__, tuple(t.__name__ for t in types)))
            if cls.__name__ == "Derived":
                return NotImplemented
            unwrapped = tree_map(lambda x: x.elem if isinstance(x, Base) else x, args)
            return Base(func(*unwrapped, **(kwargs or {})))

    class Derived(Base):
        pass
    base, derived = Base(T.ones(2)), Derived(T.ones(2) * 2)
    assert Base.__torch_function__ is T._C._disabled_torch_function_impl   # set for it
    out = T.add(base, derived)
    assert log == [("Derived", ("Derived", "Base")), ("Base", ("Derived", "Base"))]
    assert out.elem.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="Multiple dispatch failed for "
                                        "'torch._ops.aten.mul.Tensor'; all __torch_dispatch__"):
        T.mul(derived, derived)


def logging_tensor(T, log):
    """The classic LoggingTensor: records each op's name and rewraps the results."""
    class LoggingTensor(T.Tensor):
        __torch_function__ = T._C._disabled_torch_function_impl

        @staticmethod
        def __new__(cls, elem):
            out = T.Tensor._make_wrapper_subclass(cls, elem.shape, elem.stride(),
                                                  dtype=elem.dtype,
                                                  requires_grad=elem.requires_grad)
            out.elem = elem
            return out

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            log.append(func.overloadpacket.__name__)
            unwrap = (lambda x: x.elem if isinstance(x, LoggingTensor) else x)
            out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
            return tree_map(lambda x: LoggingTensor(x) if isinstance(x, T.Tensor) else x, out)
    return LoggingTensor


def test_logging_tensor_sees_the_forward_as_pytorch():
    logs = {}
    for T in (gt, oracle_torch()):
        log = []
        LoggingTensor = logging_tensor(T, log)
        x = LoggingTensor(T.tensor(np.arange(6.0).reshape(2, 3), dtype=T.float32))
        out = (x * 2).relu().t()
        assert type(out) is LoggingTensor and out.elem.tolist() == [[0, 6], [2, 8], [4, 10]]
        logs[T.__name__] = log
    assert logs["glasstorch"] == logs["torch"] == ["mul", "relu", "t"]


def test_dispatch_subclasses_carry_the_python_key():
    TwoTensor = two_tensor(gt, [])
    t = TwoTensor(*pair(gt, [1.0], [2.0]))

    class Plain(gt.Tensor):
        pass
    assert "Python" in str(gt.debug.dispatch_keys(t))
    assert "Python" not in str(gt.debug.dispatch_keys(gt.ones(1).as_subclass(Plain)))
    assert "Python" not in str(gt.debug.dispatch_keys(gt.nn.Parameter(gt.ones(1))))


def test_enable_reentrant_dispatch_brings_autograd_back_in_a_handler(T):
    seen = []

    class Mode(dispatch_module(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            x = T.ones(2, requires_grad=True)
            with T.overrides.enable_reentrant_dispatch():
                inside = (x * 2).requires_grad
            seen.append((str(func), inside, (x * 2).requires_grad))
            return func(*args, **(kwargs or {}))
    a = T.ones(1)
    with Mode():
        a + 1
    assert seen == [("aten.add.Tensor", True, False)]
