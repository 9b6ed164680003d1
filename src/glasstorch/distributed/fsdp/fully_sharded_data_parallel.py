"""FullyShardedDataParallel: each rank keeps only a shard of the parameters, of their
gradients and so of the optimizer's state (ZeRO's idea), and gathers the whole parameters
only while they are used.

A unit (the wrapped module, or each submodule an auto_wrap_policy picks) flattens its
parameters into one vector, pads it to a multiple of the world size and keeps its rank's
slice as the unit's only Parameter, `_flat_param`: the optimizer sees shards. Forward
all-gathers the flat vector and points the submodules' attributes at views of it; the
gather's backward reduce-scatters the flat gradient, so each rank receives the average of its
own slice. With FULL_SHARD the gathered vector is dropped when the unit's forward returns:
tensors the forward saved for backward that are views of it are packed as (offset, shape,
stride) by saved-tensor hooks, and the unit gathers again when backward first needs one.
SHARD_GRAD_OP keeps the gathered parameters from forward through backward; NO_SHARD keeps
whole parameters everywhere and all-reduces gradients, as DistributedDataParallel."""
from __future__ import annotations

import contextlib
import enum
from collections import OrderedDict

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...autograd.saved_hooks import saved_tensor_hooks, saved_tensors_hooks
from ...nn.modules.module import Module, _change
from ...nn.parameter import Parameter
from ...ops.shape.joining import cat
from .wrap import ModuleWrapPolicy

__all__ = ["FullyShardedDataParallel", "ShardingStrategy"]


class ShardingStrategy(enum.Enum):
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


def _dist():
    from glasstorch import distributed
    return distributed


_WRAPPED = "_fsdp_wrapped_module"
_gathered: dict = {}        # storage address of a gathered flat vector -> its unit, in forward


class _ParamInfo:
    """Where one original parameter lives: its module and name, and its slice of the flat."""

    __slots__ = ("module", "name", "fqn", "shape", "offset", "numel")

    def __init__(self, module, name, fqn, shape, offset, numel):
        self.module, self.name, self.fqn = module, name, fqn
        self.shape, self.offset, self.numel = shape, offset, numel


class _GatherFlat(Function):
    """shard -> the whole flat vector; backward: the flat gradient -> this rank's slice of
    its average over ranks."""

    @staticmethod
    def forward(ctx, shard, unit):
        ctx.unit = unit
        return unit._gather(shard)

    @staticmethod
    def backward(ctx, grad):
        return ctx.unit._reduce_grad(grad), None


class _Repacked:
    """A saved view of a gathered flat vector, kept as its geometry instead of its memory."""

    __slots__ = ("unit", "offset", "shape", "stride")

    def __init__(self, unit, t):
        self.unit, self.offset, self.shape, self.stride = (unit, t.storage_offset(),
                                                           tuple(t.shape), t.stride())


class _ReshardHooks(saved_tensors_hooks):
    """Pack views of gathered parameters as geometry; anything else goes to the hooks that
    were open before (or is kept as it is). The outermost FULL_SHARD unit in forward opens
    them; units inside it find them open."""

    open = 0

    def __enter__(self):
        _ReshardHooks.open += 1
        return super().__enter__()

    def __exit__(self, *exc):
        _ReshardHooks.open -= 1
        return super().__exit__(*exc)

    def __init__(self):
        outer = saved_tensor_hooks.stack[-1] if saved_tensor_hooks.stack else None

        def pack(t):
            unit = _gathered.get(t.untyped_storage().data_ptr())
            if unit is not None:
                return _Repacked(unit, t)
            return (outer, outer[0](t)) if outer is not None else (None, t)

        def unpack(packed):
            if isinstance(packed, _Repacked):
                return packed.unit._regather().as_strided(packed.shape, packed.stride,
                                                          packed.offset)
            hooks, value = packed
            return hooks[1](value) if hooks is not None else value

        super().__init__(pack, unpack)


class FullyShardedDataParallel(Module):
    """torch.distributed.fsdp.FullyShardedDataParallel on glasstorch.distributed."""

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=None, mixed_precision=None,
                 ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states=None, device_mesh=None):
        super().__init__()
        dist = _dist()
        if device_mesh is not None:
            if device_mesh.ndim != 1:
                raise NotImplementedError("FSDP over a 2-D device mesh is hybrid sharding, "
                                          "which glasstorch does not support yet")
            process_group = device_mesh.get_group()
        group = process_group if process_group is not None else dist.group.WORLD
        if group is None:
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group.")
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        if strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
            raise NotImplementedError(f"{strategy} needs a 2-D device mesh of nodes and GPUs; "
                                      "glasstorch's FSDP shards over one process group")
        for name, value in (("cpu_offload", cpu_offload), ("mixed_precision", mixed_precision),
                            ("param_init_fn", param_init_fn), ("ignored_states", ignored_states),
                            ("ignored_modules", ignored_modules)):
            if value is not None:
                raise NotImplementedError(f"FullyShardedDataParallel({name}=...) is not "
                                          "supported by glasstorch yet")
        self.process_group, self.sharding_strategy = group, strategy
        self.rank, self.world_size = dist.get_rank(group), dist.get_world_size(group)
        if auto_wrap_policy is not None:
            policy = (ModuleWrapPolicy(auto_wrap_policy) if isinstance(auto_wrap_policy, set)
                      else auto_wrap_policy)
            _auto_wrap(module, policy, dict(process_group=group, sharding_strategy=strategy,
                                            sync_module_states=sync_module_states))
        setattr(self, _WRAPPED, module)
        if sync_module_states:
            with no_grad():
                for t in _unit_tensors(module):
                    dist.broadcast(t, src=dist.get_global_rank(group, 0), group=group)
        self._sync = True
        self._pending_grad = None        # the flat gradient accumulated under no_sync()
        self._regathered = None          # gathered again for backward (FULL_SHARD)
        self._flatten(module)

    # ---- the flat parameter ----------------------------------------------------------

    @property
    def module(self):
        return getattr(self, _WRAPPED)

    def _shards(self) -> bool:
        return self.sharding_strategy is not ShardingStrategy.NO_SHARD and self.world_size > 1

    def _flatten(self, module) -> None:
        seen, params, infos, offset = {}, [], [], 0
        for prefix, mod in _modules_of_unit(module):
            for name, p in list(mod._parameters.items()):
                if p is None:
                    continue
                fqn = prefix + name
                if id(p) in seen:                         # tied: the same slice again
                    first = seen[id(p)]
                    infos.append(_ParamInfo(mod, name, fqn, first.shape, first.offset,
                                            first.numel))
                    continue
                info = _ParamInfo(mod, name, fqn, p.shape, offset, p.numel())
                seen[id(p)] = info
                infos.append(info)
                params.append(p)
                offset += p.numel()
        if len({p.requires_grad for p in params}) > 1:
            raise ValueError("FSDP does not support a mix of parameters that require grad "
                             "and parameters that do not within one unit: wrap the frozen "
                             "ones in a unit of their own")
        self._infos, self._numel = infos, offset
        if not params:
            self._flat_param = None
            return
        with no_grad():
            flat = cat([p.detach().reshape(-1) for p in params])
            padded = -(-offset // self.world_size) * self.world_size if self._shards() else offset
            if padded > offset:
                flat = cat([flat, flat.new_zeros(padded - offset)])
            size = padded // self.world_size if self._shards() else padded
            self._padded, self._shard_numel = padded, size
            shard = flat[self._shard_start():self._shard_start() + size].clone()
        for info in infos:
            del info.module._parameters[info.name]
        self._flat_param = Parameter(shard, requires_grad=params[0].requires_grad)
        self._set_placeholders()

    def _shard_start(self) -> int:
        """Where this rank's slice begins in the padded flat vector."""
        return self.rank * self._shard_numel if self._shards() else 0

    def _gather(self, shard):
        if not self._shards():
            return shard.detach()
        full = shard.new_empty(self._padded)
        _dist().all_gather_into_tensor(full, shard.detach().contiguous(),
                                       group=self.process_group)
        return full

    def _regather(self):
        if self._regathered is None:
            with no_grad():
                self._regathered = self._gather(self._flat_param)
        return self._regathered

    def _reduce_grad(self, grad):
        self._regathered = None                    # the unit's backward is done with it
        if not self._sync:
            self._pending_grad = grad.clone() if self._pending_grad is None \
                else self._pending_grad + grad
            return None
        if self._pending_grad is not None:
            grad, self._pending_grad = grad + self._pending_grad, None
        dist = _dist()
        if not self._shards():
            if self.world_size > 1:
                grad = grad.contiguous()
                dist.all_reduce(grad, op=dist.ReduceOp.AVG, group=self.process_group)
            return grad
        out = grad.new_empty(self._shard_numel)
        dist.reduce_scatter_tensor(out, grad.contiguous(), group=self.process_group)
        return out.div_(self.world_size)

    def _set_views(self, full) -> None:
        for info in self._infos:
            info.module.__dict__[info.name] = \
                full[info.offset:info.offset + info.numel].view(info.shape)

    def _set_placeholders(self) -> None:
        """Outside forward a FULL_SHARD unit holds no whole parameters: its modules'
        parameter attributes are empty tensors until it gathers again."""
        empty = self._flat_param.detach().new_empty(0)
        for info in self._infos:
            info.module.__dict__[info.name] = empty

    # ---- running ---------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        if self._flat_param is None:
            return self.module(*args, **kwargs)
        full = _GatherFlat.apply(self._flat_param, self)
        self._set_views(full)
        reshard = self.sharding_strategy is ShardingStrategy.FULL_SHARD and self._shards()
        if not reshard:
            return self.module(*args, **kwargs)
        address = full.untyped_storage().data_ptr()
        _gathered[address] = self
        hooks = _ReshardHooks() if is_grad_enabled() and not _ReshardHooks.open \
            else contextlib.nullcontext()
        try:
            with hooks:
                return self.module(*args, **kwargs)
        finally:
            del _gathered[address]
            self._set_placeholders()

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            wrapped = self.__dict__.get("_modules", {}).get(_WRAPPED)
            if wrapped is None:
                raise
            return getattr(wrapped, name)

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward keeps each unit's whole flat gradient locally; the next
        backward outside adds it in before reducing."""
        units = [m for m in self.modules() if isinstance(m, FullyShardedDataParallel)]
        old = [u._sync for u in units]
        for u in units:
            u._sync = False
        try:
            yield
        finally:
            for u, s in zip(units, old):
                u._sync = s

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse: bool = True, writeback: bool = True,
                           rank0_only: bool = False, offload_to_cpu: bool = False,
                           with_grads: bool = False):
        """Within it, every unit's modules hold their whole parameters (plain tensors);
        with writeback, changes to them are kept when it ends."""
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)
                 and m._flat_param is not None]
        if not recurse:
            units = units[:1]
        fulls = []
        with no_grad():
            for u in units:
                full = u._gather(u._flat_param)
                if not u._shards():
                    full = full.clone()
                u._set_views(full)
                fulls.append(full)
        try:
            yield
        finally:
            with no_grad():
                for u, full in zip(units, fulls):
                    if writeback:
                        start = u._shard_start()
                        u._flat_param.copy_(full[start:start + u._shard_numel])
                    u._set_placeholders()

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0):
        """Clip every unit's gradient by the norm of the whole model's gradient (shards
        combined over the ranks, replicated NO_SHARD gradients counted once); returns it."""
        import math
        import glasstorch
        dist = _dist()
        sharded, replicated = [], []
        for u in self.modules():
            if isinstance(u, FullyShardedDataParallel) and u._flat_param is not None \
                    and u._flat_param.grad is not None:
                (sharded if u._shards() else replicated).append(u._flat_param.grad)
        norm_type = float(norm_type)
        with no_grad():
            if norm_type == math.inf:
                def part(gs):
                    return max((g.abs().max().float() for g in gs), default=glasstorch.tensor(0.0))
                total = part(sharded).clone()
                dist.all_reduce(total, op=dist.ReduceOp.MAX, group=self.process_group)
                total = glasstorch.maximum(total, part(replicated))
            else:
                def part(gs):
                    return sum((g.abs().float().pow(norm_type).sum() for g in gs),
                               glasstorch.tensor(0.0))
                total = part(sharded).clone()
                dist.all_reduce(total, group=self.process_group)
                total = (total + part(replicated)).pow(1.0 / norm_type)
            coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
            for g in sharded + replicated:
                g.mul_(coef.to(g.dtype))
        return total

    # ---- state_dict: the whole parameters under their original names -----------------

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if self._flat_param is not None:
            with no_grad():
                full = self._gather(self._flat_param)
            for info in self._infos:
                destination[prefix + info.fqn] = \
                    full[info.offset:info.offset + info.numel].view(info.shape).clone()
        self.module.state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """Take this unit's parameters from their original names (checked, then changed
        with the rest of the load), and hand the other entries to the wrapped module."""
        if self._flat_param is not None:
            pieces, ok = [None] * len(self._infos), True
            for i, info in enumerate(self._infos):
                key = prefix + info.fqn
                value = state_dict.pop(key, None)
                if value is None:
                    missing_keys.append(key)
                    ok = False
                elif tuple(value.shape) != tuple(info.shape):
                    error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                      f"{value.shape} from checkpoint, the shape in current "
                                      f"model is {info.shape}.")
                    ok = False
                else:
                    pieces[i] = value
            if ok:
                _change(lambda: self._load_flat(pieces))
        for key in [k for k in state_dict if k.startswith(prefix)]:
            state_dict[prefix + _WRAPPED + "." + key[len(prefix):]] = state_dict.pop(key)

    def _load_flat(self, pieces) -> None:
        with no_grad():
            flat = self._flat_param.new_zeros(self._padded)
            for info, value in zip(self._infos, pieces):
                flat[info.offset:info.offset + info.numel] = value.reshape(-1)
            start = self._shard_start()
            self._flat_param.copy_(flat[start:start + self._shard_numel])


def _modules_of_unit(module, prefix: str = ""):
    """(dotted prefix, module) for `module` and its descendants, not entering other units."""
    yield prefix, module
    for name, child in module._modules.items():
        if child is not None and not isinstance(child, FullyShardedDataParallel):
            yield from _modules_of_unit(child, prefix + name + ".")


def _unit_tensors(module):
    for _, mod in _modules_of_unit(module):
        yield from (p for p in mod._parameters.values() if p is not None)
        yield from (b for b in mod._buffers.values() if b is not None)


def _auto_wrap(module, policy, kwargs) -> int:
    """Wrap the submodules the policy picks, deepest first; returns the number of
    parameters left unwrapped in `module`'s subtree."""
    left = sum(p.numel() for p in module._parameters.values() if p is not None)
    for name, child in list(module._modules.items()):
        if child is None or isinstance(child, FullyShardedDataParallel):
            continue
        inner = _auto_wrap(child, policy, kwargs) if policy(child, True, 0) else \
            sum(p.numel() for p in child.parameters())
        if policy(child, False, inner):
            module._modules[name] = FullyShardedDataParallel(child, **kwargs)
        else:
            left += inner
    return left
