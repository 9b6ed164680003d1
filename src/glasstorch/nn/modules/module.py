"""nn.Module: parameters, buffers and submodules registered by attribute, hooks, state_dict.

Assigning a Parameter, a Module or a Buffer to an attribute registers it (in `_parameters`,
`_modules`, `_buffers`); every traversal (parameters(), state_dict(), to(), train()) walks
those ordered dicts, so the order of registration is the order of the state_dict, as in
PyTorch. `__call__` runs forward between the forward pre-hooks and hooks; full backward hooks
wrap the inputs and outputs in an identity autograd Function whose graph node sees the
gradients with respect to the module's inputs and outputs.
"""
from __future__ import annotations

import functools
import itertools
import threading
import types
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ...autograd import grad_mode
from ...autograd.function import Function
from ...autograd.hooks import RemovableHandle, _ids
from ...core import dtype as dt
from ...core.tensor import Tensor
from ..parameter import Buffer, Parameter

# as in torch, the global hook registrars stay in nn.modules.module (not re-exported)
__all__ = ["Module"]

_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: dict = {}
_global_forward_hooks_with_kwargs: dict = {}
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _Handle(RemovableHandle):
    """A RemovableHandle over id-keyed hook dicts (ids from the same global counter)."""

    def __init__(self, hooks: dict, *extra: dict):
        self.id = next(_ids)
        self._dicts = (hooks,) + extra

    def remove(self) -> None:
        for d in self._dicts:
            d.pop(self.id, None)


_UNSET = object()


def _touch(module) -> None:
    """Move the module's attribute counter (`Module._attr_version`)."""
    module.__dict__["_attr_version"] = module._attr_version + 1


def _add_hook(hooks: OrderedDict, fn, prepend: bool = False, extra=()) -> _Handle:
    handle = _Handle(hooks, *extra)
    hooks[handle.id] = fn
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _typename(obj) -> str:
    """torch.typename: 'torch.FloatTensor' for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


_loading = threading.local()     # .pending: the changes a load_state_dict defers, or None


def _change(apply) -> None:
    """Run a load's change now, or, inside load_state_dict, once every entry is checked."""
    pending = getattr(_loading, "pending", None)
    if pending is None:
        apply()
    else:
        pending.append(apply)


def _copy_failed(key, param, value, args) -> str:
    return (f'While copying the parameter named "{key}", whose dimensions in the model are '
            f"{param.size()} and whose dimensions in the checkpoint are {value.size()}, an "
            f"exception occurred : {args}.")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys it could not match."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# ---- global hooks ------------------------------------------------------------------------

def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """hook(module, args) before every module's forward (before the module's own hooks)."""
    return _add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """hook(module, args, output) after every module's forward."""
    handle = _add_hook(_global_forward_hooks, hook, extra=(
        _global_forward_hooks_with_kwargs, _global_forward_hooks_always_called))
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """hook(module, grad_output) before every module's input gradients are computed."""
    return _add_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """hook(module, grad_input, grad_output) once every module's input gradients exist."""
    return _add_hook(_global_backward_hooks, hook)


# ---- full backward hooks -----------------------------------------------------------------

class BackwardHookFunction(Function):
    """Identity on its tensor arguments: its graph node is where module backward hooks run."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args
                                      if isinstance(a, Tensor) and not a._requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class _BackwardHook:
    """Calls a module's full backward (pre-)hooks from the nodes wrapping its inputs and
    outputs: the output node's pre-hook sees grad_output, the input node's post-hook sees
    grad_input (one entry per positional argument, None where there is no gradient)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack(indices, values, size):
        out = [None] * size
        for i, v in zip(indices, values):
            out[i] = v
        return tuple(out)

    @staticmethod
    def _unpack(indices, values):
        return tuple(values[i] for i in indices)

    def _wrap(self, args, attach):
        """Pass the tensors of args through BackwardHookFunction and attach hooks to its node."""
        single = not isinstance(args, tuple)
        items = (args,) if single else args
        idx = [i for i, a in enumerate(items) if isinstance(a, Tensor)]
        tensors = [items[i] for i in idx]
        if not (grad_mode.is_grad_enabled() and any(t._requires_grad for t in tensors)):
            return args, None, len(items)
        wrapped = BackwardHookFunction.apply(*tensors)
        if not isinstance(wrapped, tuple):
            wrapped = (wrapped,)
        node = next(t.grad_fn for t in wrapped if t.grad_fn is not None)
        attach(node)
        new = list(items)
        for i, t in zip(idx, wrapped):
            new[i] = t
        return (new[0] if single else type(args)(new) if not hasattr(args, "_fields")
                else type(args)(*new)), idx, len(items)

    def setup_input_hook(self, args):
        def attach(node):
            node.register_hook(self._input_hook)
        result, self.input_tensors_index, self.n_inputs = self._wrap(args, attach)
        return result

    def setup_output_hook(self, result):
        def attach(node):
            node.register_prehook(self._output_hook)
        wrapped, self.output_tensors_index, self.n_outputs = self._wrap(result, attach)
        return wrapped

    def _input_hook(self, grad_inputs, _grad_outputs):
        if self.grad_outputs is None:   # the gradient reached the inputs without passing
            return None                 # through the outputs (or the hooks already ran)
        if not self.user_hooks:
            self.grad_outputs = None
            return None
        packed = self._pack(self.input_tensors_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            res = hook(self.module, packed, self.grad_outputs)
            if res is None:
                continue
            if not isinstance(res, tuple):
                res = (res,)
            if len(res) != len(packed):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(res)}, but expected {len(packed)}")
            packed = res
        self.grad_outputs = None
        return self._unpack(self.input_tensors_index, packed)

    def _output_hook(self, grads):
        grads = tuple(grads) + (None,) * (len(self.output_tensors_index) - len(grads))
        self.grad_outputs = self._pack(self.output_tensors_index, grads, self.n_outputs)
        for hook in self.user_pre_hooks:
            res = hook(self.module, self.grad_outputs)
            if res is None:
                continue
            if not isinstance(res, tuple):
                res = (res,)
            if len(res) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(res)}, but expected "
                                   f"{len(self.grad_outputs)}")
            self.grad_outputs = res
        new = self._unpack(self.output_tensors_index, self.grad_outputs)
        if self.input_tensors_index is None:   # no input needs grad: fire on outputs alone
            warnings.warn(      # (torch warns here even when only pre-hooks are registered)
                "Full backward hook is firing when gradients are computed with respect to "
                "module outputs since no inputs require gradients. See https://docs."
                "pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
                "register_full_backward_hook for more details.", stacklevel=5)
            grad_inputs = self._pack([], [], self.n_inputs)
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return new


# ---- Module ------------------------------------------------------------------------------

def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                              '"forward" function')


class Module:
    """Base class of every layer: holds parameters, buffers and submodules by name."""

    dump_patches = False
    _version = 1
    # Moved by every change of the module's attributes and every hook registered on it: the
    # compiler replays a compiled module's graph without its Python only while the counters
    # of its modules stand still (compiler/replay.py).
    _attr_version = 0
    training: bool
    call_super_init = False
    forward = _forward_unimplemented

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but"
                            f" {len(args) + 1} were given")
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_is_full_backward_hook", None)
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        setattr_("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ---- registration --------------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (in the state_dict if persistent)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Add a Parameter (or None, keeping the name) to this module."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as"
                             " a function of another Tensor, compute the value in the "
                             "forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Add a child module (or None) under `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias of add_module."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> "Module":
        """The submodule at a dotted path ('' is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Replace (or with strict=False also add) the submodule at a dotted path."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        *path, name = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def _owner_and_name(self, target: str):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        return mod, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path such as 'layer.0.weight'."""
        mod, name = self._owner_and_name(target)
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as 'bn.running_mean'."""
        mod, name = self._owner_and_name(target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    # ---- attribute protocol --------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        if d.get(name, _UNSET) is not value:
            _touch(self)
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(name, d, d["_buffers"], d["_modules"], d["_non_persistent_buffers_set"])
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(name, d, d["_parameters"], d["_buffers"],
                         d["_non_persistent_buffers_set"])
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            if isinstance(value, Buffer):
                persistent = value.persistent
                d.pop(name, None)
            else:
                persistent = name not in d["_non_persistent_buffers_set"]
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        _touch(self)
        if name in d.get("_parameters", ()):
            del d["_parameters"][name]
        elif name in d.get("_buffers", ()):
            del d["_buffers"][name]
            d["_non_persistent_buffers_set"].discard(name)
        elif name in d.get("_modules", ()):
            del d["_modules"][name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(type(self)) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_forward_pre_hooks_with_kwargs", "_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    # ---- traversal -----------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and v in memo):
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True):
        """Every parameter of this module (and its descendants), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """(dotted name, parameter) pairs in state_dict order."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) pairs in pre-order, self first (named prefix)."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ---- modes and gradients -------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode on this module and every descendant."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's forward in place with `torch.compile(*args, **kwargs)`;
        hooks keep running eagerly around it. The compiled forward is bound as a method, so
        a copy of the module calls it on the copy."""
        from ...compiler.eval_frame import compile as compile_
        self.forward = types.MethodType(compile_(type(self).forward, *args, **kwargs), self)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None by default)."""
        for p in self.parameters():
            g = p._grad
            if g is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def share_memory(self) -> "Module":
        """Move every parameter and buffer into shared memory (Tensor.share_memory_), so
        processes the module is sent to (Hogwild training) update the same tensors."""
        return self._apply(lambda t: t.share_memory_())

    # ---- conversion ----------------------------------------------------------------------
    def _apply(self, fn, recurse: bool = True) -> "Module":
        """Apply fn to every parameter, grad and buffer; parameters keep their identity."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with grad_mode.no_grad():
                new = fn(param)
            if new is not param:
                param.data = new
            g = param._grad
            if g is not None:
                with grad_mode.no_grad():
                    new_g = fn(g)
                if new_g is not g:
                    g.data = new_g
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn) -> "Module":
        """Call fn on every submodule (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move/cast parameters and buffers: to(device), to(dtype), to(device, dtype),
        to(tensor); only floating point and complex tensors change dtype."""
        from ...ops.copying.copies import _parse_to_args
        dtype, device, non_blocking, _, memory_format = _parse_to_args(None, args,
                                                                        dict(kwargs))
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")
            if dtype.is_complex:
                warnings.warn("Complex modules are a new feature under active development "
                              "whose design may change, and some modules might not work as "
                              "expected when using complex tensors as parameters or "
                              "buffers.", stacklevel=2)

        from ...core.tensor import preserve_format

        def convert(t):
            kw = {}
            if device is not None:
                kw["device"] = device
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                kw["dtype"] = dtype
            if memory_format is not preserve_format and t.dim() in (4, 5):
                kw["memory_format"] = memory_format
            return t.to(non_blocking=non_blocking, **kw) if kw else t

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Move to device with uninitialised storage (for modules built on 'meta')."""
        from ...ops.creation.factories import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cuda(self, device=None) -> "Module":
        return self._apply(lambda t: t.cuda(device))

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type) -> "Module":
        return self._apply(lambda t: t.type(dst_type))

    def _cast_floats(self, dtype) -> "Module":
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> "Module":
        return self._cast_floats(dt.float32)

    def double(self) -> "Module":
        return self._cast_floats(dt.float64)

    def half(self) -> "Module":
        return self._cast_floats(dt.float16)

    def bfloat16(self) -> "Module":
        return self._cast_floats(dt.bfloat16)

    # ---- state_dict ----------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of every parameter and persistent buffer by dotted name (detached
        unless keep_vars), with `_metadata` holding each module's version."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch."
                          "nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            names = ("destination", "prefix", "keep_vars")
            given = dict(zip(names, args))
            destination = given.get("destination", destination)
            prefix = given.get("prefix", prefix)
            keep_vars = given.get("keep_vars", keep_vars)
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """Copy this module's own entries of state_dict into its parameters and buffers."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local_state = {k: v for k, v in itertools.chain(
            self._parameters.items(),
            ((k, b) for k, b in self._buffers.items()
             if k not in self._non_persistent_buffers_set)) if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if len(param._shape) == 0 and len(value._shape) == 1:
                value = value[0]    # 0-dim parameters saved as 1-element tensors load too
            if value._shape != param._shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model"
                                  f" is {param.shape}.")
                continue
            if not assign and value.device.type == "meta" and param.device.type != "meta":
                error_msgs.append(_copy_failed(key, param, value,
                                               ("Cannot copy out of meta tensor; no data!",)))
                continue
            _change(functools.partial(self._load_one, name, key, param, value, assign,
                                      error_msgs))
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                _change(functools.partial(self.set_extra_state, state_dict[extra_key]))
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix):].split(".", 1)
                    if len(head) > 1:
                        if head[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif head[0] not in local_state:
                        unexpected_keys.append(key)

    def _load_one(self, name, key, param, value, assign, error_msgs) -> None:
        """Copy (or assign) one checked entry of a state_dict into this module."""
        try:
            with grad_mode.no_grad():
                if assign:
                    if isinstance(param, Parameter):
                        if not isinstance(value, Parameter):
                            value = Parameter(value, requires_grad=param._requires_grad)
                        else:
                            value.requires_grad_(param._requires_grad)
                    setattr(self, name, value)
                else:
                    param.copy_(value)
        except Exception as ex:
            error_msgs.append(_copy_failed(key, param, value, ex.args))

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from state_dict in place (or assign them); returns
        the missing and unexpected keys, raising on them when strict.

        Every entry is checked before any is copied (unlike PyTorch, which copies as it
        goes): a size mismatch, a non-tensor, or (strict) a missing or unexpected key
        raises with the module as it was. Only when load_state_dict_post_hooks are
        registered, which may forgive missing or unexpected keys and expect to see the
        loaded values, are the checked copies made before those hooks run."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        visited: list = []          # post-order, as PyTorch runs the post hooks

        def load(module, local_sd, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_sd, prefix, local_metadata, True, missing,
                                         unexpected, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_sd.items()
                                 if k.startswith(child_prefix)}, child_prefix)
            visited.append(module)

        outer, pending = getattr(_loading, "pending", None), []
        _loading.pending = pending
        try:
            load(self, state_dict)
        finally:
            _loading.pending = outer
        hooked = any(m._load_state_dict_post_hooks for m in visited)
        if not error_msgs and not (strict and (missing or unexpected) and not hooked):
            for change in pending:                  # everything checked: now change
                change()
        keys = _IncompatibleKeys(missing, unexpected)
        for module in visited:
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise RuntimeError("Hooks registered with "
                                       "``register_load_state_dict_post_hook`` are not "
                                       "expected to return new values, if incompatible_keys "
                                       "need to be modified, it should be done inplace.")
        if strict:
            if unexpected:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
            hint = _prefix_hint(missing, unexpected)
            if hint:
                error_msgs.append(hint)
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """hook(module, prefix, keep_vars) before state_dict collects this module."""
        return _add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata) after state_dict; may edit it."""
        return _add_hook(self._state_dict_hooks, hook)

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) before this module loads its entries."""
        return _add_hook(self._load_state_dict_pre_hooks,
                         functools.partial(hook, self))

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        return _add_hook(self._load_state_dict_pre_hooks,
                         functools.partial(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """hook(module, incompatible_keys) after load_state_dict; edit the keys in place."""
        return _add_hook(self._load_state_dict_post_hooks, hook)

    # ---- forward hooks and __call__ ------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) -> None | new args (or (module, args, kwargs) -> None |
        (args, kwargs) with with_kwargs) before forward."""
        _touch(self)
        handle = _add_hook(self._forward_pre_hooks, hook, prepend,
                           (self._forward_pre_hooks_with_kwargs,))
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) -> None | new output after forward (always_call: even
        when forward raises)."""
        _touch(self)
        handle = _add_hook(self._forward_hooks, hook, prepend,
                           (self._forward_hooks_with_kwargs,
                            self._forward_hooks_always_called))
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None | new grad_output before the input grads."""
        _touch(self)
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None | new grad_input."""
        _touch(self)
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Legacy hook(module, grad_input, grad_output) on the output's grad_fn: it sees that
        node's gradients, which are the module's only when forward is a single op. Prefer
        register_full_backward_hook."""
        _touch(self)
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return _add_hook(self._backward_hooks, hook)

    def _attach_non_full_backward_hooks(self, args, result) -> None:
        var = result
        while not isinstance(var, Tensor):
            var = next(v for v in var.values() if isinstance(v, Tensor)) \
                if isinstance(var, dict) else var[0]
        grad_fn = var.grad_fn
        if grad_fn is None:
            return
        for hook in self._backward_hooks.values():
            grad_fn.register_hook(functools.partial(hook, self))
        _warn_non_full_backward_hook(args, result, grad_fn)

    def _backward_hook_lists(self):
        full = list(_global_backward_hooks.values())
        if self._is_full_backward_hook is True:
            full += list(self._backward_hooks.values())
        pre = list(_global_backward_pre_hooks.values()) + list(
            self._backward_pre_hooks.values())
        return full, pre

    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                or self._forward_pre_hooks or _global_backward_pre_hooks
                or _global_backward_hooks or _global_forward_hooks
                or _global_forward_pre_hooks):
            return forward_call(*args, **kwargs)
        result = None
        called_always = set()
        try:
            for hook_id, hook in (*_global_forward_pre_hooks.items(),
                                  *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if isinstance(res, tuple) and len(res) == 2:
                            args, kwargs = res
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {res}.")
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            full, pre = self._backward_hook_lists()
            bw_hook = None
            if full or pre:
                bw_hook = _BackwardHook(self, full, pre)
                args = bw_hook.setup_input_hook(args)
            result = forward_call(*args, **kwargs)
            for hook_id, hook in (*_global_forward_hooks.items(),
                                  *self._forward_hooks.items()):
                if (hook_id in self._forward_hooks_always_called
                        or hook_id in _global_forward_hooks_always_called):
                    called_always.add(hook_id)
                if (hook_id in self._forward_hooks_with_kwargs
                        or hook_id in _global_forward_hooks_with_kwargs):
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if self._is_full_backward_hook is False and self._backward_hooks:
                self._attach_non_full_backward_hooks(args, result)
            return result
        except Exception:
            for hook_id, hook in (*_global_forward_hooks.items(),
                                  *self._forward_hooks.items()):
                if hook_id in called_always or not (
                        hook_id in self._forward_hooks_always_called
                        or hook_id in _global_forward_hooks_always_called):
                    continue
                try:
                    if (hook_id in self._forward_hooks_with_kwargs
                            or hook_id in _global_forward_hooks_with_kwargs):
                        res = hook(self, args, kwargs, result)
                    else:
                        res = hook(self, args, result)
                    if res is not None:
                        result = res
                except Exception as e:
                    warnings.warn("module forward hook with ``always_call=True`` raised an "
                                  "exception that was silenced as another error was raised "
                                  f"in forward: {e}", stacklevel=2)
            raise

    __call__ = _call_impl

    # ---- repr ----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in its repr (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _warn_non_full_backward_hook(inputs, result, grad_fn) -> None:
    """Say when a legacy backward hook cannot see the module's real gradients."""
    def tensors(x):
        if isinstance(x, Tensor):
            return (x,)
        if isinstance(x, tuple) and all(isinstance(i, Tensor) for i in x):
            return x
        return None

    outs, ins = tensors(result), tensors(inputs)
    if outs is None:
        msg = ("Using non-full backward hooks on a Module that does not return a single Tensor "
               "or a tuple of Tensors is deprecated and will be removed in future versions. "
               "This hook will be missing some of the grad_output. Please use "
               "register_full_backward_hook to get the documented behavior.")
    elif ins is None:
        msg = ("Using non-full backward hooks on a Module that does not take as input a single "
               "Tensor or a tuple of Tensors is deprecated and will be removed in future "
               "versions. This hook will be missing some of the grad_input. Please use "
               "register_full_backward_hook to get the documented behavior.")
    else:
        out_fns = {r.grad_fn for r in outs if r.grad_fn is not None}
        if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
            msg = ("Using a non-full backward hook when outputs are nested in python data "
                   "structure is deprecated and will be removed in future versions. This hook "
                   "will be missing some grad_output.")
        elif len(out_fns) > 1:
            msg = ("Using a non-full backward hook when outputs are generated by different "
                   "autograd Nodes is deprecated and will be removed in future versions. This "
                   "hook will be missing some grad_output. Please use "
                   "register_full_backward_hook to get the documented behavior.")
        elif {i.grad_fn for i in ins if i.grad_fn is not None} != {
                n for n, _ in grad_fn.next_functions}:
            msg = ("Using a non-full backward hook when the forward contains multiple autograd "
                   "Nodes is deprecated and will be removed in future versions. This hook will "
                   "be missing some grad_input. Please use register_full_backward_hook to get "
                   "the documented behavior.")
        else:
            return
    warnings.warn(msg, FutureWarning, stacklevel=4)


def _remove_from(name, *containers) -> None:
    for c in containers:
        if name in c:
            if isinstance(c, dict):
                del c[name]
            else:
                c.discard(name)


def _prefix_hint(missing, unexpected) -> str:
    """glasstorch: explain a checkpoint whose keys all carry a wrapper's prefix (or lack it)."""
    if not missing or not unexpected:
        return ""
    for pre, who in (("module.", "DataParallel/DistributedDataParallel"),
                     ("_orig_mod.", "torch.compile")):
        if all(k.startswith(pre) for k in unexpected) and \
                set(missing) <= {k[len(pre):] for k in unexpected}:
            return (f"Hint (glasstorch): every unexpected key is a missing key with the "
                    f"prefix '{pre}' added by {who}; strip it before loading: "
                    f"{{k.removeprefix('{pre}'): v for k, v in state_dict.items()}}")
        if all(k.startswith(pre) for k in missing) and \
                set(unexpected) <= {k[len(pre):] for k in missing}:
            return (f"Hint (glasstorch): every missing key is an unexpected key with the "
                    f"prefix '{pre}' ({who} wrapper); load into the wrapped module instead, "
                    f"or add the prefix to the checkpoint's keys")
    return ""
