"""Operators come out the same whatever order their modules are imported in: every facet
(schema, kernels per key, derivative, autograd declaration) is attached to the declaration
object itself, never found by name in a module that must have loaded first."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# Imports glasstorch with each family's module list shuffled by `seed` (None: as on disk),
# then prints every operator's facets.
_PROGRAM = r"""
import json, pkgutil, random, sys
seed = json.loads(sys.argv[1])
if seed is not None:
    listing = pkgutil.iter_modules
    def shuffled(path=None, prefix=""):
        modules = list(listing(path, prefix))
        random.Random(seed).shuffle(modules)
        return iter(modules)
    pkgutil.iter_modules = shuffled
import glasstorch
from glasstorch.dispatch.dispatcher import all_operators
facets = {}
for op in all_operators():
    d = op.info.get("derivative")
    facets[str(op.schema)] = [sorted(map(str, op.kernels)), op.info.get("autograd"),
                              None if d is None else repr(d.node_name)
                              if isinstance(d.node_name, str) else d.formula.__qualname__]
print(json.dumps(facets, sort_keys=True))
"""


def _facets(seed):
    done = subprocess.run([sys.executable, "-c", _PROGRAM, json.dumps(seed)],
                          capture_output=True, text=True, env={"PYTHONPATH": str(SRC)},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("seed", [1])
def test_operators_do_not_depend_on_the_order_modules_load_in(seed):
    expected, got = _facets(None), _facets(seed)
    assert len(expected) > 800
    assert sum(v[2] is not None for v in expected.values()) > 300    # derivatives present
    assert got == expected
