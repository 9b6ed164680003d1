"""`torch.fx._lazy_graph_module`: a GraphModule whose `forward` is generated on first use.

Capture builds a GraphModule for every graph it hands a backend, and glasstorch's inductor
serving a graph from its compiled-graph cache never reads the code nor runs the module:
generating and compiling the Python source (a few milliseconds for a tiny GPT's backward)
would be wasted. As PyTorch's `_LazyGraphModule`, this class generates it when `forward`,
`code` or `recompile()` is first reached, and again after the graph is replaced.
"""
from __future__ import annotations

from .graph_module import GraphModule


class _LazyGraphModule(GraphModule):

    def _graph_replaced(self) -> None:
        """Forget the code made for the previous graph; the next use makes it anew."""
        self.__dict__.pop("_code", None)
        if "forward" in type(self).__dict__:
            delattr(type(self), "forward")

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
