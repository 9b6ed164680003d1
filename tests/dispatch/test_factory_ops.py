"""Factories as dispatcher operators (ops/factories.py, ranges.py, random.py), side by side
with PyTorch: which ATen overload a dispatch mode sees for each public factory and how its
arguments are split, BackendSelect choosing the backend from `device=`, factories called
through torch.ops, *_like results staying out of the input's graph."""
import pytest

import glasstorch as gt
from glasstorch.dispatch.keys import DispatchKey
from oracle import dispatch_module, oracle_torch


def _plain(T, value):
    """A comparable form of one argument: tensors by shape, the rest by their str."""
    if isinstance(value, T.Tensor):
        return ("Tensor", tuple(value.shape))
    if isinstance(value, (list, tuple)):
        return [_plain(T, v) for v in value]
    if isinstance(value, T.Generator):
        return "Generator"
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return str(value)


def logged(T, program):
    log = []

    class Logging(dispatch_module(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            log.append((str(func), _plain(T, args),
                        {k: _plain(T, v) for k, v in sorted(kwargs.items())}))
            return func(*args, **kwargs)

    x = T.ones(2, 3)
    with Logging():
        out = program(T, x)
    return log, out


PROGRAMS = {
    "empty": lambda T, x: T.empty(2, 3),
    "empty_dtype_meta": lambda T, x: T.empty(2, 3, dtype=T.int64, device="meta"),
    "empty_channels_last": lambda T, x: T.empty(1, 2, 3, 4, memory_format=T.channels_last),
    "empty_strided": lambda T, x: T.empty_strided((2, 3), (1, 2)),
    "zeros": lambda T, x: T.zeros(16),
    "zeros_tuple": lambda T, x: T.zeros((2, 3), dtype=T.float64),
    "ones": lambda T, x: T.ones(2, dtype=T.int32),
    "full_int": lambda T, x: T.full((2,), 3),
    "full_requires_grad": lambda T, x: T.full((2,), 3.0, requires_grad=True),
    "empty_like": lambda T, x: T.empty_like(x),
    "zeros_like": lambda T, x: T.zeros_like(x),
    "ones_like_dtype": lambda T, x: T.ones_like(x, dtype=T.int64),
    "full_like": lambda T, x: T.full_like(x, 2),
    "new_zeros": lambda T, x: x.new_zeros(2),
    "new_empty": lambda T, x: x.new_empty((2, 2)),
    "new_ones": lambda T, x: x.new_ones(2),
    "new_full": lambda T, x: x.new_full((2,), 1.0),
    "new_empty_strided": lambda T, x: x.new_empty_strided((2,), (1,)),
    "arange_end": lambda T, x: T.arange(5),
    "arange_start": lambda T, x: T.arange(1, 5),
    "arange_step": lambda T, x: T.arange(1, 5, 2.0),
    "linspace": lambda T, x: T.linspace(0, 1, 5),
    "logspace": lambda T, x: T.logspace(0, 1, 5),
    "eye": lambda T, x: T.eye(3),
    "eye_m": lambda T, x: T.eye(2, 3),
    "rand": lambda T, x: T.rand(2),
    "rand_generator": lambda T, x: T.rand(2, generator=T.Generator()),
    "randn": lambda T, x: T.randn(2, 3),
    "randn_generator": lambda T, x: T.randn(2, generator=T.Generator()),
    "rand_like": lambda T, x: T.rand_like(x),
    "randn_like": lambda T, x: T.randn_like(x),
    "randint": lambda T, x: T.randint(5, (2,)),
    "randint_low": lambda T, x: T.randint(1, 5, (2,)),
    "randint_like": lambda T, x: T.randint_like(x, 5),
    "randint_like_low": lambda T, x: T.randint_like(x, 1, 5),
    "randperm": lambda T, x: T.randperm(4),
    "normal_float_float": lambda T, x: T.normal(0.0, 1.0, (2,)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_mode_sees_each_factory_as_torch_does(name):
    torch = oracle_torch()
    ours, out = logged(gt, PROGRAMS[name])
    theirs, expected = logged(torch, PROGRAMS[name])
    assert ours == theirs
    assert tuple(out.shape) == tuple(expected.shape) and str(out.dtype) == str(expected.dtype)
    assert out.stride() == expected.stride() and out.requires_grad == expected.requires_grad


def test_range_is_the_step_overload():
    torch = oracle_torch()
    with pytest.warns(UserWarning):
        ours, _ = logged(gt, lambda T, x: T.range(1, 5))
    with pytest.warns(UserWarning):
        theirs, _ = logged(torch, lambda T, x: T.range(1, 5))
    assert [entry[0] for entry in ours] == [entry[0] for entry in theirs] == ["aten.range.step"]


def test_tensor_from_data_shows_as_lift_fresh():
    """torch.tensor(data) copies the data, then passes the new tensor through
    aten.lift_fresh, where a mode can see (or replace) the constant."""
    torch = oracle_torch()
    for program in (lambda T, x: T.tensor([1, 2]), lambda T, x: T.as_tensor([[1.5], [2.0]]),
                    lambda T, x: x.new_tensor([1, 2])):
        ours, out = logged(gt, program)
        theirs, expected = logged(torch, program)
        assert ours == theirs and [e[0] for e in ours] == ["aten.lift_fresh.default"]
        assert out.tolist() == expected.tolist() and str(out.dtype) == str(expected.dtype)


def test_backend_select_picks_the_backend_from_the_device_argument():
    op = gt.ops.aten.zeros.default
    assert op.has_kernel_for(DispatchKey.BackendSelect)
    assert "BackendSelect: " in op.dump()
    with gt.debug.dispatch_trace() as trace:
        gt.zeros(2, device="meta")
        gt.zeros(2)
    paths = [e.path for e in trace.events if e.op == "aten::zeros"]
    assert paths == ["BackendSelect -> Meta", "BackendSelect -> CPU"]


def test_default_device_reaches_backend_select():
    gt.set_default_device("meta")
    try:
        assert gt.ones(2).device.type == "meta"
        assert gt.arange(3).is_meta and gt.randn(2).is_meta
    finally:
        gt.set_default_device(None)
    assert gt.ones(2).device.type == "cpu"


def test_factories_through_torch_ops_match_torch():
    torch = oracle_torch()
    for T in (gt, torch):
        z = T.ops.aten.zeros.default([2, 3], device="meta")
        assert z.is_meta and tuple(z.shape) == (2, 3)
        f = T.ops.aten.full.default([2], 7)
        assert f.tolist() == [7, 7] and str(f.dtype) == "torch.int64"
        a = T.ops.aten.arange.start_step(0, 6, 2)
        assert a.tolist() == [0, 2, 4]


def test_like_factories_stay_out_of_the_graph():
    torch = oracle_torch()
    for T in (gt, torch):
        x = T.ones(2, requires_grad=True)
        for t in (T.zeros_like(x), T.empty_like(x), T.rand_like(x), x.new_ones(2),
                  T.full_like(x, 3.0)):
            assert not t.requires_grad and t.grad_fn is None
        assert T.zeros_like(x, requires_grad=True).requires_grad


def test_factory_errors_are_unchanged_inside_a_mode():
    torch = oracle_torch()
    for T in (gt, torch):
        class PassThrough(dispatch_module(T).TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))
        with PassThrough():
            with pytest.raises(RuntimeError, match="negative"):
                T.empty(-1)
            with pytest.raises(RuntimeError):
                T.ops.aten.empty_strided.default([2, 3], [1])
