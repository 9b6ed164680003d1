"""`torch.fx._symbolic_trace`: Tracer, `symbolic_trace` and `wrap`.

Tracing calls the module's `forward` once with a Proxy per argument. For the duration,
three things are patched and then restored: `nn.Module.__call__` (a leaf module becomes a
call_module node instead of being traced through), `nn.Module.__getattr__` (parameters and
buffers read as `self.w` become get_attr nodes), and the globals named by `wrap()` or the
`autowrap_modules` (a call with a Proxy argument becomes a call_function node).
"""
from __future__ import annotations

import builtins
import functools
import inspect
import math
import types
from typing import Any, Callable

from ..core.tensor import Tensor
from ..nn.modules.module import Module
from ..nn.modules.container import Sequential
from .graph import Graph
from .graph_module import GraphModule
from .proxy import Proxy, TracerBase


class _ConcreteArgPlaceholder:
    def __repr__(self):
        return "PH"


PH = _ConcreteArgPlaceholder()     # in concrete_args: "this one stays an input"

# (globals dict, name) of every function registered with wrap().
_wrapped_fns_to_patch: dict = {}


def wrap(fn_or_name):
    """Call at module scope: calls of this free function (or builtin, by name) are
    recorded as call_function nodes instead of being traced through."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable "
                           "or string name")
    if callable(fn_or_name):
        if fn_or_name.__code__.co_name == "<lambda>":
            raise AssertionError("wrapped function must have a name")
        name = fn_or_name.__code__.co_name
    else:
        name = fn_or_name
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def _recording(orig_fn: Callable) -> Callable:
    """`orig_fn`, except that a call with a Proxy among its arguments is recorded."""
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _first_proxy(args + tuple(kwargs.values()))
        if proxy is not None:
            result = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            result.node.meta["is_wrapped"] = True
            return result
        return orig_fn(*args, **kwargs)
    return wrapped


def _first_proxy(values: tuple):
    for v in values:
        if isinstance(v, Proxy):
            return v
    return None


class _Patcher:
    """Sets attributes for the trace and puts every one back afterwards."""

    def __init__(self):
        self._undo: list = []

    def patch(self, owner, name: str, value, *, is_dict: bool = False) -> None:
        if is_dict:
            had, old = name in owner, owner.get(name)
            owner[name] = value
            self._undo.append(lambda: owner.__setitem__(name, old) if had else owner.pop(name))
        else:
            old = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(
                owner, name)
            setattr(owner, name, value)
            self._undo.append(lambda: setattr(owner, name, old) if old is not _MISSING
                              else delattr(owner, name))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()


_MISSING = object()


class Tracer(TracerBase):
    """Turns a module or function into a Graph by running it on Proxies. Subclass it to
    change which modules stay opaque (`is_leaf_module`) or how values become arguments
    (`create_arg`)."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False):
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for module in autowrap_modules for name, value in vars(module).items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_modules = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.module_stack: dict = {}

    # ---- what becomes a node ------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """glasstorch's own modules (except Sequential) are recorded as call_module;
        user modules are traced through."""
        return (m.__module__.startswith("glasstorch.nn")
                and not isinstance(m, Sequential))

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of `mod` inside the root."""
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict):
        """A leaf module becomes one call_module node; any other is traced through."""
        module_qualified_name = self.path_of_module(m)
        self.module_stack[module_qualified_name] = (module_qualified_name, type(m))
        try:
            if not self.is_leaf_module(m, module_qualified_name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", module_qualified_name, args, kwargs)
        finally:
            self.module_stack.pop(module_qualified_name, None)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """A parameter or buffer read during the trace becomes a get_attr Proxy (one per
        attribute, reused)."""
        if isinstance(attr_val, Tensor):
            path = self._tensor_paths.get(id(attr_val))
            if path is not None:
                if path not in parameter_proxy_cache:
                    parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {})
                return parameter_proxy_cache[path]
        return attr_val

    def create_arg(self, a) -> Any:
        """Tensors the root holds become get_attr nodes; other tensors are stored on the
        root as `_tensor_constant<n>` first."""
        if isinstance(a, Tensor):
            path = self._tensor_paths.get(id(a))
            if path is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                path = f"_tensor_constant{i}"
                setattr(self.root, path, a)
                self._tensor_paths[id(a)] = path
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, Module):
            raise NotImplementedError("a Module cannot be an argument of a traced call: "
                                      f"{type(a).__name__}")
        return super().create_arg(a)

    # ---- the trace ----------------------------------------------------------------------
    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """Run `root` (a Module's forward, or a function) on Proxies; return the Graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self._module_paths = {id(m): name for name, m in self.root.named_modules()}
        self._tensor_paths: dict = {}
        for name, t in self.root.named_buffers():
            self._tensor_paths.setdefault(id(t), name)
        for name, t in self.root.named_parameters():
            self._tensor_paths.setdefault(id(t), name)
        for name, m in self.root.named_modules():
            for attr, value in vars(m).items():
                if isinstance(value, Tensor):
                    self._tensor_paths.setdefault(id(value), f"{name}.{attr}" if name else attr)
        is_module = isinstance(root, Module)
        args, kwargs = self._create_args_for_root(fn, is_module, concrete_args)
        if _has_var_parameters(fn):
            fn = _all_positional(fn)      # the *args and **kwargs Proxies pass as one value
            args, kwargs = args + list(kwargs.values()), {}
        parameter_proxy_cache: dict = {}
        tracer = self
        original_getattr = Module.__getattr__
        original_call = Module.__call__

        def module_getattr_wrapper(mod, attr):
            return tracer.getattr(attr, original_getattr(mod, attr), parameter_proxy_cache)

        def module_call_wrapper(mod, *args, **kwargs):
            forward = functools.partial(original_call, mod)
            return tracer.call_module(mod, forward, args, kwargs)

        with _Patcher() as patcher:
            patcher.patch(Module, "__getattr__", module_getattr_wrapper)
            patcher.patch(Module, "__call__", module_call_wrapper)
            self._patch_wrapped_functions(patcher, fn.__globals__)
            result = fn(self.root, *args, **kwargs) if is_module else fn(*args, **kwargs)
        self.create_node("output", "output", (self.create_arg(result),), {})
        return self.graph

    def _patch_wrapped_functions(self, patcher: _Patcher, fn_globals: dict) -> None:
        for (_, name), frame_dict in _wrapped_fns_to_patch.items():
            if name not in frame_dict and hasattr(builtins, name):
                original = getattr(builtins, name)
            else:
                original = frame_dict[name]
            patcher.patch(frame_dict, name, _recording(original), is_dict=True)
        for namespace in [fn_globals] + [vars(m) for m in self._autowrap_modules]:
            for name, value in list(namespace.items()):
                if not name.startswith("_") and id(value) in self._autowrap_function_ids:
                    patcher.patch(namespace, name, _recording(value), is_dict=True)

    def _create_args_for_root(self, fn: Callable, is_module: bool,
                              concrete_args: dict | None) -> tuple:
        """One placeholder per parameter of `fn` (after `self`), named by it (`*args` and
        `**kwargs` last, as one placeholder each); a parameter in `concrete_args` is fixed to
        its value. Returns fn's (args, kwargs)."""
        signature = inspect.signature(fn)
        parameters = list(signature.parameters.values())
        if is_module:
            parameters = parameters[1:]
        # The code object's order, which `_all_positional` keeps: *args and **kwargs last.
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        parameters.sort(key=lambda p: variadic.index(p.kind) + 1 if p.kind in variadic else 0)
        concrete_args = dict(concrete_args or {})
        args, kwargs = [], {}
        for p in parameters:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                stars = "*" if p.kind == p.VAR_POSITIONAL else "**"
                args.append(self.proxy(self.graph.placeholder(f"{stars}{p.name}")))
                continue
            if p.name in concrete_args and concrete_args[p.name] is not PH:
                self.graph.placeholder(f"{p.name}_1")
                value = concrete_args[p.name]
            else:
                default = p.default if p.default is not p.empty else inspect.Signature.empty
                type_expr = p.annotation if p.annotation is not p.empty else None
                node = self.graph.placeholder(p.name, type_expr=type_expr,
                                              default_value=default)
                value = self.proxy(node)
            if p.kind == p.KEYWORD_ONLY and not _has_var_parameters(fn):
                kwargs[p.name] = value
            else:
                args.append(value)
        return args, kwargs


def _has_var_parameters(fn: Callable) -> bool:
    return bool(fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))


def _all_positional(fn: Callable) -> Callable:
    """A copy of `fn` whose parameters, keyword-only, `*args` and `**kwargs` included, are
    all plain positional ones in their order of declaration, so that one Proxy can stand
    for the whole `*args` tuple (as in PyTorch)."""
    code = fn.__code__
    count = (code.co_argcount + code.co_kwonlyargcount
             + bool(code.co_flags & inspect.CO_VARARGS)
             + bool(code.co_flags & inspect.CO_VARKEYWORDS))
    code = code.replace(co_argcount=count, co_kwonlyargcount=0,
                        co_flags=code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def symbolic_trace(root, concrete_args: dict | None = None) -> GraphModule:
    """Trace `root` (an nn.Module or a function) into a GraphModule."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

