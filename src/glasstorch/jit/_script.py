"""`torch.jit.script` and the ScriptModule / ScriptFunction classes.

glasstorch does not compile Python into TorchScript: a scripted function or module runs its
own Python, so data-dependent control flow is always right (and `is_scripting()` is False
inside it). What scripting gives is PyTorch's interface: the ScriptModule / ScriptFunction
types, `.code` (the Python source), `.graph` (an FX graph, where the code can be traced
symbolically), `save` for traced modules, `freeze`.
"""
from __future__ import annotations

import copy
import inspect
import textwrap
import typing

from ..nn.modules.module import Module

Final = typing.Final


def is_scripting() -> bool:
    """False: glasstorch runs scripted code as Python (see the module docstring)."""
    return False


def ignore(drop=False, **kwargs):
    """Mark a function to be left as Python by the compiler (everything is, here)."""
    if callable(drop):
        drop._torchscript_modifier = "ignore"
        return drop

    def decorate(fn):
        fn._torchscript_modifier = "unused" if drop else "ignore"
        return fn
    return decorate


def unused(fn):
    """Mark a method as not compiled (it still runs as Python)."""
    if isinstance(fn, property):
        return fn
    fn._torchscript_modifier = "unused"
    return fn


def export(fn):
    """Mark a method as an entry point of a scripted module."""
    fn._torchscript_modifier = "export"
    return fn


def annotate(the_type, the_value):
    """A type hint for the compiler: returns `the_value`."""
    return the_value


def script_if_tracing(fn):
    """In PyTorch, scripts `fn` when called while tracing; here `fn` runs as Python (its
    ops are recorded by the trace like any others)."""
    return fn


class ScriptFunction:
    """A scripted or traced function. A traced one runs its recorded graph."""

    def __init__(self, call, name: str, graph_module=None, source: str | None = None):
        self._call = call
        self.name = self.__name__ = self.qualified_name = name
        self._graph_module = graph_module
        self._source = source

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    @property
    def graph(self):
        if self._graph_module is None:
            raise RuntimeError(f"{self.name} was scripted, not traced: glasstorch runs its "
                               "Python, which has no graph; use torch.jit.trace for one")
        return self._graph_module.graph

    @property
    def code(self) -> str:
        if self._graph_module is not None:
            return self._graph_module.code
        return self._source

    def save(self, f, **kwargs) -> None:
        from ._serialization import save
        save(self, f, **kwargs)


class ScriptModule(Module):
    """The base of scripted and traced modules."""

    def save(self, f, **kwargs) -> None:
        from ._serialization import save
        save(self, f, **kwargs)

    def _is_frozen(self) -> bool:
        return bool(self.__dict__.get("_frozen"))


class RecursiveScriptModule(ScriptModule):
    """A scripted module: a copy of the module (sharing its parameters and submodules)
    that runs the module's own `forward`."""

    @property
    def code(self) -> str:
        original = next(c for c in type(self).__mro__ if not issubclass(c, ScriptModule))
        return textwrap.dedent(inspect.getsource(original.forward))

    @property
    def graph(self):
        from ..fx import symbolic_trace
        return symbolic_trace(self).graph


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Script a function or a module (see the module docstring): returns a ScriptFunction
    or a RecursiveScriptModule that run the original Python."""
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        scripted = copy.copy(obj)
        for name in ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"):
            if name in obj.__dict__:
                scripted.__dict__[name] = copy.copy(obj.__dict__[name])
        scripted.__class__ = type("RecursiveScriptModule",
                                  (RecursiveScriptModule, type(obj)), {})
        scripted.__dict__["original_name"] = type(obj).__name__
        return scripted
    if inspect.isclass(obj):
        raise NotImplementedError(f"torch.jit.script of a class ({obj.__name__}) is not "
                                  "supported by glasstorch; script the functions or modules "
                                  "that use it")
    if not callable(obj):
        raise RuntimeError(f"Type '{type(obj).__name__}' cannot be compiled since it is "
                           "not a function or an nn.Module")
    try:
        source = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        source = None
    return ScriptFunction(obj, getattr(obj, "__name__", "function"), source=source)


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """A frozen copy: PyTorch inlines the module's attributes as constants; here the module
    is returned as is (in eval mode, as PyTorch requires) and marked frozen."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval "
                           "mode. Please call .eval() on your module before freezing.")
    mod.__dict__["_frozen"] = True
    return mod


def optimize_for_inference(mod, other_methods=None):
    """Freeze (if not already) and return the module."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please "
                           "use torch.jit.script or torch.jit.trace to script your "
                           "'nn.Module'.")
    return mod if mod._is_frozen() else freeze(mod.eval())
