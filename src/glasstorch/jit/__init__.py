"""`torch.jit`, TorchScript's API in maintenance mode: `trace` records a graph (see
_trace.py), `script` keeps the Python (see _script.py), `save`/`load` write traced graphs
(see _serialization.py)."""
from ._script import (Final, RecursiveScriptModule, ScriptFunction, ScriptModule, annotate,
                      export, freeze, ignore, is_scripting, optimize_for_inference, script,
                      script_if_tracing, unused)
from ._serialization import load, save
from ._trace import TopLevelTracedModule, TracerWarning, is_tracing, trace, trace_module

__all__ = ["Final", "RecursiveScriptModule", "ScriptFunction", "ScriptModule",
           "TopLevelTracedModule", "TracerWarning", "annotate", "export", "freeze", "ignore",
           "is_scripting", "is_tracing", "load", "optimize_for_inference", "save", "script",
           "script_if_tracing", "trace", "trace_module", "unused"]
