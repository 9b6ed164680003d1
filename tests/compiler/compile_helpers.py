"""Helpers shared by the compiler tests."""
import glasstorch as gt


class CountingBackend:
    """A user backend that counts compiles, keeps each graph, and runs it as captured."""

    def __init__(self):
        self.graphs = []
        self.example_inputs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.example_inputs.append(example_inputs)
        return gm.forward

    @property
    def compiles(self) -> int:
        return len(self.graphs)


def same(compiled, eager):
    """Equal values, dtype, shape and strides."""
    assert compiled.dtype == eager.dtype
    assert compiled.shape == eager.shape
    assert compiled.stride() == eager.stride()
    assert gt.equal(compiled, eager)
