"""Loss functions of glasstorch.nn.functional against PyTorch: values, dtypes, shapes and
grad_fn names for every reduction, float64 gradients (compared with torch and gradcheck),
stability at large logits, non-contiguous inputs, errors and warnings."""
import math
import warnings

import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as GF
from native_paths import needs_compiler, spy_kernels
from oracle import assert_same, oracle_torch, to_torch

rng = np.random.default_rng(2024)
REDUCTIONS = ["none", "mean", "sum"]


def x34():
    return rng.standard_normal((3, 4))


def prob34():
    return rng.uniform(0.05, 0.95, (3, 4))


def sign(shape):
    return np.where(rng.random(shape) > 0.5, 1.0, -1.0)


def weights(n=4):
    return rng.uniform(0.5, 2.0, n)


# name -> (F function, positional arrays, keyword arrays/values, differentiable positions)
CASES = {
    "nll": ("nll_loss", lambda: (x34(), np.array([1, 0, 3])), {}, (0,)),
    "nll_weight_ignore": ("nll_loss", lambda: (x34(), np.array([1, 0, 3])),
                          {"weight": weights(), "ignore_index": 0}, (0,)),
    "nll_unbatched": ("nll_loss", lambda: (rng.standard_normal(4), np.array(2)), {}, (0,)),
    "nll_3d": ("nll_loss", lambda: (rng.standard_normal((2, 4, 3)),
                                    rng.integers(0, 4, (2, 3))), {}, (0,)),
    "nll_4d": ("nll_loss", lambda: (rng.standard_normal((2, 4, 3, 2)),
                                    rng.integers(0, 4, (2, 3, 2))), {"weight": weights()},
               (0,)),
    "nll_5d": ("nll_loss", lambda: (rng.standard_normal((2, 4, 2, 2, 2)),
                                    rng.integers(0, 4, (2, 2, 2, 2))), {"ignore_index": 1},
               (0,)),
    "ce": ("cross_entropy", lambda: (x34(), np.array([1, 0, 3])), {}, (0,)),
    "ce_unbatched": ("cross_entropy", lambda: (rng.standard_normal(4), np.array(2)), {}, (0,)),
    "ce_smoothing": ("cross_entropy", lambda: (x34(), np.array([1, 0, 3])),
                     {"label_smoothing": 0.2, "weight": weights(), "ignore_index": 0}, (0,)),
    "ce_smoothing_kdim": ("cross_entropy", lambda: (rng.standard_normal((2, 4, 3)),
                                                    rng.integers(0, 4, (2, 3))),
                          {"label_smoothing": 0.3}, (0,)),
    "ce_probs": ("cross_entropy", lambda: (x34(), prob34()),
                 {"label_smoothing": 0.1, "weight": weights()}, (0, 1)),
    "ce_probs_kdim": ("cross_entropy", lambda: (rng.standard_normal((2, 4, 3)),
                                                rng.uniform(0, 1, (2, 4, 3))), {}, (0, 1)),
    "mse": ("mse_loss", lambda: (x34(), x34()), {}, (0, 1)),
    "mse_weight": ("mse_loss", lambda: (x34(), x34()), {"weight": prob34()}, (0, 1)),
    "l1": ("l1_loss", lambda: (x34(), x34()), {}, (0, 1)),
    "l1_weight": ("l1_loss", lambda: (x34(), x34()), {"weight": prob34()}, (0, 1)),
    "smooth_l1": ("smooth_l1_loss", lambda: (x34(), x34()), {"beta": 0.5}, (0, 1)),
    "smooth_l1_beta0": ("smooth_l1_loss", lambda: (x34(), x34()), {"beta": 0.0}, (0, 1)),
    "huber": ("huber_loss", lambda: (x34(), x34()), {"delta": 0.7}, (0, 1)),
    "huber_weight": ("huber_loss", lambda: (x34(), x34()), {"weight": prob34()}, (0, 1)),
    "bce": ("binary_cross_entropy", lambda: (prob34(), prob34()), {"weight": weights()},
            (0, 1)),
    "bce_logits": ("binary_cross_entropy_with_logits", lambda: (x34(), prob34()), {}, (0, 1)),
    "bce_logits_weights": ("binary_cross_entropy_with_logits", lambda: (x34(), prob34()),
                           {"weight": weights(), "pos_weight": weights()}, (0, 1)),
    "kl_div": ("kl_div", lambda: (x34(), prob34()), {}, (0, 1)),
    "kl_div_log_target": ("kl_div", lambda: (x34(), x34()), {"log_target": True}, (0, 1)),
    "poisson": ("poisson_nll_loss", lambda: (x34(), prob34() * 3), {"full": True}, (0, 1)),
    "poisson_rate": ("poisson_nll_loss", lambda: (prob34(), prob34() * 3),
                     {"log_input": False}, (0, 1)),
    "gaussian": ("gaussian_nll_loss", lambda: (x34(), x34(), prob34()), {"full": True},
                 (0, 1, 2)),
    "gaussian_short_var": ("gaussian_nll_loss", lambda: (x34(), x34(), prob34()[:, 0]), {},
                           (0, 1, 2)),
    "gaussian_bcast_var": ("gaussian_nll_loss", lambda: (x34(), x34(), prob34()[:, :1]), {},
                           (0, 1, 2)),
    "cosine": ("cosine_embedding_loss", lambda: (x34(), x34(), sign(3)), {"margin": 0.1},
               (0, 1)),
    "margin_ranking": ("margin_ranking_loss", lambda: (x34(), x34(), sign((3, 4))),
                       {"margin": 0.1}, (0, 1)),
    "triplet": ("triplet_margin_loss", lambda: (x34(), x34(), x34()),
                {"swap": True, "p": 1.5}, (0, 1, 2)),
    "hinge": ("hinge_embedding_loss", lambda: (x34(), sign((3, 4))), {"margin": 0.5}, (0,)),
    "multilabel_margin": ("multilabel_margin_loss",
                          lambda: (x34(), np.array([[1, 2, -1, 0], [3, 3, 0, -1],
                                                    [0, 1, 2, 3]])), {}, (0,)),
    "multilabel_soft": ("multilabel_soft_margin_loss", lambda: (x34(), prob34().round()),
                        {"weight": weights()}, (0,)),
    "multi_margin": ("multi_margin_loss", lambda: (x34(), np.array([1, 0, 3])), {}, (0,)),
    "multi_margin_p2": ("multi_margin_loss", lambda: (x34(), np.array([1, 0, 3])),
                        {"p": 2, "margin": 0.8, "weight": weights()}, (0,)),
    "soft_margin": ("soft_margin_loss", lambda: (x34(), sign((3, 4))), {}, (0,)),
}


def _build(case):
    torch = oracle_torch()
    fname, make, kw, diff = CASES[case]
    arrays = make()
    gs, ts = [], []
    for i, a in enumerate(arrays):
        g = gt.tensor(a)
        t = to_torch(g)
        if i in diff:
            g.requires_grad_()
            t.requires_grad_()
        gs.append(g)
        ts.append(t)
    kg = {k: gt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    kt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    return fname, gs, ts, kg, kt, diff


def _upstream(shape):
    """A random upstream gradient exactly representable in float32 (PyTorch rounds some
    losses' incoming gradient to float)."""
    return rng.standard_normal(shape).astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(CASES))
def test_loss_matches_torch(case, reduction):
    torch = oracle_torch()
    fname, gs, ts, kg, kt, diff = _build(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yg = getattr(GF, fname)(*gs, **kg, reduction=reduction)
        yt = getattr(torch.nn.functional, fname)(*ts, **kt, reduction=reduction)
    assert_same(yg, yt, rtol=1e-10, atol=1e-12, check_stride=False)
    if not case.startswith("ce_probs") or reduction != "mean":   # torch: DivBackward1
        assert yg.grad_fn.name() == yt.grad_fn.name()
    w = _upstream(tuple(yt.shape))
    dg = gt.autograd.grad(yg, [gs[i] for i in diff], gt.tensor(w))
    dt = torch.autograd.grad(yt, [ts[i] for i in diff], torch.tensor(w))
    for a, b in zip(dg, dt):
        assert_same(a, b, rtol=1e-9, atol=1e-11, check_stride=False)


GRADCHECK = ["nll_weight_ignore", "nll_4d", "ce_smoothing", "ce_probs", "mse", "smooth_l1",
             "huber", "bce", "bce_logits_weights", "kl_div", "poisson", "gaussian", "cosine",
             "triplet", "multilabel_margin", "multi_margin_p2", "soft_margin", "hinge"]


@pytest.mark.parametrize("case", GRADCHECK)
def test_loss_gradcheck(case):
    fname, gs, _, kg, _, diff = _build(case)
    fn = getattr(GF, fname)

    def call(*inputs):
        args = list(gs)
        for i, x in zip(diff, inputs):
            args[i] = x
        return fn(*args, **kg, reduction="sum")
    assert gt.autograd.gradcheck(call, tuple(gs[i] for i in diff))


@pytest.mark.parametrize("case", ["nll", "ce", "mse", "bce_logits", "multi_margin",
                                  "smooth_l1", "bce"])
def test_loss_double_backward(case):
    fname, gs, _, kg, _, diff = _build(case)
    fn = getattr(GF, fname)

    def call(*inputs):
        args = list(gs)
        for i, x in zip(diff, inputs):
            args[i] = x
        return fn(*args, **kg, reduction="mean")
    assert gt.autograd.gradgradcheck(call, tuple(gs[i] for i in diff))


# ---- dtypes, layouts, stability -------------------------------------------------------------

@pytest.mark.parametrize("fname", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                                   "binary_cross_entropy_with_logits", "soft_margin_loss"])
def test_float32_transposed_inputs(fname):
    torch = oracle_torch()
    a = gt.tensor(rng.standard_normal((4, 3))).float().t()
    b = gt.tensor(rng.uniform(0.1, 0.9, (3, 8))).float()[:, ::2]
    for reduction in REDUCTIONS:
        assert_same(getattr(GF, fname)(a, b, reduction=reduction),
                    getattr(torch.nn.functional, fname)(to_torch(a), to_torch(b),
                                                        reduction=reduction),
                    rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cross_entropy_reduced_precision(dtype):
    torch = oracle_torch()
    x = gt.tensor(rng.standard_normal((5, 7))).to(getattr(gt, dtype))
    t = gt.tensor(rng.integers(0, 7, 5))
    assert_same(GF.cross_entropy(x, t), torch.nn.functional.cross_entropy(
        to_torch(x), to_torch(t)), rtol=1e-2, atol=1e-2)


def test_large_logit_stability(kernel_path):
    torch = oracle_torch()
    logits = np.array([[1e4, 0.0, -1e4], [-1e4, 1e4, 1e4]])
    for dtype in ("float32", "float64"):
        x = gt.tensor(logits).to(getattr(gt, dtype)).requires_grad_()
        xt = to_torch(x.detach()).requires_grad_()
        t = gt.tensor([2, 0])
        y, yt = GF.cross_entropy(x, t), torch.nn.functional.cross_entropy(xt, to_torch(t))
        assert np.isfinite(y.item())
        assert_same(y, yt)
        assert_same(gt.autograd.grad(y, x)[0], torch.autograd.grad(yt, xt)[0])
    z = gt.tensor([100.0, -100.0, 100.0, -100.0], requires_grad=True)
    zt = to_torch(z.detach()).requires_grad_()
    y = gt.tensor([0.0, 1.0, 1.0, 0.0])
    out = GF.binary_cross_entropy_with_logits(z, y, reduction="none")
    out_t = torch.nn.functional.binary_cross_entropy_with_logits(zt, to_torch(y),
                                                                  reduction="none")
    assert_same(out, out_t)
    assert_same(gt.autograd.grad(out.sum(), z)[0], torch.autograd.grad(out_t.sum(), zt)[0])


def test_bce_log_clamp_at_exact_zero_and_one():
    torch = oracle_torch()
    p = gt.tensor([0.0, 1.0, 0.0, 1.0])
    y = gt.tensor([1.0, 0.0, 0.0, 1.0])
    assert_same(GF.binary_cross_entropy(p, y, reduction="none"),
                torch.nn.functional.binary_cross_entropy(to_torch(p), to_torch(y),
                                                         reduction="none"))


def test_nll_unbatched_input_with_one_element_target():
    torch = oracle_torch()      # (torch's own backward rejects this case; values only)
    x, t, w = gt.tensor(rng.standard_normal(4)), gt.tensor([1]), gt.tensor(weights())
    for reduction in REDUCTIONS:
        assert_same(GF.nll_loss(x, t, w, reduction=reduction), torch.nn.functional.nll_loss(
            to_torch(x), to_torch(t), to_torch(w), reduction=reduction))


@pytest.mark.parametrize("op", ["nll_loss_forward", "nll_loss2d_forward"])
def test_nll_forward_total_weight_is_zero_when_not_reducing(op):
    torch = oracle_torch()
    shape, target = ((3, 4), [0, 3, 1]) if op == "nll_loss_forward" else ((1, 4, 1, 3), [[[0, 3, 1]]])
    x = gt.tensor(rng.standard_normal(shape))
    for reduction in (0, 1, 2):                           # none, mean, sum
        got = getattr(gt.ops.aten, op)(x, gt.tensor(target), gt.full((4,), 0.5, dtype=gt.float64),
                                       reduction, -100)
        want = getattr(torch.ops.aten, op)(to_torch(x), torch.tensor(target),
                                           torch.full((4,), 0.5, dtype=torch.float64),
                                           reduction, -100)
        for g, w in zip(got, want):
            assert_same(g, w)


def test_nll_all_ignored_and_empty():
    torch = oracle_torch()
    x = gt.tensor(rng.standard_normal((3, 4)))
    t = gt.tensor([-100, -100, -100])
    for reduction in REDUCTIONS:
        assert_same(GF.nll_loss(x, t, reduction=reduction),
                    torch.nn.functional.nll_loss(to_torch(x), to_torch(t), reduction=reduction))
    e = gt.zeros(0, 4)
    for et in (gt.zeros(0, dtype=gt.int64), gt.zeros(0, 4)):      # indices, probabilities
        for reduction in REDUCTIONS:
            assert_same(GF.cross_entropy(e, et, reduction=reduction),
                        torch.nn.functional.cross_entropy(to_torch(e), to_torch(et),
                                                          reduction=reduction))


# ---- ctc_loss -----------------------------------------------------------------------------

CTC_TARGETS = {
    "padded": (np.array([[1, 2, 2, 4], [3, 1, 0, 0], [2, 2, 2, 2]]), [3, 2, 4]),
    "concatenated": (np.array([1, 2, 2, 3, 1, 2, 2, 2, 2]), [3, 2, 4]),
    "impossible": (np.array([[1, 2, 2, 4], [3, 1, 0, 0], [2, 2, 2, 2]]), [4, 2, 4]),
    "empty_target": (np.array([[1, 2, 2, 4], [3, 1, 0, 0], [2, 2, 2, 2]]), [3, 0, 2]),
}


@pytest.mark.parametrize("targets,zero_infinity", [
    ("padded", False), ("concatenated", False), ("impossible", False), ("impossible", True),
    ("empty_target", True)])
def test_ctc_loss_matches_torch(targets, zero_infinity):
    torch = oracle_torch()
    tg, tl = CTC_TARGETS[targets]
    il = [7, 5, 6]
    logits = rng.standard_normal((7, 3, 5))
    for reduction in REDUCTIONS:
        x = gt.tensor(logits, requires_grad=True)
        xt = torch.tensor(logits, requires_grad=True)
        y = GF.ctc_loss(x.log_softmax(2), gt.tensor(tg), gt.tensor(il), gt.tensor(tl),
                        reduction=reduction, zero_infinity=zero_infinity)
        yt = torch.nn.functional.ctc_loss(xt.log_softmax(2), torch.tensor(tg),
                                          torch.tensor(il), torch.tensor(tl),
                                          reduction=reduction, zero_infinity=zero_infinity)
        assert_same(y, yt, rtol=1e-10, atol=1e-12)
        assert y.grad_fn.name() == yt.grad_fn.name()
        w = _upstream(tuple(yt.shape))
        assert_same(gt.autograd.grad(y, x, gt.tensor(w))[0],
                    torch.autograd.grad(yt, xt, torch.tensor(w))[0], rtol=1e-8, atol=1e-10)


def test_ctc_loss_direct_gradient_float32_and_unbatched():
    torch = oracle_torch()
    lp = gt.tensor(rng.standard_normal((6, 2, 4))).float().log_softmax(2).requires_grad_()
    lpt = to_torch(lp.detach()).requires_grad_()
    tg, il, tl = [[1, 2, 2], [0, 1, 0]], (6, 5), (3, 2)
    y = GF.ctc_loss(lp, gt.tensor(tg, dtype=gt.int32), il, tl, blank=3)
    yt = torch.nn.functional.ctc_loss(lpt, torch.tensor(tg, dtype=torch.int32), il, tl,
                                      blank=3)
    assert_same(y, yt, rtol=1e-5, atol=1e-6)
    assert_same(gt.autograd.grad(y, lp)[0], torch.autograd.grad(yt, lpt)[0], rtol=1e-4,
                atol=1e-6)
    single = lp.detach()[:, 0]
    assert_same(GF.ctc_loss(single, gt.tensor([1, 2, 2]), gt.tensor(6), gt.tensor(3)),
                torch.nn.functional.ctc_loss(to_torch(single), torch.tensor([1, 2, 2]),
                                             torch.tensor(6), torch.tensor(3)), rtol=1e-5)


def test_ctc_loss_gradcheck_through_log_softmax():
    x = gt.tensor(rng.standard_normal((5, 2, 4)), requires_grad=True)
    tg, il, tl = gt.tensor([[1, 3], [2, 2]]), [5, 4], [2, 2]
    assert gt.autograd.gradcheck(
        lambda a: GF.ctc_loss(a.log_softmax(2), tg, il, tl, reduction="sum"), (x,))


def test_ctc_loss_errors():
    torch = oracle_torch()
    lp = gt.randn(6, 2, 4).log_softmax(2)
    tg = gt.tensor([[1, 2, 2], [3, 1, 0]])
    cases = [((lp, tg, [6, 5], [3, 4]), {}, "Expected tensor to have size at least 4 at "
                                            "dimension 1, but got size 3"),
             ((lp, tg, [7, 5], [3, 2]), {}, "Expected input_lengths to have value at most 6,"
                                            " but got value 7"),
             ((lp, tg, [6, 5], [3, 2]), {"blank": 4}, "blank must be in label range")]
    for args, kw, message in cases:
        with pytest.raises(RuntimeError, match=message):
            GF.ctc_loss(*args, **kw)
        with pytest.raises(RuntimeError, match=message):
            torch.nn.functional.ctc_loss(to_torch(args[0]), to_torch(args[1]), *args[2:], **kw)


# ---- errors and warnings --------------------------------------------------------------------

def _both_raise(call, exc, message):
    """The same call raises the same error type with the same message in both libraries."""
    torch = oracle_torch()
    with pytest.raises(exc, match=message):
        call(gt, GF)
    with pytest.raises(exc, match=message):
        call(torch, torch.nn.functional)


@pytest.mark.parametrize("call,exc,message", [
    (lambda m, F: F.nll_loss(m.zeros(3, 4), m.tensor([0, 1, 5])), IndexError,
     "^Target 5 is out of bounds.$"),
    (lambda m, F: F.nll_loss(m.zeros(3, 4), m.tensor([0, 1, -1])), IndexError,
     "^Target -1 is out of bounds.$"),
    (lambda m, F: F.cross_entropy(m.zeros(3, 4), m.tensor([0, 1, 2, 3])), ValueError,
     r"^Expected input batch_size \(3\) to match target batch_size \(4\).$"),
    (lambda m, F: F.nll_loss(m.zeros(3, 4), m.tensor([0.0, 1, 2])), RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    (lambda m, F: F.nll_loss(m.zeros(3, 4, 5), m.tensor([0, 1, 2])), RuntimeError,
     r"Expected target size \[3, 5\], got \[3\]"),
    (lambda m, F: F.nll_loss(m.zeros(3, 4), m.tensor([0, 1, 2]), weight=m.ones(3)),
     RuntimeError, "weight tensor should be defined either for all 4 classes or no classes"),
    (lambda m, F: F.nll_loss(m.zeros(2, 3, 4, 5), m.zeros(2, 5, 4, dtype=m.int64)),
     RuntimeError, r"size mismatch \(got input: \[2, 3, 4, 5\] , target: \[2, 5, 4\]"),
    (lambda m, F: F.nll_loss(m.zeros(4), m.tensor([2, 1])), ValueError,
     "For 1D input, 1D target must have size 1, but got target size: 2"),
    (lambda m, F: F.nll_loss(m.zeros(3, 4), m.tensor(1)), ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(0\)."),
    (lambda m, F: F.nll_loss(m.tensor(1.0), m.tensor(1)), ValueError,
     r"Expected 1 or more dimensions \(got 0\)"),
    (lambda m, F: F.cross_entropy(m.zeros(3, 4), m.tensor([0, 1, 2]), label_smoothing=1.5),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda m, F: F.cross_entropy(m.zeros(3, 4), m.tensor([0, 1, 2]), reduction="bad"),
     ValueError, "bad is not a valid value for reduction"),
    (lambda m, F: F.binary_cross_entropy(m.tensor([1.5]), m.tensor([1.0])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda m, F: F.binary_cross_entropy(m.tensor([0.5]), m.tensor([1.0, 0.0])), ValueError,
     "that is different to the input size"),
    (lambda m, F: F.binary_cross_entropy_with_logits(m.tensor([0.5]), m.tensor([1.0, 0.0])),
     ValueError, "must be the same as input size"),
    (lambda m, F: F.multi_margin_loss(m.zeros(3, 4), m.tensor([0, 1, 2]), p=3), ValueError,
     "only p == 1 and p == 2 supported"),
    (lambda m, F: F.multi_margin_loss(m.zeros(3, 4), m.tensor([0, 1, 5])), RuntimeError,
     "target out of range"),
    (lambda m, F: F.multi_margin_loss(m.zeros(3, 4), m.tensor([0, 1, 2]), weight=m.ones(3)),
     RuntimeError, r"inconsistent weight size, expected 4 but got \[3\]"),
    (lambda m, F: F.multilabel_margin_loss(m.zeros(3, 4), m.tensor([[1, 5, -1, 0]] * 3)),
     RuntimeError, "argument #2 'target' is out of range"),
    (lambda m, F: F.cross_entropy(m.zeros(3, 4), m.zeros(3, 4, dtype=m.int64)), RuntimeError,
     "Expected floating point type for target with class probabilities, got Long"),
    (lambda m, F: F.huber_loss(m.zeros(3), m.zeros(3), delta=0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
    (lambda m, F: F.smooth_l1_loss(m.zeros(3), m.zeros(3), beta=-1), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda m, F: F.mse_loss(m.tensor([1, 2]), m.tensor([1, 3])), NotImplementedError,
     "\"mse_cpu\" not implemented for 'Long'"),
    (lambda m, F: F.gaussian_nll_loss(m.zeros(3, 4), m.zeros(3, 4), m.ones(2, 2)),
     ValueError, "var is of incorrect size"),
    (lambda m, F: F.gaussian_nll_loss(m.zeros(3, 4), m.zeros(3, 4), -m.ones(3, 4)),
     ValueError, "var has negative entry/entries"),
    (lambda m, F: F.triplet_margin_loss(m.zeros(3, 4), m.zeros(3, 4), m.zeros(4)),
     RuntimeError, "anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda m, F: F.cosine_embedding_loss(m.zeros(3, 4), m.zeros(3, 4), m.ones(3, 1)),
     RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
    (lambda m, F: F.mse_loss(m.zeros(3), m.zeros(3), weight=m.ones(2)), ValueError,
     "Weights and input must have the same size."),
])
def test_errors_match_torch(call, exc, message):
    _both_raise(call, exc, message)


def test_broadcast_warning_and_values():
    torch = oracle_torch()
    a, b = gt.tensor(rng.standard_normal((3, 1))), gt.tensor(rng.standard_normal(3))
    for fname in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[3\]\)\) that "
                          r"is different to the input size \(torch.Size\(\[3, 1\]\)\)"):
            out = getattr(GF, fname)(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(torch.nn.functional, fname)(to_torch(a), to_torch(b))
        assert_same(out, expected)


@pytest.mark.parametrize("size_average,reduce,reduction", [
    (None, False, "none"), (False, None, "sum"), (True, True, "mean")])
def test_legacy_reduction_arguments(size_average, reduce, reduction):
    x, t = gt.tensor(x34()), gt.tensor(np.array([1, 0, 3]))
    with pytest.warns(UserWarning, match=f"size_average and reduce args will be deprecated, "
                                         f"please use reduction='{reduction}' instead."):
        legacy = GF.nll_loss(x, t, size_average=size_average, reduce=reduce)
    assert_same(legacy, GF.nll_loss(x, t, reduction=reduction))


def test_kl_div_mean_warns_and_batchmean():
    torch = oracle_torch()
    x, p = gt.tensor(x34()), gt.tensor(prob34())
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        GF.kl_div(x, p)
    assert_same(GF.kl_div(x, p, reduction="batchmean"), torch.nn.functional.kl_div(
        to_torch(x), to_torch(p), reduction="batchmean"))


def test_triplet_margin_with_distance_loss():
    torch = oracle_torch()
    a, p, n = (gt.tensor(x34()) for _ in range(3))
    def dist_g(u, v):
        return (u - v).abs().sum(-1)

    def dist_t(u, v):
        return (u - v).abs().sum(-1)
    for swap in (False, True):
        assert_same(
            GF.triplet_margin_with_distance_loss(a, p, n, distance_function=dist_g, swap=swap,
                                                 margin=0.5),
            torch.nn.functional.triplet_margin_with_distance_loss(
                to_torch(a), to_torch(p), to_torch(n), distance_function=dist_t, swap=swap,
                margin=0.5))
    assert_same(GF.triplet_margin_with_distance_loss(a, p, n),
                torch.nn.functional.triplet_margin_with_distance_loss(
                    to_torch(a), to_torch(p), to_torch(n)))


def test_top_level_functions_exist():
    torch = oracle_torch()
    x, p = gt.tensor(x34()), gt.tensor(prob34())
    assert_same(gt.kl_div(x, p), torch.kl_div(to_torch(x), to_torch(p)))
    assert_same(gt.binary_cross_entropy_with_logits(x, p),
                torch.binary_cross_entropy_with_logits(to_torch(x), to_torch(p)))
    assert_same(gt.hinge_embedding_loss(x, p), torch.hinge_embedding_loss(to_torch(x),
                                                                         to_torch(p)))


def test_nll_and_cross_entropy_noncontiguous(kernel_path):
    torch = oracle_torch()
    x = gt.tensor(rng.standard_normal((5, 6))).t()                     # (6, 5), strided
    t = gt.tensor(np.repeat(rng.integers(0, 5, 6), 2))[::2]            # stepped targets
    w = gt.tensor(np.repeat(weights(5), 3))[::3]
    for fname in ("nll_loss", "cross_entropy"):
        for reduction in REDUCTIONS:
            assert_same(getattr(GF, fname)(x, t, w, reduction=reduction),
                        getattr(torch.nn.functional, fname)(to_torch(x), to_torch(t),
                                                            to_torch(w), reduction=reduction),
                        rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_batches_against_torch(kernel_path, dtype, weighted):
    """(N, C) batches with int64 targets (the C kernel's case, and the NumPy path): values
    and input gradients for every reduction, with ignored rows whose class-0 log-probability
    is -inf (PyTorch leaves such rows out; they must not make the loss nan)."""
    torch = oracle_torch()
    x = rng.standard_normal((9, 5)).astype(dtype)
    t = rng.integers(0, 5, 9)
    t[[2, 6]] = -100
    x[[2, 6], 0] = -np.inf
    w = weights(5).astype(dtype) if weighted else None
    for reduction in REDUCTIONS:
        xg = gt.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        yg = GF.nll_loss(xg, gt.tensor(t), None if w is None else gt.tensor(w),
                         reduction=reduction)
        yt = torch.nn.functional.nll_loss(xt, torch.tensor(t),
                                          None if w is None else torch.tensor(w),
                                          reduction=reduction)
        tol = 1e-6 if dtype == "float32" else 1e-12
        assert_same(yg, yt, rtol=tol, atol=tol)
        up = _upstream(tuple(yt.shape)).astype(dtype)
        (gg,) = gt.autograd.grad(yg, [xg], gt.tensor(up))
        (gtt,) = torch.autograd.grad(yt, [xt], torch.tensor(up))
        assert_same(gg, gtt, rtol=tol, atol=tol)


@needs_compiler
def test_nll_native_kernel_runs_and_checks_targets(monkeypatch):
    """The C kernels take nanoGPT's batch layout (spy on them), and their entry points
    reject a target out of range, in the forward (reduced or not) and in a direct backward
    call, before writing anything."""
    names = spy_kernels(monkeypatch, "loss")
    x = gt.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    GF.nll_loss(x, gt.tensor([0, 2, 1, 2])).backward()
    GF.nll_loss(x, gt.tensor([0, 2, 1, 2]), reduction="none")
    assert names == ["nll_forward_reduced_f32", "nll_backward_f32", "nll_forward_f32"]
    for reduction in REDUCTIONS:
        with pytest.raises(IndexError, match="^Target 3 is out of bounds.$"):
            GF.nll_loss(x, gt.tensor([0, 3, 1, 2]), reduction=reduction)
    _, total = gt.ops.aten.nll_loss_forward(x.detach(), gt.tensor([0, 2, 1, 2]), None, 1, -100)
    with pytest.raises(IndexError, match="^Target -2 is out of bounds.$"):
        gt.ops.aten.nll_loss_backward(gt.tensor(1.0), x.detach(), gt.tensor([0, -2, 1, 2]),
                                      None, 1, -100, total)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [5, 256, 1000])
def test_nll_reduced_loss_is_numpys_pairwise_sum(kernel_path, dtype, n):
    """A reduced loss (the C kernel writes it straight into the outputs) is the terms'
    sum as NumPy's reduce makes it, divided by the weights' for 'mean', bit for bit on
    both paths; all ignored gives nan and a total of 0."""
    x = (rng.standard_normal((n, 7)) * rng.lognormal(0, 2, (n, 1))).astype(dtype)
    t = rng.integers(0, 7, n)
    t[::5] = 3
    w = weights(7).astype(dtype)
    keep = t != 3
    terms = np.where(keep, -x[np.arange(n), t] * w[t], 0).astype(dtype)
    kept_w = np.where(keep, w[t], 0).astype(dtype)
    for reduction, want in ((1, np.add.reduce(terms) / np.add.reduce(kept_w)),
                            (2, np.add.reduce(terms))):
        loss, total = gt.ops.aten.nll_loss_forward(gt.tensor(x), gt.tensor(t), gt.tensor(w),
                                                   reduction, 3)
        assert loss.dtype == total.dtype == gt.tensor(x).dtype and loss.shape == ()
        assert loss.numpy()[()] == want and total.numpy()[()] == np.add.reduce(kept_w)
    loss, total = gt.ops.aten.nll_loss_forward(gt.tensor(x), gt.tensor(np.full(n, 3)),
                                               None, 1, 3)
    assert np.isnan(loss.numpy()) and total.numpy()[()] == 0


def test_meta_tensors_give_shapes():
    m = gt.empty(3, 4, device="meta")
    t = gt.empty(3, dtype=gt.int64, device="meta")
    assert GF.cross_entropy(m, t, reduction="none").shape == (3,)
    assert GF.mse_loss(m, m).shape == ()
    assert GF.binary_cross_entropy_with_logits(m, m, reduction="none").shape == (3, 4)


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("case", ["1d", "2d", "2d_weight_ignore", "4d"])
def test_nll_loss_backward_op_matches_pytorch(case, reduction):
    """aten::nll_loss_backward / nll_loss2d_backward (the gradient NllLossBackward0 runs) on
    their own, against PyTorch's operators, float32 and float64."""
    torch = oracle_torch()
    shape, tshape, op = {"1d": ((5,), (), "nll_loss_backward"),
                         "2d": ((6, 5), (6,), "nll_loss_backward"),
                         "2d_weight_ignore": ((6, 5), (6,), "nll_loss_backward"),
                         "4d": ((2, 5, 3, 4), (2, 3, 4), "nll_loss2d_backward")}[case]
    x = rng.standard_normal(shape)
    t = rng.integers(0, 5, tshape)
    w = weights(5) if case == "2d_weight_ignore" else None
    if case == "2d_weight_ignore":
        t[1] = -100
    grad_shape = tshape if reduction == 0 and case != "1d" else ()
    g = rng.standard_normal(grad_shape)
    for dtype in ("float32", "float64"):
        args = [g, x, t, w]
        gargs = [None if a is None else gt.tensor(a) for a in args]
        targs = [None if a is None else torch.tensor(a) for a in args]
        for lib, a in ((gt, gargs), (torch, targs)):
            for i in (0, 1, 3):
                if a[i] is not None:
                    a[i] = a[i].to(getattr(lib, dtype))
        forward = op.replace("backward", "forward")
        total_g = getattr(gt.ops.aten, forward)(gargs[1], gargs[2], gargs[3], reduction, -100)[1]
        total_t = getattr(torch.ops.aten, forward)(targs[1], targs[2], targs[3], reduction,
                                                   -100)[1]
        got = getattr(gt.ops.aten, op)(*gargs, reduction, -100, total_g)
        want = getattr(torch.ops.aten, op)(*targs, reduction, -100, total_t)
        assert_same(got, want, rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-12)


@pytest.mark.parametrize("native_on", [True, False])
def test_a_zero_reduced_nll_loss_is_positive_zero_as_torchs(native_on, monkeypatch):
    """PyTorch subtracts the picked log-probabilities from 0, so a reduced loss of zero is
    +0.0 ('none' keeps each row's -0.0); both glasstorch paths give the same signs."""
    from glasstorch.backends.cpu import native
    torch = oracle_torch()
    monkeypatch.setattr(native, "ENABLED", native_on)

    def losses(T):
        F = T.nn.functional
        x, t = T.zeros(2, 3), T.tensor([0, 1])
        values = [F.nll_loss(x, t), F.nll_loss(x, t, reduction="sum"),
                  F.nll_loss(x, t, weight=T.ones(3)), F.nll_loss(x, t, weight=T.ones(3),
                                                                 reduction="sum"),
                  F.cross_entropy(T.tensor([[0.0, 100.0]]), T.tensor([1])),
                  F.nll_loss(T.zeros(2, 3, 4), T.zeros(2, 4, dtype=T.long)),
                  F.nll_loss(T.zeros(16, 3, dtype=T.float16), T.zeros(16, dtype=T.long)),
                  F.nll_loss(T.zeros(16, 3, dtype=T.bfloat16), T.zeros(16, dtype=T.long),
                             reduction="sum"),
                  F.nll_loss(T.zeros(16, 3), T.zeros(16, dtype=T.long))]
        signs = [math.copysign(1.0, v.item()) for v in values]
        return signs + [math.copysign(1.0, v) for v in F.nll_loss(x, t, reduction="none").tolist()]
    assert losses(gt) == losses(torch)
