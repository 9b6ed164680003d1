"""nn.Module, nn.Parameter, nn.Buffer and the containers, side by side with torch.nn."""
from __future__ import annotations

import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import assert_same, oracle_torch, to_numpy


def _libs():
    return gt, oracle_torch()


def make_classes(lib):
    """The same small modules written against either library."""
    nn = lib.nn

    class Lin(nn.Module):
        def __init__(self, i, o, bias=True):
            super().__init__()
            self.in_features, self.out_features = i, o
            self.weight = nn.Parameter(lib.arange(o * i, dtype=lib.float32).reshape(o, i) / 10)
            if bias:
                self.bias = nn.Parameter(lib.ones(o))
            else:
                self.register_parameter("bias", None)

        def forward(self, x):
            y = x @ self.weight.t()
            return y if self.bias is None else y + self.bias

        def extra_repr(self):
            return f"in_features={self.in_features}, out_features={self.out_features}"

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("rb", lib.zeros(2))
            self.a = nn.Parameter(lib.ones(1))
            self.lin = Lin(3, 2)
            self.register_buffer("tmp", lib.ones(1), persistent=False)
            self.seq = nn.Sequential(Lin(2, 2), Lin(2, 1, bias=False))
            self.plain = lib.ones(1)

        def forward(self, x):
            return self.seq(self.lin(x)) * self.a

    return Lin, Net


def both():
    torch = oracle_torch()
    return make_classes(gt), make_classes(torch), torch


def copy_params(gmod, tmod):
    for (gn, gp), (tn, tp) in zip(gmod.state_dict(keep_vars=True).items(),
                                  tmod.state_dict(keep_vars=True).items()):
        assert gn == tn
        with gt.no_grad():
            gp.copy_(gt.tensor(to_numpy(tp)))


# ---- Parameter and Buffer -----------------------------------------------------------------

def test_parameter_shares_storage_and_reprs():
    torch = oracle_torch()
    t = gt.zeros(3)
    p = gt.nn.Parameter(t)
    assert isinstance(p, gt.Tensor) and isinstance(p, gt.nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.data_ptr() == t.data_ptr()
    t.add_(1)
    assert p._version == 1 and p.tolist() == [1.0, 1.0, 1.0]
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(3)))
    assert repr(gt.nn.Parameter(gt.ones(2), requires_grad=False)) == repr(
        torch.nn.Parameter(torch.ones(2), requires_grad=False))
    assert repr(gt.nn.Parameter()) == repr(torch.nn.Parameter())
    assert type(p * 2) is gt.Tensor and type(p.data) is gt.Tensor
    with pytest.raises(RuntimeError, match="floating point and complex"):
        gt.nn.Parameter(gt.ones(2, dtype=gt.int64))


def test_parameter_deepcopy_and_pickle():
    p = gt.nn.Parameter(gt.tensor([1.0, 2.0]))
    p.grad = gt.ones(2)
    p.tag = "w"
    q = copy.deepcopy(p)
    assert type(q) is gt.nn.Parameter and q.requires_grad and q.grad is None
    assert q.data_ptr() != p.data_ptr() and q.tolist() == [1.0, 2.0]
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is gt.nn.Parameter and r.tolist() == [1.0, 2.0] and r.tag == "w"
    assert r.grad is None and r.requires_grad


def test_parameter_data_assignment_changes_dtype():
    p = gt.nn.Parameter(gt.ones(3, dtype=gt.float64))
    p.data = p.data.half()
    assert p.dtype is gt.float16 and p.requires_grad and p.tolist() == [1.0, 1.0, 1.0]


def test_buffer_marker_and_registration():
    torch = oracle_torch()
    for lib in (gt, torch):
        b = lib.nn.Buffer(lib.ones(2), persistent=False)
        assert type(b) is lib.Tensor and isinstance(b, lib.nn.Buffer)
        assert not isinstance(lib.ones(1), lib.nn.Buffer)
        m = lib.nn.Module()
        m.b = b
        m.c = lib.nn.Buffer(lib.zeros(1))
        assert list(m.state_dict()) == ["c"] and [n for n, _ in m.named_buffers()] == ["b", "c"]


# ---- registration and errors --------------------------------------------------------------

def _err(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001  (compared across libraries)
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", [
    "param_before_init", "module_before_init", "tensor_as_param", "int_as_buffer",
    "register_buffer_int", "dup_attr", "dot_param", "dot_module", "missing_attr",
    "module_as_other", "empty_name", "register_param_tensor",
    "add_module_int", "buffer_before_init",
])
def test_registration_errors_match_torch(case):
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn

        class Bad(nn.Module):
            def __init__(self, what):
                if what == "param":
                    self.p = nn.Parameter(lib.ones(1))
                elif what == "module":
                    self.m = nn.Module()
                else:
                    self.register_buffer("b", lib.ones(1))

        m = nn.Module()
        m.a = nn.Parameter(lib.ones(1))
        m.register_buffer("b", lib.ones(1))
        m.c = nn.Module()
        m.x = 3
        actions = {
            "param_before_init": lambda: Bad("param"),
            "module_before_init": lambda: Bad("module"),
            "buffer_before_init": lambda: Bad("buffer"),
            "tensor_as_param": lambda: setattr(m, "a", lib.ones(1)),
            "int_as_buffer": lambda: setattr(m, "b", 3),
            "register_buffer_int": lambda: m.register_buffer("d", 3),
            "dup_attr": lambda: m.register_buffer("x", lib.ones(1)),
            "dot_param": lambda: m.register_parameter("a.b", None),
            "dot_module": lambda: m.add_module("a.b", nn.Module()),
            "missing_attr": lambda: m.nonexist,
            "module_as_other": lambda: setattr(m, "c", 1),
            "empty_name": lambda: m.register_buffer("", None),
            "register_param_tensor": lambda: m.register_parameter("q", lib.ones(1)),
            "add_module_int": lambda: m.add_module("z", 3),
        }
        return _err(actions[case])

    assert run(gt) == run(torch)


def test_setattr_routing_and_delattr():
    for lib in _libs():
        nn = lib.nn
        m = nn.Module()
        m.register_buffer("b", lib.ones(1))
        m.b = lib.zeros(2)                  # a tensor to an existing buffer name stays a buffer
        assert "b" in m._buffers and m.b.shape == (2,)
        m.b = None
        assert "b" in m._buffers and m.b is None
        m.t = lib.ones(1)                   # a plain tensor attribute is not registered
        assert "t" not in m._buffers and "t" in m.__dict__
        m.p = nn.Parameter(lib.ones(1))
        m.p = None
        assert "p" in m._parameters and m.p is None
        m.sub = nn.Module()
        m.sub = None
        assert "sub" in m._modules
        m.q = nn.Parameter(lib.ones(1))
        del m.q
        assert "q" not in m._parameters
        m.t = nn.Parameter(lib.ones(1))      # replaces the plain attribute
        assert "t" not in m.__dict__ and "t" in m._parameters
        d = dir(m)
        assert "p" in d and "b" in d and "sub" in d and d == sorted(d)


# ---- traversal and state_dict -------------------------------------------------------------

def test_named_members_and_state_dict_order_match_torch():
    (_, GNet), (_, TNet), torch = both()
    g, t = GNet(), TNet()
    assert list(g.state_dict()) == list(t.state_dict())
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in g.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in g.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in g.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in g.named_parameters(prefix="x", recurse=False)] == [
        n for n, _ in t.named_parameters(prefix="x", recurse=False)]
    assert [n for n, _ in g.named_modules(prefix="root")] == [
        n for n, _ in t.named_modules(prefix="root")]
    gs, ts = g.state_dict(), t.state_dict()
    assert type(gs) is OrderedDict and gs._metadata == ts._metadata
    assert list(g.state_dict(prefix="m.")) == list(t.state_dict(prefix="m."))
    assert all(not v.requires_grad for v in gs.values())
    assert g.state_dict(keep_vars=True)["a"] is g.a
    assert gs["a"].data_ptr() == g.a.data_ptr()


def test_shared_modules_dedup():
    for lib in _libs():
        nn = lib.nn
        Lin, _ = make_classes(lib)
        shared = Lin(2, 2)
        m = nn.Sequential(shared, shared)
        assert len(list(m.parameters())) == 2
        assert len(list(m.named_parameters(remove_duplicate=False))) == 4
        assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
        assert len(list(m.modules())) == 2
        assert len(list(m.named_modules(remove_duplicate=False))) == 3


def test_load_state_dict_in_place_and_errors_match_torch():
    (GLin, GNet), (TLin, TNet), torch = both()
    g, t = GNet(), TNet()
    w = g.lin.weight
    sd = {k: gt.tensor(to_numpy(v)) + 1 for k, v in t.state_dict().items()}
    res = g.load_state_dict(sd)
    assert repr(res) == "<All keys matched successfully>"
    assert g.lin.weight is w and w.requires_grad
    assert_same(g.lin.weight.detach(), t.lin.weight.detach() + 1)

    def errs(lib, net, mod):
        good = {k: v.clone() for k, v in net.state_dict().items()}
        bad = dict(good)
        del bad["a"]
        bad["extra"] = lib.ones(1)
        bad["lin.weight"] = lib.ones(5, 5)
        out = [_err(lambda: net.load_state_dict(bad))]
        res = net.load_state_dict({k: v for k, v in bad.items() if k != "lin.weight"},
                                  strict=False)
        out.append((res.missing_keys, res.unexpected_keys, repr(res)))
        out.append(_err(lambda: net.load_state_dict(bad, strict=False)))
        out.append(_err(lambda: mod.load_state_dict({"weight": lib.ones(2, 3)})))
        out.append(_err(lambda: net.load_state_dict([1])))
        return out

    assert errs(gt, GNet(), GLin(3, 3)) == errs(torch, TNet(), TLin(3, 3))


def test_load_state_dict_assign_and_zero_dim():
    for lib in _libs():
        Lin, _ = make_classes(lib)
        m = Lin(2, 2)
        new_w = lib.zeros(2, 2)
        m.load_state_dict({"weight": new_w, "bias": lib.zeros(2)}, assign=True)
        assert isinstance(m.weight, lib.nn.Parameter) and m.weight.requires_grad
        assert m.weight.data_ptr() == new_w.data_ptr()
        z = lib.nn.Module()
        z.s = lib.nn.Parameter(lib.tensor(1.0))
        z.load_state_dict({"s": lib.tensor([5.0])})
        assert z.s.item() == 5.0


def test_load_state_dict_prefix_hint():
    Lin, _ = make_classes(gt)
    m = Lin(2, 2)
    sd = {"module." + k: v for k, v in m.state_dict().items()}
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    msg = str(info.value)
    assert msg.startswith("Error(s) in loading state_dict for Lin:\n\tMissing key(s)")
    assert "'module.'" in msg and "removeprefix" in msg
    sd = {"_orig_mod." + k: v for k, v in m.state_dict().items()}
    with pytest.raises(RuntimeError, match="torch.compile"):
        m.load_state_dict(sd)


def test_state_dict_hooks_and_extra_state():
    for lib in _libs():
        nn = lib.nn
        calls = []

        class E(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(lib.ones(1))
                self.state = 0

            def get_extra_state(self):
                return {"state": self.state}

            def set_extra_state(self, s):
                self.state = s["state"]

        m = E()
        m.register_state_dict_pre_hook(lambda mod, prefix, keep: calls.append(("pre", prefix)))
        m.register_state_dict_post_hook(
            lambda mod, sd, prefix, meta: calls.append(("post", list(sd))))
        m.register_load_state_dict_post_hook(
            lambda mod, keys: calls.append(("load", list(keys.missing_keys))))
        m.register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, *rest: calls.append(("lpre", type(mod).__name__, prefix)))
        m.state = 7
        sd = m.state_dict()
        assert list(sd) == ["w", "_extra_state"] and sd["_extra_state"] == {"state": 7}
        m.state = 0
        m.load_state_dict(sd)
        assert m.state == 7
        assert calls == [("pre", ""), ("post", ["w", "_extra_state"]), ("lpre", "E", ""),
                         ("load", [])]
        with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
            m.load_state_dict({"w": lib.ones(1)})


# ---- modes, conversion, apply -------------------------------------------------------------

def test_train_eval_requires_grad_zero_grad():
    for lib in _libs():
        _, Net = make_classes(lib)
        m = Net()
        assert m.eval() is m and not m.seq[0].training and not m.training
        assert m.train() is m and m.seq[1].training
        with pytest.raises(ValueError, match="training mode is expected to be boolean"):
            m.train(1)
        m.requires_grad_(False)
        assert not any(p.requires_grad for p in m.parameters())
        m.requires_grad_()
        m(lib.ones(1, 3)).sum().backward()
        assert all(p.grad is not None for p in m.parameters())
        m.zero_grad(set_to_none=False)
        assert all(float(p.grad.abs().sum()) == 0 for p in m.parameters())
        m.zero_grad()
        assert all(p.grad is None for p in m.parameters())


def test_to_and_casts_keep_parameter_identity():
    (_, GNet), (_, TNet), torch = both()
    g, t = GNet(), TNet()
    g.register_buffer("count", gt.zeros(1, dtype=gt.int64))
    t.register_buffer("count", torch.zeros(1, dtype=torch.int64))
    w = g.lin.weight
    g(gt.ones(1, 3)).sum().backward()
    assert g.double() is g and g.lin.weight is w
    t.double()
    assert [str(v.dtype) for v in g.state_dict().values()] == [
        str(v.dtype) for v in t.state_dict().values()]
    assert w.grad.dtype is gt.float64 and w.requires_grad
    assert g.to(gt.float32).lin.weight.dtype is gt.float32
    assert g.half().lin.weight.dtype is gt.float16
    assert g.to("cpu", gt.bfloat16).rb.dtype is gt.bfloat16
    assert g.float().to(gt.ones(1, dtype=gt.float64)).a.dtype is gt.float64
    assert g.count.dtype is gt.int64
    assert g.type(gt.float32).a.dtype is gt.float32 and g.cpu() is g
    err = _err(lambda: g.to(gt.int32))
    assert err == _err(lambda: t.to(torch.int32))


def test_apply_get_submodule_parameter_buffer():
    (_, GNet), (_, TNet), torch = both()
    g, t = GNet(), TNet()
    gnames, tnames = [], []
    g.apply(lambda m: gnames.append(type(m).__name__))
    t.apply(lambda m: tnames.append(type(m).__name__))
    assert gnames == tnames
    assert g.get_submodule("seq.1") is g.seq[1]
    assert g.get_parameter("seq.0.weight") is g.seq[0].weight
    assert g.get_buffer("rb") is g.rb
    for target, fn in [("seq.5", "get_submodule"), ("lin.weight", "get_submodule"),
                       ("lin.nope", "get_parameter"), ("rb", "get_parameter"),
                       ("a", "get_buffer")]:
        assert _err(lambda: getattr(g, fn)(target)) == _err(lambda: getattr(t, fn)(target))


def test_module_repr_matches_torch():
    (_, GNet), (_, TNet), torch = both()
    assert repr(GNet()) == repr(TNet())
    assert repr(gt.nn.Module()) == repr(torch.nn.Module())


def test_deepcopy_and_pickle_module():
    _, Net = make_classes(gt)
    m = Net()
    m2 = copy.deepcopy(m)
    assert m2.lin.weight is not m.lin.weight and isinstance(m2.lin.weight, gt.nn.Parameter)
    assert m2.lin.weight.data_ptr() != m.lin.weight.data_ptr()
    x = gt.ones(2, 3)
    assert_same(m2(x).detach(), m(x).detach().numpy())
    s = gt.nn.Sequential(gt.nn.ParameterList([gt.ones(2)]), gt.nn.Module())
    s[1].register_buffer("tmp", gt.ones(1), persistent=False)
    s[1].w = gt.nn.Parameter(gt.zeros(1))
    s2 = pickle.loads(pickle.dumps(s))
    assert list(s2.state_dict()) == list(s.state_dict()) == ["0.0", "1.w"]
    assert s2[1].tmp.tolist() == [1.0] and "tmp" in s2[1]._non_persistent_buffers_set
    assert isinstance(s2[0][0], gt.nn.Parameter) and s2[0][0].requires_grad


def test_pickle_and_deepcopy_after_backward_leave_autograd_state_behind():
    """A leaf's AccumulateGrad node (held weakly while a graph uses it) is autograd's, not
    data: pickling a trained module works, and a deep copy's gradient is its own."""
    m = gt.nn.Linear(2, 2)
    m(gt.ones(1, 2)).sum().backward()
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.weight.tolist() == m.weight.tolist() and m2.weight.requires_grad
    x = gt.ones(2, requires_grad=True)
    x.label = "kept"
    alive = (x * 2).sum()                   # a graph holding x's accumulator
    y = copy.deepcopy(x)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0] and x.grad is None and y.label == "kept"
    alive.backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ---- forward hooks ------------------------------------------------------------------------

def _hook_trace(lib):
    Lin, _ = make_classes(lib)
    m = Lin(2, 2)
    log = []
    g = lib.nn.modules.module.register_module_forward_pre_hook(
        lambda mod, args: log.append("global_pre"))
    gf = lib.nn.modules.module.register_module_forward_hook(
        lambda mod, args, out: log.append("global_fwd"))
    try:
        m.register_forward_pre_hook(lambda mod, args: log.append("pre_A"))
        m.register_forward_pre_hook(lambda mod, args: log.append("pre_B"), prepend=True)
        m.register_forward_pre_hook(lambda mod, args: args[0] * 2)       # replaces args
        m.register_forward_pre_hook(lambda mod, args, kw: (args, {}), with_kwargs=True)
        h = m.register_forward_hook(lambda mod, args, out: log.append("fwd_A"))
        m.register_forward_hook(lambda mod, args, kw, out: out + 100, with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: log.append(float(out.detach().sum())))
        out = m(lib.ones(1, 2))
        h.remove()
        with m.register_forward_hook(lambda mod, args, out: log.append("ctx")):
            m(lib.ones(1, 2))
        m(lib.ones(1, 2))
    finally:
        g.remove()
        gf.remove()
    return log, to_numpy(out).tolist()


def test_forward_hook_order_and_replacement_match_torch():
    torch = oracle_torch()
    assert _hook_trace(gt) == _hook_trace(torch)


def test_forward_hook_always_call_and_handle_ids():
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn

        class Boom(nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Boom()
        log = []
        h1 = m.register_forward_hook(lambda mod, a, o: log.append(("always", o)),
                                     always_call=True)
        h2 = m.register_forward_hook(lambda mod, a, o: log.append("never"))
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1))
        assert h2.id > h1.id
        return log

    assert run(gt) == run(torch) == [("always", None)]


def test_forward_pre_hook_bad_kwargs_return():
    m = gt.nn.Sequential()
    m.register_forward_pre_hook(lambda mod, a, kw: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(gt.ones(1))


def test_forward_unimplemented():
    torch = oracle_torch()
    assert _err(lambda: gt.nn.Module()(gt.ones(1))) == _err(
        lambda: torch.nn.Module()(torch.ones(1)))


# ---- full backward hooks ------------------------------------------------------------------

def _backward_trace(lib, replace):
    nn = lib.nn

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))

        def forward(self, x, y, scale):
            return x @ self.w * scale, (y * y).sum()

    m = Two()
    log = []

    def pre(mod, grad_out):
        log.append(("pre", [None if g is None else to_numpy(g).tolist() for g in grad_out]))
        if replace:
            return (grad_out[0] * 2, grad_out[1])

    def hook(mod, grad_in, grad_out):
        log.append(("hook", [None if g is None else to_numpy(g).tolist() for g in grad_in],
                    [None if g is None else to_numpy(g).tolist() for g in grad_out]))
        if replace:
            return tuple(None if g is None else g * 10 for g in grad_in)

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(hook)
    x = lib.tensor([[1.0, -1.0]], requires_grad=True)
    y = lib.tensor([0.5, 2.0])           # no grad: its grad_input entry is None
    a, b = m(x, y, 3.0)
    (a.sum() * 2 + b).backward()
    return log, to_numpy(x.grad).tolist(), to_numpy(m.w.grad).tolist(), a.grad_fn.name()


@pytest.mark.parametrize("replace", [False, True])
def test_full_backward_hooks_match_torch(replace):
    torch = oracle_torch()
    assert _backward_trace(gt, replace) == _backward_trace(torch, replace)


def test_full_backward_hook_without_input_grad_warns():
    torch = oracle_torch()

    def run(lib):
        Lin, _ = make_classes(lib)
        m = Lin(2, 2)
        log = []
        m.register_full_backward_hook(
            lambda mod, gi, go: log.append((gi, to_numpy(go[0]).tolist())))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(lib.ones(1, 2)).sum().backward()
        return log, [str(x.message) for x in w]

    assert run(gt) == run(torch)


def test_backward_hook_removal():
    Lin, _ = make_classes(gt)
    m = Lin(2, 2)
    log = []
    h = m.register_full_backward_hook(lambda *a: log.append(1))
    h.remove()
    out = m(gt.ones(1, 2, requires_grad=True))
    assert out.grad_fn.name() == "AddBackward0"
    out.sum().backward()
    assert log == []


# ---- containers ---------------------------------------------------------------------------

def test_sequential_behaviour_matches_torch():
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn
        Lin, _ = make_classes(lib)
        s = nn.Sequential(Lin(2, 3), Lin(3, 3), Lin(3, 1))
        out = [len(s), type(s[1:]).__name__, len(s[::2]), repr(s), s[-1] is s._modules["2"]]
        out.append(to_numpy(s(lib.ones(1, 2))).tolist())
        s.append(nn.Sequential())
        s.insert(1, nn.Module())
        popped = s.pop(1)
        del s[0]
        out += [type(popped).__name__, list(s._modules), repr(s)]
        s.extend([nn.Module()])
        s[0] = nn.Sequential()
        out += [list(s.state_dict()), repr(s), len(s + s), len(s * 2)]
        od = nn.Sequential(OrderedDict([("first", Lin(1, 1)), ("second", nn.Module())]))
        out += [repr(od), list(od.state_dict())]
        out.append(_err(lambda: s[10]))
        out.append(_err(lambda: s.insert(10, nn.Module())))
        out.append(_err(lambda: s + 1))
        return out

    assert run(gt) == run(torch)


def test_module_list_and_dict_match_torch():
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn
        Lin, _ = make_classes(lib)
        ml = nn.ModuleList([Lin(1, 1), nn.Sequential(), nn.Sequential(), Lin(1, 1)])
        out = [repr(ml), repr(nn.ModuleList()), len(ml), type(ml[1:3]).__name__]
        ml.append(Lin(2, 1))
        ml.insert(0, nn.Module())
        ml.extend([nn.Module()])
        del ml[1]
        ml[0] = nn.Sequential()
        out += [list(ml.state_dict()), repr(ml), len(ml + ml), type(ml.pop(0)).__name__]
        out.append(_err(lambda: ml[20]))
        out.append(_err(lambda: ml.extend(3)))
        md = nn.ModuleDict({"b": Lin(1, 1), "a": nn.Module()})
        md["c"] = nn.Sequential()
        md.update([("d", nn.Module())])
        out += [list(md), list(md.keys()), repr(md), "a" in md, len(md),
                type(md.pop("a")).__name__, list(md.state_dict())]
        out.append(_err(lambda: md.update([("x",)])))
        out.append(_err(lambda: md.update(3)))
        return out

    assert run(gt) == run(torch)


def test_parameter_list_and_dict_match_torch():
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn
        pl = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.ones(2, 3, dtype=lib.float64)])
        out = [repr(pl), len(pl), type(pl[1]).__name__, list(pl.state_dict()),
               repr(nn.ParameterList([lib.ones(1)]))]
        pl.append(lib.zeros(1))
        pl.extend([lib.zeros(4)])
        out += [len(pl), len(pl[1:]), [tuple(p.shape) for p in pl], len(list(pl.parameters()))]
        out.append(_err(lambda: pl(1)))
        out.append(_err(lambda: pl.extend(lib.ones(2))))
        pd = nn.ParameterDict({"b": lib.ones(2), "a": nn.Parameter(lib.zeros(1))})
        pd["c"] = lib.ones(3)
        out += [list(pd), repr(pd), list(pd.state_dict()), type(pd["c"]).__name__,
                "a" in pd, len(pd)]
        out += [pd.pop("a").shape == (1,), list(pd.keys()), pd.get("zz", 5),
                list(pd.setdefault("z", lib.ones(1)).shape)]
        pd2 = pd | nn.ParameterDict({"q": lib.ones(1)})
        out += [list(pd2), list(pd.copy()), pd.popitem()[0]]
        out.append(_err(lambda: pd[1]))
        out.append(_err(lambda: pd(1)))
        pd.clear()
        out.append(len(pd))
        return out

    assert run(gt) == run(torch)


def test_container_parameters_train_and_grads():
    (GLin, _), (TLin, _), torch = both()
    g = gt.nn.Sequential(GLin(3, 4), gt.nn.ModuleList([GLin(4, 2)]))
    t = torch.nn.Sequential(TLin(3, 4), torch.nn.ModuleList([TLin(4, 2)]))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    gy = g[1][0](g[0](gt.tensor(x)))
    ty = t[1][0](t[0](torch.tensor(x)))
    assert_same(gy.detach(), ty.detach(), rtol=1e-5, atol=1e-5)
    gy.pow(2).sum().backward()
    ty.pow(2).sum().backward()
    for gp, tp in zip(g.parameters(), t.parameters()):
        assert_same(gp.grad, tp.grad, rtol=1e-5, atol=1e-5)


def test_legacy_backward_hook_matches_torch():
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn

        class Mul(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(lib.tensor([2.0, 3.0]))

            def forward(self, x):
                return x * self.w

        m = Mul()
        log = []
        m.register_backward_hook(lambda mod, gi, go: log.append(
            ([to_numpy(g).tolist() for g in gi if g is not None],
             [to_numpy(g).tolist() for g in go])))
        err = _err(lambda: m.register_full_backward_hook(lambda *a: None))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            (m(lib.tensor([1.0, -1.0], requires_grad=True)) * 5).sum().backward()
        return log, err, [(x.category.__name__, str(x.message)) for x in w]

    assert run(gt) == run(torch)


def test_to_memory_format_and_to_empty():
    torch = oracle_torch()
    for lib in (gt, torch):
        m = lib.nn.Module()
        m.w = lib.nn.Parameter(lib.ones(2, 3, 4, 5))
        m.b = lib.nn.Parameter(lib.ones(3))
        w = m.w
        m.to(memory_format=lib.channels_last)
        assert m.w is w and m.w.stride() == (60, 1, 15, 3) and m.b.stride() == (1,)
        m.to_empty(device="meta")
        assert m.w.device.type == "meta" and m.w.shape == (2, 3, 4, 5)


def test_full_backward_hook_on_dict_output_and_identity():
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn

        class D(nn.Module):
            def forward(self, x):
                return {"a": x * 2}

        class Ident(nn.Module):
            def forward(self, x):
                return x

        log = []
        d = D()
        d.register_full_backward_hook(lambda mod, gi, go: log.append("dict"))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            d(lib.ones(2, requires_grad=True))["a"].sum().backward()
        log.append([str(x.message) for x in w])
        m = Ident()
        m.register_full_backward_hook(
            lambda mod, gi, go: log.append((to_numpy(gi[0]).tolist(), to_numpy(go[0]).tolist())))
        x = lib.ones(2, requires_grad=True)
        (m(x) * 3).sum().backward()
        return log, to_numpy(x.grad).tolist()

    assert run(gt) == run(torch)


def test_global_full_backward_hooks_match_torch():
    torch = oracle_torch()

    def run(lib):
        Lin, _ = make_classes(lib)
        mm = lib.nn.modules.module
        log = []
        h1 = mm.register_module_full_backward_pre_hook(
            lambda mod, go: log.append(("gpre", type(mod).__name__)))
        h2 = mm.register_module_full_backward_hook(
            lambda mod, gi, go: log.append(("ghook", to_numpy(gi[0]).tolist())))
        try:
            m = Lin(2, 2)
            m.register_full_backward_hook(lambda mod, gi, go: log.append("local"))
            m(lib.ones(1, 2, requires_grad=True)).sum().backward()
        finally:
            h1.remove()
            h2.remove()
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()
        return log

    assert run(gt) == run(torch)


def test_state_dict_positional_args_deprecated():
    Lin, _ = make_classes(gt)
    m = Lin(2, 2)
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        sd = m.state_dict(None, "p.")
    assert list(sd) == ["p.weight", "p.bias"]


def test_backward_pre_hook_replacement_without_input_grad():
    torch = oracle_torch()

    def run(lib):
        Lin, _ = make_classes(lib)
        m = Lin(2, 2)
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 7,))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(lib.ones(1, 2)).sum().backward()
        return (to_numpy(m.weight.grad).tolist(), to_numpy(m.bias.grad).tolist(),
                [str(x.message)[:40] for x in w])

    assert run(gt) == run(torch)
