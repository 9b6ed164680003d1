"""nn.Module.load_state_dict checks every entry before copying any: a failure leaves the
module as it was (PyTorch copies as it goes and leaves it half loaded)."""
from __future__ import annotations

import pytest

import glasstorch as gt


def model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2), lib.nn.Linear(2, 3))


def values(m):
    return {k: v.clone() for k, v in m.state_dict().items()}


def assert_same_values(m, before):
    after = m.state_dict()
    assert list(after) == list(before)
    for k, v in before.items():
        assert gt.equal(after[k], v), k


def good_state():
    return {k: gt.full_like(v, 7) for k, v in model(gt).state_dict().items()}


@pytest.mark.parametrize("spoil, match", [
    (lambda sd: sd.update({"2.weight": gt.zeros(2, 2)}), "size mismatch for 2.weight"),
    (lambda sd: sd.pop("2.bias"), 'Missing key\\(s\\) in state_dict: "2.bias"'),
    (lambda sd: sd.update({"2.extra": gt.ones(1)}), 'Unexpected key\\(s\\) in state_dict: '
                                                    '"2.extra"'),
    (lambda sd: sd.update({"2.bias": [0.0, 0.0, 0.0]}), "expected torch.Tensor"),
    (lambda sd: sd.update({"2.bias": gt.empty(3, device="meta")}),
     "Cannot copy out of meta tensor"),
])
def test_a_failing_load_changes_nothing(spoil, match):
    m = model(gt)
    before = values(m)
    sd = good_state()
    spoil(sd)
    with pytest.raises(RuntimeError, match=match):
        m.load_state_dict(sd)
    assert_same_values(m, before)


def test_messages_match_pytorchs_and_pytorch_is_left_half_loaded():
    torch = pytest.importorskip("torch")
    tm, m = model(torch), model(gt)
    tsd = {k: torch.full_like(v, 7) for k, v in tm.state_dict().items()}
    tsd["2.weight"] = torch.zeros(2, 2)
    sd = good_state()
    sd["2.weight"] = gt.zeros(2, 2)
    with pytest.raises(RuntimeError) as want:
        tm.load_state_dict(tsd)
    with pytest.raises(RuntimeError) as got:
        m.load_state_dict(sd)
    assert str(got.value) == str(want.value)
    assert (tm[0].weight == 7).all()                     # PyTorch copied the first layer
    assert not (m[0].weight == 7).any().item()           # glasstorch copied nothing


def test_non_strict_and_successful_loads_still_copy():
    m = model(gt)
    sd = good_state()
    sd.pop("2.bias")
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["2.bias"]
    assert (m[2].weight == 7).all().item() and not (m[2].bias == 7).any().item()
    m.load_state_dict(good_state())
    assert (m[2].bias == 7).all().item()
    m.load_state_dict(good_state(), assign=True)
    assert type(m[0].weight) is gt.nn.Parameter and (m[0].weight == 7).all().item()


def test_post_hooks_see_the_loaded_values_and_may_forgive_missing_keys():
    m = model(gt)
    seen = []

    def forgive(module, keys):
        seen.append(module[2].weight[0, 0].item())
        keys.missing_keys.clear()
    m.register_load_state_dict_post_hook(forgive)
    sd = good_state()
    sd.pop("2.bias")
    m.load_state_dict(sd)                                # strict, but the hook forgave it
    assert seen == [7.0] and (m[0].weight == 7).all().item()


def test_extra_state_is_set_only_after_the_checks():
    class WithExtra(gt.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = gt.nn.Linear(2, 2)
            self.extra = "old"

        def get_extra_state(self):
            return self.extra

        def set_extra_state(self, state):
            self.extra = state
    m = WithExtra()
    sd = m.state_dict()
    sd["_extra_state"] = "new"
    sd["lin.weight"] = gt.zeros(3, 3)
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict(sd)
    assert m.extra == "old"
    sd["lin.weight"] = gt.zeros(2, 2)
    m.load_state_dict(sd)
    assert m.extra == "new"
