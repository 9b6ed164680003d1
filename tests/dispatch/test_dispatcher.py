"""The dispatcher: key sets, priority, fallthrough, redispatch, thread-local keys, device
checks, generated signatures and schema parsing, against PyTorch where it can be observed."""
from __future__ import annotations

import inspect
import itertools
import re
import threading

import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from glasstorch.dispatch import dispatcher
from glasstorch.dispatch.dispatcher import FALLTHROUGH
from glasstorch.dispatch.keys import (DispatchKey, DispatchKeySet, exclude_keys, include_keys,
                                      local_keys)
from glasstorch.dispatch.schema import parse_schema
from oracle import assert_same, oracle_torch

OUR_KEYS = {k.name for k in DispatchKey}
_ids = itertools.count()


def torch_key_names(keyset) -> set:
    """Key names in a printed torch DispatchKeySet, e.g. 'DispatchKeySet(CPU, AutogradCPU)'."""
    inner = re.fullmatch(r"DispatchKeySet\((.*)\)", str(keyset)).group(1)
    return {k.strip() for k in inner.split(",") if k.strip()}


def fresh_op(schema="(Tensor self, Tensor other) -> Tensor"):
    """A new operator in the test namespace, with no kernels yet."""
    name = f"dispatchtest::op{next(_ids)}"
    return dispatcher.define(name + schema, namespace="dispatchtest")


def recorder(log, label, boxed=True):
    """A kernel that logs its label (and, above the backends, the key set it was given)."""
    if boxed:
        def kernel(op, ks, *args):
            log.append((label, ks))
            return op.redispatch(ks, *args)
    else:
        def kernel(*args):
            log.append((label, None))
            return label
    return kernel


# ---- key sets --------------------------------------------------------------------------

@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_tensor_keysets_match_torch_on_shared_keys(device):
    # glasstorch's tensors carry their Autograd key only while they require grad (so plain
    # calls skip the Autograd layer); with requires_grad the sets agree with PyTorch's.
    torch = oracle_torch()
    theirs = torch_key_names(torch._C._dispatch_keys(torch.ones(2, device=device)))
    grad = {k.name for k in DispatchKeySet(gt.ones(2, device=device).requires_grad_()._keyset)}
    plain = {k.name for k in DispatchKeySet(gt.ones(2, device=device)._keyset)}
    assert grad == theirs & OUR_KEYS
    assert plain == {k for k in grad if not k.startswith("Autograd")}
    assert theirs & OUR_KEYS, "no keys in common: the comparison would be empty"


def test_requires_grad_toggles_the_autograd_key():
    t = gt.ones(2)
    assert not DispatchKeySet(t._keyset).has(DispatchKey.AutogradCPU)
    t.requires_grad_()
    assert DispatchKeySet(t._keyset).has(DispatchKey.AutogradCPU)
    assert DispatchKeySet((t * 2)._keyset).has(DispatchKey.AutogradCPU)   # recorded output
    t.requires_grad_(False)
    assert not DispatchKeySet(t._keyset).has(DispatchKey.AutogradCPU)


def test_thread_local_excluded_keys_match_torch_on_shared_keys():
    torch = oracle_torch()
    theirs = torch_key_names(torch._C._dispatch_tls_local_exclude_set()) & OUR_KEYS
    included, excluded = gt.debug.local_keyset()
    assert {k.name for k in excluded} == theirs
    assert isinstance(included, DispatchKeySet)


def test_keyset_prints_like_torch():
    torch = oracle_torch()
    ks = DispatchKeySet(gt.ones(1, device="meta").requires_grad_()._keyset)
    assert repr(ks) == str(torch._C._dispatch_keys(torch.ones(1, device="meta")))
    assert ks.has(DispatchKey.Meta) and not ks.has(DispatchKey.CPU)
    assert ks.highest() == DispatchKey.AutogradMeta
    assert ks.remove(DispatchKey.AutogradMeta).highest() == DispatchKey.ADInplaceOrView
    assert DispatchKeySet().highest() is None and repr(DispatchKeySet()) == "DispatchKeySet()"


def test_priority_order_follows_torch():
    # PyTorch's functionality order, lowest to highest (reference section 6.1), restricted
    # to the keys glasstorch has; backends are the lowest functionality (Dense).
    order = ["BackendSelect", "ADInplaceOrView", "AutogradCPU", "AutocastCPU", "AutocastCUDA"]
    values = [DispatchKey[k] for k in order]
    assert values == sorted(values)
    for backend in (DispatchKey.Meta, DispatchKey.CPU, DispatchKey.CUDA):
        assert backend < DispatchKey.BackendSelect
    for autograd in ("AutogradMeta", "AutogradCPU", "AutogradCUDA"):
        assert DispatchKey.ADInplaceOrView < DispatchKey[autograd] < DispatchKey.AutocastCPU


# ---- kernel selection ------------------------------------------------------------------

def test_highest_key_wins_and_redispatch_passes_only_lower_keys():
    op, log = fresh_op(), []
    op.register(DispatchKey.CPU, recorder(log, "CPU", boxed=False))
    op.register(DispatchKey.ADInplaceOrView, recorder(log, "ADInplaceOrView"))
    op.register(DispatchKey.AutogradCPU, recorder(log, "AutogradCPU"))
    x = gt.ones(2, requires_grad=True)
    assert op(x, x) == "CPU"
    assert [label for label, _ in log] == ["AutogradCPU", "ADInplaceOrView", "CPU"]
    for label, ks in log[:2]:
        assert ks < 1 << DispatchKey[label], f"{label} was handed its own or higher keys"
    assert DispatchKeySet(log[0][1]).has(DispatchKey.ADInplaceOrView)
    assert not DispatchKeySet(log[1][1]).has(DispatchKey.ADInplaceOrView)


def test_fallthrough_kernel_is_skipped():
    op, log = fresh_op(), []
    op.register(DispatchKey.CPU, recorder(log, "CPU", boxed=False))
    op.register(DispatchKey.ADInplaceOrView, FALLTHROUGH)
    assert not op.has_kernel_for(DispatchKey.ADInplaceOrView)
    assert op(gt.ones(1), gt.ones(1)) == "CPU"
    assert log == [("CPU", None)]


def test_fallback_serves_every_operator_and_a_fallthrough_fallback_is_skipped():
    op, log = fresh_op(), []
    op.register(DispatchKey.CPU, recorder(log, "CPU", boxed=False))
    key = DispatchKey.BackendSelect       # a key no kernel uses
    saved = dispatcher._fallbacks.get(key)
    try:
        dispatcher.register_fallback(key, recorder(log, "fallback"))
        with include_keys(1 << key):
            assert op(gt.ones(1), gt.ones(1)) == "CPU"
        assert [label for label, _ in log] == ["fallback", "CPU"]
        log.clear()
        dispatcher.register_fallback(key, FALLTHROUGH)
        with include_keys(1 << key):
            assert op(gt.ones(1), gt.ones(1)) == "CPU"
        assert log == [("CPU", None)]
    finally:
        dispatcher.register_fallback(key, saved)
    assert not op.has_kernel_for(key)


def test_composite_explicit_fills_backends_but_a_direct_kernel_wins():
    op = fresh_op()
    op.register("CompositeExplicitAutograd", lambda a, b: "composite")
    op.register(DispatchKey.CPU, lambda a, b: "cpu")
    assert op(gt.ones(1), gt.ones(1)) == "cpu"
    assert op(gt.ones(1, device="meta"), gt.ones(1, device="meta")) == "composite"


def test_composite_implicit_covers_autograd_keys_only_without_a_backend_kernel():
    op = fresh_op()
    op.register("CompositeImplicitAutograd", lambda a, b: "decomposed")
    assert op.has_kernel_for(DispatchKey.AutogradCPU)
    x = gt.ones(1, requires_grad=True)
    assert op(x, x) == "decomposed"
    op.register(DispatchKey.CPU, lambda a, b: "cpu")
    # the autograd key now has the generic Autograd kernel, which runs the CPU kernel
    assert op(gt.ones(1), gt.ones(1)) == "cpu"
    m = gt.ones(1, device="meta", requires_grad=True)
    assert op(m, m) == "decomposed"


def test_unknown_key_name_is_rejected():
    with pytest.raises(ValueError, match="unknown dispatch key 'CPUU'"):
        fresh_op().register("CPUU", lambda *a: None)


def test_missing_backend_kernel_raises_not_implemented_naming_the_backend():
    op = fresh_op()
    op.register(DispatchKey.CPU, lambda a, b: a)
    with pytest.raises(NotImplementedError,
                       match=rf"Could not run '{op.name}' with arguments from the 'Meta' "
                             r"backend.*only available for these backends: \[CPU[,\]]"):
        op(gt.ones(1, device="meta"), gt.ones(1, device="meta"))


def test_dump_lists_each_key_with_its_kernel_and_source():
    op = fresh_op()
    op.register("CompositeExplicitAutograd", lambda a, b: a)
    op.register(DispatchKey.ADInplaceOrView, FALLTHROUGH)
    text = op.dump()
    assert text.splitlines()[0] == f"name: {op.name}"
    assert re.search(r"^CPU: \S*<lambda> \[test_dispatcher\] \(CompositeExplicitAutograd\)$", text,
                     re.M)
    assert "ADInplaceOrView: fallthrough" in text


# ---- thread-local keys -----------------------------------------------------------------

def test_include_and_exclude_guards_nest_and_restore():
    before = (local_keys.included, local_keys.excluded)
    with exclude_keys(1 << DispatchKey.ADInplaceOrView):
        assert gt.debug.local_keyset().excluded.has(DispatchKey.ADInplaceOrView)
        with include_keys(1 << DispatchKey.ADInplaceOrView):
            inc, exc = gt.debug.local_keyset()
            assert inc.has(DispatchKey.ADInplaceOrView)
            assert not exc.has(DispatchKey.ADInplaceOrView)
        assert gt.debug.local_keyset().excluded.has(DispatchKey.ADInplaceOrView)
    assert (local_keys.included, local_keys.excluded) == before


def test_excluded_key_is_skipped_in_this_thread_only():
    op = fresh_op()
    op.register(DispatchKey.CPU, lambda a, b: "CPU")
    op.register(DispatchKey.ADInplaceOrView, lambda o, ks, a, b: "ADInplaceOrView")
    x = gt.ones(1)
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def other_thread():
        entered.wait(5)
        seen["excluded"] = gt.debug.local_keyset().excluded
        seen["result"] = op(x, x)
        release.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    with exclude_keys(1 << DispatchKey.ADInplaceOrView):
        entered.set()
        assert release.wait(5)
        assert op(x, x) == "CPU"
    worker.join(5)
    assert seen["result"] == "ADInplaceOrView"
    assert not seen["excluded"].has(DispatchKey.ADInplaceOrView)
    assert op(x, x) == "ADInplaceOrView"


# ---- devices ---------------------------------------------------------------------------

def test_mixed_devices_raise_the_same_device_error_naming_the_op():
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*"
                                           r"meta.*cpu.*aten::add\.Tensor"):
        gt.add(gt.ones(2), gt.ones(2, device="meta"))


def test_mixed_device_error_leaves_inputs_unchanged():
    x = gt.ones(2)
    version = x._vc.version
    with pytest.raises(RuntimeError, match="same device"):
        x.add_(gt.ones(2, device="meta"))
    assert x._vc.version == version
    assert_same(x, [1.0, 1.0])


def test_cpu_zero_dim_tensor_joins_another_device_like_torch():
    torch = oracle_torch()
    expected = torch.ones(2, 3, device="meta") + torch.tensor(2.0)
    out = gt.ones(2, 3, device="meta") + gt.tensor(2.0)
    assert out.device.type == expected.device.type == "meta"
    assert tuple(out.shape) == tuple(expected.shape) and out.stride() == expected.stride()


def test_cpu_zero_dim_tensors_only_stay_on_cpu():
    out = gt.tensor(1.0) + gt.tensor(2.0)
    assert out.device.type == "cpu"


# ---- generated functions ---------------------------------------------------------------

def _torch_signature_line(fn) -> str:
    """'add(input, other, *, alpha=1, out=None)' from a torch builtin's docstring."""
    first = next(line for line in fn.__doc__.strip().splitlines() if line.strip())
    return first.split(" -> ")[0].strip()


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_generated_signature_matches_torch_docstring(name):
    torch = oracle_torch()
    ours = f"{name}{inspect.signature(getattr(gt, name))}"
    assert ours == _torch_signature_line(getattr(torch, name))


def test_add_signature_exactly():
    sig = inspect.signature(gt.add)
    assert str(sig) == "(input, other, *, alpha=1, out=None)"
    assert sig.parameters["alpha"].kind is inspect.Parameter.KEYWORD_ONLY


def test_generated_functions_and_methods_have_docstrings():
    for fn in (gt.add, gt.mul, gt.Tensor.add, gt.Tensor.add_, gt.Tensor.view):
        assert fn.__doc__ and fn.__doc__.strip()


def test_operator_call_binds_keywords_and_fills_defaults():
    op = fresh_op("(Tensor self, int n=2, *, float scale=1.0) -> Tensor")
    got = []
    op.register(DispatchKey.CPU, lambda *args: got.append(args[1:]))
    x = gt.ones(1)
    op(x)
    op(x, 3)
    op(x, scale=0.5, n=4)
    op(self=x)
    assert got == [(2, 1.0), (3, 1.0), (4, 0.5), (2, 1.0)]


def test_operator_call_with_trailing_defaults_wraps_an_int_given_for_an_int_list():
    op = fresh_op("(Tensor self, int[1] dim, bool keepdim=False, int[1] pad=0) -> Tensor")
    got = []
    op.register(DispatchKey.CPU, lambda *args: got.append(args[1:]))
    x = gt.ones(1)
    op(x, 1)
    op(x, [0, 1], True)
    assert got == [((1,), False, (0,)), ([0, 1], True, (0,))]
    out = fresh_op("(Tensor self, int n=2, *, Tensor(a!) out) -> Tensor(a!)")
    out.register(DispatchKey.CPU, lambda *args: None)
    with pytest.raises(RuntimeError, match="missing value for argument 'out'"):
        out(x, 3)


@pytest.mark.parametrize("call, message", [
    (lambda op, x: op(x, 1, 2, 3), r"expected at most 3 argument\(s\) but received 4"),
    (lambda op, x: op(), "missing value for argument 'self'"),
    (lambda op, x: op(x, m=1), "Unknown keyword argument 'm'"),
    (lambda op, x: op(x, 1, n=2), "multiple values for argument 'n'"),
])
def test_operator_call_argument_errors_name_the_op(call, message):
    op = fresh_op("(Tensor self, int n=2, *, float scale=1.0) -> Tensor")
    op.register(DispatchKey.CPU, lambda *args: None)
    with pytest.raises(RuntimeError, match=message) as info:
        call(op, gt.ones(1))
    assert op.name in str(info.value)


def test_ops_namespace_passes_keywords():
    x = gt.ones(3)
    assert_same(gt.ops.aten.add.Tensor(x, x, alpha=3), [4.0, 4.0, 4.0])
    assert_same(gt.ops.aten.add(x, other=x), [2.0, 2.0, 2.0])


# ---- schemas ---------------------------------------------------------------------------

_UNSUPPORTED = re.compile(r"\.\.\.|\||\bt\d?\b|\?\[\]|\]\(|\bAny\b|Dict|Future|RRef|Await|Union|"
                          r"-> \*|__torch__|\\")


def test_parser_agrees_with_torch_on_every_plain_aten_schema():
    torch = oracle_torch()
    checked = 0
    for s in torch._C._jit_get_all_schemas():
        text = str(s)
        if not s.name.startswith("aten::") or _UNSUPPORTED.search(text):
            continue
        ours = parse_schema(text)
        checked += 1
        assert (ours.namespace, ours.name, ours.overload) == (
            "aten", s.name[len("aten::"):], s.overload_name), text
        assert [a.name for a in ours.arguments] == [a.name for a in s.arguments], text
        assert [a.kwarg_only for a in ours.arguments] == [a.kwarg_only for a in s.arguments]
        assert [a.is_mutated for a in ours.arguments] == [
            bool(a.alias_info and a.alias_info.is_write) for a in s.arguments], text
        assert [a.has_default for a in ours.arguments] == [
            a.has_default_value() for a in s.arguments], text
        for a, b in zip(ours.arguments, s.arguments):
            dv = b.default_value
            if b.has_default_value() and (dv is None or isinstance(dv, (bool, int, float, str,
                                                                          list))):
                assert a.default == (tuple(dv) if isinstance(dv, list) else dv), (text, a.name)
        assert len(ours.returns) == len(s.returns), text
    assert checked > 3000


_TYPES = ["Tensor", "Tensor?", "Tensor[]", "int", "int?", "int[]", "SymInt[]", "float",
          "float?", "bool", "Scalar", "str", "ScalarType?"]
_DEFAULTS = {"int": st.integers(-9, 9), "int?": st.none(), "float": st.sampled_from([0.5, -2.0]),
             "float?": st.none(), "bool": st.booleans(), "Scalar": st.integers(0, 3),
             "str": st.sampled_from(["mean", "sum"]), "ScalarType?": st.none(),
             "Tensor?": st.none(), "int[]": st.lists(st.integers(0, 4), max_size=3)}
_names = st.sampled_from(["x", "self", "other", "alpha", "dim", "keepdim", "out2", "a_b",
                          "n", "scale", "weight", "bias"])


@st.composite
def schemas(draw):
    n = draw(st.integers(0, 6))
    names = draw(st.lists(_names, min_size=n, max_size=n, unique=True))
    args, defaulted = [], False
    for name in names:
        type_ = draw(st.sampled_from(_TYPES))
        default = None
        if type_ in _DEFAULTS and (defaulted or draw(st.booleans())):
            default = draw(_DEFAULTS[type_])
            defaulted = True
        elif defaulted:
            type_, default = "bool", draw(st.booleans())
        args.append((type_, name, default if type_ in _DEFAULTS else None,
                     defaulted and type_ in _DEFAULTS))
    star = draw(st.integers(0, len(args)))
    returns = draw(st.sampled_from(["Tensor", "()", "(Tensor, Tensor)", "Tensor[]", "int"]))
    overload = draw(st.sampled_from(["", "Tensor", "out"]))
    return draw(_names), overload, args, star, returns


def _format(name, overload, args, star, returns):
    parts = []
    for i, (type_, arg, default, has_default) in enumerate(args):
        if i == star:
            parts.append("*")
        if has_default:
            value = ("[" + ", ".join(map(str, default)) + "]" if isinstance(default, list)
                     else f"'{default}'" if isinstance(default, str) else str(default))
            parts.append(f"{type_} {arg}={value}")
        else:
            parts.append(f"{type_} {arg}")
    head = f"{name}.{overload}" if overload else name
    return f"{head}({', '.join(parts)}) -> {returns}"


@settings(max_examples=30, deadline=None)
@given(schemas())
def test_schema_round_trip(spec):
    name, overload, args, star, returns = spec
    text = _format(*spec)
    schema = parse_schema(text)
    assert str(schema) == f"aten::{text}"         # printed qualified, as PyTorch prints it
    assert str(parse_schema(f"mylib::{text}")) == f"mylib::{text}"
    assert (schema.name, schema.overload) == (name, overload)
    assert [a.name for a in schema.arguments] == [a[1] for a in args]
    assert [a.type for a in schema.arguments] == [a[0] for a in args]
    assert [a.kwarg_only for a in schema.arguments] == [i >= star for i in range(len(args))]
    for a, (_, _, default, has_default) in zip(schema.arguments, args):
        assert a.has_default == has_default
        if has_default:
            assert a.default == (tuple(default) if isinstance(default, list) else default)
    assert len(schema.returns) == {"()": 0, "(Tensor, Tensor)": 2}.get(returns, 1)
    again = parse_schema(text)
    assert again == schema


def test_fixed_size_list_default_repeats_like_torch():
    schema = parse_schema("pool(Tensor self, int[2] padding=0, int[3] dilation=[1, 1, 1]) -> "
                          "Tensor")
    assert schema.arguments[1].default == (0, 0)
    assert schema.arguments[2].default == (1, 1, 1)


def test_generated_wrappers_show_their_source():
    """The functions generated from each declaration are registered with linecache:
    inspect.getsource shows them, and a traceback through one shows its line."""
    import inspect
    import traceback
    source = inspect.getsource(gt.add)
    assert source.startswith("def add(input, other, *, alpha=1, out=None):")
    assert "_op.dispatch(" in source
    assert inspect.getsource(gt.Tensor.add).startswith("def add(self, other, *, alpha=1):")
    try:
        gt.add(gt.ones(2), gt.ones(3))
    except RuntimeError as e:
        frames = traceback.format_tb(e.__traceback__)
    assert any("<glasstorch.ops add aten::add.Tensor>" in f and "return _kernel(" in f
               for f in frames)            # plain CPU tensors: the CPU kernel, called directly


def test_op_overload_lookups_are_cached_until_the_op_is_undefined():
    """torch.ops.<ns>.<op>.<overload> is found once, then read as a plain attribute (the
    same object each time); undefining the op drops the cached attributes."""
    lib = gt.library.Library("cachedlookup", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    overload = gt.ops.cachedlookup.twice.default
    assert gt.ops.cachedlookup.twice.default is overload
    assert "twice" in vars(gt.ops.cachedlookup)
    assert "default" in vars(gt.ops.cachedlookup.twice)
    assert overload(gt.ones(2)).tolist() == [2.0, 2.0]
    lib._destroy()
    with pytest.raises(AttributeError, match="has no attribute 'twice'"):
        gt.ops.cachedlookup.twice
