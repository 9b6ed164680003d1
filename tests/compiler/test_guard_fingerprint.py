"""Each call compares a guard fingerprint (the snapshot's checks without their names): it must
differ exactly when the named snapshot differs, so every guarded change still recompiles."""
import pytest

import glasstorch as torch
import glasstorch.nn as nn
from glasstorch.compiler import guards

from compile_helpers import CountingBackend


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Dropout(0.0))


def _keys(args, kwargs, module, dynamic=False):
    names = [f"a{i}" for i in range(len(args))]
    return (guards.snapshot(args, kwargs, names, module, dynamic),
            guards.fingerprint(args, kwargs, module, dynamic))


CHANGES = {
    "shape": lambda m, x: (m, (torch.ones(3, 3),), {}),
    "dtype": lambda m, x: (m, (x.double(),), {}),
    "strides": lambda m, x: (m, (torch.ones(3, 2).t(),), {}),
    "requires_grad": lambda m, x: (m, (x.clone().requires_grad_(),), {}),
    "scalar": lambda m, x: (m, (x, 2), {}),
    "kwarg": lambda m, x: (m, (), {"x": x}),
    "training": lambda m, x: (m.eval(), (x,), {}),
    "replaced parameter": lambda m, x: (_replace_weight(m), (x,), {}),
    "added buffer": lambda m, x: (_add_buffer(m), (x,), {}),
    "parameter requires_grad": lambda m, x: (_freeze(m), (x,), {}),
}


def _replace_weight(m):
    m[0].weight = nn.Parameter(m[0].weight.detach().clone())
    return m


def _add_buffer(m):
    m[1].register_buffer("extra", torch.zeros(1))
    return m


def _freeze(m):
    m[0].bias.requires_grad_(False)
    return m


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_fingerprint_changes_exactly_when_the_snapshot_does(change):
    model, x = _model(), torch.ones(2, 3)
    snapshot, key = _keys((x,), {}, model)
    same_snapshot, same_key = _keys((torch.zeros(2, 3),), {}, model)
    assert same_snapshot == snapshot and same_key == key
    module, args, kwargs = CHANGES[change](model, x)
    new_snapshot, new_key = _keys(args, kwargs, module)
    assert new_snapshot != snapshot and new_key != key


def test_grad_mode_and_dynamic_dims_are_in_the_fingerprint():
    x = torch.ones(2, 3)
    _, key = _keys((x,), {}, None)
    with torch.no_grad():
        assert _keys((x,), {}, None)[1] != key
    y = torch.ones(5, 3)
    torch._dynamo.mark_dynamic(x, 0)
    torch._dynamo.mark_dynamic(y, 0)
    assert _keys((x,), {}, None)[1] == _keys((y,), {}, None)[1]
    assert _keys((torch.ones(2, 3),), {}, None, dynamic=True)[1] == \
        _keys((torch.ones(7, 3),), {}, None, dynamic=True)[1]


def test_a_compiled_module_recompiles_on_each_guarded_change_and_names_it():
    model, backend = _model(), CountingBackend()
    compiled = torch.compile(model, backend=backend)
    x = torch.ones(2, 3)
    compiled(x)
    compiled(torch.zeros(2, 3))
    assert backend.compiles == 1
    model.eval()
    compiled(x)
    assert backend.compiles == 2
    _replace_weight(model)
    compiled(x)
    assert backend.compiles == 3
    with torch.no_grad():
        compiled(x)
    assert backend.compiles == 4
    entries = compiled._compiled.entries
    assert guards.failure(entries[0].snapshot, entries[1].snapshot) == "self.training == True"
    assert guards.failure(entries[1].snapshot, entries[2].snapshot) == \
        "___check_obj_id(self.0.weight): the tensor was replaced"


def test_a_parameter_marked_dynamic_leaves_its_size_out_of_both():
    """A module's tensors take the fingerprint's inlined static path unless marked dynamic:
    then their sizes are left out of the fingerprint as they are of the snapshot."""
    model, x = _model(), torch.ones(2, 3)
    weight = model[1].weight
    torch._dynamo.mark_dynamic(weight, 0)
    snapshot, key = _keys((x,), {}, model)
    with torch.no_grad():
        weight.data = torch.ones(7)              # the same Parameter, another size
    new_snapshot, new_key = _keys((x,), {}, model)
    assert new_snapshot == snapshot and new_key == key
    bias = model[1].bias
    with torch.no_grad():
        bias.data = torch.ones(7)                # not marked: its size is guarded
    assert _keys((x,), {}, model)[1] != key
