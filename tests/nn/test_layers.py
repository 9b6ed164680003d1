"""The layer modules of glasstorch.nn against torch.nn: the same constructor arguments give
the same repr, state_dict keys/shapes, forward values and gradients (weights copied from the
torch module), train/eval behaviour and running statistics, and initial distributions."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import assert_same, oracle_torch, to_numpy

torch = oracle_torch()


def _to_gt(x):
    return gt.tensor(x.detach().numpy()) if hasattr(x, "detach") else x


def copy_state(gm, tm) -> None:
    gm.load_state_dict({k: gt.tensor(v.numpy()) for k, v in tm.state_dict().items()})


def build(name, *args, **kwargs):
    return getattr(gt.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def check_structure(gm, tm) -> None:
    assert repr(gm) == repr(tm)
    gsd, tsd = gm.state_dict(), tm.state_dict()
    assert list(gsd) == list(tsd)
    for k in tsd:
        assert tuple(gsd[k].shape) == tuple(tsd[k].shape), k
        assert str(gsd[k].dtype) == str(tsd[k].dtype), k
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]


def _outputs(out):
    return out if isinstance(out, tuple) else (out,)


def compare(gm, tm, inputs, dtype="float64", tol=1e-9, fwd_kwargs=None, grad=True):
    """Forward both modules on the same data; compare outputs and, if grad, the gradients
    of the inputs and parameters for a shared random output gradient."""
    fwd_kwargs = fwd_kwargs or {}
    rng = np.random.default_rng(0)
    tdt = getattr(torch, dtype)
    t_in, g_in = [], []
    for x in inputs:
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            tx = torch.tensor(x, dtype=tdt, requires_grad=grad)
            gx = gt.tensor(x.astype(dtype), requires_grad=grad)
        else:
            tx, gx = torch.tensor(x), gt.tensor(x)
        t_in.append(tx)
        g_in.append(gx)
    tout = _outputs(tm(*t_in, **fwd_kwargs))
    gout = _outputs(gm(*g_in, **fwd_kwargs))
    assert len(tout) == len(gout)
    for a, b in zip(gout, tout):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=tol, atol=tol)
    if not grad:
        return
    g = rng.standard_normal(tuple(tout[0].shape))
    tout[0].backward(torch.tensor(g, dtype=tdt))
    gout[0].backward(gt.tensor(g.astype(dtype)))
    for gx, tx in zip(g_in, t_in):
        if tx.requires_grad:
            np.testing.assert_allclose(to_numpy(gx.grad), to_numpy(tx.grad), rtol=tol,
                                       atol=tol)
    tparams = dict(tm.named_parameters())
    for n, p in gm.named_parameters():
        if tparams[n].grad is None:
            assert p.grad is None, n
        else:
            np.testing.assert_allclose(to_numpy(p.grad), to_numpy(tparams[n].grad),
                                       rtol=tol, atol=tol, err_msg=n)


def _r(*shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


# (class name, constructor args, constructor kwargs, input arrays, forward kwargs)
CASES = [
    ("Identity", (3,), {"x": 1}, [_r(2, 3)], {}),
    ("Linear", (5, 4), {}, [_r(3, 5)], {}),
    ("Linear", (5, 4), {"bias": False}, [_r(2, 3, 5)], {}),
    ("Bilinear", (3, 4, 2), {}, [_r(5, 3), _r(5, 4, seed=2)], {}),
    ("Bilinear", (3, 4, 2), {"bias": False}, [_r(5, 3), _r(5, 4, seed=2)], {}),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "groups": 2}, [_r(2, 4, 9)], {}),
    ("Conv1d", (2, 3, 3), {"padding": 2, "padding_mode": "circular", "bias": False},
     [_r(2, 2, 7)], {}),
    ("Conv1d", (2, 3, 4), {"padding": "same", "dilation": 2}, [_r(2, 2, 9)], {}),
    ("Conv1d", (2, 3, 4), {"padding": "same", "padding_mode": "replicate"}, [_r(2, 2, 9)],
     {}),
    ("Conv2d", (3, 4, 3), {"padding": "same", "padding_mode": "reflect"}, [_r(2, 3, 6, 5)],
     {}),
    ("Conv2d", (3, 4, (2, 3)), {"padding": "valid", "dilation": (2, 1)}, [_r(2, 3, 6, 5)],
     {}),
    ("Conv2d", (2, 4, 3), {"padding": (1, 2), "padding_mode": "replicate", "stride": 2},
     [_r(2, 7, 6)], {}),
    ("Conv3d", (2, 4, 2), {"padding": 1, "padding_mode": "circular"}, [_r(1, 2, 3, 4, 3)],
     {}),
    ("ConvTranspose1d", (4, 2, 3), {"stride": 2, "output_padding": 1, "groups": 2},
     [_r(2, 4, 5)], {}),
    ("ConvTranspose2d", (3, 2, 3), {"stride": 2, "padding": 1}, [_r(2, 3, 4, 4)],
     {"output_size": (8, 8)}),
    ("ConvTranspose2d", (3, 2, (2, 3)), {"dilation": 2, "bias": False}, [_r(3, 4, 4)], {}),
    ("ConvTranspose3d", (2, 2, 2), {"stride": 2}, [_r(1, 2, 2, 3, 2)],
     {"output_size": [1, 2, 5, 6, 5]}),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1}, [_r(2, 3, 9)], {}),
    ("MaxPool2d", (2,), {"ceil_mode": True, "return_indices": True}, [_r(2, 3, 5, 5)], {}),
    ("MaxPool2d", ((2, 3),), {"dilation": 2}, [_r(2, 3, 7, 8)], {}),
    ("MaxPool3d", (2,), {}, [_r(1, 2, 4, 4, 4)], {}),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False},
     [_r(2, 3, 9)], {}),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, [_r(2, 3, 7, 6)], {}),
    ("AvgPool2d", (2,), {"divisor_override": 3}, [_r(2, 3, 4, 4)], {}),
    ("AvgPool3d", (2,), {"stride": 1}, [_r(1, 2, 3, 4, 3)], {}),
    ("AdaptiveAvgPool1d", (4,), {}, [_r(2, 3, 9)], {}),
    ("AdaptiveAvgPool2d", ((3, None),), {}, [_r(2, 3, 7, 5)], {}),
    ("AdaptiveAvgPool3d", (2,), {}, [_r(1, 2, 5, 4, 3)], {}),
    ("AdaptiveMaxPool1d", (4,), {"return_indices": True}, [_r(2, 3, 9)], {}),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, [_r(2, 3, 7, 5)], {}),
    ("AdaptiveMaxPool3d", (2,), {}, [_r(1, 2, 5, 4, 3)], {}),
    ("LPPool1d", (2, 3), {"stride": 2}, [np.abs(_r(2, 3, 9)) + 0.1], {}),
    ("LPPool2d", (3.0, 2), {}, [np.abs(_r(2, 3, 6, 4)) + 0.1], {}),
    ("LPPool3d", (2, 2), {"ceil_mode": False}, [np.abs(_r(1, 2, 4, 4, 4)) + 0.1], {}),
    ("LayerNorm", ((3, 4),), {}, [_r(2, 5, 3, 4)], {}),
    ("LayerNorm", (4,), {"bias": False}, [_r(2, 5, 4)], {}),
    ("LayerNorm", (4,), {"elementwise_affine": False, "eps": 1e-3}, [_r(2, 5, 4)], {}),
    ("GroupNorm", (2, 4), {}, [_r(3, 4, 5)], {}),
    ("GroupNorm", (1, 4), {"affine": False}, [_r(3, 4, 2, 3)], {}),
    ("GroupNorm", (2, 4), {"bias": False, "eps": 1e-3}, [_r(3, 4, 5)], {}),
    ("RMSNorm", (4,), {}, [_r(2, 3, 4)], {}),
    ("RMSNorm", ((3, 4),), {"eps": 1e-3, "elementwise_affine": False}, [_r(2, 3, 4)], {}),
    ("LocalResponseNorm", (3,), {}, [_r(2, 5, 4, 4)], {}),
    ("LocalResponseNorm", (2,), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, [_r(2, 5, 6)], {}),
    ("Flatten", (), {}, [_r(2, 3, 4, 5)], {}),
    ("Flatten", (0, 2), {}, [_r(2, 3, 4, 5)], {}),
    ("Unflatten", (1, (2, -1)), {}, [_r(2, 6, 5)], {}),
    ("ZeroPad1d", (2,), {}, [_r(2, 3, 4)], {}),
    ("ZeroPad2d", ((1, 0, 2, 3),), {}, [_r(2, 3, 4)], {}),
    ("ZeroPad3d", (1,), {}, [_r(1, 2, 3, 4)], {}),
    ("ConstantPad1d", ((1, 2), 3.5), {}, [_r(2, 3, 4)], {}),
    ("ConstantPad2d", (1, -1.0), {}, [_r(2, 3, 4)], {}),
    ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 0.5), {}, [_r(1, 2, 3, 4)], {}),
    ("ReflectionPad1d", (2,), {}, [_r(2, 3, 4)], {}),
    ("ReflectionPad2d", ((1, 2, 0, 1),), {}, [_r(2, 3, 4)], {}),
    ("ReflectionPad3d", (1,), {}, [_r(1, 2, 3, 4, 3)], {}),
    ("ReplicationPad1d", ((3, 1),), {}, [_r(2, 3, 4)], {}),
    ("ReplicationPad2d", (2,), {}, [_r(1, 2, 3, 4)], {}),
    ("ReplicationPad3d", (1,), {}, [_r(1, 2, 3, 4, 3)], {}),
    ("CircularPad1d", (2,), {}, [_r(2, 3, 4)], {}),
    ("CircularPad2d", ((1, 2, 0, 1),), {}, [_r(2, 3, 4)], {}),
    ("CircularPad3d", (1,), {}, [_r(1, 2, 3, 4, 3)], {}),
    ("PixelShuffle", (2,), {}, [_r(2, 8, 3, 4)], {}),
    ("PixelUnshuffle", (2,), {}, [_r(2, 2, 4, 6)], {}),
    ("ChannelShuffle", (2,), {}, [_r(2, 6, 3, 4)], {}),
    ("Upsample", (), {"scale_factor": 2}, [_r(2, 3, 4, 4)], {}),
    ("Upsample", ((5, 7),), {"mode": "bilinear", "align_corners": False}, [_r(2, 3, 4, 4)],
     {}),
    ("Upsample", (), {"scale_factor": (2, 1.5), "mode": "bicubic", "align_corners": True},
     [_r(1, 2, 4, 4)], {}),
    ("Upsample", (), {"size": 9, "mode": "linear"}, [_r(2, 3, 4)], {}),
    ("UpsamplingNearest2d", (), {"scale_factor": 3}, [_r(2, 3, 3, 2)], {}),
    ("UpsamplingBilinear2d", ((5, 6),), {}, [_r(2, 3, 3, 2)], {}),
    ("CosineSimilarity", (), {}, [_r(3, 4, 5), _r(3, 4, 5, seed=2)], {}),
    ("CosineSimilarity", (2, 1e-6), {}, [_r(3, 4, 5), _r(3, 1, 5, seed=2)], {}),
    ("PairwiseDistance", (), {}, [_r(3, 4), _r(3, 4, seed=2)], {}),
    ("PairwiseDistance", (1.0, 1e-4, True), {}, [_r(3, 4), _r(3, 4, seed=2)], {}),
    ("Fold", ((4, 5), 2), {}, [_r(2, 12, 12)], {}),
    ("Fold", ((5, 5), (2, 3)), {"padding": 1, "stride": 2, "dilation": 1},
     [_r(2, 18, 9)], {}),
    ("Unfold", (2,), {"padding": 1, "dilation": (1, 2)}, [_r(2, 3, 4, 5)], {}),
]


@pytest.mark.parametrize("name,args,kwargs,inputs,fwd", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_module_matches_torch_float64(name, args, kwargs, inputs, fwd):
    gm, tm = build(name, *args, **kwargs)
    check_structure(gm, tm)
    tm.double()
    gm.double()
    copy_state(gm, tm)
    compare(gm, tm, inputs, "float64", 1e-9, fwd)


@pytest.mark.parametrize("name,args,kwargs,inputs", [
    ("Linear", (5, 4), {}, [_r(3, 5)]),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "reflect"}, [_r(2, 3, 6, 5)]),
    ("ConvTranspose2d", (3, 2, 3), {"stride": 2}, [_r(2, 3, 4, 4)]),
    ("LayerNorm", (4,), {}, [_r(2, 5, 4)]),
    ("BatchNorm2d", (3,), {}, [_r(4, 3, 2, 2)]),
])
def test_module_matches_torch_float32(name, args, kwargs, inputs):
    gm, tm = build(name, *args, **kwargs)
    copy_state(gm, tm)
    compare(gm, tm, inputs, "float32", 5e-5)


def test_non_contiguous_inputs():
    x = _r(6, 3, 5)
    for name, args, view in [("Linear", (6, 4), lambda t: t.transpose(0, 2)),
                             ("Conv1d", (3, 2, 2), lambda t: t[::2]),
                             ("BatchNorm1d", (3,), lambda t: t[:, :, 1::2]),
                             ("LayerNorm", (3,), lambda t: t.transpose(1, 2))]:
        gm, tm = build(name, *args)
        gm.double()
        tm.double()
        copy_state(gm, tm)
        np.testing.assert_allclose(to_numpy(gm(view(gt.tensor(x)))),
                                   to_numpy(tm(view(torch.tensor(x)))), rtol=1e-9, atol=1e-12)


def test_deepcopy_and_pickle():
    import copy
    import pickle
    for m in (gt.nn.Conv2d(2, 3, 3, padding_mode="reflect", padding=1), gt.nn.BatchNorm1d(3),
              gt.nn.Embedding(5, 2, padding_idx=0), gt.nn.MaxPool2d(2), gt.nn.ZeroPad2d(1)):
        for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
            assert repr(clone) == repr(m)
            for (k, a), (_, b) in zip(clone.state_dict().items(), m.state_dict().items()):
                np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=k)


def test_factory_kwargs():
    for name, args in [("Linear", (3, 2)), ("Conv2d", (2, 3, 3)), ("BatchNorm1d", (3,)),
                       ("LayerNorm", (3,)), ("Embedding", (4, 3)), ("Bilinear", (2, 3, 4)),
                       ("GroupNorm", (1, 3)), ("RMSNorm", (3,)), ("EmbeddingBag", (4, 3))]:
        gm = getattr(gt.nn, name)(*args, device="cpu", dtype=gt.float64)
        tm = getattr(torch.nn, name)(*args, device="cpu", dtype=torch.float64)
        gsd, tsd = gm.state_dict(), tm.state_dict()
        for k in tsd:
            assert str(gsd[k].dtype).split(".")[-1] == str(tsd[k].dtype).split(".")[-1], k
            assert gsd[k].device.type == "cpu"


# ---- batch and instance norm -------------------------------------------------------------

@pytest.mark.parametrize("name,shape,kwargs", [
    ("BatchNorm1d", (4, 3), {}),
    ("BatchNorm1d", (4, 3, 5), {"momentum": None}),
    ("BatchNorm2d", (4, 3, 2, 3), {"momentum": 0.3, "eps": 1e-3}),
    ("BatchNorm2d", (4, 3, 2, 3), {"affine": False}),
    ("BatchNorm2d", (4, 3, 2, 3), {"bias": False}),
    ("BatchNorm3d", (2, 3, 2, 2, 3), {"track_running_stats": False}),
    ("InstanceNorm1d", (2, 3, 5), {}),
    ("InstanceNorm1d", (3, 5), {"affine": True}),
    ("InstanceNorm2d", (2, 3, 3, 4), {"track_running_stats": True, "affine": True}),
    ("InstanceNorm2d", (3, 3, 4), {"track_running_stats": True}),
    ("InstanceNorm3d", (2, 3, 2, 3, 2), {"affine": True, "bias": False}),
])
def test_norm_train_eval_running_stats(name, shape, kwargs):
    gm, tm = build(name, 3, **kwargs)
    check_structure(gm, tm)
    gm.double()
    tm.double()
    copy_state(gm, tm)
    check_structure(gm, tm)     # double() leaves num_batches_tracked int64
    for step in range(3):
        x = _r(*shape, seed=10 + step) * (step + 1) + step
        compare(gm, tm, [x], "float64", 1e-9)
        gsd, tsd = gm.state_dict(), tm.state_dict()
        for k in tsd:
            np.testing.assert_allclose(to_numpy(gsd[k]), tsd[k].numpy(), rtol=1e-9,
                                       atol=1e-12, err_msg=k)
    gm.eval()
    tm.eval()
    compare(gm, tm, [_r(*shape, seed=20)], "float64", 1e-9)
    for k, v in tm.state_dict().items():   # eval leaves the statistics alone
        np.testing.assert_allclose(to_numpy(gm.state_dict()[k]), v.numpy(), rtol=1e-9)


def test_batchnorm_num_batches_tracked_and_cumulative_average():
    gm, tm = build("BatchNorm1d", 2, momentum=None)
    copy_state(gm, tm)
    xs = [_r(5, 2, seed=s) + s for s in range(4)]
    for x in xs:
        gm(gt.tensor(x.astype("float32")))
        tm(torch.tensor(x, dtype=torch.float32))
    assert gm.num_batches_tracked.dtype == gt.int64
    assert gm.num_batches_tracked.item() == tm.num_batches_tracked.item() == 4
    # a cumulative average of the batch means
    np.testing.assert_allclose(to_numpy(gm.running_mean),
                               np.mean([x.mean(0) for x in xs], 0), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(gm.running_var), tm.running_var.numpy(), rtol=1e-5)
    gm.reset_running_stats()
    assert gm.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(to_numpy(gm.running_var), [1.0, 1.0])


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("name,shape", [
    ("BatchNorm1d", (2, 3, 4, 5)), ("BatchNorm1d", (3,)), ("BatchNorm2d", (2, 3, 4)),
    ("BatchNorm3d", (2, 3, 4, 4)), ("InstanceNorm1d", (2, 3, 4, 5)),
    ("InstanceNorm2d", (3, 4)), ("InstanceNorm3d", (2, 3)),
])
def test_norm_input_dim_errors(name, shape):
    gm, tm = build(name, 3)
    g = _error(lambda: gm(gt.zeros(shape)))
    t = _error(lambda: tm(torch.zeros(shape)))
    assert g == t


def test_batchnorm_batch_of_one_in_training():
    gm, tm = build("BatchNorm1d", 3)
    g = _error(lambda: gm(gt.zeros(1, 3)))
    t = _error(lambda: tm(torch.zeros(1, 3)))
    assert g[0] is t[0] is ValueError
    assert g[1] == t[1]
    gm.eval()
    assert tuple(gm(gt.zeros(1, 3)).shape) == (1, 3)


def test_instance_norm_num_features_mismatch():
    gm, tm = build("InstanceNorm1d", 4, affine=True)
    assert _error(lambda: gm(gt.zeros(2, 3, 5))) == _error(lambda: tm(torch.zeros(2, 3, 5)))
    gm, tm = build("InstanceNorm1d", 4)
    with pytest.warns(UserWarning, match="does not match num_features"):
        gm(gt.randn(2, 3, 5))


def test_batchnorm_state_dict_version_1_without_num_batches_tracked():
    for lib in (gt, torch):
        src = lib.nn.BatchNorm2d(3)
        sd = src.state_dict()
        del sd["num_batches_tracked"]
        sd._metadata[""]["version"] = 1
        dst = lib.nn.BatchNorm2d(3)
        assert not dst.load_state_dict(sd).missing_keys
        with pytest.raises(RuntimeError, match="num_batches_tracked"):
            sd._metadata[""]["version"] = 2
            lib.nn.BatchNorm2d(3).load_state_dict(sd)
    assert gt.nn.BatchNorm2d(3).state_dict()._metadata[""]["version"] == 2


def test_instancenorm_state_dict_without_version_drops_stale_running_stats():
    msgs = []
    for lib in (gt, torch):
        sd = lib.nn.BatchNorm1d(3).state_dict()
        sd._metadata[""].pop("version")
        del sd["num_batches_tracked"]
        with pytest.raises(RuntimeError) as info:
            lib.nn.InstanceNorm1d(3).load_state_dict(sd)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    assert '"running_mean" and "running_var"' in msgs[0]


def test_groupnorm_divisibility_error():
    assert _error(lambda: gt.nn.GroupNorm(3, 4)) == _error(lambda: torch.nn.GroupNorm(3, 4))


# ---- embeddings --------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs", [
    ((10, 3), {}),
    ((10, 3), {"padding_idx": 2}),
    ((10, 3), {"padding_idx": -1, "scale_grad_by_freq": True}),
    ((10, 3), {"max_norm": 1.0, "norm_type": 1.0}),
])
def test_embedding(args, kwargs):
    gm, tm = build("Embedding", *args, **kwargs)
    check_structure(gm, tm)
    gm.double()
    tm.double()
    copy_state(gm, tm)
    idx = np.array([[1, 2, 9, 2], [0, 2, 5, 1]])
    compare(gm, tm, [idx], "float64", 1e-9)
    # max_norm renormalizes the looked-up rows of the weight in place
    np.testing.assert_allclose(to_numpy(gm.weight), tm.weight.detach().numpy(), rtol=1e-9)


@pytest.mark.parametrize("kwargs,offsets,psw", [
    ({}, None, False),
    ({"mode": "sum", "padding_idx": 0}, None, False),
    ({"mode": "max"}, None, False),
    ({"mode": "sum"}, [0, 3, 3], True),
    ({"mode": "mean", "include_last_offset": True}, [0, 2, 5, 8], False),
])
def test_embedding_bag(kwargs, offsets, psw):
    gm, tm = build("EmbeddingBag", 10, 3, **kwargs)
    check_structure(gm, tm)
    gm.double()
    tm.double()
    copy_state(gm, tm)
    if offsets is None:
        inputs = [np.array([[1, 2, 0, 2], [0, 0, 5, 1]])]
    else:
        inputs = [np.array([1, 2, 0, 2, 0, 0, 5, 1]), np.array(offsets)]
    if psw:
        inputs.append(_r(8))
    compare(gm, tm, inputs, "float64", 1e-9)


def test_embedding_from_pretrained():
    w = _r(5, 3)
    for freeze in (True, False):
        ge = gt.nn.Embedding.from_pretrained(gt.tensor(w), freeze=freeze, padding_idx=1)
        te = torch.nn.Embedding.from_pretrained(torch.tensor(w), freeze=freeze, padding_idx=1)
        assert repr(ge) == repr(te)
        assert ge.weight.requires_grad == te.weight.requires_grad == (not freeze)
        np.testing.assert_array_equal(to_numpy(ge.weight), w)  # the padding row is kept
        gb = gt.nn.EmbeddingBag.from_pretrained(gt.tensor(w), freeze=freeze, mode="sum")
        tb = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), freeze=freeze,
                                                   mode="sum")
        assert repr(gb) == repr(tb)
        assert gb.weight.requires_grad == (not freeze)
    source = gt.tensor(w)
    ge = gt.nn.Embedding.from_pretrained(source)
    source[0, 0] = 100.0    # the weight shares the pretrained tensor's storage, as torch
    assert ge.weight[0, 0].item() == 100.0
    for lib in (gt, torch):
        with pytest.raises(AssertionError, match="2-dimensional"):
            lib.nn.Embedding.from_pretrained(lib.zeros(3))
        with pytest.raises(AssertionError, match="Padding_idx must be within"):
            lib.nn.Embedding(3, 2, padding_idx=3)
        with pytest.raises(AssertionError, match="Shape of weight does not match"):
            lib.nn.Embedding(3, 2, _weight=lib.zeros(2, 2))


# ---- conv construction and output_size errors --------------------------------------------

@pytest.mark.parametrize("call", [
    lambda nn: nn.Conv2d(3, 4, 3, groups=2),
    lambda nn: nn.Conv2d(4, 3, 3, groups=2),
    lambda nn: nn.Conv2d(4, 4, 3, groups=0),
    lambda nn: nn.Conv1d(4, 4, 3, padding="full"),
    lambda nn: nn.Conv1d(4, 4, 3, padding="same", stride=2),
    lambda nn: nn.Conv1d(4, 4, 3, padding_mode="mirror"),
    lambda nn: nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect"),
])
def test_conv_constructor_errors(call):
    g = _error(lambda: call(gt.nn))
    t = _error(lambda: call(torch.nn))
    assert g[0] is t[0] is ValueError
    # torch prints a set of strings, whose order may vary between processes
    assert sorted(g[1]) == sorted(t[1])


@pytest.mark.parametrize("output_size", [(9, 9), (1, 2, 3, 4, 5)])
def test_conv_transpose_bad_output_size(output_size):
    gm, tm = build("ConvTranspose2d", 3, 2, 3, stride=2, padding=1)
    g = _error(lambda: gm(gt.zeros(1, 3, 4, 4), output_size=output_size))
    t = _error(lambda: tm(torch.zeros(1, 3, 4, 4), output_size=output_size))
    assert g[0] is t[0] is ValueError
    assert g[1].replace("glasstorch", "torch") == t[1]


def test_max_unpool_roundtrip():
    for n, shape in [(1, (2, 3, 8)), (2, (2, 3, 6, 4)), (3, (1, 2, 4, 4, 2))]:
        gp, tp = build(f"MaxPool{n}d", 2, return_indices=True)
        gu, tu = build(f"MaxUnpool{n}d", 2)
        assert repr(gu) == repr(tu)
        x = _r(*shape)
        gy, gi = gp(gt.tensor(x))
        ty, ti = tp(torch.tensor(x))
        size = list(shape[2:])
        compare(gu, tu, [to_numpy(gy), to_numpy(gi)], "float64", 1e-12,
                {"output_size": size})


# ---- initialisation ----------------------------------------------------------------------

def _uniform_ok(t, bound):
    a = to_numpy(t)
    assert np.abs(a).max() <= bound
    assert np.abs(a).max() > 0.95 * bound
    assert abs(a.mean()) < 0.05 * bound
    assert abs(a.std() - bound / math.sqrt(3)) < 0.03 * bound


def test_default_init_distributions():
    gt.manual_seed(0)
    lin = gt.nn.Linear(400, 300)
    _uniform_ok(lin.weight, 1 / math.sqrt(400))
    _uniform_ok(lin.bias, 1 / math.sqrt(400))
    conv = gt.nn.Conv2d(16, 256, 3, groups=2)
    _uniform_ok(conv.weight, 1 / math.sqrt(8 * 9))
    _uniform_ok(conv.bias, 1 / math.sqrt(8 * 9))
    convt = gt.nn.ConvTranspose2d(300, 64, 3)      # fan_in from weight.size(1) * k
    _uniform_ok(convt.weight, 1 / math.sqrt(64 * 9))
    bil = gt.nn.Bilinear(20, 30, 200)
    _uniform_ok(bil.weight, 1 / math.sqrt(20))
    emb = gt.nn.Embedding(2000, 64, padding_idx=7)
    w = to_numpy(emb.weight)
    assert (w[7] == 0).all()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02
    bag = gt.nn.EmbeddingBag(2000, 64)
    assert abs(to_numpy(bag.weight).std() - 1) < 0.02
    for m in (gt.nn.BatchNorm2d(5), gt.nn.LayerNorm(5), gt.nn.GroupNorm(1, 5),
              gt.nn.InstanceNorm1d(5, affine=True)):
        np.testing.assert_array_equal(to_numpy(m.weight), np.ones(5))
        np.testing.assert_array_equal(to_numpy(m.bias), np.zeros(5))
    np.testing.assert_array_equal(to_numpy(gt.nn.RMSNorm(5).weight), np.ones(5))
    for p in lin.parameters():
        assert isinstance(p, gt.nn.Parameter) and p.requires_grad


def test_reset_parameters_and_zero_fan_in():
    with pytest.warns(UserWarning, match="zero-element"):
        lin = gt.nn.Linear(0, 3)    # fan_in 0: the bias is drawn from U(0, 0)
    np.testing.assert_array_equal(to_numpy(lin.bias), np.zeros(3))
    conv = gt.nn.Conv1d(2, 2, 1)
    with gt.no_grad():
        conv.weight.fill_(5)
    conv.reset_parameters()
    assert np.abs(to_numpy(conv.weight)).max() <= 1 / math.sqrt(2)


# ---- state_dict round trip and printing of a model ---------------------------------------

def test_model_print_and_state_dict_roundtrip():
    def model(nn):
        return nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
            nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding="same", padding_mode="circular"),
            nn.GroupNorm(2, 8), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
            nn.Linear(8, 4), nn.LayerNorm(4), nn.Unflatten(1, (2, 2)))
    gm, tm = model(gt.nn), model(torch.nn)
    check_structure(gm, tm)
    copy_state(gm, tm)
    x = _r(2, 3, 8, 8)
    compare(gm, tm, [x], "float32", 2e-4)     # float32 sums of ~100 terms, in another order
    back = {k: torch.tensor(to_numpy(v)) for k, v in gm.state_dict().items()}
    tm2 = model(torch.nn)
    tm2.load_state_dict(back)
    for k, v in gm.state_dict().items():
        np.testing.assert_array_equal(tm2.state_dict()[k].numpy(), to_numpy(v))


def test_upsample_and_pad_attributes():
    gu, tu = build("Upsample", scale_factor=(2, 3))
    assert gu.scale_factor == tu.scale_factor == (2.0, 3.0)
    assert repr(gu) == repr(tu)
    for name in ("ZeroPad2d", "ConstantPad2d"):
        args = (2,) if name == "ZeroPad2d" else (2, 1.5)
        gp, tp = build(name, *args)
        assert gp.padding == tp.padding and gp.value == tp.value
        assert isinstance(gp, gt.nn.ConstantPad2d) == isinstance(tp, torch.nn.ConstantPad2d)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gt.nn.UpsamplingBilinear2d(scale_factor=2)(gt.zeros(1, 1, 2, 2))
    for lib in (gt, torch):
        with pytest.raises(TypeError, match="must be a tuple of ints"):
            lib.nn.Unflatten(1, 4)
        with pytest.raises(TypeError, match="found element of type float at pos 1"):
            lib.nn.Unflatten(1, (2, 2.0))


def test_every_listed_class_is_exported():
    from glasstorch.nn.modules import (batchnorm, channelshuffle, conv, distance, flatten, fold,
                                       instancenorm, linear, normalization, padding,
                                       pixelshuffle, pooling, sparse, upsampling)
    for mod in (linear, conv, pooling, batchnorm, instancenorm, normalization, sparse, flatten,
                padding, pixelshuffle, channelshuffle, upsampling, distance, fold):
        for name in mod.__all__:
            assert getattr(gt.nn, name) is getattr(mod, name)
            assert hasattr(torch.nn, name), name


def _chain(t):
    names, node = [], t.grad_fn
    while node is not None:
        names.append(node.name().split("::")[-1])
        node = node.next_functions[0][0] if node.next_functions else None
    return names


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("transposed", [False, True])
def test_linear_folds_batched_inputs_as_torch(bias, transposed):
    """A 3-D input goes through one mm on its rows: torch's values, strides, gradients and
    node chain (UnsafeView <- Mm <- View, or <- UnsafeView <- Clone for a copied input)."""
    torch = oracle_torch()
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((5, 3, 4)), rng.standard_normal((6, 4)),
              rng.standard_normal(6)]
    results = []
    for lib in (gt, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        inp = x.transpose(0, 1) if transposed else x
        y = lib.nn.functional.linear(inp, w, b if bias else None)
        (y * lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
        results.append((y, x.grad, w.grad, b.grad if bias else None, _chain(y)))
    (gy, *g_grads, g_chain), (ty, *t_grads, t_chain) = results
    assert_same(gy, ty, rtol=1e-12, atol=1e-12)
    for a, e in zip(g_grads, t_grads):
        if e is not None:
            assert_same(a, e, rtol=1e-12, atol=1e-12, check_stride=False)
    assert g_chain == t_chain


def test_linear_weight_gradient_layout_and_values_match_torch():
    """linear's weight gradient (the mat2 of addmm, weight.t()) and a row-major mat2's:
    torch's values and layouts."""
    torch = oracle_torch()
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((5, 4)), rng.standard_normal((6, 4)), rng.standard_normal(6),
              rng.standard_normal((4, 6))]
    results = []
    for lib in (gt, torch):
        x, w, b, m = (lib.tensor(a, requires_grad=True) for a in arrays)
        lib.nn.functional.linear(x, w, b).pow(2).sum().backward()
        lib.addmm(b, x, m).pow(2).sum().backward()      # a row-major mat2
        results.append((x.grad, w.grad, b.grad, m.grad))
    for a, e in zip(*results):
        assert_same(a, e, rtol=1e-12, atol=1e-12)
