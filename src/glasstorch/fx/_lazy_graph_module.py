"""`torch.fx._lazy_graph_module`: a GraphModule whose `forward` is generated on first use.

Capture builds a GraphModule for every graph it hands a backend, and glasstorch's inductor
serving a graph from its compiled-graph cache never reads the code nor runs the module:
generating and compiling the Python source (a few milliseconds for a tiny GPT's backward)
would be wasted. As PyTorch's `_LazyGraphModule`, this class generates it when `forward`,
`code` or `recompile()` is first reached, and again after the graph is replaced.
"""
from __future__ import annotations

from .graph import Graph
from .graph_module import GraphModule


class _LazyGraphModule(GraphModule):

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self.__dict__["_graph"] = g
        self.__dict__.pop("_code", None)
        if "forward" in type(self).__dict__:         # generated for the previous graph
            delattr(type(self), "forward")
        g.owning_module = self

    @property
    def code(self) -> str:
        if "_code" not in self.__dict__:
            self.recompile()
        return self._code

    def forward(self, *args, **kwargs):
        """The first call: generate the real `forward` (set on this instance's class, it
        replaces this one), then run it."""
        self.recompile()
        return type(self).forward(self, *args, **kwargs)
