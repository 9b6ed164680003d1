"""make_fx (glasstorch.fx.experimental.proxy_tensor) side by side with PyTorch's: the ATen
ops recorded, the node names, constants captured as get_attr, decompositions, the backward
pass, and that the traced GraphModule computes what the function does."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.fx.experimental.proxy_tensor import make_fx
from oracle import oracle_torch


def torch_make_fx():
    oracle_torch()
    from torch.fx.experimental.proxy_tensor import make_fx as theirs
    return theirs


# Functions whose ATen-level ops glasstorch names as PyTorch does.
PROGRAMS = {
    "add": lambda T: lambda x, y: T.add(x, y, alpha=2),
    "relu_sum": lambda T: lambda x, y: x.relu().sum(1, keepdim=True),
    "views": lambda T: lambda x, y: x.view(6).unsqueeze(0).t(),
    "inplace": lambda T: lambda x, y: x.clone().add_(y).mul_(2),
    "where": lambda T: lambda x, y: T.where(x.gt(y), x, -y),
    "softmax": lambda T: lambda x, y: T.nn.functional.softmax(x * y, -1),
    "cat_index": lambda T: lambda x, y: (T.cat([x, y], 1)[0], x[:, 1:3]),
    "linear": lambda T: lambda x, y: T.nn.functional.linear(x, y, y[:, 0]),
    "scalar_arg": lambda T: lambda x, n: x * n,
    "sum_all": lambda T: lambda x, y: x.sum() + y.mean(),
    "scalar_overloads": lambda T: lambda x, y: (x > 0, x / 2, x / y, x ** 2, x % 2, 1 - x),
    "linear_no_bias": lambda T: lambda x, y: T.nn.functional.linear(x, y),
    "linear_3d": lambda T: lambda x, y: T.nn.functional.linear(x.view(1, 2, 3), y),
}


def describe(gm):
    return [(n.op, n.name, str(n.target)) for n in gm.graph.nodes]


def inputs(T):
    x = T.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    y = T.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    return x, y


def flat_numpy(out):
    items = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(o.detach().numpy()) for o in items]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_ops_and_names_as_torch_make_fx(name):
    torch = oracle_torch()
    theirs_fx = torch_make_fx()
    f_ours, f_theirs = PROGRAMS[name](gt), PROGRAMS[name](torch)
    args_ours, args_theirs = inputs(gt), inputs(torch)
    if name == "scalar_arg":
        args_ours, args_theirs = (args_ours[0], 3), (args_theirs[0], 3)
    ours = make_fx(f_ours)(*args_ours)
    theirs = theirs_fx(f_theirs)(*args_theirs)
    assert describe(ours) == describe(theirs)
    assert ours.code == theirs.code
    assert ours.print_readable(False) == theirs.print_readable(False)   # "f32[2, 3]" notes
    for a, b in zip(flat_numpy(ours(*args_ours)), flat_numpy(f_theirs(*args_theirs))):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_targets_are_op_overloads_and_names_follow_pytorch():
    gm = make_fx(lambda *a: a[0].sum() + a[1].sum())(gt.ones(2), gt.ones(2))
    nodes = list(gm.graph.nodes)
    assert [n.name for n in nodes[:2]] == ["arg0_1", "arg1_1"]
    calls = [n for n in nodes if n.op == "call_function"]
    assert all(isinstance(n.target, type(gt.ops.aten.add.Tensor)) for n in calls)
    assert calls[-1].target is gt.ops.aten.add.Tensor
    assert [n.name for n in calls] == ["sum_1", "sum_2", "add"]   # `sum` is a builtin
    assert tuple(calls[0].meta["val"].shape) == () and calls[0].meta["tensor_meta"].shape == ()


def test_module_parameters_become_param_constants():
    torch = oracle_torch()
    theirs_fx = torch_make_fx()
    torch.manual_seed(0)
    t_lin = torch.nn.Linear(3, 2)
    g_lin = gt.nn.Linear(3, 2)
    g_lin.weight.data = gt.tensor(t_lin.weight.detach().numpy().copy())
    g_lin.bias.data = gt.tensor(t_lin.bias.detach().numpy().copy())
    x_t, x_g = torch.ones(4, 3), gt.ones(4, 3)
    theirs = theirs_fx(t_lin)(x_t)
    ours = make_fx(g_lin)(x_g)
    assert describe(ours) == describe(theirs)
    assert sorted(dict(ours.named_parameters())) == ["_param_constant0", "_param_constant1"]
    np.testing.assert_allclose(ours(x_g).detach().numpy(), t_lin(x_t).detach().numpy(),
                               rtol=1e-6)


def test_unseen_tensors_become_tensor_constants():
    torch = oracle_torch()

    def trace(T, fx):
        def f(x):
            return x + T.tensor([1.0, 2.0]) * 3
        return fx(f)(T.ones(2))
    gm = trace(gt, make_fx)
    assert describe(gm) == describe(trace(torch, torch_make_fx())) == [
        ("placeholder", "x_1", "x_1"), ("get_attr", "_tensor_constant0", "_tensor_constant0"),
        ("call_function", "lift_fresh_copy", "aten.lift_fresh_copy.default"),
        ("call_function", "mul", "aten.mul.Tensor"), ("call_function", "add", "aten.add.Tensor"),
        ("output", "output", "output")]
    assert list(gm.state_dict()) == ["_tensor_constant0"]
    assert gm(gt.zeros(2)).tolist() == [3.0, 6.0]


def test_decomposition_table_records_the_decomposition():
    torch = oracle_torch()
    theirs_fx = torch_make_fx()

    def decompositions(T):
        return {T.ops.aten.relu.default: lambda x: x * (x.sign() + 1) * 0.5}

    ours = make_fx(lambda x: x.relu() + 1, decompositions(gt))(inputs(gt)[0])
    theirs = theirs_fx(lambda x: x.relu() + 1, decompositions(torch))(inputs(torch)[0])
    assert describe(ours) == describe(theirs)
    assert "relu" not in ours.code


def test_backward_pass_is_recorded():
    """glasstorch's autograd runs some steps without an operator call (PyTorch's
    `detach`, `ones_like`, `t`/`mm` where glasstorch has `transpose`/`matmul`), so the op
    sequences differ; the backward ops PyTorch records for relu are there, and the traced
    step computes PyTorch's gradient."""
    torch = oracle_torch()

    def step(T):
        def f(x, w):
            loss = (x @ w).relu().sum()
            loss.backward()
            return w.grad
        return f

    x_np = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    w_np = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
    ours = make_fx(step(gt))(gt.tensor(x_np), gt.tensor(w_np, requires_grad=True))
    ops = [str(n.target) for n in ours.graph.nodes if n.op == "call_function"]
    assert ops.index("aten.relu.default") < ops.index("aten.threshold_backward.default")
    assert ops[-1] == "aten.copy_.default"          # accumulating into w.grad

    w_t = torch.tensor(w_np, requires_grad=True)
    step(torch)(torch.tensor(x_np), w_t)
    x2 = gt.tensor(x_np)
    w2 = gt.tensor(w_np, requires_grad=True)
    np.testing.assert_allclose(ours(x2, w2).detach().numpy(), w_t.grad.numpy(), rtol=1e-6)


def test_autograd_grad_is_recorded():
    def f(x):
        y = (x * x).sum()
        (g,) = gt.autograd.grad(y, x)
        return g
    gm = make_fx(f)(gt.tensor([1.0, 2.0], requires_grad=True))
    ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert ops.count("aten.mul.Tensor") >= 3        # forward, and the two backward products
    assert gm(gt.tensor([3.0, -1.0])).tolist() == [6.0, -2.0]


def test_modes_that_are_not_supported_say_so():
    with pytest.raises(NotImplementedError, match="symbolic"):
        make_fx(lambda x: x, tracing_mode="symbolic")(gt.ones(1))
    with pytest.raises(NotImplementedError, match="record_module_stack=True"):
        make_fx(lambda x: x, record_module_stack=True)
    with pytest.raises(NotImplementedError, match="list, tuple or dict of tensors"):
        make_fx(lambda xs: xs[0])([gt.ones(1)])
    with pytest.raises(AssertionError, match="Unexpected tracing type: bogus"):
        make_fx(lambda x: x, tracing_mode="bogus")


def test_fake_mode_runs_under_fake_tensor_mode():
    from glasstorch._subclasses.fake_tensor import FakeTensor
    gm = make_fx(lambda x: x.relu() + 1, tracing_mode="fake")(gt.ones(2, 3))
    ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert ops == ["aten.relu.default", "aten.add.Tensor"]
    assert isinstance(next(iter(gm.graph.nodes)).meta["val"], FakeTensor)
    assert gm(gt.tensor([[-1.0, 2.0, 0.5]])).tolist() == [[1.0, 3.0, 1.5]]
