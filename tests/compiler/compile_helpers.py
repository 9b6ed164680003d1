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


def training_losses(model, parameters, data, optimizer_class, lr) -> list:
    """The losses of a cross-entropy training run of `model` over `data` ((x, y) batches)
    with `optimizer_class(parameters, lr=lr)`, one step a batch."""
    optimizer = optimizer_class(parameters, lr=lr)
    losses = []
    for x, y in data:
        optimizer.zero_grad()
        loss = gt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
