"""glasstorch.debug: dispatch traces, dispatch tables and the thread-local key sets."""
import itertools
import threading
import time

import pytest

import glasstorch as gt
from glasstorch.dispatch import dispatcher
from glasstorch.dispatch.keys import (DispatchKey, DispatchKeySet, exclude_keys, include_keys,
                                      local_keys)
from oracle import assert_same

_ids = itertools.count()
K = DispatchKey


def fresh_op(schema="(Tensor self) -> Tensor"):
    name = f"tracetest::op{next(_ids)}"
    return dispatcher.define(name + schema, namespace="tracetest")


def expected_keyset(t) -> DispatchKeySet:
    """What the dispatcher computes for one tensor: its keys plus this thread's included
    keys minus its excluded keys."""
    return DispatchKeySet((t._keyset | local_keys.included) & ~local_keys.excluded)


def test_inplace_add_goes_through_inplace_or_view_then_cpu():
    x, y = gt.ones(3), gt.ones(3)
    with gt.debug.dispatch_trace() as trace:
        x.add_(y)
    assert len(trace.events) == 1
    (event,) = trace.events
    assert event.op == "aten::add_.Tensor"
    assert event.keyset == expected_keyset(x)
    assert repr(event.keyset) == "DispatchKeySet(CPU, ADInplaceOrView)"
    assert event.keys == [K.ADInplaceOrView, K.CPU]
    assert event.path == "ADInplaceOrView -> CPU"
    assert event.depth == 0 and event.parent is None and event.error is None
    outer, inner = event.layers
    assert outer.total >= inner.total >= 0
    assert outer.self_time == pytest.approx(outer.total - inner.total)
    assert event.total == outer.total
    assert_same(x, [2.0, 2.0, 2.0])


def test_functional_add_goes_straight_to_the_backend():
    with gt.debug.dispatch_trace() as trace:
        gt.add(gt.ones(2, device="meta"), gt.ones(2, device="meta"))
    add = [e for e in trace.events if e.op == "aten::add.Tensor"]
    assert len(add) == 1
    assert add[0].keys == [K.Meta]
    assert repr(add[0].keyset) == "DispatchKeySet(Meta, ADInplaceOrView)"


def test_calls_on_tensors_that_require_grad_pass_through_autograd_first():
    x = gt.ones(2, requires_grad=True)
    with gt.debug.dispatch_trace() as trace:
        x * 2
    (event,) = [e for e in trace.events if e.op == "aten::mul.Tensor"]
    assert repr(event.keyset) == "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU)"
    assert event.keys == [K.AutogradCPU, K.CPU]


def test_view_records_bookkeeping_then_the_composite_kernel():
    x = gt.ones(2, 3)
    with gt.debug.dispatch_trace() as trace:
        x.view(6)
    (event,) = [e for e in trace.events if e.op == "aten::view"]
    assert event.keys == [K.ADInplaceOrView, K.CPU]
    assert "(view)" in event.layers[1].kernel_name


def test_per_layer_times_and_nesting():
    op, inner = fresh_op(), fresh_op()
    inner.register(K.CPU, lambda a: a)

    def above(o, ks, a):
        time.sleep(0.005)
        return o.redispatch(ks, a)

    def backend(a):
        inner(a)
        time.sleep(0.02)
        return a
    op.register(K.ADInplaceOrView, above)
    op.register(K.CPU, backend)
    x = gt.ones(1)
    with gt.debug.dispatch_trace() as trace:
        op(x)
    assert [e.op for e in trace.events] == [op.name, inner.name]
    call, nested = trace.events
    assert call.path == "ADInplaceOrView -> CPU"
    assert nested.parent is call and call.children == [nested] and nested.depth == 1
    assert trace.roots == [call]
    view_layer, cpu_layer = call.layers
    assert cpu_layer.self_time >= 0.02
    assert view_layer.self_time >= 0.005
    assert view_layer.total >= 0.025 and view_layer.total >= cpu_layer.total
    assert cpu_layer.total >= nested.total


def test_nothing_is_recorded_or_hooked_outside_the_block():
    x = gt.ones(2)
    with gt.debug.dispatch_trace() as trace:
        x.add_(x)
        assert dispatcher._tracers
    x.add_(x)
    assert len(trace.events) == 1
    assert dispatcher._tracers == []


def test_hook_is_removed_after_an_exception_and_the_error_is_recorded():
    op = fresh_op()

    def failing(a):
        raise ValueError("kernel failed")
    op.register(K.CPU, failing)
    with pytest.raises(ValueError, match="kernel failed"):
        with gt.debug.dispatch_trace() as trace:
            op(gt.ones(1))
    assert dispatcher._tracers == []
    assert isinstance(trace.events[-1].error, ValueError)
    assert "!! ValueError" in str(trace)


def test_errors_inside_the_block_are_recorded_and_later_calls_are_not_nested():
    op = fresh_op()
    op.register(K.Meta, lambda a: a)
    with gt.debug.dispatch_trace() as trace:
        with pytest.raises(NotImplementedError, match="Could not run"):
            op(gt.ones(1))
        with pytest.raises(RuntimeError, match="same device"):
            gt.add(gt.ones(2), gt.ones(2, device="meta"))
        gt.ones(1).add_(1.0)
    missing, mixed, ok = [e for e in trace.events if e.op in
                          (op.name, "aten::add.Tensor", "aten::add_.Tensor")]
    assert isinstance(missing.error, NotImplementedError) and missing.layers == []
    assert isinstance(mixed.error, RuntimeError) and mixed.layers == []
    assert ok.error is None and ok.depth == 0


def test_nested_traces_both_record():
    x = gt.ones(2)
    with gt.debug.dispatch_trace() as outer:
        x.add_(x)
        with gt.debug.dispatch_trace() as inner:
            x.mul_(x)
    assert [e.op for e in outer.events] == ["aten::add_.Tensor", "aten::mul_.Tensor"]
    assert [e.op for e in inner.events] == ["aten::mul_.Tensor"]
    assert inner.events[0] is outer.events[1]


def test_a_trace_sees_only_its_own_thread():
    x = gt.ones(2)
    results = {}

    def worker():
        results["value"] = x * 3
    with gt.debug.dispatch_trace() as trace:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(5)
        x.add_(x)
    assert [e.op for e in trace.events] == ["aten::add_.Tensor"]
    assert_same(results["value"], [3.0, 3.0])


def test_thread_local_keys_show_in_the_keyset():
    x = gt.ones(1)
    with gt.debug.dispatch_trace() as trace:
        with exclude_keys(1 << K.ADInplaceOrView):
            x.add_(x)
    assert trace.events[0].keys == [K.CPU]
    assert not trace.events[0].keyset.has(K.ADInplaceOrView)


def test_table_is_an_indented_readable_table(capsys):
    op, inner = fresh_op(), fresh_op()
    inner.register(K.CPU, lambda a: a)
    op.register(K.CPU, lambda a: inner(a))
    x = gt.ones(1)
    with gt.debug.dispatch_trace() as trace:
        op(x)
    lines = str(trace).splitlines()
    assert lines[0].split()[:2] == ["op", "dispatch"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].startswith(op.name) and lines[3].startswith("  " + inner.name)
    assert "DispatchKeySet(CPU, ADInplaceOrView)" in lines[2]
    assert lines[2].rstrip().endswith("us") or lines[2].rstrip().endswith("ms")
    trace.print()
    assert capsys.readouterr().out.strip() == str(trace).strip()
    assert repr(trace) == "<DispatchTrace: 2 calls>"
    assert "(no operator calls)" in str(gt.debug.dispatch_trace())


# ---- dispatch_table --------------------------------------------------------------------

@pytest.mark.parametrize("target", [
    "aten::add.Tensor", "add.Tensor", lambda: gt.ops.aten.add.Tensor, lambda: gt.add])
def test_dispatch_table_by_name_operator_or_function(target):
    text = gt.debug.dispatch_table(target() if callable(target) else target)
    lines = text.splitlines()
    assert lines[0] == "name: aten::add.Tensor"
    assert lines[1].startswith("schema: aten::add.Tensor(Tensor self, Tensor other")
    keys = [line.split(":")[0] for line in lines[2:]]
    assert "CPU" in keys and "Meta" in keys
    assert keys == sorted(keys, key=lambda k: -DispatchKey[k])


def test_dispatch_table_of_a_packet_shows_every_overload():
    text = gt.debug.dispatch_table(gt.ops.aten.add)
    names = [line for line in text.splitlines() if line.startswith("name: ")]
    assert "name: aten::add.Tensor" in names and len(names) >= 2
    assert all(n.startswith("name: aten::add.") for n in names)
    assert gt.debug.dispatch_table("add") == text


def test_dispatch_table_errors():
    with pytest.raises(RuntimeError, match="no operator named 'aten::no_such_op'"):
        gt.debug.dispatch_table("no_such_op")
    with pytest.raises(TypeError, match="expected an operator"):
        gt.debug.dispatch_table(3)


def test_local_keyset_reflects_guards():
    base = gt.debug.local_keyset()
    with include_keys(1 << K.Python):
        now = gt.debug.local_keyset()
        assert now.included.has(K.Python) and not base.included.has(K.Python)
    assert gt.debug.local_keyset() == base
    assert gt.debug.local_keyset().excluded == DispatchKeySet(local_keys.excluded)
