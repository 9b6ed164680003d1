"""MultiheadAttention, multi_head_attention_forward and the Transformer layers against
PyTorch: torch's modules' weights are copied into glasstorch's, then outputs, attention
weights and gradients (float64) are compared, with every mask kind, in eval mode and in
train mode with dropout 0."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as GF
from glasstorch.nn.modules import transformer as gtransformer
from oracle import assert_same, oracle_torch, to_numpy

torch = oracle_torch()
tnn = torch.nn
rng = np.random.default_rng(11)

L, S, N, E, H = 4, 5, 3, 8, 2


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """torch's threads fight the other processes on the shared cores: ten times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tensor_pair(shape, requires_grad=True, dtype="float64"):
    data = rng.standard_normal(shape)
    g = gt.tensor(data, dtype=getattr(gt, dtype), requires_grad=requires_grad)
    t = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    return g, t


def mask_pair(data):
    data = np.asarray(data)
    return gt.tensor(data), torch.tensor(data)


def copy_weights(tmod, gmod):
    """glasstorch module <- torch module's state_dict (keys must match exactly)."""
    state = {k: gt.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()}
    assert list(state) == list(gmod.state_dict())
    gmod.load_state_dict(state)


def twin(tcls, gcls, *args, train=False, **kwargs):
    """The same module in torch and glasstorch (float64, torch's weights in both)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmod = tcls(*args, **kwargs).double()
        gmod = gcls(*args, **kwargs).double()
    copy_weights(tmod, gmod)
    tmod.train(train)
    gmod.train(train)
    return tmod, gmod


def check_grads(gmod, tmod, outs, inputs, tol=1e-9):
    """Backward a fixed random combination of the outputs; compare input and param grads."""
    gloss, tloss = 0, 0
    for g, t in outs:
        w = rng.standard_normal(tuple(t.shape))
        gloss = gloss + (g * gt.tensor(w)).sum()
        tloss = tloss + (t * torch.tensor(w)).sum()
    gloss.backward()
    tloss.backward()
    for g, t in inputs:
        assert_same(g.grad, t.grad, rtol=tol, atol=tol, check_stride=False)
    tparams = dict(tmod.named_parameters())
    for name, p in gmod.named_parameters():
        assert p.grad is not None, name
        assert_same(p.grad, tparams[name].grad, rtol=tol, atol=tol, check_stride=False)


def blocked(shape, p=0.3, keep_last=True):
    """A random boolean mask (True = blocked) that leaves at least one open key per row."""
    m = rng.random(shape) < p
    if keep_last:
        m[..., 0] = False
    return m


# ---- MultiheadAttention ----------------------------------------------------------------------

CONFIGS = {
    "default": {},
    "no_bias": {"bias": False},
    "bias_kv": {"add_bias_kv": True},
    "zero_attn": {"add_zero_attn": True},
    "kdim_vdim": {"kdim": 6, "vdim": 3},
    "everything": {"add_bias_kv": True, "add_zero_attn": True, "kdim": 5, "vdim": 7},
}


def mha_inputs(cfg, batch_first, batched=True, self_attn=False):
    kdim, vdim = cfg.get("kdim", E), cfg.get("vdim", E)

    def shape(n, e):
        if not batched:
            return (n, e)
        return (N, n, e) if batch_first else (n, N, e)
    q = tensor_pair(shape(L if not self_attn else S, E))
    if self_attn:
        return q, q, q
    return q, tensor_pair(shape(S, kdim)), tensor_pair(shape(S, vdim))


def run_mha(cfg, batch_first=False, batched=True, self_attn=False, train=False, masks=None,
            **kwargs):
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, E, H, train=train,
                      batch_first=batch_first, **cfg)
    q, k, v = mha_inputs(cfg, batch_first, batched, self_attn)
    masks = masks or {}
    gmasks = {n: m[0] for n, m in masks.items()}
    tmasks = {n: m[1] for n, m in masks.items()}
    gout, gw = gmod(q[0], k[0], v[0], **gmasks, **kwargs)
    tout, tw = tmod(q[1], k[1], v[1], **tmasks, **kwargs)
    assert_same(gout, tout, rtol=1e-10, atol=1e-10)
    outs = [(gout, tout)]
    if tw is None:
        assert gw is None
    else:
        assert_same(gw, tw, rtol=1e-10, atol=1e-10)
        outs.append((gw, tw))
    inputs = [q] if self_attn else [q, k, v]
    check_grads(gmod, tmod, outs, inputs)
    return gout, gw


@pytest.mark.parametrize("cfg", CONFIGS.values(), ids=list(CONFIGS))
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_matches_torch(cfg, batch_first, need_weights):
    run_mha(cfg, batch_first, need_weights=need_weights)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_self_attention(batch_first, need_weights):
    run_mha({}, batch_first, self_attn=True, need_weights=need_weights)


def test_mha_key_is_value():
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, E, H, batch_first=True)
    q, kv = tensor_pair((N, L, E)), tensor_pair((N, S, E))
    gout, gw = gmod(q[0], kv[0], kv[0])
    tout, tw = tmod(q[1], kv[1], kv[1])
    assert_same(gout, tout, rtol=1e-10, atol=1e-10)
    assert_same(gw, tw, rtol=1e-10, atol=1e-10)
    check_grads(gmod, tmod, [(gout, tout)], [q, kv])


def _mask(kind, cfg):
    """attn_mask / key_padding_mask of each kind, glasstorch and torch alike."""
    if kind == "bool2d":
        return {"attn_mask": mask_pair(blocked((L, S)))}
    if kind == "float2d":
        return {"attn_mask": mask_pair(rng.standard_normal((L, S)))}
    if kind == "bool3d":
        return {"attn_mask": mask_pair(blocked((N * H, L, S)))}
    if kind == "float3d":
        return {"attn_mask": mask_pair(rng.standard_normal((N * H, L, S)))}
    if kind == "kpm_bool":
        return {"key_padding_mask": mask_pair(blocked((N, S)))}
    if kind == "kpm_float":
        return {"key_padding_mask": mask_pair(rng.standard_normal((N, S)))}
    if kind == "both_bool":
        return {"attn_mask": mask_pair(blocked((L, S))),
                "key_padding_mask": mask_pair(blocked((N, S)))}
    if kind == "both_float":
        return {"attn_mask": mask_pair(rng.standard_normal((N * H, L, S))),
                "key_padding_mask": mask_pair(
                    np.where(blocked((N, S)), -np.inf, 0.0))}
    raise AssertionError(kind)


MASKS = ["bool2d", "float2d", "bool3d", "float3d", "kpm_bool", "kpm_float", "both_bool",
         "both_float"]


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_masks(kind, need_weights, batch_first):
    run_mha({}, batch_first, masks=_mask(kind, {}), need_weights=need_weights)


@pytest.mark.parametrize("cfg", ["bias_kv", "zero_attn", "everything"])
@pytest.mark.parametrize("kind", ["bool2d", "float3d", "kpm_bool", "both_bool"])
def test_mha_masks_are_padded_for_extra_keys(cfg, kind):
    run_mha(CONFIGS[cfg], masks=_mask(kind, CONFIGS[cfg]))
    run_mha(CONFIGS[cfg], masks=_mask(kind, CONFIGS[cfg]), need_weights=False)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_per_head_weights(need_weights):
    _, w = run_mha({}, True, masks=_mask("both_bool", {}), need_weights=need_weights,
                   average_attn_weights=False)
    assert w is None or tuple(w.shape) == (N, H, L, S)


@pytest.mark.parametrize("cfg", ["default", "everything"])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("average", [True, False])
def test_mha_unbatched(cfg, need_weights, average):
    masks = {"attn_mask": mask_pair(blocked((H, L, S))),
             "key_padding_mask": mask_pair(blocked(S))}
    _, w = run_mha(CONFIGS[cfg], batch_first=True, batched=False, masks=masks,
                   need_weights=need_weights, average_attn_weights=average)
    if need_weights:
        extra = bool(CONFIGS[cfg].get("add_bias_kv")) + bool(CONFIGS[cfg].get("add_zero_attn"))
        assert tuple(w.shape) == ((L, S + extra) if average else (H, L, S + extra))


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("with_kpm", [False, True])
def test_mha_is_causal(need_weights, with_kpm):
    causal = np.triu(np.full((S, S), -np.inf), 1)
    if with_kpm:        # a boolean causal mask, of the padding mask's type
        causal = np.isinf(causal)
    masks = {"attn_mask": mask_pair(causal)}
    if with_kpm:
        masks["key_padding_mask"] = mask_pair(blocked((N, S)))
    run_mha({}, True, self_attn=True, masks=masks, need_weights=need_weights, is_causal=True)


def test_mha_train_mode_without_dropout():
    run_mha({"add_bias_kv": True}, True, train=True, masks=_mask("both_bool", {}))
    run_mha({}, False, train=True, masks=_mask("kpm_bool", {}), need_weights=False)


def test_mha_fully_masked_rows_match_torch():
    """A query row with every key blocked: NaN weights in torch's weights path."""
    am = blocked((L, S))
    am[1] = True
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, E, H)
    q, k, v = mha_inputs({}, False)
    gm, tm = mask_pair(am)
    gout, gw = gmod(q[0], k[0], v[0], attn_mask=gm)
    tout, tw = tmod(q[1], k[1], v[1], attn_mask=tm)
    assert_same(gout, tout, rtol=1e-10, atol=1e-10)
    assert_same(gw, tw, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("case", ["padded_out", "causal_hint_ignored", "float_mask",
                                  "not_self_attention"])
def test_mha_inference_matches_torch_fused_path(need_weights, case):
    """Eval, no grad, batch_first self-attention: torch's fused kernel gives NaN rows for
    fully masked queries, ignores the is_causal hint and returns contiguous outputs."""
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, E, H, batch_first=True)
    kpm = blocked((N, S))
    kpm[1] = True
    am = blocked((S, S))
    kwargs = {"key_padding_mask": mask_pair(kpm)}
    if case == "causal_hint_ignored":
        kwargs = {"attn_mask": mask_pair(am), "is_causal": True}
    elif case == "float_mask":
        kwargs = {"attn_mask": mask_pair(np.where(am, -np.inf, 0.0)),
                  "key_padding_mask": mask_pair(np.where(kpm, -np.inf, 0.0))}
    q = tensor_pair((N, S, E), requires_grad=False)
    kv = q if case != "not_self_attention" else tensor_pair((N, S, E), requires_grad=False)
    with torch.no_grad(), gt.no_grad():
        gout, gw = gmod(q[0], kv[0], kv[0], need_weights=need_weights, **{
            k: v[0] if isinstance(v, tuple) else v for k, v in kwargs.items()})
        tout, tw = tmod(q[1], kv[1], kv[1], need_weights=need_weights, **{
            k: v[1] if isinstance(v, tuple) else v for k, v in kwargs.items()})
    assert_same(gout, tout, rtol=1e-10, atol=1e-10)
    assert (gw is None) == (tw is None)
    if tw is not None:
        assert_same(gw, tw, rtol=1e-10, atol=1e-10)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.sampled_from([1, 2, 3]),
       st.integers(1, 3), st.booleans(), st.booleans(), st.booleans())
def test_mha_shapes_vary(tgt, src, batch, heads, head_dim, batch_first, need_weights,
                         with_kpm):
    embed = heads * head_dim
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, embed, heads,
                      batch_first=batch_first, kdim=embed + 1)

    def shape(n, e):
        return (batch, n, e) if batch_first else (n, batch, e)
    q = tensor_pair(shape(tgt, embed))
    k, v = tensor_pair(shape(src, embed + 1)), tensor_pair(shape(src, embed))
    kwargs = {}
    if with_kpm:
        kwargs["key_padding_mask"] = mask_pair(blocked((batch, src)))
    gout, gw = gmod(q[0], k[0], v[0], need_weights=need_weights,
                    **{n: m[0] for n, m in kwargs.items()})
    tout, tw = tmod(q[1], k[1], v[1], need_weights=need_weights,
                    **{n: m[1] for n, m in kwargs.items()})
    assert_same(gout, tout, rtol=1e-10, atol=1e-10)
    outs = [(gout, tout)]
    if need_weights:
        assert_same(gw, tw, rtol=1e-10, atol=1e-10)
        outs.append((gw, tw))
    check_grads(gmod, tmod, outs, [q, k, v])


@pytest.mark.parametrize("masks", ["attn2d", "attn3d", "kpm", "both"])
def test_merge_masks_matches_torch(masks):
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, E, H, batch_first=True)
    am = {"attn2d": (S, S), "attn3d": (N * H, S, S)}.get(masks, (S, S))
    attn = mask_pair(rng.standard_normal(am)) if masks != "kpm" else (None, None)
    kpm = mask_pair(rng.standard_normal((N, S))) if masks in ("kpm", "both") else (None, None)
    q = tensor_pair((N, S, E), requires_grad=False)
    gm, gtype = gmod.merge_masks(attn[0], kpm[0], q[0])
    tm, ttype = tmod.merge_masks(attn[1], kpm[1], q[1])
    assert gtype == ttype
    assert_same(gm, tm, check_stride=False)


def test_layer_dropout_in_training():
    gmod = gnn.TransformerEncoderLayer(D, H, FF, dropout=0.5).double()
    x = gt.randn(S, N, D, dtype=gt.float64)
    assert not bool((gmod(x) == gmod(x)).all())
    gmod.eval()
    assert bool((gmod(x) == gmod(x)).all())


def test_mha_dropout_in_training():
    gmod = gnn.MultiheadAttention(E, H, dropout=0.5).double()
    x = gt.randn(L, N, E, dtype=gt.float64)
    gt.manual_seed(3)
    _, w1 = gmod(x, x, x, average_attn_weights=False)
    assert bool((w1 == 0).any())           # dropped weights
    gmod.eval()
    _, w2 = gmod(x, x, x, average_attn_weights=False)
    assert not bool((w2 == 0).any())
    np.testing.assert_allclose(to_numpy(w2.sum(-1)), 1.0)


def test_mha_float32_and_strides():
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, E, H, batch_first=True)
    tmod.float()
    gmod.float()
    q = tensor_pair((N, L, E), dtype="float32", requires_grad=False)
    gout, gw = gmod(q[0], q[0], q[0])
    tout, tw = tmod(q[1], q[1], q[1])
    assert_same(gout, tout, rtol=1e-5, atol=1e-5)
    assert_same(gw, tw, rtol=1e-5, atol=1e-5)


# ---- construction, parameters, repr ----------------------------------------------------------

@pytest.mark.parametrize("cfg", CONFIGS.values(), ids=list(CONFIGS))
def test_mha_parameters_and_repr_match_torch(cfg):
    torch.manual_seed(0)
    tmod = tnn.MultiheadAttention(E, H, **cfg)
    gmod = gnn.MultiheadAttention(E, H, **cfg)
    tshapes = [(k, tuple(v.shape)) for k, v in tmod.state_dict().items()]
    assert [(k, tuple(v.shape)) for k, v in gmod.state_dict().items()] == tshapes
    assert [n for n, _ in gmod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    assert repr(gmod) == repr(tmod)
    for name in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight",
                 "in_proj_bias", "bias_k", "bias_v"):
        assert (getattr(gmod, name) is None) == (getattr(tmod, name) is None), name
    for name in ("embed_dim", "kdim", "vdim", "num_heads", "head_dim", "dropout",
                 "batch_first", "add_zero_attn", "_qkv_same_embed_dim"):
        assert getattr(gmod, name) == getattr(tmod, name), name


def test_mha_init_distribution():
    gmod = gnn.MultiheadAttention(64, 4, add_bias_kv=True)
    bound = math.sqrt(6.0 / (64 + 3 * 64))          # xavier_uniform_ of the (3E, E) weight
    w = to_numpy(gmod.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not to_numpy(gmod.in_proj_bias).any() and not to_numpy(gmod.out_proj.bias).any()
    assert to_numpy(gmod.bias_k).std() > 0
    sep = gnn.MultiheadAttention(64, 4, kdim=32)
    bound_k = math.sqrt(6.0 / (64 + 32))
    assert np.abs(to_numpy(sep.k_proj_weight)).max() <= bound_k
    assert gmod.in_proj_weight.requires_grad and isinstance(gmod.in_proj_weight,
                                                            gnn.Parameter)


def test_mha_device_and_dtype_kwargs():
    gmod = gnn.MultiheadAttention(E, H, kdim=4, dtype=gt.float64, device="cpu")
    assert all(p.dtype is gt.float64 for p in gmod.parameters())


def test_mha_constructor_errors():
    for args in [(0, 1), (4, 0), (-1, 2)]:
        with pytest.raises(ValueError) as ge:
            gnn.MultiheadAttention(*args)
        with pytest.raises(ValueError) as te:
            tnn.MultiheadAttention(*args)
        assert str(ge.value) == str(te.value)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        gnn.MultiheadAttention(6, 4)


# ---- errors ----------------------------------------------------------------------------------

def _both_raise(call, exc):
    """call(lib_module_pair...) raises the same error type and text in both libraries."""
    with pytest.raises(exc) as te:
        call(torch, tnn)
    with pytest.raises(exc) as ge:
        call(gt, gnn)
    assert str(ge.value).replace("glasstorch", "torch") == str(te.value)


def _mha_call(make_args, **kwargs):
    def call(lib, nn):
        lib.manual_seed(0)
        m = nn.MultiheadAttention(E, H)
        q, k, v, extra = make_args(lib)
        return m(q, k, v, **extra, **kwargs)
    return call


def test_mha_errors_match_torch():
    def ranks(lib):
        return lib.zeros(L, N, E), lib.zeros(S, E), lib.zeros(S, E), {}
    _both_raise(_mha_call(ranks), AssertionError)

    def rank4(lib):
        return lib.zeros(1, L, N, E), lib.zeros(1, S, N, E), lib.zeros(1, S, N, E), {}
    _both_raise(_mha_call(rank4), AssertionError)

    def int_mask(lib):
        return (lib.zeros(L, N, E), lib.zeros(S, N, E), lib.zeros(S, N, E),
                {"attn_mask": lib.zeros(L, S, dtype=lib.int64)})
    _both_raise(_mha_call(int_mask), AssertionError)

    def bad_2d(lib):
        return (lib.zeros(L, N, E), lib.zeros(S, N, E), lib.zeros(S, N, E),
                {"attn_mask": lib.zeros(L, L)})
    _both_raise(_mha_call(bad_2d), RuntimeError)

    def bad_3d(lib):
        return (lib.zeros(L, N, E), lib.zeros(S, N, E), lib.zeros(S, N, E),
                {"attn_mask": lib.zeros(N, L, S)})
    _both_raise(_mha_call(bad_3d), RuntimeError)

    def bad_kpm(lib):
        return (lib.zeros(L, N, E), lib.zeros(S, N, E), lib.zeros(S, N, E),
                {"key_padding_mask": lib.zeros(N, L, dtype=lib.bool)})
    _both_raise(_mha_call(bad_kpm), AssertionError)

    def wrong_embed(lib):
        return lib.zeros(L, N, 4), lib.zeros(S, N, 4), lib.zeros(S, N, 4), {}
    _both_raise(_mha_call(wrong_embed), AssertionError)

    def kv_mismatch(lib):
        return lib.zeros(L, N, E), lib.zeros(S, N, E), lib.zeros(L, N, E), {}
    _both_raise(_mha_call(kv_mismatch), AssertionError)

    def causal_without_mask(lib):
        return lib.zeros(L, N, E), lib.zeros(S, N, E), lib.zeros(S, N, E), {}
    _both_raise(_mha_call(causal_without_mask, is_causal=True), RuntimeError)


def test_mha_mismatched_mask_types_warn():
    gmod = gnn.MultiheadAttention(E, H)
    x = gt.zeros(L, N, E)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and "
                                         "attn_mask is deprecated"):
        gmod(x, x, x, attn_mask=gt.zeros(L, L),
             key_padding_mask=gt.zeros(N, L, dtype=gt.bool))


# ---- multi_head_attention_forward --------------------------------------------------------------

def test_functional_static_kv_matches_torch():
    tmod, gmod = twin(tnn.MultiheadAttention, gnn.MultiheadAttention, E, H)
    q, k, v = mha_inputs({}, False)
    sk, sv = tensor_pair((N * H, S + 1, E // H)), tensor_pair((N * H, S + 1, E // H))

    def run(F, mod, i):
        return F.multi_head_attention_forward(
            q[i], k[i], v[i], E, H, mod.in_proj_weight, mod.in_proj_bias, None, None, False,
            0.0, mod.out_proj.weight, mod.out_proj.bias, training=False,
            static_k=sk[i], static_v=sv[i])
    gout, gw = run(gnn.functional, gmod, 0)
    tout, tw = run(torch.nn.functional, tmod, 1)
    assert_same(gout, tout, rtol=1e-10, atol=1e-10)
    assert_same(gw, tw, rtol=1e-10, atol=1e-10)
    check_grads(gmod, tmod, [(gout, tout), (gw, tw)], [q, sk, sv])


# ---- Transformer layers ----------------------------------------------------------------------

D, FF, T = 8, 16, 4


def seq(n, batch_first, batched=True, requires_grad=True):
    if not batched:
        return tensor_pair((n, D), requires_grad)
    return tensor_pair((N, n, D) if batch_first else (n, N, D), requires_grad)


def compare(tmod, gmod, targs, gargs, inputs, grads=True, tol=1e-9, **kwargs):
    gkw = {k: v[0] if isinstance(v, tuple) else v for k, v in kwargs.items()}
    tkw = {k: v[1] if isinstance(v, tuple) else v for k, v in kwargs.items()}
    gout = gmod(*gargs, **gkw)
    tout = tmod(*targs, **tkw)
    assert_same(gout, tout, rtol=tol, atol=tol)
    if grads:
        check_grads(gmod, tmod, [(gout, tout)], inputs, tol=tol)
    return gout


ACTIVATIONS = {"relu": ("relu", "relu"), "gelu": ("gelu", "gelu"),
               "module": (gnn.GELU(approximate="tanh"), tnn.GELU(approximate="tanh")),
               "function": (GF.silu, torch.nn.functional.silu)}


def layer_twin(tcls, gcls, activation="relu", train=False, **kwargs):
    gact, tact = ACTIVATIONS[activation]
    torch.manual_seed(0)
    tmod = tcls(D, H, FF, activation=tact, **kwargs).double().train(train)
    gmod = gcls(D, H, FF, activation=gact, **kwargs).double().train(train)
    copy_weights(tmod, gmod)
    return tmod, gmod


ENC_MASKS = ["none", "bool", "float", "kpm", "both", "causal"]


def enc_masks(kind, n):
    causal = np.triu(np.full((n, n), -np.inf), 1)
    return {"none": {},
            "bool": {"src_mask": mask_pair(blocked((n, n)))},
            "float": {"src_mask": mask_pair(rng.standard_normal((n, n)))},
            "kpm": {"src_key_padding_mask": mask_pair(blocked((N, n)))},
            "both": {"src_mask": mask_pair(blocked((n, n))),
                     "src_key_padding_mask": mask_pair(blocked((N, n)))},
            "causal": {"src_mask": mask_pair(causal), "is_causal": True}}[kind]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", ENC_MASKS)
def test_encoder_layer_matches_torch(norm_first, batch_first, kind):
    tmod, gmod = layer_twin(tnn.TransformerEncoderLayer, gnn.TransformerEncoderLayer,
                            norm_first=norm_first, batch_first=batch_first)
    src = seq(S, batch_first)
    compare(tmod, gmod, [src[1]], [src[0]], [src], **enc_masks(kind, S))


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_encoder_layer_activations_in_train_mode(activation):
    tmod, gmod = layer_twin(tnn.TransformerEncoderLayer, gnn.TransformerEncoderLayer,
                            activation=activation, train=True, dropout=0.0, batch_first=True)
    assert gmod.activation_relu_or_gelu == tmod.activation_relu_or_gelu
    src = seq(S, True)
    compare(tmod, gmod, [src[1]], [src[0]], [src], **enc_masks("both", S))


def test_encoder_layer_unbatched_and_options():
    tmod, gmod = layer_twin(tnn.TransformerEncoderLayer, gnn.TransformerEncoderLayer,
                            layer_norm_eps=1e-3, bias=False, norm_first=True)
    src = seq(S, False, batched=False)
    compare(tmod, gmod, [src[1]], [src[0]], [src],
            src_key_padding_mask=mask_pair(blocked(S)))


@pytest.mark.parametrize("kind", ["kpm", "both", "causal", "tanh_gelu", "tanh_gelu_hooked"])
def test_encoder_layer_no_grad_inference(kind):
    """torch's fused inference kernel: NaN for queries with every key masked, exact GELU for
    any GELU module; a forward hook turns it off."""
    activation = "module" if kind.startswith("tanh_gelu") else "relu"
    tmod, gmod = layer_twin(tnn.TransformerEncoderLayer, gnn.TransformerEncoderLayer,
                            activation=activation, batch_first=True)
    if kind == "tanh_gelu_hooked":
        tmod.linear2.register_forward_hook(lambda *args: None)
        gmod.linear2.register_forward_hook(lambda *args: None)
    kind = "none" if kind.startswith("tanh_gelu") else kind
    src = seq(S, True, requires_grad=False)
    masks = enc_masks(kind, S)
    if "src_key_padding_mask" in masks:
        kpm = blocked((N, S))
        kpm[0] = True
        masks["src_key_padding_mask"] = mask_pair(kpm)
    with torch.no_grad(), gt.no_grad():
        compare(tmod, gmod, [src[1]], [src[0]], [], grads=False, **masks)


DEC_MASKS = ["none", "bool", "float", "kpm", "causal"]


def dec_masks(kind):
    causal = np.triu(np.full((T, T), -np.inf), 1)
    return {"none": {},
            "bool": {"tgt_mask": mask_pair(blocked((T, T))),
                     "memory_mask": mask_pair(blocked((T, S)))},
            "float": {"tgt_mask": mask_pair(rng.standard_normal((T, T))),
                      "memory_mask": mask_pair(rng.standard_normal((T, S)))},
            "kpm": {"tgt_key_padding_mask": mask_pair(blocked((N, T))),
                    "memory_key_padding_mask": mask_pair(blocked((N, S)))},
            "causal": {"tgt_mask": mask_pair(causal), "tgt_is_causal": True,
                       "memory_key_padding_mask": mask_pair(blocked((N, S)))}}[kind]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", DEC_MASKS)
def test_decoder_layer_matches_torch(norm_first, batch_first, kind):
    tmod, gmod = layer_twin(tnn.TransformerDecoderLayer, gnn.TransformerDecoderLayer,
                            norm_first=norm_first, batch_first=batch_first)
    tgt, mem = seq(T, batch_first), seq(S, batch_first)
    compare(tmod, gmod, [tgt[1], mem[1]], [tgt[0], mem[0]], [tgt, mem], **dec_masks(kind))


@pytest.mark.parametrize("activation", ["gelu", "function"])
def test_decoder_layer_train_mode_and_unbatched(activation):
    tmod, gmod = layer_twin(tnn.TransformerDecoderLayer, gnn.TransformerDecoderLayer,
                            activation=activation, train=True, dropout=0.0, norm_first=True)
    tgt, mem = seq(T, False, batched=False), seq(S, False, batched=False)
    compare(tmod, gmod, [tgt[1], mem[1]], [tgt[0], mem[0]], [tgt, mem],
            tgt_key_padding_mask=mask_pair(blocked(T)))


# ---- stacks ----------------------------------------------------------------------------------

def stack_twin(kind, norm=True, train=False, **layer_kwargs):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "encoder":
            tl = tnn.TransformerEncoderLayer(D, H, FF, **layer_kwargs)
            gl = gnn.TransformerEncoderLayer(D, H, FF, **layer_kwargs)
            tmod = tnn.TransformerEncoder(tl, 2, tnn.LayerNorm(D) if norm else None)
            gmod = gnn.TransformerEncoder(gl, 2, gnn.LayerNorm(D) if norm else None)
        else:
            tl = tnn.TransformerDecoderLayer(D, H, FF, **layer_kwargs)
            gl = gnn.TransformerDecoderLayer(D, H, FF, **layer_kwargs)
            tmod = tnn.TransformerDecoder(tl, 2, tnn.LayerNorm(D) if norm else None)
            gmod = gnn.TransformerDecoder(gl, 2, gnn.LayerNorm(D) if norm else None)
    tmod.double().train(train)
    gmod.double().train(train)
    copy_weights(tmod, gmod)
    return tmod, gmod


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("kind", ["none", "kpm", "both", "causal", "causal_detected"])
def test_encoder_stack_matches_torch(norm_first, kind):
    tmod, gmod = stack_twin("encoder", norm_first=norm_first, batch_first=True,
                            activation="gelu")
    src = seq(S, True)
    if kind == "causal_detected":       # is_causal=None: the stack recognises the mask
        masks = {"mask": mask_pair(np.triu(np.full((S, S), -np.inf), 1))}
    else:
        masks = enc_masks(kind, S)
        if "src_mask" in masks:
            masks["mask"] = masks.pop("src_mask")
    compare(tmod, gmod, [src[1]], [src[0]], [src], **masks)


def test_encoder_stack_train_mode_without_norm():
    tmod, gmod = stack_twin("encoder", norm=False, train=True, dropout=0.0)
    src = seq(S, False)
    compare(tmod, gmod, [src[1]], [src[0]], [src], **{
        "src_key_padding_mask": mask_pair(blocked((N, S)))})


@pytest.mark.parametrize("kpm", ["left_aligned", "scattered", "float"])
def test_encoder_stack_inference_zeroes_padding_as_torch(kpm):
    """torch's nested-tensor inference path leaves zeros at padded positions (before norm)."""
    tmod, gmod = stack_twin("encoder", norm=False, batch_first=True)
    assert gmod.use_nested_tensor and tmod.use_nested_tensor
    if kpm == "left_aligned":
        mask = np.zeros((N, S), bool)
        mask[0, 3:] = mask[1, 1:] = True
    elif kpm == "scattered":
        mask = blocked((N, S))
        mask[0, 1], mask[0, 2] = True, False
    else:
        mask = np.where(np.arange(S) >= 3, -np.inf, 0.0)[None].repeat(N, 0)
    src = seq(S, True, requires_grad=False)
    with torch.no_grad(), gt.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compare(tmod, gmod, [src[1]], [src[0]], [], grads=False,
                      src_key_padding_mask=mask_pair(mask))
    if kpm != "scattered":
        padded = mask if mask.dtype == bool else np.isinf(mask)
        assert not to_numpy(out)[padded].any()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("kind", ["none", "kpm", "causal"])
def test_decoder_stack_matches_torch(norm_first, kind):
    tmod, gmod = stack_twin("decoder", norm_first=norm_first)
    tgt, mem = seq(T, False), seq(S, False)
    masks = dec_masks(kind)
    if kind == "causal":
        masks.pop("tgt_is_causal")      # detected from the mask
    compare(tmod, gmod, [tgt[1], mem[1]], [tgt[0], mem[0]], [tgt, mem], **masks)


def test_stack_layers_are_independent_copies():
    _, gmod = stack_twin("encoder")
    a, b = gmod.layers[0].linear1.weight, gmod.layers[1].linear1.weight
    assert a is not b and a.data_ptr() != b.data_ptr()
    assert [k for k in gmod.state_dict()][:2] == ["layers.0.self_attn.in_proj_weight",
                                                  "layers.0.self_attn.in_proj_bias"]


# ---- Transformer -----------------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_torch(batch_first, norm_first):
    torch.manual_seed(0)
    kwargs = dict(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=1,
                  dim_feedforward=FF, batch_first=batch_first, norm_first=norm_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmod = tnn.Transformer(**kwargs).double().eval()
        gmod = gnn.Transformer(**kwargs).double().eval()
    copy_weights(tmod, gmod)
    assert repr(gmod) == repr(tmod)
    src, tgt = seq(S, batch_first), seq(T, batch_first)
    tgt_mask = (gnn.Transformer.generate_square_subsequent_mask(T, dtype=gt.float64),
                tnn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64))
    compare(tmod, gmod, [src[1], tgt[1]], [src[0], tgt[0]], [src, tgt], tgt_mask=tgt_mask,
            src_key_padding_mask=mask_pair(blocked((N, S))),
            memory_key_padding_mask=mask_pair(blocked((N, S))))


def test_transformer_unbatched_in_train_mode():
    torch.manual_seed(0)
    kwargs = dict(d_model=D, nhead=H, num_encoder_layers=1, num_decoder_layers=2,
                  dim_feedforward=FF, dropout=0.0, activation="gelu", batch_first=True)
    tmod, gmod = tnn.Transformer(**kwargs).double(), gnn.Transformer(**kwargs).double()
    copy_weights(tmod, gmod)
    src, tgt = seq(S, True, batched=False), seq(T, True, batched=False)
    causal = mask_pair(np.triu(np.full((T, T), -np.inf), 1))
    compare(tmod, gmod, [src[1], tgt[1]], [src[0], tgt[0]], [src, tgt], tgt_mask=causal,
            src_key_padding_mask=mask_pair(blocked(S)))


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_init_and_custom_parts():
    m = gnn.Transformer(D, H, 1, 1, FF)
    for name, p in m.named_parameters():
        if p.dim() > 1:
            fan_out, fan_in = p.shape
            assert np.abs(to_numpy(p)).max() <= math.sqrt(6.0 / (fan_in + fan_out)), name
    enc = gnn.TransformerEncoder(gnn.TransformerEncoderLayer(D, H, FF), 1,
                                 enable_nested_tensor=False)
    custom = gnn.Transformer(D, H, custom_encoder=enc, custom_decoder=gnn.Identity())
    assert custom.encoder is enc and isinstance(custom.decoder, gnn.Identity)
    assert custom.d_model == D and custom.nhead == H and custom.batch_first is False


def test_causal_mask_detection_matches_torch():
    from torch.nn.modules.transformer import _detect_is_causal_mask as t_detect
    causal = np.triu(np.full((S, S), -np.inf), 1)
    other = causal.copy()
    other[0, 1] = 0.0
    for mask in (causal, other, causal[None].repeat(2, 0), None,
                 np.triu(np.ones((S, S), bool), 1)):
        for is_causal in (None, True, False):
            for size in (None, S, S + 1):
                gm, tm = (None, None) if mask is None else mask_pair(mask)
                assert (gtransformer._detect_is_causal_mask(gm, is_causal, size)
                        == t_detect(tm, is_causal, size))


@pytest.mark.parametrize("sz", [0, 1, 5])
def test_generate_square_subsequent_mask(sz):
    g = gnn.Transformer.generate_square_subsequent_mask(sz)
    t = tnn.Transformer.generate_square_subsequent_mask(sz)
    assert_same(g, t)
    assert_same(gnn.Transformer.generate_square_subsequent_mask(sz, dtype=gt.float64),
                tnn.Transformer.generate_square_subsequent_mask(sz, dtype=torch.float64))


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_errors_match_torch():
    def batch(lib, nn):
        lib.manual_seed(0)
        return nn.Transformer(D, H, 1, 1, FF)(lib.zeros(S, 2, D), lib.zeros(T, 3, D))
    _both_raise(batch, RuntimeError)

    def features(lib, nn):
        lib.manual_seed(0)
        return nn.Transformer(D, H, 1, 1, FF)(lib.zeros(S, 2, D), lib.zeros(T, 2, 4))
    _both_raise(features, RuntimeError)

    _both_raise(lambda lib, nn: nn.TransformerEncoderLayer(D, H, activation="tanh"),
                RuntimeError)

    def causal_hint(lib, nn):
        lib.manual_seed(0)
        return nn.TransformerEncoderLayer(D, H, FF)(lib.zeros(S, 2, D), is_causal=True)
    _both_raise(causal_hint, RuntimeError)


@pytest.mark.parametrize("layer_kwargs", [{}, {"batch_first": True, "norm_first": True},
                                          {"batch_first": True, "activation": "tanh-fn"},
                                          {"batch_first": True, "bias": False},
                                          {"batch_first": True}])
def test_nested_tensor_warning_matches_torch(layer_kwargs):
    def build(lib, nn, F):
        kw = dict(layer_kwargs)
        if kw.get("activation") == "tanh-fn":
            kw["activation"] = F.tanh
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, **kw), 1)
        return enc.use_nested_tensor, [str(w.message) for w in rec]
    assert build(gt, gnn, GF) == build(torch, tnn, torch.nn.functional)



def test_is_causal_without_a_mask_is_refused_as_in_torch():
    import torch
    q = np.random.default_rng(0).standard_normal((4, 1, 8))
    for lib in (torch, gt):
        mha = lib.nn.MultiheadAttention(8, 2)
        x = lib.tensor(q, dtype=lib.float32)
        with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal"):
            lib.nn.functional.multi_head_attention_forward(
                x, x, x, 8, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0,
                mha.out_proj.weight, mha.out_proj.bias, is_causal=True)
