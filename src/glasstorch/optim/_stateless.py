"""torch.optim.swap_in_optimizer_params_and_state: run optimizer code (a step, its hooks)
against other parameter tensors and another state_dict for the length of a block — fake
tensors to trace a step, say — and put the live optimizer back as it was afterwards."""
from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager

__all__ = ["swap_in_optimizer_params_and_state"]

_ORDER = ("swap_in_optimizer_params_and_state requires the explicit parameter state to "
          "match optimizer.param_groups ordering.")


def _groups_to_swap_in(optimizer, parameters: list, optim_state) -> list:
    """[(live group, swap-in group, its parameters)], checked against the live groups."""
    if not optimizer.state:
        raise RuntimeError("swap_in_optimizer_params_and_state requires initialized "
                           "optimizer state.")
    if not isinstance(optim_state, dict) or not isinstance(optim_state.get("state"), dict) \
            or not isinstance(optim_state.get("param_groups"), list):
        raise RuntimeError("swap_in_optimizer_params_and_state requires a DCP-style "
                           "optimizer state_dict.")
    groups = optim_state["param_groups"]
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError(_ORDER)
    plan, offset = [], 0
    for live, swap in zip(optimizer.param_groups, groups):
        count = len(swap["params"])
        if count != len(live["params"]) or offset + count > len(parameters):
            raise RuntimeError(_ORDER)
        plan.append((live, swap, parameters[offset:offset + count]))
        offset += count
    if offset != len(parameters):
        raise RuntimeError(_ORDER)
    known = {i for _, swap, _ in plan for i in swap["params"]}
    extra = [k for k in optim_state["state"] if k not in known]
    if extra:
        raise RuntimeError(f"swap_in_optimizer_params_and_state got state for parameter ids "
                           f"{extra} that no param group lists.")
    return plan


@contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict,
                                       swapin_optim_state: dict):
    """Within the block the optimizer's groups hold `swapin_parameters` (in
    named_parameters order) with the hyperparameters and per-parameter state of
    `swapin_optim_state` (an optimizer.state_dict()); in-place updates reach those tensors.
    On exit the live parameters, groups and state are back."""
    plan = _groups_to_swap_in(optimizer, list(swapin_parameters.values()), swapin_optim_state)
    live_state = optimizer.state
    snapshots = [dict(group) for group in optimizer.param_groups]
    try:
        state = defaultdict(dict)
        packed = swapin_optim_state["state"]
        for live, swap, params in plan:
            live.update({k: v for k, v in swap.items() if k != "params"})
            live["params"] = params
            for p, packed_id in zip(params, swap["params"]):
                state[p] = dict(packed.get(packed_id, {}))
        optimizer.state = state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = live_state
