"""DataPipes: functional chaining, registration, DataChunk, determinism guard and type
validation, compared with PyTorch's where PyTorch's still work."""
import warnings

import pytest

import glasstorch.utils.data as gd

torch = pytest.importorskip("torch")
import torch.utils.data as td  # noqa: E402


def source(module, items):
    class Source(module.IterDataPipe):
        def __init__(self, xs):
            self.xs = xs

        def __iter__(self):
            yield from self.xs
    return Source(items)


def test_chained_steps_and_chunks_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [list(source(m, range(7)).map(lambda x: x * 2).filter(lambda x: x > 2)
                     .batch(2)) for m in (gd, td)]
        assert outs[0] == outs[1] == [[4, 6], [8, 10], [12]]
        assert list(source(gd, range(5)).batch(2, drop_last=True)) == [[0, 1], [2, 3]]
        ours, theirs = list(source(gd, [1, 2]).batch(2))[0], list(source(td, [1, 2]).batch(2))[0]
    assert type(ours) is gd.DataChunk and ours.as_str("  ") == theirs.as_str("  ")
    assert list(ours.raw_iterator()) == [1, 2]


def test_functional_registration_as_torch():
    for module in (gd, td):
        @module.functional_datapipe(f"triple_{module.__name__.split('.')[0]}")
        class Triple(module.IterDataPipe):
            def __init__(self, datapipe):
                self.datapipe = datapipe

            def __iter__(self):
                for x in self.datapipe:
                    yield 3 * x
        name = f"triple_{module.__name__.split('.')[0]}"
        assert list(getattr(source(module, [1, 2]), name)()) == [3, 6]
        with pytest.raises(Exception, match="Unable to add DataPipe function name map as it "
                                            "is already taken"):
            module.functional_datapipe("map")(type("Again", (module.IterDataPipe,), {}))
        with pytest.raises(AttributeError, match="object has no attribute 'nope"):
            source(module, [1]).nope()

    class Squares(gd.MapDataPipe):
        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return 4
    assert list(Squares().map(lambda v: v + 1)) == [1, 2, 5, 10]
    assert gd.DFIterDataPipe()._is_dfpipe()


def test_non_deterministic_pipes_are_refused_when_determinism_is_guaranteed():
    for module in (gd, td):
        @module.non_deterministic
        class Shuffled(module.IterDataPipe):
            def __iter__(self):
                yield 1
        assert list(Shuffled()) == [1]
        with module.guaranteed_datapipes_determinism():
            with pytest.raises(TypeError, match="Shuffled is non-deterministic, but you set "
                                                "'guaranteed_datapipes_determinism'"):
                Shuffled()
        assert list(Shuffled()) == [1]


def test_declared_item_types_are_checked():
    class Ints(gd.IterDataPipe[int]):
        def __init__(self, xs):
            self.xs = xs

        @gd.runtime_validation
        def __iter__(self):
            yield from self.xs

    assert list(Ints([1, 2])) == [1, 2]
    with pytest.raises(RuntimeError, match="Expected an instance as subtype of"):
        list(Ints([1, "a"]))
    with gd.runtime_validation_disabled():
        assert list(Ints([1, "a"])) == [1, "a"]

    class Consumer(gd.IterDataPipe):
        @gd.argument_validation
        def __init__(self, dp: gd.IterDataPipe[int]):
            self.dp = dp

    assert Consumer(Ints([1])).dp.xs == [1]
    with pytest.raises(TypeError, match="Expected argument 'dp' as a"):
        Consumer([1])
    with pytest.raises(TypeError, match="Expected type of argument 'dp' as a subtype"):
        Consumer(source(gd, ["a"]))
