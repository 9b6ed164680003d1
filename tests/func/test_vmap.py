"""vmap against PyTorch's: values, the batching rules that serve each op, nesting, in_dims /
out_dims, chunking, randomness, errors, per-sample gradients and model ensembles."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.func import batching
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(7)


def arr(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def ints(high, *shape):
    return rng.integers(0, high, shape)


def same_tree(actual, expected, **kw):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            same_tree(a, e, **kw)
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for k in expected:
            same_tree(actual[k], expected[k], **kw)
    else:
        assert_same(actual, expected, check_stride=False, rtol=1e-5, atol=1e-5, **kw)


def run_both(make, inputs, **vmap_kw):
    T = oracle_torch()
    g_in = [gt.tensor(x) if isinstance(x, np.ndarray) else x for x in inputs]
    t_in = [T.tensor(x) if isinstance(x, np.ndarray) else x for x in inputs]
    batching.fallback_counts.clear()
    actual = gt.vmap(make(gt), **vmap_kw)(*g_in)
    expected = T.vmap(make(T), **vmap_kw)(*t_in)
    same_tree(actual, expected)
    return batching.fallback_ops()


# (name, function of the library, inputs, vmap keywords); each must run without the
# per-example fallback: one batched kernel per op.
CASES = [
    ("pointwise", lambda L: lambda x, y: (x * y + 1).exp().sin(), [arr(4, 3), arr(4, 3)], {}),
    ("broadcast", lambda L: lambda x, y: x - y, [arr(4, 3), arr(4, 2, 3)], {}),
    ("unbatched-arg", lambda L: lambda x, y: L.where(x > 0, x, y),
     [arr(4, 3), arr(3)], {"in_dims": (0, None)}),
    ("scalar-examples", lambda L: lambda x, y: x * y + x.abs(), [arr(5), arr(5, 2)], {}),
    ("scalar-promotion", lambda L: lambda x, y: (x + y, x * 2, (y > 0) * x),
     [arr(5, dtype=np.float64), arr(5, 2)], {}),
    ("in-place", lambda L: lambda x, y: x.clone().add_(y).mul_(2), [arr(4, 3), arr(3)],
     {"in_dims": (0, None)}),
    ("in_dims=1", lambda L: lambda x: x.relu() * 2, [arr(3, 4)], {"in_dims": 1}),
    ("out_dims=1", lambda L: lambda x: x.tanh(), [arr(4, 3)], {"out_dims": 1}),
    ("sum-mean-dims", lambda L: lambda x: (x.sum(), x.sum(0), x.mean(-1, keepdim=True),
                                           x.amax((0, 1)), x.var(1), x.std()),
     [arr(4, 3, 2)], {}),
    ("max-min", lambda L: lambda x: (x.max(), x.max(1), x.min(0).indices, x.argmax(),
                                     x.argmin(1)), [arr(4, 3, 2)], {}),
    ("scans", lambda L: lambda x: (x.cumsum(1), x.logsumexp(0), x.prod(1)), [arr(4, 3, 2)], {}),
    ("softmax", lambda L: lambda x: (x.softmax(-1), x.log_softmax(0)), [arr(4, 3, 5)], {}),
    ("views", lambda L: lambda x: (x.view(6), x.reshape(2, 3).t(), x.transpose(0, 1),
                                   x.permute(1, 0), x.unsqueeze(-1), x[1], x[:, 1:],
                                   x.narrow(1, 0, 2), x.flatten(), x.expand(2, 3, 2)),
     [arr(4, 3, 2)], {}),
    ("squeeze-select", lambda L: lambda x: (x.squeeze(), x.squeeze(0), x.select(1, 0),
                                            x.unbind(1), x.split(1, 0), x.chunk(2, 1)),
     [arr(4, 1, 2)], {}),
    ("matmul", lambda L: lambda a, b: (a @ b, a.mm(b), a.matmul(b[:, 0]), b[:, 0] @ b[:, 0],
                                       a.mv(b[:, 1])), [arr(4, 3, 2), arr(4, 2, 2)], {}),
    ("matmul-unbatched", lambda L: lambda a, w: a @ w, [arr(4, 5, 3), arr(3, 2)],
     {"in_dims": (0, None)}),
    ("bmm", lambda L: lambda a, b: L.bmm(a, b), [arr(4, 2, 3, 5), arr(4, 2, 5, 1)], {}),
    ("linear-addmm", lambda L: lambda x, w, b: (L.nn.functional.linear(x, w, b),
                                                L.addmm(b, x, w.t(), beta=0.5, alpha=2)),
     [arr(4, 5, 3), arr(2, 3), arr(2)], {"in_dims": (0, None, None)}),
    ("linear-batched-weights", lambda L: lambda x, w, b: L.nn.functional.linear(x, w, b),
     [arr(5, 3), arr(4, 2, 3), arr(4, 2)], {"in_dims": (None, 0, 0)}),
    ("cat-stack", lambda L: lambda x, y: (L.cat([x, y], 0), L.stack([x, y], 1),
                                          L.cat([x, y], -1)), [arr(4, 2, 3), arr(2, 3)],
     {"in_dims": (0, None)}),
    ("index", lambda L: lambda x, i: (x[i], x[:, i], x[i, i]),
     [arr(4, 5, 5), ints(5, 3)], {"in_dims": (0, None)}),
    ("index-batched", lambda L: lambda x, i: (x[i], x.index_select(0, L.tensor([1, 0]))),
     [arr(4, 5), ints(5, 4, 3)], {}),
    ("gather", lambda L: lambda x, i: x.gather(1, i), [arr(4, 3, 5), ints(5, 4, 3, 2)], {}),
    ("embedding", lambda L: lambda w, i: L.nn.functional.embedding(i, w),
     [arr(10, 3), ints(10, 4, 5)], {"in_dims": (None, 0)}),
    ("conv2d", lambda L: lambda x, w, b: L.nn.functional.conv2d(x, w, b, padding=1),
     [arr(3, 2, 2, 5, 5), arr(4, 2, 3, 3), arr(4)], {"in_dims": (0, None, None)}),
    ("conv2d-batched-weights", lambda L: lambda x, w, b: L.nn.functional.conv2d(x, w, b,
                                                                                stride=2),
     [arr(2, 2, 6, 6), arr(3, 4, 2, 3, 3), arr(3, 4)], {"in_dims": (None, 0, 0)}),
    ("conv2d-both", lambda L: lambda x, w: L.nn.functional.conv2d(x, w, groups=2),
     [arr(3, 2, 4, 5, 5), arr(3, 6, 2, 3, 3)], {}),
    ("conv1d", lambda L: lambda x, w: L.nn.functional.conv1d(x, w),
     [arr(3, 2, 2, 7), arr(4, 2, 3)], {"in_dims": (0, None)}),
    ("losses", lambda L: lambda x, t, y: (L.nn.functional.cross_entropy(x, t),
                                          L.nn.functional.nll_loss(x.log_softmax(-1), t,
                                                                   reduction="sum"),
                                          L.nn.functional.mse_loss(x, y),
                                          L.nn.functional.cross_entropy(x, t,
                                                                        reduction="none")),
     [arr(4, 6, 3), ints(3, 4, 6), arr(4, 6, 3)], {}),
    ("nll-weights", lambda L: lambda x, t, w: L.nn.functional.nll_loss(x, t, weight=w,
                                                                       ignore_index=1),
     [arr(4, 6, 3), ints(3, 4, 6), np.abs(arr(3))], {"in_dims": (0, 0, None)}),
    ("layer_norm", lambda L: lambda x, w: L.nn.functional.layer_norm(x, (3,), w),
     [arr(4, 2, 3), arr(3)], {"in_dims": (0, None)}),
    ("mlp", lambda L: lambda x, w1, w2: ((x @ w1).relu() @ w2).tanh().sum(-1),
     [arr(8, 5), arr(5, 4), arr(4, 2)], {"in_dims": (0, None, None)}),
    ("pooling", lambda L: lambda a: (L.nn.functional.max_pool2d(a, 2),
                                     L.nn.functional.max_pool2d(a.unsqueeze(0), 2,
                                                                return_indices=True)[1],
                                     L.nn.functional.avg_pool2d(a, 3, stride=2),
                                     L.nn.functional.adaptive_avg_pool2d(a.unsqueeze(0), 2),
                                     L.nn.functional.max_pool1d(a[0], 2)),
     [arr(3, 4, 6, 6)], {}),
    ("pad-repeat-shuffle", lambda L: lambda a: (L.nn.functional.pad(a, (1, 1, 2, 0)),
                                                a.repeat(2, 1, 1, 1),
                                                L.nn.functional.pixel_shuffle(a, 2)),
     [arr(3, 4, 6, 6)], {}),
    ("einsum-outer-new", lambda L: lambda a, w: (L.einsum("ij,kj->ik", a, a),
                                                 L.einsum("ij,jk->ik", a, w),
                                                 L.outer(a[0], a[1]), a.new_zeros(2) + a.sum()),
     [arr(3, 4, 6), arr(6, 2)], {"in_dims": (0, None)}),
    ("trace-take-cross-cdist", lambda L: lambda x, i: (L.trace(x), L.take(x, i),
                                                       L.take(x, -i - 1),
                                                       L.linalg.cross(x[:3, :3], x[1:, :3]),
                                                       L.cdist(x, x[:2])),
     [arr(3, 4, 4), ints(16, 3, 5)], {}),
    ("take-unbatched-index", lambda L: lambda x, i: L.take(x, i), [arr(3, 4, 4), ints(16, 5)],
     {"in_dims": (0, None)}),
    ("baddbmm", lambda L: lambda s, a, b: L.baddbmm(s, a, b, beta=0.5, alpha=2),
     [arr(3, 2, 2, 4), arr(3, 2, 2, 5), arr(5, 4) * np.ones((2, 1, 1), np.float32)],
     {"in_dims": (0, 0, None)}),
    ("scatter", lambda L: lambda x, i, s: (x.scatter(1, i, s), x.scatter_add(0, i, s),
                                          x.clone().scatter_(1, i, 2.0),
                                          x.scatter_reduce(1, i, s, "amax")),
     [arr(3, 4, 5), ints(4, 3, 2, 5), arr(3, 2, 5)], {}),
    ("index-add-put", lambda L: lambda x, v, i: (x.index_add(1, L.tensor([0, 2]), v),
                                                 x.index_put((i,), v[0, 0], accumulate=True),
                                                 x.clone().index_put_((L.tensor([1, 3]),),
                                                                      v[:2, :1]),
                                                 x.index_fill(1, L.tensor([4]), -1.0)),
     [arr(3, 4, 5), arr(3, 4, 2), ints(4, 3, 6)], {}),
    ("one-hot-searchsorted", lambda L: lambda i, s, v: (L.nn.functional.one_hot(i, 5),
                                                        L.searchsorted(s, v)),
     [ints(5, 3, 4), np.sort(arr(3, 6), -1), arr(3, 4)], {}),
    ("group-norm-upsample-diag-embed", lambda L: lambda a: (
        L.nn.functional.group_norm(a, 2), L.nn.functional.interpolate(a, scale_factor=2),
        L.nn.functional.interpolate(a, size=(3, 5), mode="bilinear"), L.diag_embed(a[0, 0])),
     [arr(3, 1, 4, 2, 2)], {}),
    ("linalg-checks-every-example", lambda L: lambda a: L.linalg.inv(a @ a.mT + L.eye(3)),
     [arr(4, 3, 3)], {}),
    ("pytree", lambda L: lambda d: {"y": d["a"] * d["b"][0]},
     [{"a": np.ones((4, 3), np.float32), "b": [np.ones((4, 3), np.float32)]}], {}),
]


@pytest.mark.parametrize("name,make,inputs,kw", CASES, ids=[c[0] for c in CASES])
def test_vmap_matches_pytorch_without_fallback(name, make, inputs, kw):
    if name == "pytree":
        T = oracle_torch()
        d = inputs[0]
        actual = gt.vmap(make(gt))({"a": gt.tensor(d["a"]), "b": [gt.tensor(d["b"][0])]})
        expected = T.vmap(make(T))({"a": T.tensor(d["a"]), "b": [T.tensor(d["b"][0])]})
        same_tree(actual, expected)
        return
    assert run_both(make, inputs, **kw) == []


def test_fallback_is_named_and_correct():
    # masked_scatter (what each example takes depends on its own mask) and transposed
    # convolutions have no batching rule: they run once per example, and are listed
    used = run_both(lambda L: lambda x, w: (x.masked_scatter(x > 0, x * 2),
                                            L.nn.functional.conv_transpose2d(x, w)),
                    [arr(3, 1, 4, 4), arr(1, 2, 2, 2)], in_dims=(0, None))
    print("ops on the per-example fallback:", used)
    assert sorted(used) == ["aten::convolution", "aten::masked_scatter"]


def test_nested_vmap_and_in_dims():
    run_both(lambda L: L.vmap(lambda x, y: x * y.sum(), in_dims=(1, None)),
             [arr(4, 3, 5), arr(4, 2)], in_dims=(0, 0))
    run_both(lambda L: L.vmap(L.vmap(lambda a, b: a @ b)), [arr(2, 3, 4, 5), arr(2, 3, 4, 5, 2)])
    run_both(lambda L: L.vmap(lambda x, y: x + y, in_dims=(None, 0)), [arr(3, 4), arr(2, 4)],
             in_dims=(0, None))


def test_out_dims_tuple_and_none():
    T = oracle_torch()
    for L in (gt, T):
        x = L.ones(4, 3)
        a, b = L.vmap(lambda x: (x * 2, x.sum()), out_dims=(1, 0))(x)
        assert tuple(a.shape) == (3, 4) and tuple(b.shape) == (4,)
        y, k = L.vmap(lambda x: (x, 5), out_dims=(0, None))(x)
        assert k == 5 and tuple(y.shape) == (4, 3)
        z = L.vmap(lambda x: L.ones(2))(x)        # not batched: expanded
        assert tuple(z.shape) == (4, 2)


def test_chunk_size():
    run_both(lambda L: lambda x, y: (x @ y).sum(0), [arr(7, 3, 2), arr(2, 5)],
             in_dims=(0, None), chunk_size=3)
    run_both(lambda L: lambda x: x.exp(), [arr(2, 7)], in_dims=1, out_dims=1, chunk_size=2)


def test_randomness():
    x = gt.ones(5, 4)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        gt.vmap(lambda x: x + gt.rand(4))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        gt.vmap(lambda x: gt.nn.functional.dropout(x, 0.5))(x)
    different = gt.vmap(lambda x: x * gt.rand(4), randomness="different")(x)
    same = gt.vmap(lambda x: x * gt.rand(4), randomness="same")(x)
    assert not gt.equal(different[0], different[1]) and gt.equal(same[0], same[1])
    d = gt.vmap(lambda x: gt.nn.functional.dropout(x, 0.5), randomness="same")(x)
    assert gt.equal(d[0], d[1]) and set(d.unique().tolist()) <= {0.0, 2.0}
    d = gt.vmap(lambda x: gt.nn.functional.dropout(x, 0.5), randomness="different")(
        gt.ones(50, 40))
    assert not gt.equal(d[0], d[1])
    n = gt.vmap(lambda x: x.clone().normal_(), randomness="same")(x)
    assert gt.equal(n[0], n[3])
    nested = gt.vmap(gt.vmap(lambda x: x + gt.randn(2), randomness="same"),
                     randomness="different")(gt.zeros(3, 4, 2))
    assert len(set(nested.reshape(12, 2)[:, 0].tolist())) == 3      # one draw per outer row
    nested = gt.vmap(gt.vmap(lambda x: x + gt.randn(2), randomness="different"),
                     randomness="different")(gt.zeros(3, 4, 2))
    assert len(set(nested.reshape(12, 2)[:, 0].tolist())) == 12
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        gt.vmap(lambda x: x, randomness="foo")


def test_errors_as_pytorch():
    T = oracle_torch()
    cases = [
        lambda L: L.vmap(lambda x: x.item())(L.ones(2)),
        lambda L: L.vmap(lambda x: bool(x))(L.ones(2)),
        lambda L: L.vmap(lambda x, y: x + y)(L.ones(2), L.ones(3)),
        lambda L: L.vmap(lambda x: x, in_dims=1)(L.ones(2)),
        lambda L: L.vmap(lambda x: x, in_dims=(0, 0))(L.ones(2)),
        lambda L: L.vmap(lambda x: 3)(L.ones(2)),
        lambda L: L.vmap(lambda x: x)(3.0),
        lambda L: L.vmap(lambda x: x)(L.ones(())),
        lambda L: L.vmap(lambda x: x + L.rand(2))(L.ones(2)),
        lambda L: L.vmap(lambda x: x, randomness="foo")(L.ones(2)),
    ]
    for case in cases:
        with pytest.raises(Exception) as expected:
            case(T)
        with pytest.raises(type(expected.value)) as actual:
            case(gt)
        # (a tree's structure prints as torch.utils._pytree's TreeSpec does: compared apart)
        assert str(actual.value).split(" has structure")[0] == str(
            expected.value).split(" has structure")[0]


def test_inplace_into_unbatched_raises_as_pytorch():
    T = oracle_torch()
    cases = [lambda L, x, y: y.mul_(x), lambda L, x, y: y.copy_(x),
             lambda L, x, y: y.__setitem__(0, x[0])]
    for case in cases:
        with pytest.raises(RuntimeError) as expected:
            T.vmap(lambda x, y: case(T, x, y), in_dims=(0, None))(T.ones(2, 3), T.ones(3))
        with pytest.raises(RuntimeError) as actual:
            gt.vmap(lambda x, y: case(gt, x, y), in_dims=(0, None))(gt.ones(2, 3), gt.ones(3))
        assert str(actual.value) == str(expected.value)


# ---- per-sample gradients and ensembles ------------------------------------------------

def _model_pair(L, seed):
    T = oracle_torch()
    T.manual_seed(seed)
    tm = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 3))
    if L is T:
        return tm
    gm = gt.nn.Sequential(gt.nn.Linear(4, 8), gt.nn.ReLU(), gt.nn.Linear(8, 3))
    gm.load_state_dict({k: gt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return gm


def test_per_sample_gradients():
    T = oracle_torch()
    x, y = arr(6, 4), ints(3, 6)
    results = []
    for L in (gt, T):
        model = _model_pair(L, 0)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, xi, yi, L=L, model=model):
            out = L.func.functional_call(model, p, (xi.unsqueeze(0),))
            return L.nn.functional.cross_entropy(out, yi.unsqueeze(0))
        grads = L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, L.tensor(x),
                                                                      L.tensor(y))
        results.append(grads)
    assert batching.fallback_ops() == []
    same_tree(results[0], results[1])
    # the per-sample gradients average to the batch gradient
    model = _model_pair(gt, 0)
    gt.nn.functional.cross_entropy(model(gt.tensor(x)), gt.tensor(y)).backward()
    assert gt.allclose(results[0]["0.weight"].mean(0), model[0].weight.grad, atol=1e-6)


def test_model_ensemble():
    T = oracle_torch()
    x = arr(5, 4)
    results = []
    for L in (gt, T):
        models = [_model_pair(L, s) for s in range(3)]
        params, buffers = L.func.stack_module_state(models)
        base = models[0]

        def f(p, b, x, L=L, base=base):
            return L.func.functional_call(base, (p, b), (x,))
        results.append(L.vmap(f, in_dims=(0, 0, None))(params, buffers, L.tensor(x)))
        # every member sees its own minibatch too
        results.append(L.vmap(f)(params, buffers, L.tensor(np.stack([x, x, x]))))
    same_tree(results[:2], results[2:])


def test_vmap_of_jacrev_and_grad_of_vmap():
    run_both(lambda L: L.func.jacrev(lambda x: x.sin() * x.sum()), [arr(3, 4)])
    run_both(lambda L: L.func.jacrev(lambda x: x.cumsum(0)), [arr(3, 4)], in_dims=1)
    run_both(lambda L: lambda x: L.func.vjp(lambda a: a.t() * a.sum(), x)[1](
        L.arange(12.0).view(3, 4))[0], [arr(4, 2, 3)], in_dims=1)
    T = oracle_torch()
    x = arr(3, 4)
    g = gt.func.grad(lambda x: gt.vmap(lambda r: (r * r).sum())(x).sum())(gt.tensor(x))
    t = T.func.grad(lambda x: T.vmap(lambda r: (r * r).sum())(x).sum())(T.tensor(x))
    same_tree(g, t)


def test_vmap_of_vjp_fn():
    # the jacobian row by row: cotangents batched, the graph recorded outside the vmap
    T = oracle_torch()
    x = arr(4).astype(np.float64)
    rows = []
    for L in (gt, T):
        _, fn = L.func.vjp(lambda v: v.exp() * v.sum(), L.tensor(x))
        rows.append(L.vmap(fn)(L.eye(4, dtype=L.float64))[0])
    same_tree(rows[0], rows[1])


def test_ensemble_with_batch_norm_and_debug_unwrap():
    T = oracle_torch()
    x = arr(5, 3)
    results = []
    for L in (gt, T):
        L.manual_seed(0)
        models = [L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4)) for _ in range(2)]
        for m in models:
            L.func.replace_all_batch_norm_modules_(m)
            m.load_state_dict({k: L.tensor(np.ones(v.shape, np.float32) * 0.1 * i)
                               for i, (k, v) in enumerate(m.state_dict().items())})
        assert models[0][1].running_mean is None and not models[0][1].track_running_stats
        p, b = L.func.stack_module_state(models)
        results.append(L.vmap(lambda p, b: L.func.functional_call(models[0], (p, b),
                                                                  (L.tensor(x),)))(p, b))
    same_tree(results[0], results[1])
    shapes = []
    gt.vmap(lambda r: shapes.append(tuple(gt.func.debug_unwrap(r).shape)) or r)(gt.ones(2, 3))
    assert shapes == [(2, 3)]


def test_plain_calls_do_not_carry_the_new_keys():
    from glasstorch.dispatch.keys import DispatchKey
    x = gt.ones(2)
    assert not gt.debug.dispatch_keys(x).has(DispatchKey.FuncTorchBatched)
    seen = []
    gt.vmap(lambda r: seen.append(gt.debug.dispatch_keys(r)) or r)(gt.ones(3, 2))
    assert seen[0].has(DispatchKey.FuncTorchBatched)
