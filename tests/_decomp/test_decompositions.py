"""Each decomposition against the direct kernel of its op: values, dtypes and gradients.

The calls come from PyTorch's operator database, through the sample machinery of
tests/ops/test_op_db.py: each relevant OpInfo's samples run through glasstorch (forward,
and backward in float64) under a mode that records every call of an op that has a
decomposition, with the arguments it really received. Each recorded call then runs both
ways: the op's own kernel, and its decomposition (which records autograd itself, so its
gradient is the chain rule through its pieces). Hypothesis varies shapes for the
normalisations and softmax.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from glasstorch._decomp import decomposition_table
from glasstorch.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")
pytest.importorskip("torch.testing._internal.common_methods_invocations")

_spec = importlib.util.spec_from_file_location(
    "op_db_walk", Path(__file__).resolve().parents[1] / "ops" / "test_op_db.py")
op_db = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(op_db)

aten = gt.ops.aten

# The OpInfo entries whose functions reach the decomposed ops (forward or backward).
ENTRY_NAMES = {
    "softmax", "log_softmax", "nn.functional.softmax", "nn.functional.log_softmax",
    "nn.functional.layer_norm", "nn.functional.batch_norm", "nn.functional.group_norm",
    "nn.functional.instance_norm", "var_mean", "nn.functional.gelu", "nn.functional.silu",
    "nn.functional.mish", "nn.functional.hardswish", "nn.functional.hardsigmoid",
    "nn.functional.softplus", "nn.functional.elu", "nn.functional.leaky_relu",
    "nn.functional.relu", "nn.functional.threshold", "nn.functional.dropout", "addcmul",
    "addcdiv", "lerp", "nn.functional.mse_loss", "nn.functional.smooth_l1_loss",
    "nn.functional.huber_loss", "nn.functional.nll_loss", "nn.functional.cross_entropy",
    "nn.functional.binary_cross_entropy", "nn.functional.binary_cross_entropy_with_logits",
    "tanh", "sigmoid",
}
ENTRIES = [info for info in op_db.ENTRIES if info.name in ENTRY_NAMES]

RANDOM = {aten.native_dropout.default}        # checked by structure, not values
# PyTorch's hardsigmoid/hardswish backward multiply by 1/6 rounded to float32 (so does
# glasstorch's formula); the decomposition's chain rule divides by 6 exactly.
GRADIENT_RTOL = {aten.hardsigmoid.default: 1e-7, aten.hardswish.default: 1e-7}


class Recorder(TorchDispatchMode):
    """Records (op, args, kwargs) of every call of an op with a decomposition, arguments
    copied as they were at the call."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in decomposition_table:
            self.calls.append((func, _snapshot(args), _snapshot(kwargs)))
        return func(*args, **kwargs)


def _snapshot(x):
    if isinstance(x, gt.Tensor):
        return x.detach().clone()
    if isinstance(x, (list, tuple)):
        return type(x)(_snapshot(v) for v in x)
    if isinstance(x, dict):
        return {k: _snapshot(v) for k, v in x.items()}
    return x


def _record(info):
    """The decomposed-op calls the entry's samples make, forward (float32, float64) and
    backward (float64)."""
    recorder = Recorder()
    target = op_db._target(info)
    for dtype in (torch.float32, torch.float64):
        grad = dtype == torch.float64 and info.supports_autograd
        for sample in op_db._samples(info, dtype, requires_grad=grad):
            try:
                info.op(sample.input, *sample.args, **sample.kwargs)    # torch accepts it
            except Exception:
                continue
            leaves: list = []
            try:
                inp = op_db.convert(sample.input, leaves if grad else None)
                args = op_db.convert(sample.args, leaves if grad else None)
                kwargs = op_db.convert(sample.kwargs, leaves if grad else None)
            except NotImplementedError:
                continue
            with recorder:
                try:
                    out = op_db._call(target, sample, inp, args, kwargs)
                except RuntimeError:
                    if op_db._key(info) in op_db.SKIP:
                        continue        # the sample test_op_db skips the entry for
                    raise
                outputs = [o for o in op_db._flat(out) if isinstance(o, gt.Tensor)
                           and o.requires_grad]
                if grad and outputs:
                    loss = sum((o.float() if o.dtype != gt.float64 else o).sum()
                               for o in outputs)
                    loss.backward()
    return recorder.calls


def _tensors(x):
    return [t for t in op_db._flat(list(x) if isinstance(x, (list, tuple)) else [x])
            if isinstance(t, gt.Tensor)]


def _with_leaves(args, kwargs):
    """Fresh copies of the arguments; floating float64 tensors become leaves."""
    leaves = []

    def leaf(x):
        if isinstance(x, gt.Tensor):
            x = x.detach().clone()
            if x.dtype is gt.float64:
                x.requires_grad_()
                leaves.append(x)
            return x
        if isinstance(x, (list, tuple)):
            return type(x)(leaf(v) for v in x)
        return x
    return leaf(args), {k: leaf(v) for k, v in kwargs.items()}, leaves


def _to_meta(x):
    """The arguments as data-less meta tensors: a decomposition needs only metadata."""
    if isinstance(x, gt.Tensor):
        return x.detach().to("meta")
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(v) for v in x)
    if isinstance(x, dict):
        return {k: _to_meta(v) for k, v in x.items()}
    return x


def _compare(ours, expected, what, rtol=None):
    assert tuple(ours.shape) == tuple(expected.shape), f"{what}: shape"
    assert ours.dtype is expected.dtype, f"{what}: dtype {ours.dtype} vs {expected.dtype}"
    a, b = ours.detach().double().numpy(), expected.detach().double().numpy()
    if rtol is None:
        rtol = 1e-4 if expected.dtype in (gt.float32, gt.float16, gt.bfloat16) else 1e-9
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True, err_msg=what)


def check_call(func, args, kwargs, what):
    """The decomposition of `func` against its kernel on one call: every output (values,
    dtype, shape), the in-place effects on the arguments, and in float64 the gradients;
    run on meta tensors, the decomposition gives the same shapes and dtypes."""
    direct_args, direct_kwargs, direct_leaves = _with_leaves(args, kwargs)
    decomp_args, decomp_kwargs, decomp_leaves = _with_leaves(args, kwargs)
    expected = func(*direct_args, **direct_kwargs)
    got = decomposition_table[func](*decomp_args, **decomp_kwargs)
    expected_flat, got_flat = _tensors(expected), _tensors(got)
    assert len(got_flat) == len(expected_flat), what
    on_meta = _tensors(decomposition_table[func](*_to_meta(args), **_to_meta(kwargs)))
    assert [(tuple(t.shape), t.dtype, t.device.type) for t in on_meta] == \
        [(tuple(t.shape), t.dtype, "meta") for t in expected_flat], f"{what} on meta"
    if func in RANDOM:
        return
    for i, (g, e) in enumerate(zip(got_flat, expected_flat)):
        _compare(g, e, f"{what} output {i}")
    for i, (g, e) in enumerate(zip(_tensors(decomp_args), _tensors(direct_args))):
        _compare(g, e, f"{what} argument {i} after the call")       # running statistics
    differentiable = [(g, e) for g, e in zip(got_flat, expected_flat)
                      if e.requires_grad and e.dtype is gt.float64]
    if not direct_leaves or not differentiable:
        return
    rng = np.random.default_rng(0)
    weights = [gt.tensor(rng.standard_normal(tuple(e.shape))) for _, e in differentiable]
    try:
        expected_grads = gt.autograd.grad(
            sum((e * w).sum() for (_, e), w in zip(differentiable, weights)), direct_leaves,
            allow_unused=True)
    except RuntimeError as error:
        if "is not implemented" in str(error):
            return          # the kernel has no derivative to compare with
        raise
    got_grads = gt.autograd.grad(
        sum((g * w).sum() for (g, _), w in zip(differentiable, weights)), decomp_leaves,
        allow_unused=True)
    for i, (g, e) in enumerate(zip(got_grads, expected_grads)):
        if e is None or g is None:
            assert g is None or e is None or float(abs(g if e is None else e).max()) == 0
            continue
        _compare(g, e, f"{what} gradient {i}", GRADIENT_RTOL.get(func))


@pytest.mark.parametrize("info", ENTRIES, ids=op_db._key)
def test_decompositions_on_the_op_database(info):
    if op_db._key(info) in op_db.SKIP and info.name != "nn.functional.batch_norm":
        pytest.skip(op_db.SKIP[op_db._key(info)])
    calls = _record(info)
    if not calls:
        pytest.skip("no call of a decomposed op")
    for n, (func, args, kwargs) in enumerate(calls):
        check_call(func, args, kwargs, f"{func} (call {n} of {op_db._key(info)})")


def test_the_op_database_reaches_every_decomposition():
    """Coverage: the walked entries call every op in the table (a decomposition no sample
    reaches is not tested by the walk)."""
    reached = {func for info in ENTRIES for func, _, _ in _record(info)}
    # ops whose kernel is their decomposition (test_decomp_backward_ops.py and
    # test_decomp_composite_ops.py compare them with torch)
    defined_by_decomposition = {op for op, fn in decomposition_table.items()
                                if op._op.kernels.get("CompositeImplicitAutograd") is fn}
    # native_dropout: random, and no walked entry calls it (test_dropout_structure covers it)
    missing = set(decomposition_table) - reached - defined_by_decomposition - {
        aten.native_dropout.default}
    assert not missing, sorted(map(str, missing))


# ---- shapes from hypothesis --------------------------------------------------------------------

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4)


def _random(shape, seed, scale=3.0):
    return gt.tensor(np.random.default_rng(seed).standard_normal(shape) * scale)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2 ** 16), data=st.data())
def test_softmax_family_on_varied_shapes(shape, seed, data):
    x = _random(shape, seed)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    for func in (aten._softmax.default, aten._log_softmax.default):
        check_call(func, (x, dim, False), {}, str(func))
        y = func(x, dim, False)
        backward = {aten._softmax.default: aten._softmax_backward_data.default,
                    aten._log_softmax.default: aten._log_softmax_backward_data.default}[func]
        check_call(backward, (_random(shape, seed + 1), y, dim, gt.float64), {}, str(backward))


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4),
       seed=st.integers(0, 2 ** 16), data=st.data(), affine=st.booleans())
def test_normalisations_on_varied_shapes(shape, seed, data, affine):
    x = _random(shape, seed)
    k = data.draw(st.integers(1, len(shape)))
    normalized = shape[-k:]
    w, b = (_random(normalized, seed + 1), _random(normalized, seed + 2)) if affine else \
        (None, None)
    check_call(aten.native_layer_norm.default, (x, normalized, w, b, 1e-5), {}, "layer_norm")
    c = shape[1]
    cw, cb = (_random([c], seed + 3), _random([c], seed + 4)) if affine else (None, None)
    for training in (True, False):
        stats = (gt.zeros(c, dtype=gt.float64), gt.ones(c, dtype=gt.float64))
        check_call(aten.native_batch_norm.default, (x, cw, cb, *stats, training, 0.1, 1e-5),
                   {}, f"batch_norm training={training}")
    groups = data.draw(st.sampled_from([g for g in range(1, c + 1) if c % g == 0]))
    hxw = int(np.prod(shape[2:]))
    check_call(aten.native_group_norm.default, (x, cw, cb, shape[0], c, hxw, groups, 1e-5),
               {}, "group_norm")


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2 ** 16))
def test_pointwise_decompositions_on_varied_shapes(shape, seed):
    x, y, z = (_random(shape, seed + i) for i in range(3))
    for func, args, kwargs in [
            (aten.gelu.default, (x,), {}), (aten.gelu.default, (x,), {"approximate": "tanh"}),
            (aten.gelu_backward.default, (y, x), {}),
            (aten.gelu_backward.default, (y, x), {"approximate": "tanh"}),
            (aten.silu.default, (x,), {}), (aten.mish.default, (x,), {}),
            (aten.hardswish.default, (x,), {}), (aten.hardsigmoid.default, (x,), {}),
            (aten.softplus.default, (x, 2, 3), {}), (aten.elu.default, (x, 0.5, 2, 1.5), {}),
            (aten.leaky_relu.default, (x, 0.2), {}),
            (aten.threshold_backward.default, (y, x, 0.5), {}),
            (aten.tanh_backward.default, (y, gt.tanh(x)), {}),
            (aten.sigmoid_backward.default, (y, gt.sigmoid(x)), {}),
            (aten.addcmul.default, (x, y, z), {"value": 0.5}),
            (aten.addcdiv.default, (x, y, z), {"value": 2}),
            (aten.lerp.Tensor, (x, y, gt.sigmoid(z) * 2 - 0.5), {}),
            (aten.mse_loss.default, (x, y, 1), {}),
            (aten.smooth_l1_loss.default, (x, y, 2, 0.7), {}),
            (aten.huber_loss.default, (x, y, 0, 1.3), {})]:
        check_call(func, args, kwargs, f"{func} {kwargs}")


# ---- what PyTorch's decompositions would give ------------------------------------------------

def test_nll_total_weight():
    """An unreduced nll_loss reports total_weight 0, as PyTorch's kernel does."""
    x = torch.randn(3, 4).log_softmax(1)
    t = torch.tensor([0, 2, 1])
    theirs = torch.ops.aten.nll_loss_forward(x, t, None, 0, -100)
    ours = decomposition_table[aten.nll_loss_forward.default](
        gt.tensor(x.numpy()), gt.tensor(t.numpy()), None, 0, -100)
    for o, e in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), e.numpy(), rtol=1e-6)


def test_dropout_structure():
    x = gt.ones(2000, dtype=gt.float64)
    out, keep = decomposition_table[aten.native_dropout.default](x, 0.25, True)
    assert keep.dtype is gt.bool and out.dtype is gt.float64
    kept = keep.numpy()
    np.testing.assert_allclose(out.numpy(), np.where(kept, 1 / 0.75, 0.0))
    assert abs(kept.mean() - 0.75) < 0.05
    out, keep = decomposition_table[aten.native_dropout.default](x, 0.5, None)
    assert 0 < keep.numpy().mean() < 1             # train=None drops, as the kernels do
    for p, train in ((0.5, False), (0.0, True)):
        out, keep = decomposition_table[aten.native_dropout.default](x, p, train)
        assert keep.numpy().all() and (out.numpy() == 1).all()


@pytest.mark.parametrize("dtype", [gt.float16, gt.bfloat16])
def test_half_precision_inputs(dtype):
    """Half-precision inputs: computed in float32 and given back in the input's dtype, as
    the kernels do. (half_to_float=True, which the CPU kernel refuses as PyTorch's does,
    gives float32: the decomposition serves every device.)"""
    x = _random([3, 4], 0, scale=2.0).to(dtype)
    w, b = _random([4], 1).to(dtype), _random([4], 2).to(dtype)
    for func, args, kwargs in [
            (aten._softmax.default, (x, 1, False), {}),
            (aten._log_softmax.default, (x, 0, False), {}),
            (aten.native_layer_norm.default, (x, [4], w, b, 1e-5), {}),
            (aten.native_group_norm.default, (x.view(3, 4, 1), w, b, 3, 4, 1, 2, 1e-5), {}),
            (aten.native_batch_norm.default, (x, w, b, None, None, True, 0.1, 1e-5), {}),
            (aten.gelu.default, (x,), {"approximate": "tanh"}),
            (aten.gelu_backward.default, (x, x), {}), (aten.silu.default, (x,), {}),
            (aten.mish.default, (x,), {}), (aten.hardswish.default, (x,), {}),
            (aten.elu.default, (x,), {}), (aten.leaky_relu.default, (x,), {}),
            (aten.mse_loss.default, (x, x * 0.5), {})]:
        expected = _tensors(func(*args, **kwargs))
        got = _tensors(decomposition_table[func](*args, **kwargs))
        for g, e in zip(got, expected):
            assert g.dtype is e.dtype, f"{func} {dtype}"
            np.testing.assert_allclose(g.float().numpy(), e.float().numpy(), rtol=2e-2,
                                       atol=2e-2, err_msg=f"{func} {dtype}")
