"""The activation, softmax, dropout and loss modules of glasstorch.nn, side by side with
torch.nn: same constructor arguments in both libraries, then forward values, input (and
parameter) gradients, repr, state_dict and errors compared on copies of the same data."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import assert_same, oracle_torch, to_numpy

torch = oracle_torch()

RNG = np.random.default_rng(0)


def _x(*shape, lo=None, hi=None):
    if lo is None:
        return RNG.standard_normal(shape)
    return RNG.uniform(lo, hi, shape)


def _pair(arr, grad):
    """The same data as a glasstorch and a torch tensor (float64 unless integer)."""
    a, b = gt.tensor(arr), torch.tensor(arr)
    if grad:
        a.requires_grad_(True)
        b.requires_grad_(True)
    return a, b


def _compare(make, inputs, *, train=True, rtol=1e-9, atol=1e-10, dtype=None):
    """Build the module in both libraries, run it on copies of `inputs` ((array, grad)
    pairs or plain Python values), compare outputs and every gradient."""
    g_mod, t_mod = make(gt), make(torch)
    g_mod.train(train)
    t_mod.train(train)
    assert repr(g_mod) == repr(t_mod)
    g_sd, t_sd = g_mod.state_dict(), t_mod.state_dict()
    assert list(g_sd) == list(t_sd)
    for k in g_sd:
        assert_same(g_sd[k], t_sd[k])
    g_in, t_in = [], []
    for item in inputs:
        if isinstance(item, tuple):
            arr, grad = item
            if dtype is not None:
                arr = arr.astype(dtype)
            a, b = _pair(arr, grad)
        else:
            a = b = item
        g_in.append(a)
        t_in.append(b)
    g_out, t_out = g_mod(*g_in), t_mod(*t_in)
    assert_same(g_out, t_out, rtol=rtol, atol=atol, check_stride=False)
    leaves = [(a, b) for a, b in zip(g_in, t_in)
              if isinstance(b, torch.Tensor) and b.requires_grad]
    leaves += [(p, q) for p, q in zip(g_mod.parameters(), t_mod.parameters())]
    if leaves:
        seed = RNG.standard_normal(tuple(t_out.shape)).astype(
            np.float32 if t_out.dtype == torch.float32 else np.float64)
        g_out.backward(gt.tensor(seed))
        t_out.backward(torch.tensor(seed))
        for a, b in leaves:
            assert_same(a.grad, b.grad, rtol=rtol * 10, atol=atol * 10, check_stride=False)
    return g_mod, t_mod


# ---- activations ----------------------------------------------------------------------------

ACTIVATIONS = [
    ("Threshold", (0.1, 20.0), {}),
    ("ReLU", (), {}),
    ("RReLU", (0.1, 0.3), {}),
    ("Hardtanh", (-0.5, 0.8), {}),
    ("ReLU6", (), {}),
    ("Sigmoid", (), {}),
    ("Hardsigmoid", (), {}),
    ("Tanh", (), {}),
    ("SiLU", (), {}),
    ("Mish", (), {}),
    ("Hardswish", (), {}),
    ("ELU", (), {"alpha": 0.7}),
    ("CELU", (1.3,), {}),
    ("SELU", (), {}),
    ("GLU", (), {"dim": 1}),
    ("GELU", (), {}),
    ("GELU", (), {"approximate": "tanh"}),
    ("Hardshrink", (0.3,), {}),
    ("LeakyReLU", (0.2,), {}),
    ("LogSigmoid", (), {}),
    ("Softplus", (), {"beta": 2.0, "threshold": 1.5}),
    ("Softshrink", (), {"lambd": 0.4}),
    ("Softsign", (), {}),
    ("Tanhshrink", (), {}),
    ("Softmin", (1,), {}),
    ("Softmax", (), {"dim": -1}),
    ("LogSoftmax", (2,), {}),
    ("Softmax2d", (), {}),
]

INPLACE = [("Threshold", (0.1, 20.0)), ("ReLU", ()), ("RReLU", (0.1, 0.3)),
           ("Hardtanh", (-0.5, 0.8)), ("ReLU6", ()), ("Hardsigmoid", ()), ("SiLU", ()),
           ("Mish", ()), ("Hardswish", ()), ("ELU", ()), ("CELU", ()), ("SELU", ()),
           ("LeakyReLU", (0.2,))]


@pytest.mark.parametrize("name,args,kwargs", ACTIVATIONS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ACTIVATIONS)])
def test_activation_matches_torch(name, args, kwargs):
    # RReLU is deterministic in eval (slope (lower + upper) / 2)
    x = _x(2, 4, 3, 5) * 3
    _compare(lambda lib: getattr(lib.nn, name)(*args, **kwargs), [(x, True)],
             train=name != "RReLU")


@pytest.mark.parametrize("name", ["ReLU", "GELU", "Softmax", "LogSigmoid", "Hardswish"])
def test_activation_float32(name):
    args = (1,) if name == "Softmax" else ()
    _compare(lambda lib: getattr(lib.nn, name)(*args), [(_x(3, 6) * 3, True)],
             rtol=1e-5, atol=1e-6, dtype=np.float32)


@pytest.mark.parametrize("name,args", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_flag_honoured(name, args):
    x = _x(3, 7) * 3
    g_mod = getattr(gt.nn, name)(*args, inplace=True).eval()
    t_mod = getattr(torch.nn, name)(*args, inplace=True).eval()
    assert g_mod.inplace is True and repr(g_mod) == repr(t_mod)
    (ga, ta) = _pair(x, True)
    g_in, t_in = ga * 1, ta * 1                      # non-leaf, so in-place is allowed
    g_out, t_out = g_mod(g_in), t_mod(t_in)
    assert g_out.data_ptr() == g_in.data_ptr()
    assert_same(g_in, t_in, rtol=1e-12, atol=1e-12)
    g_out.sum().backward()
    t_out.sum().backward()
    assert_same(ga.grad, ta.grad, rtol=1e-9, atol=1e-10)
    g_plain = getattr(gt.nn, name)(*args).eval()
    assert g_plain.inplace is False
    y = gt.tensor(x)
    g_plain(y)
    assert np.array_equal(to_numpy(y), x)            # out of place leaves the input alone



def test_rrelu_training_draws_slopes():
    lower, upper = 0.1, 0.3
    x = gt.tensor(-RNG.uniform(0.5, 2.0, 20000), requires_grad=True)
    y = gt.nn.RReLU(lower, upper)(x)
    slope = to_numpy(y) / to_numpy(x)
    assert slope.min() >= lower and slope.max() <= upper
    assert abs(slope.mean() - (lower + upper) / 2) < 0.005 and slope.std() > 0.05
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), slope, rtol=1e-9)
    pos = RNG.uniform(0.1, 1, 50)
    assert np.array_equal(to_numpy(gt.nn.RReLU()(gt.tensor(pos))), pos)

@pytest.mark.parametrize("kwargs", [{}, {"num_parameters": 3, "init": 0.1},
                                    {"num_parameters": 3, "dtype": "float32"}])
def test_prelu(kwargs):
    def make(lib):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(lib, kw["dtype"])
        m = lib.nn.PReLU(**kw)
        return m if "dtype" in kwargs else m.double()
    dtype = np.float32 if "dtype" in kwargs else None
    tol = dict(rtol=1e-5, atol=1e-6) if dtype else {}
    g_mod, t_mod = _compare(make, [(_x(2, 3, 4), True)], dtype=dtype, **tol)
    assert isinstance(g_mod.weight, gt.nn.Parameter)
    assert [n for n, _ in g_mod.named_parameters()] == ["weight"]
    assert g_mod.num_parameters == t_mod.num_parameters and g_mod.init == t_mod.init
    g_mod.weight.data.fill_(0.9)
    g_mod.reset_parameters()
    assert_same(g_mod.weight.detach(), t_mod.weight.detach())


def test_attributes_mirror_torch():
    pairs = [("LeakyReLU", (0.3, True)), ("Hardtanh", (-2.0, 3.0)), ("Softplus", (2, 10)),
             ("Threshold", (0.5, 1.0)), ("RReLU", ()), ("GELU", ("tanh",)), ("GLU", (0,)),
             ("Softmax", (1,)), ("ELU", (0.5,)), ("Hardshrink", (0.2,))]
    for name, args in pairs:
        g, t = getattr(gt.nn, name)(*args), getattr(torch.nn, name)(*args)
        for attr in getattr(t, "__constants__", []):
            assert getattr(g, attr) == getattr(t, attr), (name, attr)
        assert repr(g) == repr(t)
    for name, kw in [("ReLU", {"inplace": True}), ("ReLU6", {"inplace": True}),
                     ("SELU", {"inplace": True}), ("CELU", {"alpha": 2.0, "inplace": True}),
                     ("Hardtanh", {"min_val": 0, "max_val": 2, "inplace": True})]:
        assert repr(getattr(gt.nn, name)(**kw)) == repr(getattr(torch.nn, name)(**kw))


def test_hardtanh_deprecated_names_and_bounds():
    for lib in (gt, torch):
        with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
            m = lib.nn.Hardtanh(min_value=-3.0)
        assert m.min_val == -3.0
        with pytest.warns(FutureWarning, match="`max_value` is deprecated"):
            assert lib.nn.Hardtanh(max_value=3.0).max_val == 3.0
    msgs = []
    for lib in (gt, torch):
        with pytest.raises(AssertionError) as e:
            lib.nn.Hardtanh(1.0, 0.5)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_softmax_implicit_dim_warns_at_the_call_site():
    x = _x(2, 3)
    for name in ("Softmax", "Softmin", "LogSoftmax"):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = getattr(gt.nn, name)()(gt.tensor(x))
            expected = getattr(torch.nn, name)()(torch.tensor(x))
        assert "Implicit dimension choice" in str(w[0].message) and w[0].filename == __file__
        assert str(w[0].message) == str(w[1].message)
        assert_same(out, expected, rtol=1e-12)


def test_softmax2d_rank_error():
    msgs = []
    for lib in (gt, torch):
        with pytest.raises(ValueError) as e:
            lib.nn.Softmax2d()(lib.ones(2, 3))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    _compare(lambda lib: lib.nn.Softmax2d(), [(_x(3, 4, 5), True)])


@pytest.mark.parametrize("name,args", [("ReLU", ()), ("GELU", ("tanh",)), ("Softmax", (0,)),
                                       ("PReLU", ()), ("LeakyReLU", (0.3,))])
def test_strided_and_empty_inputs(name, args):
    base = _x(5, 8)
    for make_view in (lambda t: t.t(), lambda t: t[1::2, ::3], lambda t: t[:, :0],
                      lambda t: t[2, 3]):
        g_mod = getattr(gt.nn, name)(*args).double()
        t_mod = getattr(torch.nn, name)(*args).double()
        ga, ta = _pair(base, True)
        g_out, t_out = g_mod(make_view(ga)), t_mod(make_view(ta))
        assert_same(g_out, t_out, rtol=1e-12, atol=1e-12, check_stride=False)
        g_out.sum().backward()
        t_out.sum().backward()
        assert_same(ga.grad, ta.grad, rtol=1e-12, atol=1e-12)


def test_softmax_setstate_and_copies():
    import copy
    import pickle
    m = gt.nn.LogSoftmax(1)
    state = dict(m.__dict__)
    del state["dim"]                                  # a module pickled before `dim` existed
    old = gt.nn.LogSoftmax.__new__(gt.nn.LogSoftmax)
    old.__setstate__(state)
    assert old.dim is None and repr(old) == repr(torch.nn.LogSoftmax())
    assert pickle.loads(pickle.dumps(m)).dim == 1
    ce = gt.nn.CrossEntropyLoss(weight=gt.tensor(W5), label_smoothing=0.1)
    twin = copy.deepcopy(ce)
    assert twin.label_smoothing == 0.1 and twin.weight is not ce.weight
    assert_same(twin.weight, torch.tensor(W5))


# ---- dropout --------------------------------------------------------------------------------

DROPOUTS = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
            "FeatureAlphaDropout"]
_SHAPES = {"Dropout": (6, 5), "Dropout1d": (4, 5, 6), "Dropout2d": (2, 4, 5, 6),
           "Dropout3d": (2, 3, 4, 5, 6), "AlphaDropout": (6, 5),
           "FeatureAlphaDropout": (2, 4, 5, 6)}


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_construction_and_eval(name):
    for args in [(), (0.2,), (0.3, True)]:
        g, t = getattr(gt.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(g) == repr(t) and g.p == t.p and g.inplace == t.inplace
        assert g.state_dict() == {} and list(t.state_dict()) == []
    msgs = []
    for lib in (gt, torch):
        with pytest.raises(ValueError) as e:
            getattr(lib.nn, name)(1.5)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    _compare(lambda lib: getattr(lib.nn, name)(0.4), [(_x(*_SHAPES[name]), True)], train=False)


def test_dropout_train_statistics():
    p, n = 0.3, 40000
    m = gt.nn.Dropout(p)
    x = gt.ones(n, dtype=gt.float64, requires_grad=True)
    y = m(x)
    a = to_numpy(y)
    zero = a == 0
    assert abs(zero.mean() - p) < 0.015
    np.testing.assert_allclose(a[~zero], 1 / (1 - p), rtol=1e-12)
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), a, rtol=1e-12)   # same mask, same scale
    z = gt.ones(n)
    assert gt.nn.Dropout(p, inplace=True)(z).data_ptr() == z.data_ptr()
    assert abs((to_numpy(z) == 0).mean() - p) < 0.015


@pytest.mark.parametrize("name,shape", [("Dropout1d", (50, 40, 3)), ("Dropout1d", (400, 5)),
                                        ("Dropout2d", (50, 40, 2, 3)),
                                        ("Dropout3d", (50, 40, 2, 2, 2))])
def test_channel_dropout_statistics(name, shape):
    p = 0.4
    a = to_numpy(getattr(gt.nn, name)(p)(gt.ones(*shape, dtype=gt.float64)))
    per_channel = a.reshape(shape[0] * shape[1], -1) if len(shape) > 2 else a
    assert np.all(per_channel.min(1) == per_channel.max(1))         # whole channels
    zero = per_channel[:, 0] == 0
    assert abs(zero.mean() - p) < 0.05
    np.testing.assert_allclose(per_channel[~zero], 1 / (1 - p), rtol=1e-12)


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_statistics(name):
    p = 0.2
    x = RNG.standard_normal((40, 50, 20))
    a = to_numpy(getattr(gt.nn, name)(p)(gt.tensor(x)))
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05                  # self-normalising
    alpha_p = -1.7580993408473766
    q = 1 - p
    scale = (q + alpha_p ** 2 * q * p) ** -0.5
    dropped = np.isclose(a, scale * alpha_p + (-scale * alpha_p * p))
    assert abs(dropped.mean() - p) < 0.02
    np.testing.assert_allclose(a[~dropped], scale * x[~dropped] - scale * alpha_p * p,
                               rtol=1e-9)
    if name == "FeatureAlphaDropout":
        d = dropped.reshape(2000, 20)
        assert np.all(d.all(1) | ~d.any(1))


# ---- losses ---------------------------------------------------------------------------------

def _w(lib, arr):
    return lib.tensor(arr)


def _ce_target():
    t = RNG.integers(0, 5, (6,))
    t[2] = 3
    return t


N, C = 6, 5
W5 = _x(C, lo=0.5, hi=2.0)
IDX = _ce_target()
ML_TARGET = np.array([[3, 0, -1, 1, 2], [1, -1, 0, 2, 4], [4, 2, 3, 0, 1], [0, -1, 3, 3, 3],
                      [-1, 0, 0, 0, 0], [2, 1, -1, 4, 4]])
SIGNS = RNG.choice([-1.0, 1.0], (N, C))
SIGNS_N = RNG.choice([-1.0, 1.0], (N,))

LOSSES = [
    ("L1Loss", lambda lib: {}, lambda: [(_x(N, C), True), (_x(N, C), True)]),
    ("MSELoss", lambda lib: {}, lambda: [(_x(N, C), True), (_x(N, C), True)]),
    ("SmoothL1Loss", lambda lib: {"beta": 0.5}, lambda: [(_x(N, C), True), (_x(N, C), True)]),
    ("HuberLoss", lambda lib: {"delta": 0.7}, lambda: [(_x(N, C), True), (_x(N, C), True)]),
    ("SoftMarginLoss", lambda lib: {}, lambda: [(_x(N, C), True), (SIGNS, False)]),
    ("CrossEntropyLoss", lambda lib: {"weight": _w(lib, W5), "ignore_index": 3},
     lambda: [(_x(N, C), True), (IDX, False)]),
    ("CrossEntropyLoss", lambda lib: {"label_smoothing": 0.2, "weight": _w(lib, W5)},
     lambda: [(_x(N, C, 3), True), (RNG.integers(0, C, (N, 3)), False)]),
    ("CrossEntropyLoss", lambda lib: {"label_smoothing": 0.1},
     lambda: [(_x(N, C), True), (_x(N, C, lo=0, hi=1), False)]),
    ("NLLLoss", lambda lib: {"weight": _w(lib, W5), "ignore_index": 1},
     lambda: [(_x(N, C), True), (IDX, False)]),
    ("BCELoss", lambda lib: {"weight": _w(lib, W5)},
     lambda: [(_x(N, C, lo=0.05, hi=0.95), True), (_x(N, C, lo=0, hi=1), False)]),
    ("BCEWithLogitsLoss",
     lambda lib: {"weight": _w(lib, W5), "pos_weight": _w(lib, W5[::-1].copy())},
     lambda: [(_x(N, C), True), (_x(N, C, lo=0, hi=1), True)]),
    ("KLDivLoss", lambda lib: {}, lambda: [(_x(N, C), True), (_x(N, C, lo=0.1, hi=1), True)]),
    ("KLDivLoss", lambda lib: {"log_target": True},
     lambda: [(_x(N, C), True), (_x(N, C), True)]),
    ("PoissonNLLLoss", lambda lib: {"full": True},
     lambda: [(_x(N, C), True), (_x(N, C, lo=0, hi=4), False)]),
    ("PoissonNLLLoss", lambda lib: {"log_input": False, "eps": 1e-4},
     lambda: [(_x(N, C, lo=0.1, hi=3), True), (_x(N, C, lo=0, hi=4), False)]),
    ("GaussianNLLLoss", lambda lib: {"full": True, "eps": 1e-3},
     lambda: [(_x(N, C), True), (_x(N, C), True), (_x(N, C, lo=0.2, hi=2), True)]),
    ("GaussianNLLLoss", lambda lib: {},
     lambda: [(_x(N, C), True), (_x(N, C), True), (_x(N, 1, lo=0.2, hi=2), True)]),
    ("HingeEmbeddingLoss", lambda lib: {"margin": 0.6},
     lambda: [(_x(N, C), True), (SIGNS, False)]),
    ("MultiLabelMarginLoss", lambda lib: {},
     lambda: [(_x(N, C), True), (ML_TARGET, False)]),
    ("MultiLabelSoftMarginLoss", lambda lib: {"weight": _w(lib, W5)},
     lambda: [(_x(N, C), True), ((SIGNS > 0).astype(np.float64), False)]),
    ("MultiMarginLoss", lambda lib: {"p": 2, "margin": 0.8, "weight": _w(lib, W5)},
     lambda: [(_x(N, C), True), (IDX, False)]),
    ("MultiMarginLoss", lambda lib: {}, lambda: [(_x(N, C), True), (IDX, False)]),
    ("CosineEmbeddingLoss", lambda lib: {"margin": 0.2},
     lambda: [(_x(N, C), True), (_x(N, C), True), (SIGNS_N, False)]),
    ("MarginRankingLoss", lambda lib: {"margin": 0.3},
     lambda: [(_x(N), True), (_x(N), True), (SIGNS_N, False)]),
    ("TripletMarginLoss", lambda lib: {"margin": 0.5, "p": 1.0, "swap": True},
     lambda: [(_x(N, C), True), (_x(N, C), True), (_x(N, C), True)]),
    ("TripletMarginLoss", lambda lib: {},
     lambda: [(_x(N, C), True), (_x(N, C), True), (_x(N, C), True)]),
    ("TripletMarginWithDistanceLoss",
     lambda lib: {"distance_function":
                  lambda a, b: 1 - lib.nn.functional.cosine_similarity(a, b), "swap": True},
     lambda: [(_x(N, C), True), (_x(N, C), True), (_x(N, C), True)]),
]


def _ctc_inputs():
    T, B, K = 8, 3, 4
    logits = _x(T, B, K)
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return [(lp, True), (np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]]), False),
            (np.array([8, 7, 6]), False), (np.array([3, 2, 1]), False)]


LOSSES += [("CTCLoss", lambda lib: {}, _ctc_inputs),
           ("CTCLoss", lambda lib: {"blank": 3, "zero_infinity": True}, _ctc_inputs)]


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,kwargs,inputs", LOSSES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LOSSES)])
def test_loss_matches_torch(name, kwargs, inputs, reduction):
    data = inputs()
    g_mod, t_mod = _compare(lambda lib: getattr(lib.nn, name)(**kwargs(lib),
                                                              reduction=reduction), data)
    assert g_mod.reduction == reduction
    for attr in getattr(t_mod, "__constants__", []):
        assert getattr(g_mod, attr) == getattr(t_mod, attr), attr


def test_kl_div_batchmean():
    _compare(lambda lib: lib.nn.KLDivLoss(reduction="batchmean"),
             [(_x(N, C), True), (_x(N, C, lo=0.1, hi=1), False)])


def test_weight_buffers_in_state_dict():
    for name, kw in [("CrossEntropyLoss", {}), ("NLLLoss", {}), ("BCELoss", {}),
                     ("MultiLabelSoftMarginLoss", {}), ("MultiMarginLoss", {}),
                     ("BCEWithLogitsLoss", {"pos_weight": True})]:
        for with_weight in (False, True):
            def make(lib):
                args = {k: _w(lib, W5) for k in kw}
                if with_weight:
                    args["weight"] = _w(lib, W5)
                return getattr(lib.nn, name)(**args)
            g, t = make(gt), make(torch)
            assert list(g.state_dict()) == list(t.state_dict()), name
            assert [n for n, _ in g.named_buffers()] == [n for n, _ in t.named_buffers()]
            assert list(g.parameters()) == []
            assert (g.weight is None) == (t.weight is None)
    m = gt.nn.CrossEntropyLoss(weight=gt.tensor(W5))
    m.load_state_dict({"weight": gt.tensor(W5 * 2)})
    assert_same(m.weight, torch.tensor(W5 * 2))
    assert m.float().weight.dtype == gt.float32               # buffers follow casts


def test_triplet_default_distance():
    _compare(lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=0.5),
             [(_x(N, C), True), (_x(N, C), True), (_x(N, C), True)])


@pytest.mark.parametrize("size_average,reduce", [(None, False), (False, None), (True, True),
                                                 (False, True), (True, False)])
def test_legacy_size_average_reduce(size_average, reduce):
    for name in ("MSELoss", "NLLLoss", "CrossEntropyLoss", "KLDivLoss", "MultiMarginLoss"):
        texts = []
        for lib in (gt, torch):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                m = getattr(lib.nn, name)(size_average=size_average, reduce=reduce)
            texts.append((m.reduction, [(x.category, str(x.message)) for x in w]))
        assert texts[0] == texts[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(lambda lib: lib.nn.CrossEntropyLoss(size_average=size_average, reduce=reduce),
                 [(_x(N, C), True), (IDX, False)])


def test_nllloss2d_deprecated():
    msgs = []
    for lib in (gt, torch):
        with pytest.warns(FutureWarning) as w:
            lib.nn.NLLLoss2d()
        msgs.append(str(w[0].message))
    assert msgs[0] == msgs[1]
    with pytest.warns(FutureWarning):
        _compare(lambda lib: lib.nn.NLLLoss2d(weight=_w(lib, W5[:3])),
                 [(_x(2, 3, 4, 4), True), (RNG.integers(0, 3, (2, 4, 4)), False)])


def test_constructor_errors_match_torch():
    cases = [
        ("MultiMarginLoss", (), {"p": 3}, ValueError),
        ("MultiMarginLoss", (), {"weight": "W2"}, ValueError),
        ("TripletMarginLoss", (), {"margin": 0.0}, ValueError),
        ("TripletMarginWithDistanceLoss", (), {"margin": -1.0}, ValueError),
        ("HuberLoss", (), {"delta": "1"}, TypeError),
    ]
    for name, args, kw, exc in cases:
        msgs = []
        for lib in (gt, torch):
            kwl = {k: (lib.ones(2, 2) if v == "W2" else v) for k, v in kw.items()}
            with pytest.raises(exc) as e:
                getattr(lib.nn, name)(*args, **kwl)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1], name
    for lib in (gt, torch):
        with pytest.raises(TypeError):
            lib.nn.GaussianNLLLoss(True)                     # full/eps/reduction: keyword-only
        with pytest.raises(ValueError, match="is not a valid value for reduction"):
            lib.nn.MSELoss(reduction="avg")(lib.ones(2), lib.ones(2))


def test_public_names():
    from glasstorch.nn.modules import activation, dropout, loss
    for mod, expected in [(activation, set(torch.nn.modules.activation.__all__)),
                          (dropout, set(torch.nn.modules.dropout.__all__)),
                          (loss, set(torch.nn.modules.loss.__all__) - {"LinearCrossEntropyLoss"})]:
        assert set(mod.__all__) == expected
        for name in mod.__all__:
            assert getattr(gt.nn, name) is getattr(mod, name)


def test_constructor_signatures_match_torch():
    import inspect
    from glasstorch.nn.modules import activation, dropout, loss
    for mod in (activation, dropout, loss):
        for name in mod.__all__:
            g = inspect.signature(getattr(gt.nn, name).__init__).parameters
            t = inspect.signature(getattr(torch.nn, name).__init__).parameters
            assert [(p.name, p.kind, p.default) for p in g.values()] == \
                [(p.name, p.kind, p.default) for p in t.values()], name


def test_model_print_matches_torch():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.ReLU(inplace=True), nn.Dropout(0.1), nn.GELU("tanh"),
                             nn.PReLU(4), nn.LeakyReLU(0.05, True), nn.Softmax(dim=-1),
                             nn.Hardtanh(-2.5, 2.5), nn.CrossEntropyLoss(label_smoothing=0.1),
                             nn.TripletMarginWithDistanceLoss())
    assert str(build(gt)) == str(build(torch))
