"""Guards and recompiles: each kind of change the capture assumed against recompiles once,
an unchanged call reuses the compiled graph, and the recompile limit warns naming the guard
and then runs eagerly."""
import warnings

import pytest

import glasstorch as gt
import glasstorch.nn as nn


def compiles_after(counter, fn, first, second):
    """How many graphs were compiled by calling `fn(*first)` twice then `fn(*second)`."""
    compiled = gt.compile(fn, backend=counter)
    compiled(*first())
    compiled(*first())
    assert counter.compiles == 1, "an unchanged call must reuse the graph"
    compiled(*second())
    return counter.compiles


@pytest.mark.parametrize("first, second", [
    (lambda: (gt.ones(2, 3),), lambda: (gt.ones(4, 3),)),                       # shape
    (lambda: (gt.ones(2, 3),), lambda: (gt.ones(2, 3, dtype=gt.float64),)),     # dtype
    (lambda: (gt.ones(2, 3),), lambda: (gt.ones(2, 3).requires_grad_(),)),      # requires_grad
    (lambda: (gt.ones(2, 3),), lambda: (gt.ones(3, 2).t(),)),                   # strides
    (lambda: (gt.ones(2), 2), lambda: (gt.ones(2), 3)),                         # a Python scalar
])
def test_a_changed_input_recompiles(counter, first, second):
    fn = (lambda x, n=1: x * n + 1)
    assert compiles_after(counter, fn, first, second) == 2


def test_grad_mode_and_autocast_are_guarded(counter):
    compiled = gt.compile(lambda x: x * 2, backend=counter)
    x = gt.ones(2)
    compiled(x)
    with gt.no_grad():
        compiled(x)
    compiled(x)
    assert counter.compiles == 2
    with gt.autocast("cpu", dtype=gt.bfloat16):
        compiled(x)
    assert counter.compiles == 3


def test_module_training_flag_and_replaced_or_added_parameters_are_guarded(counter):
    model = nn.Linear(3, 2)
    compiled = gt.compile(model, backend=counter)
    x = gt.ones(1, 3)
    compiled(x)
    compiled(x)
    assert counter.compiles == 1
    model.eval()
    compiled(x)
    assert counter.compiles == 2
    model.weight = nn.Parameter(gt.zeros(2, 3))
    out = compiled(x)
    assert counter.compiles == 3 and gt.equal(out, model.bias.detach().expand(1, 2))
    model.register_buffer("extra", gt.ones(1))
    compiled(x)
    assert counter.compiles == 4


def test_a_failed_guard_is_logged_with_its_reason(counter, caplog):
    gt._logging.set_logs(recompiles=True)
    try:
        compiled = gt.compile(lambda x: x + 1, backend=counter)
        compiled(gt.ones(2))
        with caplog.at_level("DEBUG", logger="glasstorch._dynamo.recompiles"):
            compiled(gt.ones(5))
    finally:
        gt._logging.set_logs(recompiles=False)
    assert "tensor 'x' size mismatch at index 0. expected 2, actual 5" in caplog.text


def test_the_recompile_limit_warns_naming_the_guard_then_runs_eagerly(counter):
    compiled = gt.compile(lambda x: x + 1, backend=counter, dynamic=False)   # static sizes
    old = gt._dynamo.config.cache_size_limit
    gt._dynamo.config.cache_size_limit = 2
    try:
        compiled(gt.ones(1))
        compiled(gt.ones(2))
        with pytest.warns(UserWarning, match=r"hit config.recompile_limit \(2\)(.|\n)*"
                          r"size mismatch at index 0. expected 2, actual 3"):
            out = compiled(gt.ones(3))
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # warned once only
            compiled(gt.ones(4))
    finally:
        gt._dynamo.config.cache_size_limit = old
    assert out.tolist() == [2.0, 2.0, 2.0] and counter.compiles == 2
    compiled(gt.ones(2))                            # a cached entry still runs compiled
    assert gt._dynamo.config.recompile_limit == old


def test_mark_dynamic_and_dynamic_true_do_not_count_size_changes_as_recompiles(counter):
    compiled = gt.compile(lambda x: x.sum(0), backend=counter, dynamic=True)
    for n in (2, 3, 4):
        assert compiled(gt.ones(n, 2)).tolist() == [n, n]
    assert len(compiled._glasstorch_compiled.entries) == 1
    assert counter.compiles == 3                    # the graphs themselves are static
    other = gt.compile(lambda x: x.sum(0), backend="eager")
    for n in (2, 3):
        x = gt.ones(n, 2)
        gt._dynamo.mark_dynamic(x, 0)
        other(x)
    assert len(other._glasstorch_compiled.entries) == 1


def test_a_size_change_makes_sizes_dynamic_automatically(counter, caplog):
    """dynamic=None: the first size change recompiles once with every size dynamic (as
    PyTorch's automatic dynamic shapes); later sizes never reach the recompile limit."""
    compiled = gt.compile(lambda x, n: x.sum(0) * n, backend=counter, recompile_limit=2)
    gt._logging.set_logs(recompiles=True)
    try:
        with warnings.catch_warnings(), \
                caplog.at_level("DEBUG", logger="glasstorch._dynamo.recompiles"):
            warnings.simplefilter("error")
            for n in range(1, 12):
                assert compiled(gt.ones(n, 3), 2).tolist() == [2.0 * n] * 3
    finally:
        gt._logging.set_logs(recompiles=False)
    assert len(compiled._glasstorch_compiled.entries) == 2
    assert "size mismatch at index 0. expected 1, actual 2 (sizes are dynamic" in caplog.text
    with pytest.warns(UserWarning, match=r"recompile_limit \(2\)(.|\n)*last reason: n == 2"):
        compiled(gt.ones(3, 3), 3)              # what is not a size still counts


def test_automatic_dynamic_shapes_off_keeps_one_entry_per_size(counter):
    old = gt._dynamo.config.automatic_dynamic_shapes
    gt._dynamo.config.automatic_dynamic_shapes = False
    try:
        compiled = gt.compile(lambda x: x + 1, backend=counter)
        for n in (1, 2, 3):
            compiled(gt.ones(n))
    finally:
        gt._dynamo.config.automatic_dynamic_shapes = old
    assert len(compiled._glasstorch_compiled.entries) == 3


def test_reset_forgets_compiled_graphs(counter):
    compiled = gt.compile(lambda x: x - 1, backend=counter)
    compiled(gt.ones(2))
    gt.compiler.reset()
    compiled(gt.ones(2))
    assert counter.compiles == 2


def test_a_trace_that_changes_every_call_stops_compiling_after_the_limit(counter):
    scale = [1.0]

    def f(x):
        return x * scale[0]                        # a number read from outside, not guarded
    compiled = gt.compile(f, backend=counter)
    old = gt._dynamo.config.recompile_limit
    gt._dynamo.config.recompile_limit = 3
    try:
        with pytest.warns(UserWarning, match=r"compiled new graphs on 3 calls(.|\n)*"
                          r"aten.mul.Tensor\(<tensor>, 4.0\) where an earlier call had "
                          r"aten.mul.Tensor\(<tensor>, 1.0\)"):
            for i in range(6):
                scale[0] = float(i + 1)
                assert compiled(gt.ones(2)).tolist() == [i + 1.0] * 2
    finally:
        gt._dynamo.config.recompile_limit = old
    assert counter.compiles == 4                   # the first call and three retraces
