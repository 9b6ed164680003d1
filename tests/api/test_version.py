"""torch.__version__ and torch.version against PyTorch's TorchVersion."""
import itertools
import operator

import pytest

import glasstorch
from glasstorch.torch_version import TorchVersion

torch = pytest.importorskip("torch")

VERSIONS = ["2.13.0", "2.0", "2.0.0", "1.13.1", "2.13.0+cpu", "2.1.0a0+git1234", "2.2.0rc1",
            "2.2.0.dev20240101", "2.2.0.post1", "2.2", "10.0", "2.13.0.dev1+cu121"]
OTHERS = VERSIONS + ["parrot", (2, 0), (2, 13), (2, 13, 0), (1,), (3, 0, 1), [2, 2]]


def test_torch_version_is_the_pytorch_api_version():
    assert isinstance(glasstorch.__version__, str)
    assert glasstorch.__version__ == "2.13.0"
    assert glasstorch.__version__ >= "2.0" and glasstorch.__version__ >= (2, 0)
    assert glasstorch.__version__ > "2.2"          # a version, not a string: "2.13" > "2.2"
    assert glasstorch.version.__version__ is glasstorch.__version__
    assert glasstorch.version.glasstorch == "0.1.0"
    assert glasstorch.version.cuda is None and glasstorch.version.hip is None
    assert glasstorch.version.debug is False
    assert set(torch.version.__all__) <= set(dir(glasstorch.version))


@pytest.mark.parametrize("mine", VERSIONS)
def test_comparisons_match_torch_version(mine):
    ours, theirs = TorchVersion(mine), torch.torch_version.TorchVersion(mine)
    for other, op in itertools.product(OTHERS, (operator.lt, operator.le, operator.gt,
                                                operator.ge, operator.eq, operator.ne)):
        try:
            expected = op(theirs, other)
        except TypeError:
            with pytest.raises(TypeError):
                op(ours, other)
            continue
        assert op(ours, other) == expected, (mine, op, other)


def test_comparing_with_a_number_raises_as_pytorch():
    with pytest.raises(TypeError):
        torch.__version__ > 2.0
    with pytest.raises(TypeError):
        glasstorch.__version__ > 2.0
    assert glasstorch.__version__ != 2.0 and hash(glasstorch.__version__) == hash("2.13.0")
