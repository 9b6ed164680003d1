"""torch.utils._pytree: flatten, unflatten and map nested containers as PyTorch does."""
import collections

import pytest

import glasstorch as gt
from glasstorch.utils import _pytree as gp

Point = collections.namedtuple("Point", "x y")

TREES = [
    [1, (2, 3), {"b": 4, "a": [5, None]}],
    Point(1, [2, 3]),
    collections.OrderedDict(z=1, y=(2,)),
    collections.defaultdict(list, a=1, b=[2]),
    collections.deque([1, 2, 3], maxlen=5),
    (),
    {"only": {}},
    7,
    None,
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_flatten_and_unflatten_as_torch(tree):
    torch = pytest.importorskip("torch")
    leaves, spec = gp.tree_flatten(tree)
    assert leaves == torch.utils._pytree.tree_flatten(tree)[0]
    rebuilt = gp.tree_unflatten(leaves, spec)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert spec.num_leaves == len(leaves)


def test_size_is_a_container_and_tensors_are_leaves():
    x = gt.ones(2)
    assert gp.tree_leaves([gt.Size([2, 3]), {"t": x}])[:2] == [2, 3]
    assert gp.tree_leaves([gt.Size([2, 3]), {"t": x}])[2] is x


def test_map_and_map_only():
    tree = [1, "a", (2.0, 3), {"k": 4}]
    assert gp.tree_map(lambda v: v * 2, [1, (2, 3)]) == [2, (4, 6)]
    assert gp.tree_map_only(int, lambda v: v * 10, tree) == [10, "a", (2.0, 30), {"k": 40}]
    assert gp.tree_map(lambda a, b: a + b, [1, (2,)], [10, (20,)]) == [11, (22,)]
    assert gp.tree_all(lambda v: v > 0, [1, (2,)]) and gp.tree_any(lambda v: v > 1, [1, (2,)])


def test_unflatten_refuses_the_wrong_number_of_leaves():
    _, spec = gp.tree_flatten([1, (2, 3)])
    with pytest.raises(ValueError, match="has length 2 but the spec refers to a pytree that holds 3"):
        gp.tree_unflatten([1, 2], spec)
