"""`torch.fx`: programs as graphs you can read, edit and run.

`symbolic_trace(module)` runs a module on Proxies and records a `Graph` of `Node`s; a
`GraphModule` compiles a graph back into an nn.Module with readable `code`; `Interpreter`
and `Transformer` run or rewrite a graph node by node; `subgraph_rewriter.replace_pattern`
swaps one pattern of calls for another. `experimental.proxy_tensor.make_fx` traces one level
lower, through the dispatcher, into a graph of ATen operators.
"""
from .graph import Graph  # noqa: F401
from .graph_module import GraphModule  # noqa: F401
from .node import Node, has_side_effect, map_arg  # noqa: F401
from .proxy import Proxy  # noqa: F401
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap  # noqa: F401
from .interpreter import Interpreter, Transformer  # noqa: F401
from .subgraph_rewriter import replace_pattern  # noqa: F401
from . import experimental, passes, subgraph_rewriter  # noqa: F401
