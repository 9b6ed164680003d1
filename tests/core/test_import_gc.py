"""Importing glasstorch moves its objects into the garbage collector's permanent generation,
so full collections in a training loop do not walk them; garbage made afterwards is still
collected."""
import gc
import os
import subprocess
import sys
import weakref

import glasstorch as gt


def _import_in_a_fresh_process(**env) -> tuple:
    """(frozen objects, tracked objects, whether nn.Linear is tracked) after the import."""
    code = ("import gc, glasstorch; "
            "print(gc.get_freeze_count(), len(gc.get_objects()), "
            "any(o is glasstorch.nn.Linear for o in gc.get_objects()))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    frozen, tracked, linear_tracked = result.stdout.split()
    return int(frozen), int(tracked), linear_tracked == "True"


def test_import_leaves_the_collector_almost_nothing_to_walk():
    frozen, tracked, linear_tracked = _import_in_a_fresh_process()
    assert frozen > 50_000               # glasstorch's operators, schemas, kernels, ...
    assert tracked < 1_000
    assert not linear_tracked


def test_the_freeze_can_be_turned_off():
    frozen, tracked, linear_tracked = _import_in_a_fresh_process(GLASSTORCH_GC_FREEZE="0")
    assert frozen == 0
    assert tracked > 50_000
    assert linear_tracked


def test_cycles_made_after_import_are_still_collected():
    model = gt.nn.Linear(3, 3)
    model.me = model                      # a reference cycle through a module
    x = gt.randn(4, 3, requires_grad=True)
    y = model(x)
    y.cycle = [y]                         # and through a tensor with autograd history
    dead_model, dead_y = weakref.ref(model), weakref.ref(y)
    del model, x, y
    gc.collect()
    assert dead_model() is None and dead_y() is None
