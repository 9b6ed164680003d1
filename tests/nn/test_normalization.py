"""Normalization functions (batch, layer, group, instance, RMS, local response) against
PyTorch: values, dtypes, strides, running statistics, gradients and errors."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck, gradgradcheck
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(0)


def pair(shape, requires_grad=True, layout="contiguous", scale=1.0, shift=0.0):
    """The same float64 tensor in glasstorch and torch, contiguous, transposed (last two
    dims) or channels_last."""
    T = oracle_torch()
    data = rng.standard_normal(shape) * scale + shift
    g, t = gt.from_numpy(data.copy()), T.from_numpy(data.copy())
    if layout == "transposed":
        g = gt.from_numpy(np.swapaxes(data, -1, -2).copy()).transpose(-1, -2)
        t = T.from_numpy(np.swapaxes(data, -1, -2).copy()).transpose(-1, -2)
    elif layout == "channels_last":
        g, t = g.contiguous(memory_format=gt.channels_last), t.contiguous(
            memory_format=T.channels_last)
    return g.requires_grad_(requires_grad), t.requires_grad_(requires_grad)


def maybe_pair(shape, present):
    return pair(shape) if present else (None, None)


def assert_grads(out, t_out, inputs, t_inputs, atol=1e-10):
    """Gradients of out against torch's, for a random upstream gradient."""
    T = oracle_torch()
    upstream = rng.standard_normal(tuple(t_out.shape))
    keep = [i for i, x in enumerate(inputs) if x is not None]
    got = gt.autograd.grad(out, [inputs[i] for i in keep], gt.from_numpy(upstream.copy()))
    want = T.autograd.grad(t_out, [t_inputs[i] for i in keep], T.from_numpy(upstream))
    for g, w in zip(got, want):
        assert_same(g, w, atol=atol, rtol=1e-8, check_stride=False)


def to_gt(t):
    """A torch tensor's values as a glasstorch tensor of the same dtype."""
    T = oracle_torch()
    if t.dtype in (T.float16, T.bfloat16):
        return gt.from_numpy(t.float().numpy()).to(getattr(gt, str(t.dtype)[6:]))
    return gt.from_numpy(t.numpy().copy())


# ---- layer norm ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,normalized", [((3, 4, 5), (5,)), ((2, 3, 4), (3, 4)),
                                              ((6,), (6,)), ((0, 4), (4,))])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, False)])
def test_layer_norm_values_and_grads(shape, normalized, affine, kernel_path):
    T = oracle_torch()
    x, tx = pair(shape)
    w, tw = maybe_pair(normalized, affine[0])
    b, tb = maybe_pair(normalized, affine[1])
    out = F.layer_norm(x, normalized, w, b, eps=1e-3)
    t_out = T.nn.functional.layer_norm(tx, normalized, tw, tb, eps=1e-3)
    assert_same(out, t_out, atol=1e-12)
    assert out.grad_fn.name() == t_out.grad_fn.name() == "NativeLayerNormBackward0"
    assert_grads(out, t_out, (x, w, b), (tx, tw, tb))
    for got, want in zip(gt.native_layer_norm(x, normalized, w, b, 1e-3),
                         T.native_layer_norm(tx, normalized, tw, tb, 1e-3)):
        assert_same(got, want, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_fast_path_is_the_general_kernel_bit_for_bit(dtype, kernel_path,
                                                                monkeypatch):
    """native_layer_norm over the last dim of a row-major input (the fast path in front of
    the CPU kernel) gives the general kernel's outputs exactly, shapes and strides too, in
    and out of inference mode; stepped or mixed-dtype parameters go the general way."""
    from glasstorch.ops.nn.normalization import native_layer_norm
    x = gt.from_numpy(rng.standard_normal((4, 3, 8)).astype(dtype))
    w, b = (gt.from_numpy(rng.standard_normal(16).astype(dtype)) for _ in range(2))
    params = [gt.nn.Parameter(p[:8], requires_grad=False) for p in (w, b)]   # LayerNorm's
    calls = [(x, w[:8], b[:8]), (x, None, b[:8]), (x, w[:8], None), (x[0, 0], None, None),
             (x, *params), (x, w[::2], b[8:]), (x, w[:8].double(), None)]

    def run(inference):
        with gt.inference_mode(inference):
            return [[(t.numpy().copy(), t.shape, t.stride(), t.dtype, t.is_inference())
                     for t in gt.ops.aten.native_layer_norm(a, [a.shape[-1]], p, q, 1e-5)]
                    if p is None or p.dtype == a.dtype else
                    str(pytest.raises(RuntimeError, gt.ops.aten.native_layer_norm, a, [8], p,
                                      q, 1e-5).value)
                    for a, p, q in calls]
    from glasstorch.ops.nn import normalization as ops_normalization
    taken = []
    real = ops_normalization.layer_norm_last_dim
    monkeypatch.setattr(ops_normalization, "layer_norm_last_dim",
                        lambda *args: taken.append(real(*args)) or taken[-1])
    fast = [run(False), run(True)]
    plain = 5 + (dtype == np.float64)       # w.double() is plain for a float64 input
    assert [outs is not None for outs in taken] == [kernel_path == "native"] * (2 * plain)
    taken.clear()
    monkeypatch.setattr(native_layer_norm, "cpu_fast_path", None)
    native_layer_norm.impl("CPU")(native_layer_norm.impls["CPU"])
    try:
        general = [run(False), run(True)]
    finally:
        monkeypatch.undo()
        native_layer_norm.impl("CPU")(native_layer_norm.impls["CPU"])
    for got, want in zip(fast, general):
        for g, w_ in zip(got, want):
            if isinstance(g, str):
                assert g == w_
                continue
            for (a, *meta_a), (e, *meta_e) in zip(g, w_):
                assert meta_a == meta_e and np.array_equal(a, e, equal_nan=True)


def test_layer_norm_gradcheck_and_double_backward(kernel_path):
    x, _ = pair((2, 3, 4))
    w, _ = pair((4,))
    b, _ = pair((4,))
    assert gradcheck(lambda x, w, b: gt.layer_norm(x, (4,), w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: gt.layer_norm(x, (4,), w, b), (x, w, b))
    x2, _ = pair((3, 2, 3), layout="transposed")
    assert gradgradcheck(lambda x: F.layer_norm(x, (2, 3)), (x2,))


def test_layer_norm_double_backward_matches_torch(kernel_path):
    T = oracle_torch()
    x, tx = pair((3, 5))
    w, tw = pair((5,))
    (gx,) = gt.autograd.grad((F.layer_norm(x, (5,), w) ** 2).sum(), (x,), create_graph=True)
    (tgx,) = T.autograd.grad((T.nn.functional.layer_norm(tx, (5,), tw) ** 2).sum(), (tx,),
                             create_graph=True)
    assert_same(gx, tgx, atol=1e-10, check_stride=False)
    assert_grads((gx * gx).sum(), (tgx * tgx).sum(), (x, w), (tx, tw), atol=1e-9)


def test_layer_norm_non_contiguous_input(kernel_path):
    T = oracle_torch()
    x, tx = pair((4, 6, 5), layout="transposed")
    out, t_out = F.layer_norm(x, (6, 5)), T.nn.functional.layer_norm(tx, (6, 5))
    assert_same(out, t_out, atol=1e-12)
    assert_grads(out, t_out, (x,), (tx,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_layer_norm_low_precision(dtype, kernel_path):
    T = oracle_torch()
    tx = T.randn(3, 4, 8, dtype=getattr(T, dtype))
    x = to_gt(tx)
    for params in ((None, None), (T.randn(8), T.randn(8)),
                   (T.randn(8, dtype=tx.dtype), None)):
        tw, tb = params
        w, b = (None if p is None else to_gt(p) for p in params)
        got = gt.native_layer_norm(x, (8,), w, b, 1e-5)
        want = T.native_layer_norm(tx, (8,), tw, tb, 1e-5)
        for g, t in zip(got, want):
            assert_same(g, t, atol=1e-2, rtol=1e-2)


def test_layer_norm_errors():
    x = gt.randn(3, 4)
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 5\]"):
        F.layer_norm(x, (5,))
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        F.layer_norm(x, ())
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.layer_norm(x, (4,), gt.ones(5))
    with pytest.raises(RuntimeError, match="Expected bias to be of same shape"):
        F.layer_norm(x, (4,), None, gt.ones(3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.layer_norm(gt.ones(3, 4, dtype=gt.int64), (4,))
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.layer_norm(x, (4,), gt.ones(4, dtype=gt.float64))


# ---- batch norm ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (2, 3, 4, 5)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_values_stats_and_grads(shape, training, affine):
    T = oracle_torch()
    x, tx = pair(shape)
    w, tw = maybe_pair((3,), affine)
    b, tb = maybe_pair((3,), affine)
    stats = rng.standard_normal(3), rng.random(3) + 0.5
    rm, rv = (gt.from_numpy(s.copy()) for s in stats)
    trm, trv = (T.from_numpy(s.copy()) for s in stats)
    out = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.3, eps=1e-3)
    t_out = T.nn.functional.batch_norm(tx, trm, trv, tw, tb, training=training, momentum=0.3,
                                       eps=1e-3)
    assert_same(out, t_out, atol=1e-12)
    assert_same(rm, trm, atol=1e-12)
    assert_same(rv, trv, atol=1e-12)
    assert out.grad_fn.name() == t_out.grad_fn.name() == "NativeBatchNormBackward0"
    assert_grads(out, t_out, (x, w, b), (tx, tw, tb))


def test_batch_norm_without_running_stats_and_native_outputs():
    T = oracle_torch()
    x, tx = pair((4, 3, 5))
    out = F.batch_norm(x, None, None, training=True)
    t_out = T.nn.functional.batch_norm(tx, None, None, training=True)
    assert_same(out, t_out, atol=1e-12)
    for training, rm, rv in ((True, None, None), (False, T.zeros(3, dtype=T.float64),
                                                  T.ones(3, dtype=T.float64))):
        got = gt.native_batch_norm(x, None, None, None if rm is None else to_gt(rm),
                                   None if rv is None else to_gt(rv), training, 0.1, 1e-5)
        want = T.native_batch_norm(tx, None, None, rm, rv, training, 0.1, 1e-5)
        for g, t in zip(got, want):
            assert_same(g, t, atol=1e-12)


def test_native_batch_norm_with_one_value_per_channel_gives_a_nan_running_var():
    """F.batch_norm refuses this in training; the ATen op itself updates the running
    variance with n/(n-1) = 1/0, as PyTorch's: nan."""
    T = oracle_torch()
    x, tx = pair((1, 3))
    rm, rv = gt.zeros(3, dtype=gt.float64), gt.ones(3, dtype=gt.float64)
    trm, trv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
    got = gt.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    want = T.native_batch_norm(tx, None, None, trm, trv, True, 0.1, 1e-5)
    for g, t in zip(got + (rm, rv), want + (trm, trv)):
        assert_same(g, t, equal_nan=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck_and_double_backward(training):
    x, _ = pair((3, 2, 4))
    w, _ = pair((2,))
    b, _ = pair((2,))

    def fn(x, w, b):
        rm, rv = gt.zeros(2, dtype=gt.float64), gt.ones(2, dtype=gt.float64) * 1.5
        return F.batch_norm(x, rm, rv, w, b, training=training)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_batch_norm_double_backward_matches_torch():
    T = oracle_torch()
    x, tx = pair((4, 3))
    w, tw = pair((3,))
    (gx,) = gt.autograd.grad((F.batch_norm(x, None, None, w, training=True) ** 3).sum(), (x,),
                             create_graph=True)
    (tgx,) = T.autograd.grad((T.nn.functional.batch_norm(tx, None, None, tw, training=True)
                              ** 3).sum(), (tx,), create_graph=True)
    assert_same(gx, tgx, atol=1e-10, check_stride=False)
    assert_grads((gx * gx).sum(), (tgx * tgx).sum(), (x, w), (tx, tw), atol=1e-8)


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_batch_norm_layouts(layout):
    T = oracle_torch()
    x, tx = pair((2, 3, 4, 5), layout=layout)
    out = F.batch_norm(x, None, None, training=True)
    t_out = T.nn.functional.batch_norm(tx, None, None, training=True)
    assert_same(out, t_out, atol=1e-12)        # strides too: channels_last stays channels_last
    assert_grads(out, t_out, (x,), (tx,))
    sliced, t_sliced = x[:, :, ::2], tx[:, :, ::2]
    assert_same(F.batch_norm(sliced, None, None, training=True),
                T.nn.functional.batch_norm(t_sliced, None, None, training=True), atol=1e-12)


def test_batch_norm_empty_batch():
    T = oracle_torch()
    x, tx = pair((0, 3, 2))
    w, tw = pair((3,))
    rm, trm = gt.zeros(3), T.zeros(3)
    out = F.batch_norm(x, rm, gt.ones(3), w, training=True)
    t_out = T.nn.functional.batch_norm(tx, trm, T.ones(3), tw, training=True)
    assert_same(out, t_out)
    assert_same(rm, trm)
    assert_grads(out.sum() + w.sum(), t_out.sum() + tw.sum(), (w,), (tw,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batch_norm_low_precision(dtype):
    T = oracle_torch()
    tx = T.randn(4, 3, 5, dtype=getattr(T, dtype))
    x = to_gt(tx)
    for params in ((None, None, None), (T.randn(3), T.zeros(3), T.ones(3)),
                   (T.randn(3, dtype=tx.dtype), T.zeros(3, dtype=tx.dtype),
                    T.ones(3, dtype=tx.dtype))):
        tw, trm, trv = params
        w, rm, rv = (None if p is None else to_gt(p) for p in params)
        got = gt.native_batch_norm(x, w, None, rm, rv, True, 0.1, 1e-5)
        want = T.native_batch_norm(tx, tw, None, trm, trv, True, 0.1, 1e-5)
        for g, t in zip(got, want):
            assert_same(g, t, atol=2e-2, rtol=2e-2)
        if rm is not None:
            assert_same(rm, trm, atol=1e-2, rtol=1e-2)
            assert_same(rv, trv, atol=1e-2, rtol=1e-2)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"more than 1 value per channel when training, got "
                                         r"input size torch.Size\(\[1, 4\]\)"):
        F.batch_norm(gt.randn(1, 4), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(gt.randn(3, 4), None, None)
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        F.batch_norm(gt.randn(3, 4), gt.zeros(3), gt.ones(4))
    with pytest.raises(RuntimeError, match="weight should contain 4 elements not 3"):
        F.batch_norm(gt.randn(3, 4), gt.zeros(4), gt.ones(4), gt.ones(3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.batch_norm(gt.ones(3, 4, dtype=gt.int64), None, None, training=True)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.batch_norm(gt.randn(3, 4), None, None, gt.ones(4, dtype=gt.float64), training=True)
    rm = gt.zeros(4)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.batch_norm(gt.randn(3, 4), rm, gt.ones(4, dtype=gt.float64), training=True)
    assert rm.tolist() == [0.0] * 4                 # nothing half-updated


def test_top_level_batch_norm_signature():
    T = oracle_torch()
    x, tx = pair((4, 3))
    out = gt.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, False)
    assert_same(out, T.batch_norm(tx, None, None, None, None, True, 0.1, 1e-5, False),
                atol=1e-12)


# ---- group norm ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,groups", [((3, 4, 5), 2), ((2, 6), 3), ((2, 4, 3, 2), 4),
                                          ((0, 4, 3), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_values_and_grads(shape, groups, affine):
    T = oracle_torch()
    x, tx = pair(shape)
    w, tw = maybe_pair((shape[1],), affine)
    b, tb = maybe_pair((shape[1],), affine)
    out = F.group_norm(x, groups, w, b, eps=1e-3)
    t_out = T.nn.functional.group_norm(tx, groups, tw, tb, eps=1e-3)
    assert_same(out, t_out, atol=1e-12)
    assert out.grad_fn.name() == t_out.grad_fn.name()
    assert_grads(out, t_out, (x, w, b), (tx, tw, tb))


def test_group_norm_statistics_are_differentiable():
    T = oracle_torch()
    x, tx = pair((3, 4, 5))
    got = gt.native_group_norm(x, None, None, 3, 4, 5, 2, 1e-5)
    want = T.native_group_norm(tx, None, None, 3, 4, 5, 2, 1e-5)
    for g, t in zip(got, want):
        assert_same(g, t, atol=1e-12)
    assert_grads(got[0].sum() * 0 + (got[1] * 2).sum() + got[2].sum(),
                 want[0].sum() * 0 + (want[1] * 2).sum() + want[2].sum(), (x,), (tx,))


def test_group_norm_gradcheck_channels_last_and_errors():
    T = oracle_torch()
    x, tx = pair((1, 4, 2, 2), layout="channels_last")
    w, tw = pair((4,))
    out, t_out = F.group_norm(x, 2, w), T.nn.functional.group_norm(tx, 2, tw)
    assert_same(out, t_out, atol=1e-12)
    assert gradcheck(lambda x, w: F.group_norm(x, 2, w), (x, w))
    assert gradgradcheck(lambda x, w: F.group_norm(x, 2, w), (x, w))
    with pytest.raises(RuntimeError, match="divisible by num_groups, but got input of shape "
                                           r"\[3, 4, 5\] and num_groups=3"):
        F.group_norm(gt.randn(3, 4, 5), 3)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal"):
        F.group_norm(gt.randn(3, 4, 5), 2, gt.ones(3))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
        F.group_norm(gt.randn(3), 1)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.group_norm(gt.randn(1, 2), 2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_group_norm_low_precision(dtype):
    T = oracle_torch()
    tx = T.randn(2, 4, 6, dtype=getattr(T, dtype))
    for tw in (None, T.randn(4)):
        got = gt.native_group_norm(to_gt(tx), None if tw is None else to_gt(tw), None, 2, 4, 6,
                                   2, 1e-5)
        want = T.native_group_norm(tx, tw, None, 2, 4, 6, 2, 1e-5)
        for g, t in zip(got, want):
            assert_same(g, t, atol=2e-2, rtol=2e-2)


# ---- instance norm -------------------------------------------------------------------------

@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm(use_input_stats):
    T = oracle_torch()
    x, tx = pair((3, 4, 5))
    w, tw = pair((4,))
    b, tb = pair((4,))
    rm, trm = gt.zeros(4, dtype=gt.float64), T.zeros(4, dtype=T.float64)
    rv, trv = gt.ones(4, dtype=gt.float64) * 2, T.ones(4, dtype=T.float64) * 2
    out = F.instance_norm(x, rm, rv, w, b, use_input_stats=use_input_stats, momentum=0.2)
    t_out = T.nn.functional.instance_norm(tx, trm, trv, tw, tb,
                                          use_input_stats=use_input_stats, momentum=0.2)
    assert_same(out, t_out, atol=1e-12)
    assert_same(rm, trm, atol=1e-12)
    assert_same(rv, trv, atol=1e-12)
    assert out.grad_fn.name() == t_out.grad_fn.name()
    assert_grads(out, t_out, (x, w, b), (tx, tw, tb))


def test_instance_norm_gradcheck_and_errors():
    x, _ = pair((2, 3, 4), layout="transposed")
    w, _ = pair((3,))
    assert gradcheck(lambda x, w: F.instance_norm(x, weight=w), (x, w))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(gt.randn(2, 3, 1))
    with pytest.raises(RuntimeError, match="Expected running_mean and running_var to be "
                                           "defined when use_input_stats is false"):
        F.instance_norm(gt.randn(2, 3, 4), use_input_stats=False)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 0, 4)])
def test_instance_norm_empty(shape):
    T = oracle_torch()
    x, tx = pair(shape)
    out, t_out = F.instance_norm(x), T.nn.functional.instance_norm(tx)
    assert_same(out, t_out)


# ---- RMS norm and local response norm ------------------------------------------------------

@pytest.mark.parametrize("eps", [None, 1e-2])
@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm(eps, with_weight):
    T = oracle_torch()
    x, tx = pair((3, 4, 5), scale=1e-3)           # small values: eps matters
    w, tw = maybe_pair((4, 5), with_weight)
    out = F.rms_norm(x, (4, 5), w, eps)
    t_out = T.nn.functional.rms_norm(tx, (4, 5), tw, eps)
    assert_same(out, t_out, atol=1e-12)
    assert out.grad_fn.name() == t_out.grad_fn.name()
    assert_grads(out, t_out, (x, w), (tx, tw))
    assert gradcheck(lambda *a: gt.rms_norm(a[0], (4, 5), *a[1:], eps=eps),
                     (x, w) if with_weight else (x,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rms_norm_low_precision_and_errors(dtype):
    T = oracle_torch()
    tx, tw = T.randn(3, 5, dtype=getattr(T, dtype)) * 0.01, T.randn(5, dtype=getattr(T, dtype))
    assert_same(F.rms_norm(to_gt(tx), (5,), to_gt(tw)), T.nn.functional.rms_norm(tx, (5,), tw),
                atol=1e-2, rtol=1e-2)
    with pytest.raises(RuntimeError, match="expected input with shape"):
        F.rms_norm(gt.randn(3, 4), (5,))


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 4, 3, 2)])
def test_local_response_norm(size, shape):
    T = oracle_torch()
    x, tx = pair(shape)
    out = F.local_response_norm(x, size, alpha=0.1, beta=0.6, k=1.5)
    t_out = T.nn.functional.local_response_norm(tx, size, alpha=0.1, beta=0.6, k=1.5)
    assert_same(out, t_out, atol=1e-12)
    assert_grads(out, t_out, (x,), (tx,))


def test_local_response_norm_errors_and_empty():
    T = oracle_torch()
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2"):
        F.local_response_norm(gt.randn(2, 3), 2)
    x = gt.randn(0, 3, 4)
    assert_same(F.local_response_norm(x, 2), T.nn.functional.local_response_norm(
        T.randn(0, 3, 4), 2))


# ---- shared: low-precision backward, top-level functions, meta ---------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_gradients(dtype):
    T = oracle_torch()
    tx = T.randn(4, 3, 5, dtype=getattr(T, dtype)).requires_grad_()
    tw = T.randn(5, requires_grad=True)
    x, w = to_gt(tx.detach()).requires_grad_(), to_gt(tw.detach()).requires_grad_()
    cases = [(lambda L, x, w: L.layer_norm(x, (5,), w), (x, w), (tx, tw)),
             (lambda L, x, w: L.batch_norm(x.transpose(1, 2), None, None, None, None, True,
                                           0.1, 1e-5, False), (x,), (tx,)),
             (lambda L, x, w: L.group_norm(x, 3), (x,), (tx,))]
    for fn, ins, t_ins in cases:
        out, t_out = fn(gt, x, w), fn(T, tx, tw)
        upstream = T.randn(t_out.shape).to(t_out.dtype)
        got = gt.autograd.grad(out, ins, to_gt(upstream))
        want = T.autograd.grad(t_out, t_ins, upstream)
        for g, t in zip(got, want):
            assert_same(g, t, atol=5e-2, rtol=5e-2, check_stride=False)


def test_top_level_functions():
    T = oracle_torch()
    x, tx = pair((2, 4, 5))
    assert_same(gt.layer_norm(x, [5]), T.layer_norm(tx, [5]), atol=1e-12)
    assert_same(gt.group_norm(x, 2), T.group_norm(tx, 2), atol=1e-12)
    assert_same(gt.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False),
                T.instance_norm(tx, None, None, None, None, True, 0.1, 1e-5, False),
                atol=1e-12)
    assert_same(gt.rms_norm(x, [5]), T.rms_norm(tx, [5]), atol=1e-12)


def test_meta_shapes():
    x = gt.empty(2, 3, 4, 5, device="meta").contiguous(memory_format=gt.channels_last)
    out, mean, rstd = gt.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert out.device.type == "meta" and out.stride() == (60, 1, 15, 3)
    assert tuple(mean.shape) == tuple(rstd.shape) == (3,)
    _, mean, _ = gt.native_layer_norm(x, (4, 5), None, None, 1e-5)
    assert tuple(mean.shape) == (2, 3, 1, 1)
    _, mean, _ = gt.native_group_norm(x, None, None, 2, 3, 20, 3, 1e-5)
    assert tuple(mean.shape) == (2, 3)


@pytest.mark.parametrize("dtype,param_dtype", [("float16", "float32"), ("bfloat16", "bfloat16"),
                                               ("float32", "float32")])
def test_layer_norm_backward_without_graph_matches_recorded_and_torch(dtype, param_dtype,
                                                                     kernel_path):
    """A plain backward computes the gradients from NumPy directly; they agree with the
    recorded formula's (create_graph=True) and with torch's, in every dtype mode."""
    T = oracle_torch()
    tx = T.randn(3, 4, 8, dtype=getattr(T, dtype), requires_grad=True)
    tw = T.randn(8, dtype=getattr(T, param_dtype), requires_grad=True)
    tb = T.randn(8, dtype=getattr(T, param_dtype), requires_grad=True)
    tg = T.randn(3, 4, 8, dtype=getattr(T, dtype))
    want = T.autograd.grad(T.nn.functional.layer_norm(tx, (8,), tw, tb), (tx, tw, tb), tg)
    x, w, b = (to_gt(t.detach()).requires_grad_() for t in (tx, tw, tb))
    out = F.layer_norm(x, (8,), w, b)
    plain = gt.autograd.grad(out, (x, w, b), to_gt(tg), retain_graph=True)
    recorded = gt.autograd.grad(out, (x, w, b), to_gt(tg), create_graph=True)
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == "float32" else dict(atol=3e-2, rtol=3e-2)
    for p, r, t in zip(plain, recorded, want):
        assert p.dtype == r.dtype
        assert_same(p, r.detach(), **tol)
        assert_same(p, t, **tol)


@pytest.mark.parametrize("lead", [(4, 16), (48, 64)])          # 32 KiB and 1.5 MiB blocks
@pytest.mark.parametrize("shift", [0.0, 50.0])
@pytest.mark.parametrize("vecdot", [True, False])
def test_layer_norm_float32_transformer_rows_match_torch(shift, lead, vecdot, monkeypatch,
                                                        kernel_path):
    """The row kernels (normalization in place in the output; the backward's sums by BLAS
    in a small block, by einsum in a large one; the rows' dot products by vecdot, or by
    einsum where NumPy has no vecdot) on rows of a transformer's width, including rows whose
    mean is far from zero."""
    from glasstorch.backends.cpu import normalization
    if not vecdot:
        monkeypatch.setattr(normalization, "_VECDOT", None)
    elif normalization._VECDOT is None:
        pytest.skip("NumPy < 2 has no vecdot")
    T = oracle_torch()
    data = np.random.default_rng(5).standard_normal(lead + (128,)) + shift
    tx = T.from_numpy(data.astype(np.float32)).requires_grad_()
    tw, tb = T.randn(128, requires_grad=True), T.randn(128, requires_grad=True)
    tg = T.randn(*lead, 128)
    want = T.native_layer_norm(tx, (128,), tw, tb, 1e-5)
    wgrads = T.autograd.grad(want[0], (tx, tw, tb), tg)
    x, w, b = (gt.from_numpy(t.detach().numpy().copy()).requires_grad_() for t in (tx, tw, tb))
    got = gt.native_layer_norm(x, (128,), w, b, 1e-5)
    tol = 2e-5 if shift == 0 else 2e-4           # float32 holds x ~ 50 to 4e-6 only
    for a, e in zip(got, want):
        assert_same(a, e.detach(), rtol=1e-4, atol=tol)
    for a, e in zip(gt.autograd.grad(got[0], (x, w, b), gt.from_numpy(tg.numpy().copy())),
                    wgrads):
        assert_same(a, e, rtol=1e-4, atol=10 * tol)


def test_layer_norm_zero_width_rows_match_torch(kernel_path):
    T = oracle_torch()
    for shape, normalized in (((3, 0), (0,)), ((2, 3, 0), (3, 0))):
        for got, want in zip(gt.native_layer_norm(gt.ones(shape), normalized, None, None, 1e-5),
                             T.native_layer_norm(T.ones(shape), normalized, None, None, 1e-5)):
            assert_same(got, want)


@pytest.mark.parametrize("shape", [(2, 1, 4, 5), (2, 3, 4, 5), (2, 3, 1, 1), (2, 3, 4, 1),
                                   (1, 3, 1, 5), (2, 1, 1, 5)])
@pytest.mark.parametrize("layout", ["channels_last", "transposed", "contiguous"])
def test_batch_and_group_norm_outputs_have_torchs_strides(shape, layout):
    """group_norm lays its output out as PyTorch's suggest_memory_format names the input's
    (a size-1 channel dim channels-last input stays channels-last), batch_norm as PyTorch's
    does; values as torch's."""
    torch = oracle_torch()
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape).astype(np.float32)

    def outputs(T):
        x = T.from_numpy(values.copy())
        if layout == "channels_last":
            x = x.to(memory_format=T.channels_last)
        elif layout == "transposed":
            x = x.transpose(2, 3)
        bn, gn = T.nn.BatchNorm2d(shape[1]), T.nn.GroupNorm(1, shape[1])
        ys = [bn(x), bn.eval()(x), gn(x)]
        return [y.stride() for y in ys], [y.detach().numpy() for y in ys]
    (ours, ours_values), (theirs, their_values) = outputs(gt), outputs(torch)
    assert ours == theirs
    for a, b in zip(ours_values, their_values):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
