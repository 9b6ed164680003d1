"""Importing glasstorch moves its objects into the garbage collector's permanent generation,
so full collections in a training loop do not walk them; garbage made afterwards is still
collected."""
import gc
import subprocess
import sys
import weakref

import glasstorch as gt


def test_import_leaves_the_collector_almost_nothing_to_walk():
    code = ("import gc, glasstorch; "
            "print(gc.get_freeze_count(), len(gc.get_objects()), "
            "any(o is glasstorch.nn.Linear for o in gc.get_objects()))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    frozen, tracked, linear_tracked = result.stdout.split()
    assert int(frozen) > 50_000          # glasstorch's operators, schemas, kernels, ...
    assert int(tracked) < 1_000
    assert linear_tracked == "False"


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
