"""The autograd core: recording, the engine, grad modes, hooks, errors, against PyTorch."""
import gc
import weakref

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(0)


def pair(shape, layout="contiguous"):
    """The same float64 leaf in glasstorch and torch, in a given memory layout."""
    T = oracle_torch()
    data = rng.standard_normal(shape)
    if layout == "transposed":
        g = gt.tensor(data.T.copy()).t().requires_grad_()
        t = T.tensor(data.T.copy()).t().requires_grad_()
    else:
        g = gt.tensor(data).requires_grad_()
        t = T.tensor(data).requires_grad_()
    return g, t


FUNCTIONS = {
    "add_broadcast": lambda L, a, b: (a + b[0]).sum(),
    "sub_alpha": lambda L, a, b: L.sub(a, b, alpha=2).sum(),
    "mul": lambda L, a, b: (a * b).sum(),
    "div": lambda L, a, b: (a / (b * b + 1)).sum(),
    "neg_exp": lambda L, a, b: (-a).exp().mean(),
    "log_sqrt": lambda L, a, b: ((a * a + 1).log() + (b * b + 1).sqrt()).sum(),
    "tanh_sigmoid_abs": lambda L, a, b: (a.tanh() * b.sigmoid() + a.abs()).sum(),
    "pow_scalar": lambda L, a, b: (a ** 3).sum(),
    "pow_tensor": lambda L, a, b: ((a * a + 1) ** b).sum(),
    "sum_dim": lambda L, a, b: (a.sum(0) * b.sum(0)).sum() + (b.sum(1, keepdim=True) * a).sum(),
    "mean_dim": lambda L, a, b: (a.mean(1) * 3).sum() + b.mean(),
    "views": lambda L, a, b: (a.t().reshape(-1).view(3, 2).permute(1, 0) * b).sum(),
    "expand_unsqueeze": lambda L, a, b: a.unsqueeze(0).expand(4, 2, 3).sum() + b.squeeze().sum(),
    "select_slice": lambda L, a, b: (a[1] * b[0, ::2].sum() + a[:, 1:].sum()).sum(),
    "matmul": lambda L, a, b: (a @ b.t()).exp().sum(),
    "mm_chain": lambda L, a, b: L.mm(a, b.t()).mm(a).sum(),
    "clone_cast": lambda L, a, b: (a.clone().float().double() * b).sum(),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_gradients_match_torch(name, layout):
    T = oracle_torch()
    f = FUNCTIONS[name]
    ga, ta = pair((2, 3), layout)
    gb, tb = pair((2, 3), layout)
    f(gt, ga, gb).backward()
    f(T, ta, tb).backward()
    for g, t in ((ga, ta), (gb, tb)):
        assert (g.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert_same(g.grad, t.grad, rtol=1e-10, atol=1e-12, check_stride=False)
            assert g.grad.stride() == g.stride()     # .grad keeps the leaf's layout


@pytest.mark.parametrize("name", ["mul", "div", "neg_exp", "tanh_sigmoid_abs", "pow_tensor",
                                  "matmul", "sum_dim"])
def test_double_backward_matches_torch(name):
    T = oracle_torch()
    f = FUNCTIONS[name]
    ga, ta = pair((2, 3))
    gb, tb = pair((2, 3))
    (gga,) = gt.autograd.grad(f(gt, ga, gb), ga, create_graph=True)
    (tga,) = T.autograd.grad(f(T, ta, tb), ta, create_graph=True)
    assert_same(gga, tga, rtol=1e-10, atol=1e-12, check_stride=False)
    g2 = gt.autograd.grad((gga * gga).sum(), [ga, gb], allow_unused=True)
    t2 = T.autograd.grad((tga * tga).sum(), [ta, tb], allow_unused=True)
    for x, y in zip(g2, t2):
        assert (x is None) == (y is None)
        if x is not None:
            assert_same(x, y, rtol=1e-9, atol=1e-10, check_stride=False)


def test_numerical_jacobian_of_a_composite():
    x = gt.tensor(rng.standard_normal((3,)), requires_grad=True)

    def f(v):
        return ((v * v).exp() / (v.sigmoid() + 1)).sum()
    f(x).backward()
    eps = 1e-6
    base = x.detach().numpy().copy()
    numeric = []
    for i in range(3):
        up, down = base.copy(), base.copy()
        up[i] += eps
        down[i] -= eps
        numeric.append((f(gt.tensor(up)).item() - f(gt.tensor(down)).item()) / (2 * eps))
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6)


def test_graph_structure_and_names_like_torch():
    a = gt.ones(2, requires_grad=True)
    b = gt.ones(2, requires_grad=True)
    c = a * b
    d = c + a
    assert d.grad_fn.name() == "AddBackward0"
    (n0, i0), (n1, i1) = d.grad_fn.next_functions
    assert n0 is c.grad_fn and i0 == 0
    assert type(n1).__name__ == "AccumulateGrad" and n1.variable is a
    assert (gt.ones(2) * a).grad_fn.next_functions[0] == (None, 0)
    assert a.sum().grad_fn.name() == "SumBackward0" and a.sum(0).grad_fn.name() == "SumBackward1"
    assert not c.is_leaf and a.is_leaf and (a > 0).grad_fn is None
    assert not (a > 0).requires_grad


def test_calling_a_node_returns_what_torchs_returns():
    """A node called directly gives its inputs' gradients: the one Tensor of a node with one
    input (split's, sum's), a tuple otherwise (mul's, add's), as PyTorch's."""
    torch = oracle_torch()

    def results(T):
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a, _ = T.ones(2, 3, requires_grad=True).split(2, 1)
        calls = [(x * 2).grad_fn(T.ones(3)), (x + x).grad_fn(T.ones(3)),
                 a.grad_fn(T.ones(2, 2), T.ones(2, 1)), x.sum().grad_fn(T.tensor(1.0)),
                 (x * x).grad_fn(T.ones(3))]
        return [r if isinstance(r, tuple) else (r,) for r in calls], \
            [type(r) is tuple for r in calls]
    ours, ours_kinds = results(gt)
    theirs, their_kinds = results(torch)
    assert ours_kinds == their_kinds == [True, True, False, False, True]
    for mine, other in zip(ours, theirs):
        assert len(mine) == len(other)
        for m, o in zip(mine, other):
            assert (m is None) == (o is None)
            if m is not None:
                assert m.requires_grad == o.requires_grad
                np.testing.assert_array_equal(m.detach().numpy(), o.detach().numpy())


def test_engine_runs_later_nodes_first():
    a = gt.ones(2, requires_grad=True)
    b = a * 2
    c = a * 3
    d = b * c
    e = c * 4
    order = []
    for name, t in (("b", b), ("c", c), ("d", d), ("e", e)):
        t.grad_fn.register_prehook(lambda g, name=name: order.append(name))
    (d + e).sum().backward()
    assert order == ["e", "d", "c", "b"]


def test_grad_accumulates_and_nonscalar_needs_a_gradient():
    x = gt.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0]
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    (x * 2).backward(gt.tensor([1.0, 0.0, 2.0]))
    assert x.grad.tolist() == [6.0, 4.0, 8.0]
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(gt.ones(2))
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        gt.ones(2).sum().backward()


def test_saved_tensors_are_freed_unless_retain_graph():
    x = gt.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        y.backward()
    z = (x + 1).sum()       # saved nothing: may run twice
    z.backward()
    z.backward()


def test_inplace_errors_and_version_check():
    x = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.mul_(2)
    y = x.sigmoid()
    z = y * 1
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; "
                                           "expected version 0"):
        (y.sigmoid() * 0 + z).sum().backward()
    w = x * 1
    w.mul_(3)
    assert w.grad_fn.name() == "MulBackward0"
    w.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_autograd_grad_returns_without_touching_grad():
    x = gt.tensor(3.0, requires_grad=True)
    (g,) = gt.autograd.grad(x ** 3, x, create_graph=True)
    assert g.item() == 27.0 and g.grad_fn is not None and x.grad is None
    (g2,) = gt.autograd.grad(g, x)
    assert g2.item() == 18.0
    y = gt.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="index 1 appears to not have been used"):
        gt.autograd.grad(x * 2, [x, y])
    assert gt.autograd.grad(x * 2, [x, y], allow_unused=True)[1] is None
    assert gt.autograd.grad(x * 2, [x, y], materialize_grads=True)[1].item() == 0.0


def test_backward_inputs_only_accumulates_into_those():
    a = gt.ones(2, requires_grad=True)
    b = gt.ones(2, requires_grad=True)
    (a * b).sum().backward(inputs=[b])
    assert a.grad is None and b.grad.tolist() == [1.0, 1.0]


def test_grad_modes():
    x = gt.ones(2, requires_grad=True)
    with gt.no_grad():
        y = x * 2
        with gt.enable_grad():
            z = x * 2
    assert y.grad_fn is None and not y.requires_grad and z.grad_fn is not None
    gt.set_grad_enabled(False)
    try:
        assert (x * 2).grad_fn is None and not gt.is_grad_enabled()
    finally:
        gt.set_grad_enabled(True)

    @gt.no_grad()
    def f(t):
        return t * 2
    assert f(x).grad_fn is None
    with gt.inference_mode():
        assert (x * 2).grad_fn is None and gt.is_inference_mode_enabled()
    assert not gt.is_inference_mode_enabled()


@pytest.mark.parametrize("mode", [1, 0, np.bool_(True), None, "x"])
def test_set_grad_enabled_takes_only_bool(mode):
    """As PyTorch: 0/1 and NumPy's bool are refused, with its message, and the mode is
    left as it was."""
    torch = oracle_torch()
    with pytest.raises(TypeError) as ours:
        gt.set_grad_enabled(mode)
    with pytest.raises(TypeError) as theirs:
        torch.set_grad_enabled(mode)
    assert str(ours.value) == str(theirs.value)
    assert gt.is_grad_enabled()


def test_create_graph_given_as_int_records_a_bool_grad_mode():
    x = gt.ones(2, requires_grad=True)
    modes = []
    y = (x * x).sum()
    x.register_hook(lambda g: modes.append(gt.is_grad_enabled()) or g)
    y.backward(create_graph=1)
    assert modes == [True] and modes[0].__class__ is bool


def test_tensor_hooks_replace_gradients_and_retain_grad():
    x = gt.ones(2, requires_grad=True)
    h = x.register_hook(lambda g: g * 10)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    assert x.grad.tolist() == [40.0, 40.0]    # (1 + 1) * 2 * 10
    assert y.grad.tolist() == [2.0, 2.0]
    h.remove()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        gt.ones(2).register_hook(lambda g: g)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (x * 1).sum().backward()
    assert seen == [[41.0, 41.0]]


def test_out_variants_refuse_to_record():
    x = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        gt.add(x, 1, out=gt.empty(2))


def test_graph_is_freed_when_outputs_are_dropped():
    gc.disable()
    try:
        x = gt.ones(3, requires_grad=True)
        y = (x.exp() * 2).sum()
        node = weakref.ref(y.grad_fn)
        saved = weakref.ref(y.grad_fn.next_functions[0][0])
        del y
        assert node() is None and saved() is None
    finally:
        gc.enable()


def test_inference_tensors_like_torch():
    T = oracle_torch()
    for lib in (gt, T):
        with lib.inference_mode():
            t = lib.ones(2) * 2
        assert t.is_inference() and not lib.ones(2).is_inference()
        with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
            t._version
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                               "InferenceMode is not allowed"):
            t.add_(1)
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            x * t
        assert (x + t).requires_grad            # add saves nothing, so it is allowed
        assert t.clone().is_inference() is False
        before = t.tolist()     # (PyTorch writes before refusing the add_ above; we don't)
        with lib.inference_mode():
            t.add_(1)                           # in place inside inference mode is fine
        assert t.tolist() == [b + 1 for b in before]
    with gt.inference_mode():
        t = gt.ones(2) * 2
    with pytest.raises(RuntimeError):
        t.add_(1)
    assert t.tolist() == [2.0, 2.0]             # a refused update changes nothing


def test_two_outputs_of_one_node_as_roots():
    """Roots sharing a node (both outputs of var_mean) count that node's inputs once."""
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (gt, torch):
        x = lib.tensor([1.0, 2.0, 4.0], requires_grad=True)
        v, m = lib.var_mean(x)
        (g,) = lib.autograd.grad([v, m], [x], [lib.tensor(2.0), lib.tensor(3.0)])
        grads.append(g.tolist())
    assert grads[0] == pytest.approx(grads[1])


def test_accumulate_grad_steals_a_fresh_gradient_and_copies_a_shared_one():
    """As PyTorch's AccumulateGrad: a gradient only the engine holds becomes .grad as it is;
    one referenced elsewhere (the caller's, or kept by a hook) is copied, never aliased."""
    x = gt.randn(5, requires_grad=True)
    y = x * 3
    seen = []
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(id(grad_inputs[0])))
    y.sum().backward()
    assert id(x.grad) == seen[0]                       # stolen: no copy was made
    np.testing.assert_array_equal(x.grad.numpy(), np.full(5, 3, np.float32))

    kept = []
    x.grad = None
    y = x * 3
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs[0]))
    y.sum().backward()
    assert x.grad is not kept[0]
    assert x.grad.data_ptr() != kept[0].data_ptr()

    g = gt.ones(5)
    x.grad = None
    x.backward(g)                                      # the caller still holds g
    assert x.grad is not g and x.grad.data_ptr() != g.data_ptr()
    x.grad = None
    (x + 0).backward(g)
    assert x.grad.data_ptr() != g.data_ptr()


def test_accumulate_grad_keeps_the_parameter_layout():
    torch = oracle_torch()
    w = gt.randn(2, 3, 4, 5).to(memory_format=gt.channels_last).requires_grad_()
    tw = torch.from_numpy(w.detach().numpy()).to(memory_format=torch.channels_last)
    tw.requires_grad_()
    for a, b in ((w.contiguous() * 2, tw.contiguous() * 2), (w * 2, tw * 2)):
        w.grad = tw.grad = None
        a.sum().backward()
        b.sum().backward()
        assert_same(w.grad, tw.grad)


def test_formulas_skip_gradients_no_input_needs():
    """grad_input_mask: mm's backward computes only the wanted product (PyTorch's
    output_mask), so a frozen operand costs no gradient work."""
    calls = []
    a = gt.randn(3, 4, requires_grad=True)
    b = gt.randn(4, 2)
    out = a.mm(b)
    mm = gt.Tensor.mm
    try:
        gt.Tensor.mm = lambda self, other: calls.append(1) or mm(self, other)
        out.sum().backward()
    finally:
        gt.Tensor.mm = mm
    assert len(calls) == 1
    np.testing.assert_allclose(a.grad.numpy(), np.ones((3, 2)) @ b.numpy().T, rtol=1e-6)


def test_linear_layer_gradients_are_taken_without_copies_and_never_alias():
    """Weight gradients arrive as a transposed product and bias gradients as a reshaped
    sum: views of temporaries only the engine holds, so they become .grad without a copy,
    as plain tensors (no _base), laid out as torch lays them out."""
    from glasstorch.autograd import engine
    torch = oracle_torch()
    copies = []
    original = engine._accumulate_into
    engine._accumulate_into = lambda var, *rest: (copies.append(var.shape), original(var, *rest))
    try:
        m = gt.nn.Sequential(gt.nn.Linear(8, 4), gt.nn.ReLU(), gt.nn.Linear(4, 3))
        x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
        m(gt.from_numpy(x)).sum().backward()
    finally:
        engine._accumulate_into = original
    assert copies == []
    tm = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    with torch.no_grad():
        for a, b in zip(tm.parameters(), m.parameters()):
            a.copy_(torch.from_numpy(b.detach().numpy()))
    tm(torch.from_numpy(x)).sum().backward()
    for a, b in zip(tm.parameters(), m.parameters()):
        assert b.grad._base is None
        assert_same(b.grad, a.grad, rtol=1e-5, atol=1e-6)

    w = gt.randn(3, 4, requires_grad=True)
    out = w.t() * 2
    kept = []
    out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs[0]))
    out.sum().backward()
    assert w.grad.data_ptr() != kept[0].data_ptr()     # someone holds it: copied
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2, np.float32))
