"""Optimizer: the base of every torch.optim algorithm.

It owns the parameter groups (one dict of hyper-parameters per group, defaults filled in),
the per-parameter state (a defaultdict keyed by the parameter tensor), torch's
state_dict layout (parameters renumbered 0, 1, ... across groups), the step hooks and
zero_grad. Subclasses implement `step`; updates run under no_grad with in-place ops.
"""
from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

from ..core import dtype as _dt
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor, preserve_format as _preserve
from ..autograd import is_grad_enabled, set_grad_enabled
from ..autograd.hooks import RemovableHandle
from ..ops.copying.copies import type_ as _legacy_type
from ..ops.registry import functions as F
from ..profiler import _recorder

__all__ = ["Optimizer", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a default that every param group must give itself."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: list = []
_global_post_hooks: list = []


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """hook(optimizer, args, kwargs) before every optimizer's step."""
    return RemovableHandle(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """hook(optimizer, args, kwargs) after every optimizer's step."""
    return RemovableHandle(_global_post_hooks, hook)


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return _legacy_type(obj)
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def _to_scalar(x):
    """A 1-element tensor hyper-parameter (lr, betas...) as a Python number."""
    return x.item() if isinstance(x, Tensor) else x


def _get_scalar_dtype():
    """The dtype of scalar state such as `step`: float64 only under that default dtype."""
    return _dt.float64 if _dt.get_default_dtype() == _dt.float64 else _dt.float32


def _use_grad(step):
    """Runs an optimizer's step with grad off, unless the group asked to be differentiable."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        prev = is_grad_enabled()
        try:
            set_grad_enabled(bool(self.defaults.get("differentiable", False)))
            return step(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev)

    return wrapper


def _hooked(step):
    """Calls the global and per-optimizer step pre/post hooks around `step`."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        if _recorder.collectors:        # a profile records: label the step as PyTorch does
            name = type(args[0]).__name__
            with _recorder.record_function(f"Optimizer.step#{name}.step"):
                return _run_hooked(step, args, kwargs)
        return _run_hooked(step, args, kwargs)

    wrapper.hooked = True
    return wrapper


def _run_hooked(step, args, kwargs):
    self = args[0]
    for hook in chain(list(_global_pre_hooks), list(self._optimizer_step_pre_hooks)):
        result = hook(self, args, kwargs)
        if result is not None:
            if isinstance(result, tuple) and len(result) == 2:
                args, kwargs = result
            else:
                raise RuntimeError(f"{step} must return None or a tuple of "
                                   f"(new_args, new_kwargs), but got {result}.")
    args, kwargs = _checked_first(self, args, kwargs)
    out = step(*args, **kwargs)
    for hook in chain(list(self._optimizer_step_post_hooks), list(_global_post_hooks)):
        hook(self, args, kwargs)
    return out


def _checked_first(self, args, kwargs):
    """Arrange for self._check_step() to run before the step changes anything: at once
    without a closure, else right after the closure's first call (it computes the grads)."""
    closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
    if closure is None:
        self._check_step()
        return args, kwargs
    first = [True]

    def checked_closure():
        loss = closure()
        if first[0]:
            first[0] = False
            self._check_step()
        return loss

    if "closure" in kwargs:
        return args, {**kwargs, "closure": checked_closure}
    return (args[0], checked_closure) + tuple(args[2:]), kwargs


# What a parameter's state holds (Optimizer._state_spec): a tensor of the parameter's
# shape, a one-element tensor, or a tensor of the parameter's shape that may be absent/None.
LIKE_PARAM, SCALAR, OPTIONAL_LIKE_PARAM = "like_param", "scalar", "optional_like_param"


def _is_number(x) -> bool:
    if isinstance(x, Tensor):
        return x.numel() == 1 and not x.is_complex()
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class Optimizer:
    """Base class: param groups, per-parameter state, state_dict, hooks, zero_grad."""

    # The state a step needs per parameter, as (name, kind) or (name, kind, group option
    # that must be set for it), kinds from LIKE_PARAM/SCALAR/OPTIONAL_LIKE_PARAM; None
    # where the state has another layout (LBFGS). load_state_dict and step check it first.
    _state_spec: tuple | None = None

    # Whether step() with differentiable=True builds the same graph as torch's (checked
    # against torch); the others refuse the flag rather than differ silently.
    _supports_differentiable = False

    def __init__(self, params, defaults: dict) -> None:
        if defaults.get("differentiable") and not self._supports_differentiable:
            raise RuntimeError(f"{type(self).__name__} does not support differentiable=True "
                               "in glasstorch (SGD and RAdam do)")
        self.defaults = defaults
        self._optimizer_step_pre_hooks: list = []
        self._optimizer_step_post_hooks: list = []
        self._optimizer_state_dict_pre_hooks: list = []
        self._optimizer_state_dict_post_hooks: list = []
        self._optimizer_load_state_dict_pre_hooks: list = []
        self._optimizer_load_state_dict_post_hooks: list = []
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _patch_step_function(self) -> None:
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked(cls.step)

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    _group_defaults: tuple = ()     # (option, default) pairs a subclass fills in on unpickling

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for group in self.param_groups:
            for key, value in self._group_defaults:
                group.setdefault(key, value)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, [])
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- hooks -------------------------------------------------------------------------
    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before step."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """hook(optimizer, args, kwargs), after step."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook,
                                           prepend: bool = False) -> RemovableHandle:
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    @staticmethod
    def _add_hook(hooks: list, hook, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(hooks, hook)
        if prepend:
            hooks.insert(0, hooks.pop())
        return handle

    # -- state_dict --------------------------------------------------------------------
    def state_dict(self) -> dict:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}.

        Parameters are numbered in order across the groups; state tensors are shared,
        not copied (as torch)."""
        for hook in list(self._optimizer_state_dict_pre_hooks):
            hook(self)
        index: dict[int, int] = {}
        start = 0

        def pack(group: dict) -> dict:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in list(self._optimizer_state_dict_post_hooks):
            out = hook(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads state saved by state_dict(): groups are matched by position.

        State tensors take the parameter's floating dtype and device ('step' is kept)."""
        state_dict = state_dict.copy()
        for hook in list(self._optimizer_load_state_dict_pre_hooks):
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't "
                             "match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        group_of = {k: g for g in saved_groups for k in g["params"]}
        saved_state = state_dict["state"]
        if not isinstance(saved_state, dict):
            raise ValueError("loaded state dict's 'state' must be a dict of per-parameter "
                             f"states, got {type(saved_state).__name__}")
        for k, v in saved_state.items():          # check everything before changing
            if k in id_map:
                self._check_param_state(group_of[k], id_map[k], v,
                                        f"loaded state dict: parameter {k}")

        def cast(param, value, key=None):
            if key in self._scalar_keys and _is_number(value) and not isinstance(value,
                                                                                  Tensor):
                return _scalar_state(float(value))     # older files keep `step` as a number
            if isinstance(value, Tensor):
                if key == "step":
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v

        def update_group(group: dict, new_group: dict) -> dict:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state, "param_groups": [
            update_group(g, ng) for g, ng in zip(groups, saved_groups)]})
        for hook in list(self._optimizer_load_state_dict_post_hooks):
            hook(self)

    # -- checks before a change ---------------------------------------------------------
    @property
    def _scalar_keys(self) -> frozenset:
        return frozenset(e[0] for e in self._state_spec or () if e[1] == SCALAR)

    def _check_param_state(self, group: dict, p: Tensor, state, where: str,
                           loading: bool = True) -> None:
        """Raise ValueError unless `state` is what a step of this optimizer needs for p
        (nothing, or every entry of _state_spec with the right shape)."""
        name = type(self).__name__
        if not isinstance(state, dict):
            raise ValueError(f"{where}: expected a dict of state, got {type(state).__name__}")
        if self._state_spec is None or not state:
            return
        for entry in self._state_spec:
            key, kind = entry[0], entry[1]
            if len(entry) > 2 and not group.get(entry[2]):
                continue
            value = state.get(key)
            if value is None:
                if kind == OPTIONAL_LIKE_PARAM:
                    continue
                raise ValueError(f"{where}: the state has no '{key}', which {name} needs "
                                 f"(it has {sorted(map(str, state))})")
            if kind == SCALAR:
                if not (_is_number(value) if loading else
                        isinstance(value, Tensor) and value.numel() == 1):
                    raise ValueError(f"{where}: '{key}' must be a number or a one-element "
                                     f"tensor, got {_describe(value)}")
                continue
            if not isinstance(value, Tensor):
                raise ValueError(f"{where}: '{key}' must be a tensor of the parameter's shape "
                                 f"{list(p.shape)}, got {_describe(value)}")
            if value.shape != p.shape:
                raise ValueError(f"{where}: '{key}' has shape {list(value.shape)}, but the "
                                 f"parameter's shape is {list(p.shape)}")
            if value.is_complex() and not p.is_complex():
                raise ValueError(f"{where}: '{key}' is complex ({value.dtype}) but the "
                                 f"parameter is real ({p.dtype})")
            if not loading and value.device != p.device:
                raise ValueError(f"{where}: '{key}' is on {value.device}, the parameter on "
                                 f"{p.device}")

    def _check_step(self) -> None:
        """Everything a step reads, checked before it writes: so a step that would fail
        on some parameter fails before changing any (PyTorch's fails midway)."""
        index = 0
        for g, group in enumerate(self.param_groups):
            self._check_hyperparameters(g, group)
            spec = [e[:2] for e in self._state_spec or () if len(e) < 3 or group.get(e[2])]
            for p in group["params"]:
                grad = p.grad
                if grad is not None:
                    shape, device = p._shape, p.device
                    where = grad._storage.device if grad.__class__ is Tensor else grad.device
                    if grad._shape != shape or (where is not device and where != device):
                        raise RuntimeError(
                            f"param group {g}, parameter {index}: its gradient (shape "
                            f"{list(grad.shape)} on {grad.device}) does not match the "
                            f"parameter (shape {list(p.shape)} on {device})")
                    state = self.state.get(p)
                    if state and not _state_fits(spec, p, shape, device, state):
                        self._check_param_state(group, p, state,
                                                f"param group {g}, parameter {index}",
                                                loading=False)
                index += 1

    def _check_hyperparameters(self, g: int, group: dict) -> None:
        for option, default in self.defaults.items():
            value = group.get(option)
            if _is_number(default) and not _is_number(value):
                raise TypeError(f"param group {g}: '{option}' must be a number, got "
                                f"{_describe(value)}")
            if (isinstance(default, tuple) and default and all(map(_is_number, default))
                    and not (isinstance(value, (tuple, list)) and len(value) == len(default)
                             and all(map(_is_number, value)))):
                raise TypeError(f"param group {g}: '{option}' must be a tuple of "
                                f"{len(default)} numbers, got {value!r}")

    # -- gradients and groups ----------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Sets every parameter's .grad to None (default) or zeroes it in place."""
        if _recorder.collectors:
            name = type(self).__name__
            with _recorder.record_function(f"Optimizer.zero_grad#{name}.zero_grad"):
                return self._zero_grad(set_to_none)
        return self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def step(self, closure=None):
        """Performs one optimization step (implemented by each algorithm)."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict) -> None:
        """Appends a group; missing hyper-parameters take the optimizer's defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. "
                                 "Some param names are missing")
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and not (
                    p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def _params_with_grad(self, group: dict) -> list:
        """The group's parameters that received a gradient (the others are skipped)."""
        return [p for p in group["params"] if p.grad is not None]


def _state_fits(spec, p, shape, device, state) -> bool:
    """The quick test a step makes of a parameter's state; False sends it to
    Optimizer._check_param_state, which says what is wrong (or finds it acceptable)."""
    dtype = p.dtype
    for key, kind in spec:
        value = state.get(key)
        if value is None:
            if kind != OPTIONAL_LIKE_PARAM:
                return False
        elif value.__class__ is not Tensor and not isinstance(value, Tensor):
            return False
        elif kind == SCALAR:
            if value._shape and value.numel() != 1:
                return False
        elif value._shape != shape or value.dtype is not dtype:
            return False
        else:
            where = value._storage.device if value.__class__ is Tensor else value.device
            if where is not device and where != device:
                return False
    return True


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"a tensor of shape {list(value.shape)} and dtype {value.dtype}"
    return f"{type(value).__name__} {value!r}"[:80]


def _scalar_state(value: float = 0.0):
    """A 0-dim float tensor on the CPU: how torch 2.x keeps `step` (and NAdam's mu_product)."""
    return F["tensor"](value, dtype=_get_scalar_dtype())


def _zeros_like(p):
    return F["zeros_like"](p, memory_format=_preserve)


def _check_nonneg(value, what: str) -> None:
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def _check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    _check_nonneg(lr, "learning rate")


def _check_betas(betas) -> None:
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def _closure_loss(closure):
    """Re-evaluates the model with grad on (the step itself runs under no_grad)."""
    if closure is None:
        return None
    with set_grad_enabled(True):
        return closure()


_PLAIN_DTYPES = (_dt.float32, _dt.float64)


def _plain_arrays(*tensors):
    """Whether an update may run on the tensors' memory directly: all float32 or all float64
    tensors of one shape on the CPU or one GPU (or all without data: meta or fake), none an
    inference tensor or a view whose in-place writes are checked. The element-wise optimizers
    then update in place with NumPy's out=, as PyTorch's fused CPU kernels do (no per-op
    dispatch, no tensor temporaries: a scratch array or two; on a GPU the same NumPy calls
    launch CuPy's kernels on the CuPy arrays, scratch from the caching allocator); others take
    the op-by-op path, with its checks and errors. Returns the NumPy arrays, an empty list
    without data (there the update only counts its writes, so a memory estimate sees
    what the CPU run allocates), or None. A storage of another class is one whose bytes the
    compiler's capture has not computed yet: there the update must be operators, recorded."""
    first = tensors[0]
    d, shape, device = first.dtype, first._shape, first.device
    if d not in _PLAIN_DTYPES or device.type not in ("cpu", "meta", "cuda"):
        return None
    no_data = first._storage.device.type == "meta"    # meta, or a fake on any device
    for t in tensors:
        if (t.__class__ is not Tensor and not isinstance(t, Tensor)) or t.dtype is not d \
                or t._shape != shape or t._vc is None or t._view_creation is not None \
                or t._storage.__class__ is not UntypedStorage or t._sparse is not None:
            return None
        # a plain tensor's device is its storage's (a subclass may define its own)
        where = t._storage.device if t.__class__ is Tensor else t.device
        if (where is not device and where != device) or \
                (t._storage.device.type == "meta") is not no_data:
            return None
    return [] if no_data else [t._array() for t in tensors]


def _fused(name: str, update, *args) -> None:
    """Run a fused update (NumPy on the tensors' memory, no dispatcher): while a profile
    records, it shows as an event named after PyTorch's fused kernel ("aten::_fused_sgd_")."""
    if _recorder.collectors:
        with _recorder.span(name):
            return update(*args)
    return update(*args)


def _bump(t: Tensor, times: int = 1) -> None:
    """Count `times` in-place writes on t, as the op-by-op update would."""
    t._vc.version += times


def _as_real(*tensors) -> list:
    """Complex tensors as real (..., 2) views sharing memory: the element-wise adaptive
    optimizers treat real and imaginary parts as separate coordinates, as torch does."""
    return [F["view_as_real"](t) if t is not None and t.is_complex() else t for t in tensors]
