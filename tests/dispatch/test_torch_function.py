"""The __torch_function__ protocol (glasstorch.overrides), run side by side with PyTorch's:
what a TorchFunctionMode and a handler see for a call (the function's name, the types, the
args/kwargs split), the order of modes and overriding types, NotImplemented, non-Tensor
objects (as torch.fx's Proxy), Tensor's default __torch_function__ on subclasses,
nn.Parameter's opt-out, the disabling guards and the introspection helpers."""
import threading

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, dispatch_module, oracle_torch


def other(T):
    return oracle_torch() if T is gt else gt


def describe(T, func) -> str:
    """A function as both libraries can name it: 'Tensor.add', 'add', 'T.__get__'."""
    name = getattr(func, "__name__", repr(func))
    if name == "__get__":
        return "__get__"
    return ("Tensor." if T.overrides.is_tensor_method_or_property(func) else "") + name


def type_names(types) -> tuple:
    return tuple(t.__name__ for t in types)


def logging_mode(T, log, tag="mode"):
    class Logging(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            log.append((tag, describe(T, func), type_names(types), len(args),
                        None if kwargs is None else tuple(sorted(kwargs))))
            return func(*args, **(kwargs or {}))
    return Logging()


def inputs(T):
    x = T.tensor(np.arange(12.0).reshape(3, 4) - 5, dtype=T.float32)
    w = T.tensor(np.ones((5, 4)), dtype=T.float32)
    return x, w


# Programs whose public calls glasstorch passes on as PyTorch does.
PROGRAMS = {
    "add": lambda T, x, w: T.add(x, x),
    "add_alpha": lambda T, x, w: T.add(x, 1, alpha=2),
    "operator": lambda T, x, w: (x + 1, 1 + x, x * 2, -x, x == x, x // 2, 2 - x, 2 ** x),
    "method": lambda T, x, w: (x.sum(0), x.view(2, 6), x.relu(), x.add_(0)),
    "index": lambda T, x, w: (x[0], x[:, 1:3]),
    "setitem": lambda T, x, w: x.__setitem__(0, 1.0),
    "matmul": lambda T, x, w: x @ w.mT,
    "cat": lambda T, x, w: T.cat([x, x]),
    "keywords": lambda T, x, w: (T.sum(x, dim=0), T.cat([x, x], dim=1),
                                 x.sum(dim=1, keepdim=True), T.add(x, 1, alpha=1)),
    "flatten": lambda T, x, w: T.flatten(x),
    "relu": lambda T, x, w: T.relu(x),
    "F_relu": lambda T, x, w: T.nn.functional.relu(x),
    "F_softmax": lambda T, x, w: T.nn.functional.softmax(x, dim=0),
    "F_dropout": lambda T, x, w: T.nn.functional.dropout(x, 0.5, training=False),
    "F_linear": lambda T, x, w: T.nn.functional.linear(x, w),
    "zeros_like": lambda T, x, w: T.zeros_like(x),
}


def run_logged(T, program):
    x, w = inputs(T)
    log = []
    with logging_mode(T, log):
        program(T, x, w)
    return log


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_mode_sees_the_calls_pytorch_makes(name):
    torch = oracle_torch()
    assert run_logged(gt, PROGRAMS[name]) == run_logged(torch, PROGRAMS[name])


def test_a_mode_sees_python_functions_as_themselves(T):
    """F.relu reaches the mode as F.relu itself (what torch.fx records)."""
    x, _ = inputs(T)
    seen = []

    class Record(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))
    with Record():
        T.nn.functional.relu(x)
        T.relu(x)
        x.relu()
    assert seen == [T.nn.functional.relu, T.relu, T.Tensor.relu]


def test_a_call_inside_a_handler_goes_to_the_mode_below(T):
    log = []
    x, _ = inputs(T)
    with logging_mode(T, log, "outer"):
        with logging_mode(T, log, "inner"):
            T.add(x, 1)
            assert T.overrides._get_current_function_mode() is not None
    assert [(tag, name) for tag, name, *_ in log] == [("inner", "add"), ("outer", "add")]
    assert T._C._len_torch_function_stack() == 0


def test_a_mode_result_replaces_the_call(T):
    class FortyTwo(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return 42
    x, _ = inputs(T)
    with FortyTwo():
        assert T.add(x, x) == 42 and x.sum() == 42 and x[0] == 42


def test_a_failing_handler_leaves_the_stack_as_it_was(T):
    class Boom(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            raise ValueError("boom")
    x, _ = inputs(T)
    with pytest.raises(ValueError, match="boom"):
        with Boom():
            T.add(x, x)
    assert T._C._len_torch_function_stack() == 0
    assert not T._C._is_torch_function_mode_enabled()


def test_modes_are_per_thread(T):
    log, other_thread = [], []
    x, _ = inputs(T)
    with logging_mode(T, log):
        worker = threading.Thread(target=lambda: other_thread.append(T.add(x, x)))
        worker.start()
        worker.join()
    assert log == [] and len(other_thread) == 1


# ---- overriding types ------------------------------------------------------------------

def subclasses(T, log):
    class S(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append((cls.__name__, describe(T, func), type_names(types)))
            return super().__torch_function__(func, types, args, kwargs)

    class S2(S):
        pass

    class Refuses(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append((cls.__name__, describe(T, func), type_names(types)))
            return NotImplemented
    return S, S2, Refuses


def test_subclasses_go_before_their_superclasses(T):
    log = []
    S, S2, _ = subclasses(T, log)
    x, _ = inputs(T)
    s, s2 = x.as_subclass(S), x.as_subclass(S2)
    out = T.add(s, s2)
    assert log == [("S2", "add", ("S2", "S"))] and type(out) is S2
    log.clear()
    assert type(T.add(x, s)) is S and log == [("S", "add", ("S",))]


def test_not_implemented_passes_to_the_next_type(T):
    log = []
    _, _, Refuses = subclasses(T, log)

    class Accepts(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append((cls.__name__, describe(T, func), type_names(types)))
            return "accepted"
    x, _ = inputs(T)
    r, a = x.as_subclass(Refuses), x.as_subclass(Accepts)
    assert T.mul(r, a) == "accepted"
    assert log == [("Refuses", "mul", ("Refuses", "Accepts")),
                   ("Accepts", "mul", ("Refuses", "Accepts"))]


def test_the_default_handler_declines_foreign_types(T):
    """Tensor.__torch_function__ returns NotImplemented when a type is not a superclass."""
    log = []
    S, _, Refuses = subclasses(T, log)
    x, _ = inputs(T)
    with pytest.raises(TypeError, match="Multiple dispatch failed"):
        T.mul(x.as_subclass(Refuses), x.as_subclass(S))
    assert [name for name, *_ in log] == ["Refuses", "S"]


def test_every_handler_refusing_is_a_type_error_naming_them():
    messages = []
    for T in (gt, oracle_torch()):
        _, _, Refuses = subclasses(T, [])
        r = inputs(T)[0].as_subclass(Refuses)
        with pytest.raises(TypeError) as e:
            T.add(r, r)
        messages.append(str(e.value).split("For more information")[0].rstrip())
    assert messages[0] == messages[1].replace("torch.", "glasstorch.", 0)
    assert "Multiple dispatch failed for 'torch.add'" in messages[0]
    assert "tensor subclass" in messages[0] and "Refuses" in messages[0]


class Proxy:
    """An object that is not a Tensor but overrides, like torch.fx's Proxy."""

    def __init__(self, log):
        self.log = log

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args[0].log.append(("proxy", func, type_names(types), len(args), kwargs))
        return "handled"


def first_proxy(args):
    for a in args:
        if isinstance(a, Proxy):
            return a
        if isinstance(a, (list, tuple)):
            return first_proxy(a)


@pytest.mark.parametrize("call", [
    lambda T, p, x: T.relu(p), lambda T, p, x: T.add(p, 1), lambda T, p, x: T.cat([p, p]),
    lambda T, p, x: T.sum(p), lambda T, p, x: T.nn.functional.relu(p),
    lambda T, p, x: T.nn.functional.linear(p, x), lambda T, p, x: T.flatten(p),
], ids=["relu", "add", "cat", "sum", "F.relu", "F.linear", "flatten"])
def test_non_tensor_objects_reach_their_handler(call):
    seen = {}
    for T in (gt, oracle_torch()):
        log = []
        p = Proxy(log)
        Proxy.__torch_function__ = classmethod(
            lambda cls, func, types, args=(), kwargs=None: first_proxy(args).log.append(
                (describe(T, func), type_names(types), len(args), kwargs)) or "handled")
        assert call(T, p, inputs(T)[0]) == "handled"
        seen[T.__name__] = log
    assert seen["glasstorch"] == seen["torch"]


def test_a_tensor_meeting_a_non_tensor_gives_it_the_call(T):
    log = []
    p = Proxy(log)
    x, _ = inputs(T)
    Proxy.__torch_function__ = classmethod(
        lambda cls, func, types, args=(), kwargs=None: log.append(
            (describe(T, func), type_names(types), len(args))) or "handled")
    assert x + p == "handled" and x.add(p) == "handled"
    assert log == [("Tensor.add", ("Proxy",), 2)] * 2


# ---- Tensor.__torch_function__: results of ops on a subclass ----------------------------

def test_results_of_ops_on_a_subclass_are_the_subclass(T):
    class S(T.Tensor):
        pass
    x, _ = inputs(T)
    s = x.as_subclass(S)
    for out in (s + 1, s[0], s.T, s.sum(), T.add(x, s), s.view(12), T.cat([s, x]),
                T.nn.functional.relu(s), s.mT, *s.max(0)):
        assert type(out) is S
    values, indices = s.max(0)
    assert type(s.max(0)).__name__ == "max" and type(indices) is S
    assert type(s.shape) is type(x.shape)
    assert_same(gt.tensor((s * 2).numpy()) if T is gt else gt.tensor((s * 2).numpy()),
                (np.arange(12.0).reshape(3, 4) - 5) * 2, check_dtype=False)


def test_grad_of_a_subclass_is_not_rewrapped(T):
    class S(T.Tensor):
        pass
    s = T.ones(3).as_subclass(S).requires_grad_()
    (s * 2).sum().backward()
    assert type(s.grad) is T.Tensor and type(s * 2) is S


# ---- backward: the engine's own calls reach no handler (C++ in PyTorch) -------------------

BACKWARD_OPS = {
    "view": lambda x: x.view(24), "reshape": lambda x: x.reshape(3, 8), "t": lambda x: x.t(),
    "expand": lambda x: x[:1].expand(3, 6), "permute": lambda x: x.permute(1, 0),
    "sum": lambda x: x.sum(0), "mean": lambda x: x.mean(), "mul": lambda x: x * x,
    "split": lambda x: x.split(2, 1)[1], "exp": lambda x: x.exp()}
BACKWARD_CALLS = {
    "Tensor.backward": lambda T, x, y: y.backward(T.ones_like(y)),
    "autograd.backward": lambda T, x, y: T.autograd.backward(y, T.ones_like(y)),
    "autograd.grad": lambda T, x, y: T.autograd.grad(y, x, T.ones_like(y), create_graph=True),
    "inputs=": lambda T, x, y: y.backward(T.ones_like(y), inputs=[x])}


@pytest.mark.parametrize("call", sorted(BACKWARD_CALLS))
@pytest.mark.parametrize("op", sorted(BACKWARD_OPS))
def test_a_mode_around_backward_sees_the_call_and_not_the_formulas(op, call):
    """backward and grad honour the protocol; the formulas and the accumulation run inside
    the handler's call, with the mode off the stack, and reach it no more than PyTorch's."""
    def logged(T):
        x = T.tensor(np.arange(24.0).reshape(4, 6), requires_grad=True)
        y = BACKWARD_OPS[op](x)
        log = []
        with logging_mode(T, log):
            BACKWARD_CALLS[call](T, x, y)
        return log, x.grad
    ours, grad = logged(gt)
    theirs, expected = logged(oracle_torch())
    assert ours == theirs
    if expected is not None:
        assert_same(grad, expected)


def test_a_node_called_directly_reaches_no_mode(T):
    x = T.randn(4, 6, requires_grad=True)
    for y in (x.t(), x * x, x.sum(0)):
        node, grad, log = y.grad_fn, T.ones_like(y), []
        with logging_mode(T, log):
            node(grad)
        assert log == [], node.name()


def _logging_subclass(T, seen: list):
    """A Tensor subclass whose handler writes the name of each call it sees into `seen`."""
    class S(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)
    return S


def test_a_subclass_gradient_reaches_no_handler_in_the_formulas(T):
    """A formula on a gradient of a subclass neither asks its handler nor keeps its class."""
    seen = []
    S = _logging_subclass(T, seen)
    x = T.randn(3, 4, requires_grad=True)
    y = (x * 2).view(12).t()
    grad = T.ones(12).as_subclass(S)
    seen.clear()
    y.backward(grad)
    assert not {"reshape", "view", "mul", "t", "detach", "clone", "copy_"} & set(seen), seen
    assert type(x.grad) is T.Tensor and x.grad.tolist() == [[2.0] * 4] * 3


def test_hooks_and_custom_backwards_reach_handlers_as_ordinary_code(T):
    """What the engine calls back (tensor hooks, a custom Function's backward, saved-tensor
    unpack hooks) is ordinary Python: a subclass's handler sees its calls."""
    seen = []
    S = _logging_subclass(T, seen)

    class Triple(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g.as_subclass(S).mul(3).as_subclass(T.Tensor)

    def unpack(t):
        t.as_subclass(S).neg()
        return t
    x = T.randn(3, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        y = Triple.apply(x.exp()).sin()
    y.register_hook(lambda g: g.as_subclass(S).add(1).as_subclass(T.Tensor))
    y.sum().backward()
    assert seen.count("add") == 1 and seen.count("mul") == 1 and seen.count("neg") >= 1
    expected = (1 + 1) * 3 * x.detach().exp() * x.detach().exp().cos()   # the hook adds 1
    np.testing.assert_allclose(x.grad.tolist(), expected.tolist(), rtol=1e-5)


@pytest.mark.parametrize("op", ["view", "t", "permute", "sum", "mul"])
def test_a_dispatch_mode_still_sees_the_formulas_aten_ops(op):
    def logged(T):
        class Log(dispatch_module(T).TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                log.append(str(func))
                return func(*args, **(kwargs or {}))
        x = T.tensor(np.arange(24.0).reshape(4, 6), requires_grad=True)
        y = BACKWARD_OPS[op](x)
        grad, log = T.ones_like(y), []
        with Log():
            T.autograd.grad(y, x, grad)
        return log
    assert logged(gt) == logged(oracle_torch())


def test_as_subclass_shares_data_and_stays_in_the_graph(T):
    class S(T.Tensor):
        pass
    x = T.ones(3)
    s = x.as_subclass(S)
    x.add_(1)
    assert s.tolist() == [2.0, 2.0, 2.0]
    leaf = T.ones(2, requires_grad=True)
    t = leaf.as_subclass(S)
    assert type(t.grad_fn).__name__ == "AliasBackward0" and not t.is_leaf
    (t * 3).sum().backward()
    assert leaf.grad.tolist() == [3.0, 3.0]


def test_make_subclass_is_a_leaf(T):
    class S(T.Tensor):
        pass
    x = T.ones(2, requires_grad=True) * 2
    s = T.Tensor._make_subclass(S, x, True)
    assert type(s) is S and s.is_leaf and s.requires_grad and s.grad_fn is None
    assert s.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError):
        T.ones(2).as_subclass(int)


def test_parameters_opt_out(T):
    p = T.nn.Parameter(T.ones(2))
    assert p.__torch_function__ is T._C._disabled_torch_function_impl
    assert type(p + 1) is T.Tensor and type(p[0]) is T.Tensor
    assert not T.overrides.has_torch_function((p,))
    log = []
    with logging_mode(T, log):
        p * 2
    assert log == [("mode", "Tensor.mul", (), 2, None)]


# ---- guards and helpers ----------------------------------------------------------------

def test_disable_torch_function_subclass_keeps_modes(T):
    class S(T.Tensor):
        pass
    s = T.ones(2).as_subclass(S)
    log = []
    with logging_mode(T, log):
        with T._C.DisableTorchFunctionSubclass():
            out = s + 1
            assert T._C._is_torch_function_mode_enabled()
    assert type(out) is T.Tensor and [n for _, n, *_ in log] == ["Tensor.add"]
    assert T.DisableTorchFunctionSubclass is T._C.DisableTorchFunctionSubclass


def test_disable_torch_function_turns_off_modes_too(T):
    class S(T.Tensor):
        pass
    s = T.ones(2).as_subclass(S)
    log = []
    with logging_mode(T, log):
        with T._C.DisableTorchFunction():
            out = s + 1
            assert not T._C._is_torch_function_mode_enabled()
    assert type(out) is T.Tensor and log == []


def test_has_torch_function_and_friends(T):
    class S(T.Tensor):
        pass
    x, _ = inputs(T)
    s = x.as_subclass(S)
    p = Proxy([])
    ov = T.overrides
    assert not ov.has_torch_function((x, 1)) and ov.has_torch_function((x, s))
    assert ov.has_torch_function_unary(p) and not ov.has_torch_function_unary(x)
    assert ov.has_torch_function_variadic(x, s) and not ov.has_torch_function_variadic(x, x)
    assert ov.is_tensor_like(x) and ov.is_tensor_like(s) and ov.is_tensor_like(p)
    assert not ov.is_tensor_like(1)
    assert ov.is_tensor_method_or_property(T.Tensor.add)
    assert ov.is_tensor_method_or_property(T.Tensor.T.__get__)
    assert not ov.is_tensor_method_or_property(T.add)
    with logging_mode(T, []):
        assert ov.has_torch_function((x,)) and T._C._is_torch_function_mode_enabled()


def test_handle_torch_function_for_a_python_function(T):
    log = []

    def scale(a, factor=2):
        if T.overrides.has_torch_function_unary(a):
            return T.overrides.handle_torch_function(scale, (a,), a, factor=factor)
        return a * factor
    p = Proxy(log)
    Proxy.__torch_function__ = classmethod(
        lambda cls, func, types, args=(), kwargs=None: log.append(
            (func is scale, type_names(types), len(args), kwargs)) or "handled")
    assert scale(p) == "handled" and log == [(True, ("Proxy",), 1, {"factor": 2})]
    x, _ = inputs(T)
    mode_log = []
    with logging_mode(T, mode_log):
        scale(x)
    assert mode_log[0] == ("mode", "scale", ("Tensor",), 1, ("factor",))


def test_overridable_and_ignored_functions(T):
    overridable = T.overrides.get_overridable_functions()
    assert T.add in overridable[T] and T.cat in overridable[T]
    assert T.Tensor.add in overridable[T.Tensor]
    assert T.nn.functional.relu in overridable[T.nn.functional]
    ignored = T.overrides.get_ignored_functions()
    assert T.tensor in ignored and T.add not in ignored


def test_matmul_with_a_non_tensor_is_pythons_type_error(T):
    """`x @ 2`: the operator gives NotImplemented, and Python raises its own error, for a
    subclass that overrides __torch_function__ (through its handler) too."""
    x, _ = inputs(T)

    class Sub(T.Tensor):
        pass

    for left in (x, x.as_subclass(Sub)):
        name = type(left).__name__
        with pytest.raises(TypeError, match=rf"unsupported operand type\(s\) for @: '{name}' "
                                            "and 'int'"):
            left @ 2


@pytest.mark.parametrize("expr", ["2 @ x", "'a' - x", "'a' ** x", "x // 'a'", "'a' // x"])
def test_operators_pytorch_writes_in_python_turn_type_errors_into_not_implemented(expr):
    """Under a mode, `2 @ x` reaches the mode as __rmatmul__, whose TypeError (the mode's
    call of the operator gives NotImplemented) ends as Python's own operand error, as in
    PyTorch, not as a dispatch failure naming the mode."""
    messages = {}
    for T in (gt, oracle_torch()):
        x, _ = inputs(T)
        with logging_mode(T, []), pytest.raises(TypeError) as caught:
            eval(expr, {"x": x})
        messages[T] = str(caught.value)
    assert messages[gt] == messages[oracle_torch()]
    assert "unsupported operand" in messages[gt]
