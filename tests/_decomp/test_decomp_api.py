"""torch._decomp's API: the table, get_decompositions, core_aten_decompositions,
register_decomposition; decompositions' signatures; what a dispatch mode sees."""
from __future__ import annotations

import inspect

import pytest

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch._decomp import (core_aten_decompositions, decomposition_table,
                                get_decompositions, register_decomposition)
from glasstorch._ops import OpOverload
from glasstorch.utils._python_dispatch import TorchDispatchMode

aten = gt.ops.aten


def test_table_maps_op_overloads_to_functions():
    assert len(decomposition_table) >= 25
    for op, fn in decomposition_table.items():
        assert isinstance(op, OpOverload) and op.namespace == "aten"
        assert callable(fn)


@pytest.mark.parametrize("op", list(decomposition_table), ids=str)
def test_signature_is_the_schema(op):
    """Names, defaults and keyword-only arguments as the op's schema: a decomposition runs
    on the (args, kwargs) a dispatch mode receives, where defaults are left out."""
    params = inspect.signature(decomposition_table[op]).parameters
    assert list(params) == [a.name for a in op._schema.arguments]
    for a in op._schema.arguments:
        p = params[a.name]
        assert (p.kind is p.KEYWORD_ONLY) == a.kwarg_only, a.name
        if a.has_default:
            assert p.default == a.default, a.name


def test_get_decompositions_takes_overloads_and_packets():
    table = get_decompositions([aten._softmax, aten.gelu.default, aten.add.Tensor])
    assert set(table) == {aten._softmax.default, aten.gelu.default}
    assert table[aten.gelu.default] is decomposition_table[aten.gelu.default]
    assert get_decompositions([aten.gelu], type="pre_autograd") == {}


def test_core_aten_decompositions_keep_core_ops():
    """As PyTorch's: ops that are core ATen themselves stay; composite ones lower."""
    torch = pytest.importorskip("torch")
    from torch._decomp import core_aten_decompositions as theirs_fn
    theirs = {str(op) for op in theirs_fn()}
    ours = {str(op) for op in core_aten_decompositions()}
    for op in decomposition_table:
        assert (str(op) in ours) == (str(op) in theirs), str(op)
    assert torch is not None


def test_register_decomposition():
    registry = {}

    @register_decomposition([aten.lerp, aten.silu.default], registry=registry)
    def mine(*args):
        return args
    lerps = {getattr(aten.lerp, name) for name in aten.lerp.overloads()}   # a packet: all
    assert aten.lerp.Tensor in lerps and set(registry) == lerps | {aten.silu.default}
    assert set(registry.values()) == {mine}
    with pytest.raises(RuntimeError, match="duplicate registrations for aten.silu.default"):
        register_decomposition(aten.silu.default, registry=registry)(mine)
    with pytest.raises(TypeError, match="OpOverload or OpOverloadPacket"):
        register_decomposition("aten::silu")
    assert decomposition_table[aten.silu.default] is not mine


class Decompose(TorchDispatchMode):
    """Replaces ops by their decompositions (the calls they make go to the mode below)."""

    def __init__(self, table):
        super().__init__()
        self.table = table

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        fn = self.table.get(func)
        return fn(*args, **kwargs) if fn is not None else func(*args, **kwargs)


class Log(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func)
        return func(*args, **(kwargs or {}))


def test_a_mode_sees_softmax_as_core_ops():
    x = gt.randn(3, 4)
    log = Log()
    with log, Decompose(decomposition_table):
        y = F.softmax(x, dim=1)
    assert [str(f) for f in log.seen] == [
        "aten.amax.default", "aten.sub.Tensor", "aten.exp.default", "aten.sum.dim_IntList",
        "aten.div.Tensor_mode"]
    assert gt.allclose(y, F.softmax(x, dim=1))


@pytest.mark.parametrize("call", [
    lambda x: F.layer_norm(x, [4], gt.ones(4), gt.zeros(4)),
    lambda x: F.group_norm(x.view(3, 4, 1), 2),
    lambda x: F.batch_norm(x, gt.zeros(4), gt.ones(4), training=True),
    lambda x: F.gelu(x, approximate="tanh"), lambda x: F.mish(x), lambda x: F.hardswish(x),
    lambda x: F.cross_entropy(x, gt.tensor([0, 3, 1])),
    lambda x: F.binary_cross_entropy_with_logits(x, gt.linspace(0, 1, 12).view(3, 4)),
    lambda x: F.smooth_l1_loss(x, gt.zeros(3, 4)),
])
def test_decomposed_calls_show_no_composite_op(call):
    """Under the core decompositions a mode sees core ATen ops and primitives only."""
    table = core_aten_decompositions()
    table.update(get_decompositions([aten._softmax, aten._log_softmax, aten.native_layer_norm,
                                     aten.native_batch_norm, aten.native_group_norm,
                                     aten.gelu]))
    x = gt.randn(3, 4)
    log = Log()
    with log, Decompose(table):
        got = call(x)
    expected = call(x)
    assert not [str(f) for f in log.seen if f in table]
    assert gt.allclose(got, expected, atol=1e-6)
