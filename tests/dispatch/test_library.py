"""glasstorch.library against torch.library: each conformance test runs the same code with
both libraries (`T` is glasstorch or torch) and checks values, error types and messages."""

import itertools
import uuid
import warnings
from typing import Optional

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.dispatch.keys import DispatchKey, include_keys
from oracle import assert_same, oracle_torch, to_numpy

_RUN = uuid.uuid4().hex[:6]     # torch keeps namespaces alive: never reuse one
_ids = itertools.count()


def fresh_ns() -> str:
    return f"libtest{_RUN}_{next(_ids)}"


@pytest.fixture
def lib(T):
    """A DEF library in a new namespace, undone after the test (torch too)."""
    with T.library._scoped_library(fresh_ns(), "DEF") as library:
        yield library


@pytest.fixture
def custom_ops(T):
    """Names for custom ops; their registrations are undone after the test."""
    made = []

    def name(base="op"):
        qualname = f"{fresh_ns()}::{base}"
        made.append(qualname)
        return qualname
    yield name
    for qualname in made:
        opdef = T.library._custom_ops.get(qualname) if T is gt else None
        if opdef is not None:
            opdef._lib._destroy()


def ops(T, lib):
    return getattr(T.ops, lib.ns)


# ---- Library: define / impl ------------------------------------------------------------

def test_define_returns_the_name_and_the_op_is_reachable(T, lib):
    assert lib.define("twice(Tensor x) -> Tensor") == "twice"
    assert lib.define("twice.scaled(Tensor x, float s) -> Tensor") == "twice"
    lib.impl("twice", lambda x: x * 2, "CPU")
    lib.impl("twice.scaled", lambda x, s: x * (2 * s), "CPU")
    x = T.ones(3)
    for out, expected in ((ops(T, lib).twice(x), 2.0), (ops(T, lib).twice.default(x), 2.0),
                          (ops(T, lib).twice.scaled(x, 1.5), 3.0)):
        np.testing.assert_allclose(to_numpy(out), np.full(3, expected, np.float32))


def test_keyword_arguments_and_defaults_reach_the_kernel(T, lib):
    lib.define("scale(Tensor x, int n=3, *, float s=1.0) -> Tensor")
    seen = []

    def kernel(x, n, *, s):
        seen.append((n, s))
        return x * n * s
    lib.impl("scale", kernel, "CPU")
    x = T.ones(2)
    op = ops(T, lib).scale
    np.testing.assert_allclose(to_numpy(op(x, n=2, s=0.5)), [1.0, 1.0])
    np.testing.assert_allclose(to_numpy(op(x, 4, s=2.0)), [8.0, 8.0])
    assert seen == [(2, 0.5), (4, 2.0)]


def test_glasstorch_kernels_get_every_argument_defaults_filled():
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("scale(Tensor x, int n=3, *, float s=1.0) -> Tensor")
        seen = []
        lib.impl("scale", lambda *args: seen.append(args[1:]) or args[0], "CPU")
        ops(gt, lib).scale(gt.ones(1))
        ops(gt, lib).scale(gt.ones(1), s=0.5)
        assert seen == [(3, 1.0), (3, 0.5)]


@pytest.mark.parametrize("call, message", [
    (lambda op, x: op(x, 1, 2, 3), r"expected at most 3 argument\(s\) but received 4"),
    (lambda op, x: op(x, m=2), "Unknown keyword argument 'm'"),
    (lambda op, x: op(), "missing value for argument 'x'"),
])
def test_bad_calls_raise_runtime_errors_like_torch(T, lib, call, message):
    lib.define("scale(Tensor x, int n=3, *, float s=1.0) -> Tensor")
    lib.impl("scale", lambda x, n=3, s=1.0: x * n, "CPU")
    with pytest.raises(RuntimeError, match=message):
        call(ops(T, lib).scale, T.ones(1))


def test_redefining_an_op_raises(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="same name and overload name multiple times"):
        lib.define("twice(Tensor x) -> Tensor")


@pytest.mark.parametrize("schema", ["bad(Tensor x -> Tensor", "bad(Tensr x) -> Tensor",
                                    "bad(x) -> Tensor", "bad(Tensor x) -> Tensr"])
def test_bad_schemas_raise_runtime_errors(T, lib, schema):
    with pytest.raises(RuntimeError):
        lib.define(schema)


def test_bad_schema_messages_say_what_is_wrong():
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        with pytest.raises(RuntimeError, match="unknown type 'Tensr' for argument 'x'"):
            lib.define("bad(Tensr x) -> Tensor")
        with pytest.raises(RuntimeError, match="argument 'x' appears twice"):
            lib.define("bad(Tensor x, int x) -> Tensor")
        with pytest.raises(RuntimeError, match="does not match namespace"):
            lib.define("other::bad(Tensor x) -> Tensor")


def test_one_def_library_per_namespace_and_impl_libraries_cannot_define(T, lib):
    with pytest.raises(RuntimeError, match="single"):
        T.library.Library(lib.ns, "DEF")
    impl_lib = T.library.Library(lib.ns, "IMPL")
    with pytest.raises(RuntimeError, match="Cannot define an operator inside of"):
        impl_lib.define("x3(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="Unsupported kind"):
        T.library.Library(lib.ns, "DEFINE")


def test_unknown_dispatch_key_is_rejected(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="could not parse dispatch key: Bogus"):
        lib.impl("twice", lambda x: x, "Bogus")


def test_meta_call_without_fake_impl_raises_not_implemented(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    with pytest.raises(NotImplementedError, match=rf"{lib.ns}::twice: attempted to run this "
                       "operator with Meta tensors, but there was no fake impl or Meta kernel "
                       "registered"):
        ops(T, lib).twice(T.ones(2, device="meta"))


def test_missing_backend_kernel_raises_could_not_run():
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x, "Meta")
        with pytest.raises(NotImplementedError, match=rf"Could not run '{lib.ns}::twice' with "
                                                      "arguments from the 'CPU' backend"):
            ops(gt, lib).twice(gt.ones(1))


def test_meta_kernel_and_explicit_composite_run_on_meta(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: T.empty_like(x), "Meta")
    out = ops(T, lib).twice(T.ones(2, 3, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3)
    lib.define("thrice(Tensor x) -> Tensor")
    lib.impl("thrice", lambda x: x * 3, "CompositeExplicitAutograd")
    out = ops(T, lib).thrice(T.ones(4, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (4,)
    np.testing.assert_allclose(to_numpy(ops(T, lib).thrice(T.ones(2))), [3.0, 3.0])


def test_implicit_composite_is_the_default_and_runs_everywhere(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2)
    np.testing.assert_allclose(to_numpy(ops(T, lib).twice(T.ones(2))), [2.0, 2.0])
    out = ops(T, lib).twice(T.ones(5, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (5,)
    with pytest.raises(RuntimeError, match="CompositeImplicitAutograd"):
        lib.impl("twice", lambda x: x, "Meta")


def test_a_backend_kernel_beats_the_implicit_composite(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2)
    lib.impl("twice", lambda x: x * 5, "CPU")
    np.testing.assert_allclose(to_numpy(ops(T, lib).twice(T.ones(2))), [5.0, 5.0])


def test_implicit_composite_decomposes_in_the_dispatch_trace():
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2)
        with gt.debug.dispatch_trace() as trace:
            ops(gt, lib).twice(gt.ones(2, requires_grad=True))
            ops(gt, lib).twice(gt.ones(2))
        first, second = [e for e in trace.events if e.op == f"{lib.ns}::twice"]
        assert first.keys == [DispatchKey.AutogradCPU]     # decomposed above autograd
        assert [c.op for c in first.children] == ["aten::mul.Tensor"]
        assert second.keys == [DispatchKey.CPU]


def test_overriding_a_kernel_warns_and_takes_effect(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    with pytest.warns(UserWarning):
        lib.impl("twice", lambda x: x * 3, "CPU")
    np.testing.assert_allclose(to_numpy(ops(T, lib).twice(T.ones(1))), [3.0])
    with pytest.raises(RuntimeError, match="not allowed"):
        lib.impl("twice", lambda x: x * 4, "CPU", allow_override=False)


def test_impl_needs_a_callable(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    with pytest.raises(TypeError, match="callable"):
        lib.impl("twice", 3, "CPU")


def test_impl_of_an_undefined_op_raises_in_glasstorch():
    # PyTorch accepts it silently and waits for a definition; a typo then goes unnoticed.
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        with pytest.raises(RuntimeError, match="no operator with this name is defined"):
            lib.impl("nonexistent", lambda x: x, "CPU")


def test_with_keyset_kernel_redispatches_below_itself(T, lib):
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    seen = []

    def inplace_or_view(keyset, x):
        seen.append(keyset)
        return ops(T, lib).twice.default.redispatch(
            keyset.remove(T._C.DispatchKey.ADInplaceOrView) if T is not gt else keyset, x)
    lib.impl("twice", inplace_or_view, "ADInplaceOrView", with_keyset=True)
    np.testing.assert_allclose(to_numpy(ops(T, lib).twice(T.ones(2))), [2.0, 2.0])
    assert len(seen) == 1
    if T is gt:
        assert seen[0].highest() == DispatchKey.CPU


def test_with_keyset_on_a_backend_key_is_refused():
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        with pytest.raises(ValueError, match="above the backends"):
            lib.impl("twice", lambda ks, x: x, "CPU", with_keyset=True)


def test_fallthrough_kernel_skips_the_key():
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("twice(Tensor(a!) x) -> Tensor(a!)")
        lib.impl("twice", lambda x: x, "CPU")
        op = ops(gt, lib).twice.default
        assert op.has_kernel_for(DispatchKey.ADInplaceOrView)      # mutation: version bump
        with pytest.warns(UserWarning, match="Overriding"):
            lib.impl("twice", gt.library.fallthrough_kernel, "ADInplaceOrView")
        assert not op.has_kernel_for(DispatchKey.ADInplaceOrView)
        x = gt.ones(1)
        op(x)
        assert x._version == 0


def test_mutated_arguments_get_their_version_bumped():
    # PyTorch bumps versions only for custom_op; glasstorch does it for every schema that
    # marks an argument mutated, so autograd's in-place checks see the change.
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("fill_twos(Tensor(a!) x, Tensor y) -> ()")
        lib.impl("fill_twos", lambda x, y: None, "CPU")
        x, y = gt.ones(2), gt.ones(2)
        ops(gt, lib).fill_twos(x, y)
        assert (x._version, y._version) == (1, 0)


def test_autograd_kernels_are_stored_not_run():
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        ran = []
        autograd = lambda x: ran.append(x)                          # noqa: E731
        lib.impl("twice", autograd, "Autograd")
        op = ops(gt, lib).twice.default
        assert op.info["autograd_kernels"]["Autograd"] == (autograd, False)
        assert op.table[DispatchKey.AutogradCPU] is not autograd   # the generic kernel
        assert_same(op(gt.ones(2, requires_grad=True)), [2.0, 2.0])
        assert ran == []
    assert "Autograd" not in op.info["autograd_kernels"]


def test_fallback_only_on_the_global_namespace(T, lib):
    with pytest.raises(RuntimeError, match='global namespace "_"'):
        T.library.Library(lib.ns, "FRAGMENT").fallback(lambda op, *a: None, "AutocastCPU")


def test_fallback_serves_every_op_and_is_undone():
    calls = []

    def fallback(keyset, op, *args):
        calls.append(op.name)
        return op.redispatch(keyset, *args)
    with gt.library._scoped_library(fresh_ns(), "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        with gt.library._scoped_library("_", "IMPL") as root:
            root.fallback(fallback, "Python", with_keyset=True)
            with pytest.raises(RuntimeError, match="keys above them"):
                root.fallback(fallback, "CPU")
            x = gt.ones(2)          # a factory is an op too: made before the key is on
            with include_keys(1 << DispatchKey.Python):
                assert_same(ops(gt, lib).twice(x), [2.0, 2.0])
        assert calls[0] == f"{lib.ns}::twice" and "aten::mul.Tensor" in calls
        calls.clear()
        with include_keys(1 << DispatchKey.Python):
            ops(gt, lib).twice(gt.ones(2))
        assert calls == []


def test_destroy_forgets_ops_and_frees_the_namespace():
    ns = fresh_ns()
    with gt.library._scoped_library(ns, "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        assert getattr(gt.ops, ns).twice
    with pytest.raises(AttributeError):
        getattr(gt.ops, ns).twice
    gt.library.Library(ns, "DEF")._destroy()


def test_overriding_an_aten_kernel_is_undone_with_the_library():
    x = gt.ones(2)
    with gt.library._scoped_library("aten", "IMPL") as lib:
        with pytest.warns(UserWarning, match="Overriding"):
            lib.impl("mul.Tensor", lambda a, b: gt.zeros(2), "CPU")
        assert_same(x * x, [0.0, 0.0])
    assert_same(x * x, [1.0, 1.0])


# ---- the function API ------------------------------------------------------------------

def test_define_impl_and_register_fake_functions(T):
    ns = fresh_ns()
    lib = T.library.Library(ns, "FRAGMENT")
    try:
        T.library.define(f"{ns}::sin", "(Tensor x) -> Tensor", lib=lib)

        @T.library.impl(f"{ns}::sin", "cpu", lib=lib)
        def _(x):
            return x * 2

        @T.library.register_fake(f"{ns}::sin", lib=lib)
        def _(x):
            return T.empty_like(x)
        op = getattr(T.ops, ns).sin
        np.testing.assert_allclose(to_numpy(op(T.ones(2))), [2.0, 2.0])
        assert tuple(op(T.ones(3, device="meta")).shape) == (3,)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # overriding: torch warns only once
            T.library.register_kernel(f"{ns}::sin", "cpu", lambda x: x * 4, lib=lib)
        np.testing.assert_allclose(to_numpy(op(T.ones(1))), [4.0])
    finally:
        lib._destroy()


def test_define_function_checks_its_arguments(T):
    with pytest.raises(ValueError, match="expected schema"):
        T.library.define(f"{fresh_ns()}::sin", "sin(Tensor x) -> Tensor")
    with pytest.raises(ValueError):
        T.library.define("nonamespace", "(Tensor x) -> Tensor")


# ---- custom_op -------------------------------------------------------------------------

def _signature_suite(T):
    """Functions with the annotations schema inference supports, in T's types."""
    Tensor = T.Tensor

    def one(x: Tensor) -> Tensor: ...

    def many(x: Tensor, ts: list[Tensor], n: int, o: Optional[Tensor] = None,
             so: Optional[int] = None, s: float = 2.0, b: bool = False,
             l: Optional[list[int]] = None, name: str = "mean") -> tuple[Tensor, Tensor]: ...

    def kwonly(x: Tensor, *, k: int = 3, fs: list[float]) -> list[Tensor]: ...

    def scalar(x: Tensor, v: int | float | bool, w: Optional[int | float | bool] = None) -> int:
        ...

    def mutating(x: Tensor, y: Tensor) -> None: ...
    return [(one, ()), (many, ()), (kwonly, ()), (scalar, ()), (mutating, ("y",)),
            (mutating, "unknown")]


@pytest.mark.parametrize("index", range(6))
def test_infer_schema_matches_torch(index):
    torch = oracle_torch()
    fn, mutates = _signature_suite(gt)[index]
    torch_fn, _ = _signature_suite(torch)[index]
    assert gt.library.infer_schema(fn, mutates_args=mutates) == \
        torch.library.infer_schema(torch_fn, mutates_args=mutates)


def _bad_functions(T):
    Tensor = T.Tensor

    def unannotated(x): ...

    def bad_return(x: Tensor) -> str: ...

    def varargs(x: Tensor, *args) -> Tensor: ...

    def bad_param(x: Tensor, y: dict) -> Tensor: ...

    def tuple_default(x: Tensor, l: list[int] = (1, 2)) -> Tensor: ...
    return [unannotated, bad_return, varargs, bad_param, tuple_default]


@pytest.mark.parametrize("index", range(5))
def test_infer_schema_rejects_what_torch_rejects(T, index):
    with pytest.raises(ValueError, match=r"^infer_schema\(func\): "):
        T.library.infer_schema(_bad_functions(T)[index], mutates_args=())


def test_infer_schema_checks_mutates_args(T):
    def f(x: T.Tensor, n: int) -> None: ...
    with pytest.raises(ValueError, match="were not found"):
        T.library.infer_schema(f, mutates_args=("z",))
    with pytest.raises(ValueError, match="only Tensors"):
        T.library.infer_schema(f, mutates_args=("n",))
    with pytest.raises(ValueError, match="'unknown'"):
        T.library.infer_schema(f, mutates_args="all")


def test_custom_op_runs_and_is_reachable_as_an_op(T, custom_ops):
    name = custom_ops("mysin")

    @T.library.custom_op(name, mutates_args=())
    def mysin(x: T.Tensor) -> T.Tensor:
        return x * 3
    assert repr(mysin) == f"<CustomOpDef({name})>"
    ns, opname = name.split("::")
    packet = getattr(getattr(T.ops, ns), opname)
    for out in (mysin(T.ones(2)), packet(T.ones(2)), packet.default(T.ones(2))):
        np.testing.assert_allclose(to_numpy(out), [3.0, 3.0])
    if T is gt:
        assert str(packet.default.schema) == f"{name}(Tensor x) -> Tensor"


def test_custom_op_needs_a_fake_impl_for_meta(T, custom_ops):
    @T.library.custom_op(custom_ops("mysin"), mutates_args=())
    def mysin(x: T.Tensor) -> T.Tensor:
        return x * 3
    with pytest.raises(RuntimeError, match=r"There was no fake impl registered for "
                       rf"<CustomOpDef\({mysin._namespace}::mysin\)>.*`mysin.register_fake`"):
        mysin(T.ones(2, device="meta"))

    @mysin.register_fake
    def _(x):
        return T.empty_like(x)
    out = mysin(T.ones(2, 5, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 5)


def test_custom_op_keyword_only_arguments(T, custom_ops):
    @T.library.custom_op(custom_ops("scale"), mutates_args=())
    def scale(x: T.Tensor, *, k: int = 3) -> T.Tensor:
        return x * k
    np.testing.assert_allclose(to_numpy(scale(T.ones(1))), [3.0])
    np.testing.assert_allclose(to_numpy(scale(T.ones(1), k=5)), [5.0])


def test_custom_op_must_not_return_an_input(T, custom_ops):
    @T.library.custom_op(custom_ops("same"), mutates_args=())
    def same(x: T.Tensor) -> T.Tensor:
        return x
    with pytest.raises(RuntimeError, match="must not also be an input"):
        same(T.ones(2))


def test_custom_op_mutation_bumps_versions_and_needs_no_fake(T, custom_ops):
    @T.library.custom_op(custom_ops("add_into"), mutates_args=("y",))
    def add_into(x: T.Tensor, y: T.Tensor) -> None:
        y.numpy()[...] += x.numpy()
    x, y = T.ones(2), T.zeros(2)
    assert add_into(x, y) is None
    np.testing.assert_allclose(to_numpy(y), [1.0, 1.0])
    assert (x._version, y._version) == (0, 1)
    assert add_into(T.ones(2, device="meta"), T.ones(2, device="meta")) is None


def test_custom_op_register_kernel_per_device(T, custom_ops):
    @T.library.custom_op(custom_ops("dev"), mutates_args=(), device_types="cpu")
    def dev(x: T.Tensor) -> T.Tensor:
        return x * 2

    @dev.register_kernel("cpu")
    def _(x):
        return x * 7
    np.testing.assert_allclose(to_numpy(dev(T.ones(1))), [7.0])


def test_register_kernel_for_meta_points_to_register_fake(custom_ops):
    @gt.library.custom_op(custom_ops("dev"), mutates_args=())
    def dev(x: gt.Tensor) -> gt.Tensor:
        return x * 2
    with pytest.raises(ValueError, match="register_fake"):
        dev.register_kernel("meta", lambda x: x)


def test_register_autograd_is_stored_for_the_autograd_layer(T, custom_ops):
    @T.library.custom_op(custom_ops("mysin"), mutates_args=())
    def mysin(x: T.Tensor) -> T.Tensor:
        return x * 3

    def backward(ctx, grad):
        return grad * 3

    def setup_context(ctx, inputs, output):
        pass
    assert mysin.register_autograd(backward, setup_context=setup_context) is None
    if T is gt:
        formula = mysin._opoverload.info["autograd_formula"]
        assert formula == gt.library.AutogradFormula(backward, setup_context)

    @T.library.custom_op(custom_ops("mut"), mutates_args=("x",))
    def mut(x: T.Tensor) -> None:
        pass
    with pytest.raises(RuntimeError, match="non-functional operator"):
        mut.register_autograd(backward)


def test_register_autograd_gives_the_op_gradients(T, custom_ops):
    """The formula is the op's Autograd kernel: a graph node named as PyTorch's, gradients
    for tensor inputs, None for the others, PyTorch's error for a wrong count."""
    qualname = custom_ops("scaled_sin")

    @T.library.custom_op(qualname, mutates_args=())
    def scaled_sin(x: T.Tensor, s: float) -> T.Tensor:
        return x.sin() * s

    def setup_context(ctx, inputs, output):
        x, s = inputs
        ctx.save_for_backward(x)
        ctx.s = s

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * ctx.s, None
    scaled_sin.register_autograd(backward, setup_context=setup_context)
    x = T.tensor([0.5, 1.0, -2.0], dtype=T.float64, requires_grad=True)
    y = scaled_sin(x, 3.0)
    ns, name = qualname.split("::")
    assert type(y.grad_fn).__name__ == f"GeneratedBackwardFor_{ns}_{name}_defaultBackward"
    (y * y).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2 * 9 * np.sin(to_numpy(x.detach()))
                               * np.cos(to_numpy(x.detach())))
    with T.no_grad():
        assert scaled_sin(x, 2.0).grad_fn is None
    if T is gt:
        assert gt.autograd.gradcheck(lambda v: scaled_sin(v, 1.5), (x.detach().requires_grad_(),))
        strided = gt.randn(3, 4, dtype=gt.float64, requires_grad=True)
        assert gt.autograd.gradcheck(lambda v: scaled_sin(v.t()[::2], 1.5), (strided,))

    scaled_sin.register_autograd(lambda ctx, grad: grad, setup_context=setup_context)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        scaled_sin(x, 3.0).sum().backward()


def test_custom_op_redefinition_replaces_the_old_op(T, custom_ops):
    name = custom_ops("again")

    @T.library.custom_op(name, mutates_args=())
    def first(x: T.Tensor) -> T.Tensor:
        return x * 2

    @T.library.custom_op(name, mutates_args=())
    def second(x: T.Tensor) -> T.Tensor:
        return x * 5
    np.testing.assert_allclose(to_numpy(second(T.ones(1))), [5.0])


def test_custom_op_on_a_library_defined_name_raises(T, lib):
    lib.define("taken(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="multiple times"):
        @T.library.custom_op(f"{lib.ns}::taken", mutates_args=())
        def taken(x: T.Tensor) -> T.Tensor:
            return x * 2


def test_custom_op_argument_errors(T, custom_ops):
    with pytest.raises(TypeError, match="mutates_args"):
        @T.library.custom_op(custom_ops("nomut"))
        def nomut(x: T.Tensor) -> T.Tensor:
            return x * 2
    with pytest.raises(NotImplementedError, match="kwarg-only Tensor"):
        @T.library.custom_op(custom_ops("kwt"), mutates_args=())
        def kwt(x: T.Tensor, *, y: T.Tensor) -> T.Tensor:
            return x * 2


def test_custom_op_explicit_schema(custom_ops):
    name = custom_ops("explicit")
    op = gt.library.custom_op(name, lambda x, n: x * n, mutates_args=(),
                              schema="(Tensor x, int n) -> Tensor")
    assert_same(op(gt.ones(2), n=3), [3.0, 3.0])
    with pytest.raises(ValueError, match="Please make these consistent"):
        gt.library.custom_op(custom_ops("explicit2"), lambda x: None, mutates_args=(),
                             schema="(Tensor(a!) x) -> ()")


def test_custom_op_keeps_the_function_signature(custom_ops):
    import inspect

    @gt.library.custom_op(custom_ops("sig"), mutates_args=())
    def sig(x: gt.Tensor, n: int = 2) -> gt.Tensor:
        """Multiply by n."""
        return x * n
    assert list(inspect.signature(sig).parameters) == ["x", "n"]
    assert sig.__doc__ == "Multiply by n."
    assert "CompositeExplicitAutograd" in gt.debug.dispatch_table(sig)


def test_no_warnings_on_normal_registration(custom_ops):
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @gt.library.custom_op(custom_ops("quiet"), mutates_args=())
        def quiet(x: gt.Tensor) -> gt.Tensor:
            return x * 2
        quiet.register_fake(lambda x: gt.empty_like(x))


# ---- register_torch_dispatch, register_autocast, impl_abstract, get_ctx ----------------

def python_dispatch(T):
    if T is gt:
        from glasstorch.utils import _python_dispatch
    else:
        from torch.utils import _python_dispatch
    return _python_dispatch


def passthrough_modes(T, log):
    class Mode(python_dispatch(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(("mode", str(func)))
            return func(*args, **(kwargs or {}))

    class SubMode(Mode):
        pass
    return Mode, SubMode


def test_register_torch_dispatch_for_a_mode(T, lib):
    lib.define("foo(Tensor x) -> Tensor")
    lib.define("foo.two(Tensor x) -> Tensor")
    for name in ("foo", "foo.two"):
        lib.impl(name, lambda x: x * 3, "CPU")
    log = []
    Mode, SubMode = passthrough_modes(T, log)

    def rule(mode, func, types, args, kwargs):
        log.append(("rule", type(mode).__name__, str(func), types, len(args), kwargs))
        return args[0] + 5
    assert T.library.register_torch_dispatch(f"{lib.ns}::foo", Mode, rule, lib=lib) is rule
    x = T.ones(2)
    with Mode():
        outs = [ops(T, lib).foo(x), ops(T, lib).foo.two(x)]
    with SubMode():       # a rule is for exactly its class
        outs.append(ops(T, lib).foo(x))
    outs.append(ops(T, lib).foo(x))
    assert [to_numpy(o).tolist() for o in outs] == [[6.0, 6.0], [3.0, 3.0], [3.0, 3.0],
                                                     [3.0, 3.0]]
    assert log == [("rule", "Mode", f"{lib.ns}.foo.default", (), 1, {}),
                   ("mode", f"{lib.ns}.foo.two"), ("mode", f"{lib.ns}.foo.default")]
    with pytest.raises(RuntimeError, match=r"already has a `__torch_dispatch__` rule "
                                           rf"registered for {lib.ns}::foo"):
        T.library.register_torch_dispatch(f"{lib.ns}::foo", Mode, rule, lib=lib)


def test_register_torch_dispatch_rule_goes_with_its_library(T):
    ns = fresh_ns()
    log = []
    Mode, _ = passthrough_modes(T, log)
    with T.library._scoped_library(ns, "FRAGMENT") as defs:
        defs.define("foo(Tensor x) -> Tensor")
        defs.impl("foo", lambda x: x * 2, "CPU")
        with T.library._scoped_library(ns, "FRAGMENT") as rules:
            @T.library.register_torch_dispatch(f"{ns}::foo", Mode, lib=rules)
            def _(mode, func, types, args, kwargs):
                return args[0] * 10
            with Mode():
                inside = getattr(T.ops, ns).foo(T.ones(1))
        with Mode():
            after = getattr(T.ops, ns).foo(T.ones(1))
    assert (to_numpy(inside).tolist(), to_numpy(after).tolist()) == ([10.0], [2.0])


def test_register_torch_dispatch_for_a_subclass(T, lib):
    from test_subclasses import two_tensor
    lib.define("foo(Tensor x) -> Tensor")
    lib.impl("foo", lambda x: x * 2, "CompositeExplicitAutograd")
    log = []
    TwoTensor = two_tensor(T, log)
    seen = []

    @T.library.register_torch_dispatch(f"{lib.ns}::foo", TwoTensor, lib=lib)
    def _(cls, func, types, args, kwargs):
        seen.append((cls is TwoTensor, str(func), [t.__name__ for t in types]))
        x, = args
        return TwoTensor(x.a + 1, x.b - 1)
    x = TwoTensor(T.ones(2), T.zeros(2))
    out = ops(T, lib).foo(x)
    assert seen == [(True, f"{lib.ns}.foo.default", ["TwoTensor"])] and log == []
    np.testing.assert_allclose(to_numpy(out.a), [2.0, 2.0])
    np.testing.assert_allclose(to_numpy(out.b), [-1.0, -1.0])


def test_custom_op_register_torch_dispatch_can_be_replaced(T, custom_ops):
    log = []
    Mode, _ = passthrough_modes(T, log)

    @T.library.custom_op(custom_ops("foo"), mutates_args=())
    def foo(x: T.Tensor) -> T.Tensor:
        return x.clone()

    @foo.register_torch_dispatch(Mode)
    def _(mode, func, types, args, kwargs):
        return args[0] + 1
    with Mode():
        first = foo(T.ones(1))
    T.library.register_torch_dispatch(foo, Mode, lambda mode, func, types, args, kwargs:
                                      args[0] + 5)
    with Mode():
        second = foo(T.ones(1))
    assert [to_numpy(t).tolist() for t in (first, second, foo(T.ones(1)))] == [
        [2.0], [6.0], [1.0]]


def test_register_autocast(T, lib):
    lib.define("mm2(Tensor a, Tensor b) -> Tensor")
    lib.impl("mm2", lambda a, b: a.mm(b), "CPU")
    T.library.register_autocast(f"{lib.ns}::mm2", "cpu", T.bfloat16, lib=lib)
    a, b = T.ones(2, 2), T.ones(2, 2, dtype=T.float64)
    assert ops(T, lib).mm2(a, a).dtype == T.float32
    with T.autocast("cpu", dtype=T.bfloat16):
        out = ops(T, lib).mm2(a, a)
        with pytest.raises(RuntimeError):      # float64 is never cast: mixed dtypes
            ops(T, lib).mm2(a, b)
    assert out.dtype == T.bfloat16
    np.testing.assert_allclose(to_numpy(out.float()), [[2.0, 2.0], [2.0, 2.0]])
    with pytest.raises(ValueError, match="Device type 'meta' does not support autocast"):
        T.library.register_autocast(f"{lib.ns}::mm2", "meta", T.float16, lib=lib)


def test_custom_op_register_autocast(T, custom_ops):
    @T.library.custom_op(custom_ops("double"), mutates_args=())
    def double(x: T.Tensor, ys: list[T.Tensor]) -> T.Tensor:
        return x * 2 + ys[0]
    double.register_autocast("cpu", T.bfloat16)
    x = T.ones(3)
    with T.autocast("cpu"):
        assert double(x, [x]).dtype == T.bfloat16
        assert double(x.long(), [x.long()]).dtype == T.int64
    assert double(x, [x]).dtype == T.float32
    with pytest.raises(ValueError, match=r"Expected `device_type` of type `str`, got: "):
        double.register_autocast(0, T.bfloat16)


def test_impl_abstract_is_register_fake_with_a_deprecation_warning(T, lib):
    lib.define("foo(Tensor x) -> Tensor")
    with pytest.warns(FutureWarning, match="impl_abstract") as record:
        T.library.impl_abstract(f"{lib.ns}::foo", lambda x: T.empty_like(x).sum(0), lib=lib)
    assert record[0].filename == __file__
    out = ops(T, lib).foo(T.ones(4, 3, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (3,)


def test_get_ctx(T, custom_ops):
    from importlib import import_module
    fake_tensor = import_module(f"{T.__name__}._subclasses.fake_tensor")
    assert T.library.get_ctx() is None

    @T.library.custom_op(custom_ops("nonzero_rows"), mutates_args=())
    def nonzero_rows(x: T.Tensor) -> T.Tensor:
        return x[x.sum(1) != 0]
    ctxs = []

    @nonzero_rows.register_fake
    def _(x):
        ctx = T.library.get_ctx()
        ctxs.append(ctx)
        return x.new_empty((ctx.new_dynamic_size(), x.shape[1]))
    with pytest.raises(RuntimeError, match="meta"):
        nonzero_rows(T.ones(2, 3, device="meta"))
    with fake_tensor.FakeTensorMode() as mode:
        x = T.empty(4, 3)
        with pytest.raises(fake_tensor.DynamicOutputShapeException):
            nonzero_rows(x)
    assert ctxs[0]._fake_mode is mode and ctxs[0]._shape_env is None
    assert str(ctxs[0]._op) == f"{nonzero_rows._namespace}.nonzero_rows.default"
    assert T.library.get_ctx() is None


def test_register_torch_dispatch_on_a_builtin_op(T):
    log = []
    Mode, _ = passthrough_modes(T, log)
    with T.library._scoped_library("aten", "FRAGMENT") as aten:
        @T.library.register_torch_dispatch("aten::neg", Mode, lib=aten)
        def _(mode, func, types, args, kwargs):
            log.append(("rule", str(func)))
            return func(*args, **kwargs) * 10
        x = T.ones(2)
        with Mode():
            y = T.neg(x)
            z = T.abs(x)
    with Mode():
        w = T.neg(x)
    assert log == [("rule", "aten.neg.default"), ("mode", "aten.abs.default"),
                   ("mode", "aten.neg.default")]
    assert [to_numpy(t).tolist() for t in (y, z, w)] == [[-10.0, -10.0], [1.0, 1.0],
                                                          [-1.0, -1.0]]


def test_a_library_nothing_holds_takes_its_kernels_with_it(T):
    import gc
    x = T.ones(3)
    lib = T.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # overriding aten's own CPU kernel
        lib.impl("mul.Tensor", lambda a, b: T.full_like(a, 7.0), "CPU")
    assert (x * 2).tolist() == [7.0, 7.0, 7.0]
    del lib
    gc.collect()
    assert (x * 2).tolist() == [2.0, 2.0, 2.0]
