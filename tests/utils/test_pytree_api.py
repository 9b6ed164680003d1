"""torch.utils._pytree beyond flatten/unflatten: key paths, registration, serialized specs,
the `_only`/`_` variants and the namedtuple/structseq tests, each compared with PyTorch's."""
import collections
import re

import pytest

import glasstorch as gt
from glasstorch.utils import _pytree as gp

torch = pytest.importorskip("torch")
tp = torch.utils._pytree

NT = collections.namedtuple("NT", "a b")
TREE = {"x": [1, (2, 3)], "y": NT(4, [5]), "z": None,
        "w": collections.OrderedDict(k=6), "d": collections.deque([7], maxlen=2)}


def test_key_paths_and_keystr_as_torch():
    ours, spec = gp.tree_flatten_with_path(TREE)
    theirs, _ = tp.tree_flatten_with_path(TREE)
    assert [gp.keystr(k) for k, _ in ours] == [tp.keystr(k) for k, _ in theirs]
    assert [leaf for _, leaf in ours] == [leaf for _, leaf in theirs]
    assert [gp.key_get(TREE, k) for k, _ in ours] == [leaf for _, leaf in theirs]
    assert gp.tree_leaves_with_path(TREE) == ours and spec == gp.tree_structure(TREE)
    paths = gp.tree_map_with_path(lambda k, v: gp.keystr(k), TREE)
    assert paths == tp.tree_map_with_path(lambda k, v: tp.keystr(k), TREE)


def test_spec_repr_counts_and_flatten_up_to_as_torch():
    tree = [1, {"a": (2, 3), "b": NT(4, 5)}]
    ours, theirs = gp.tree_structure(tree), tp.tree_structure(tree)
    assert repr(ours) == repr(theirs)
    assert (ours.num_nodes, ours.num_leaves, ours.num_children) == \
        (theirs.num_nodes, theirs.num_leaves, theirs.num_children)
    deeper = [10, {"b": NT(40, [50]), "a": (20, {"c": 30})}]
    assert ours.flatten_up_to(deeper) == theirs.flatten_up_to(deeper)
    assert ours.unflatten(range(5)) == theirs.unflatten(range(5))
    assert gp.treespec_pprint(ours) == tp.treespec_pprint(theirs)


@pytest.mark.parametrize("tree, rest, message", [
    ([1, 2], (1, 2), "Node type mismatch; expected <class 'list'>, but got <class 'tuple'>"),
    ([[1, 2]], [[1, 2, 3]], "Node arity mismatch; expected 2, but got 3"),
    ([{"a": 1}], [{"q": 2}], "Node keys mismatch; missing key"),
])
def test_map_with_mismatched_trees_raises_as_torch(tree, rest, message):
    for module in (gp, tp):
        with pytest.raises(ValueError, match=re.escape(message)):
            module.tree_map(lambda a, b: a, tree, rest)


def test_register_pytree_node_and_serialized_specs():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    for module in (gp, tp):
        module.register_pytree_node(
            Pair, lambda p: ([p.a, p.b], "ctx"), lambda c, ctx: Pair(*c),
            serialized_type_name=f"test.Pair.{module.__name__}",
            flatten_with_keys_fn=lambda p: ([(module.GetAttrKey("a"), p.a),
                                             (module.GetAttrKey("b"), p.b)], "ctx"))
        with pytest.raises(ValueError, match="is already registered as pytree node"):
            module.register_pytree_node(Pair, lambda p: ([], None), lambda c, ctx: Pair(1, 2))
        tree = [Pair(1, {"k": 2}), 3]
        leaves, spec = module.tree_flatten(tree)
        assert leaves == [1, 2, 3]
        rebuilt = module.tree_unflatten([7, 8, 9], spec)
        assert (rebuilt[0].a, rebuilt[0].b, rebuilt[1]) == (7, {"k": 8}, 9)
        assert [module.keystr(k) for k, _ in module.tree_flatten_with_path(tree)[0]] == \
            ["[0].a", "[0].b['k']", "[1]"]
        assert module.treespec_loads(module.treespec_dumps(spec)) == spec
    plain = [{"a": 1, "b": (2,)}, collections.OrderedDict(c=3)]
    assert gp.treespec_dumps(gp.tree_structure(plain)) == \
        tp.treespec_dumps(tp.tree_structure(plain))
    with pytest.raises(ValueError, match=r"Unknown protocol 7. Available protocols: \[1\]"):
        gp.treespec_dumps(gp.tree_structure([1]), protocol=7)
    with pytest.raises(NotImplementedError, match="Deserializing foo.Bar in pytree"):
        gp.treespec_loads('[1, {"type": "foo.Bar", "context": "null", "children_spec": []}]')


def test_unregistered_key_paths_and_half_given_dumpable_context_raise():
    class Box:
        pass

    gp.register_pytree_node(Box, lambda b: ([], None), lambda c, ctx: Box())
    with pytest.raises(ValueError, match="Did not find a flatten_with_keys_fn"):
        gp.tree_flatten_with_path([Box()])
    with pytest.raises(NotImplementedError, match="No registered serialization name"):
        gp.treespec_dumps(gp.tree_structure(Box()))
    with pytest.raises(ValueError, match="must be None or registered"):
        gp.register_pytree_node(type("Other", (), {}), lambda b: ([], None),
                                lambda c, ctx: None, to_dumpable_context=lambda c: c)


def test_only_variants_iter_and_is_leaf_as_torch():
    tree = [1, "s", (2.5, 3), {"k": [4]}]
    for fn in ("tree_all_only", "tree_any_only"):
        for types in (int, (str, float)):
            assert getattr(gp, fn)(types, lambda v: bool(v), tree) == \
                getattr(tp, fn)(types, lambda v: bool(v), tree)
    assert gp.tree_map_only(lambda v: v == 3, lambda v: -v, tree) == \
        tp.tree_map_only(lambda v: v == 3, lambda v: -v, tree)
    seen = []
    assert gp.tree_map_only_(int, seen.append, tree) is tree and seen == [1, 3, 4]
    assert gp.tree_map_(lambda a, b: seen.append(a + b), [1, 2], [10, 20]) == [1, 2]
    assert seen[-2:] == [11, 22]
    assert list(gp.tree_iter(TREE)) == list(tp.tree_iter(TREE))
    single = lambda v: isinstance(v, list) and len(v) == 1  # noqa: E731
    assert gp.tree_leaves(tree, is_leaf=single) == tp.tree_leaves(tree, is_leaf=single)
    for x in (None, [], 3, NT(1, 2)):
        assert gp.tree_is_leaf(x) == tp.tree_is_leaf(x)


def test_namedtuple_and_structseq_tests_as_torch():
    ours_max, theirs_max = gt.max(gt.ones(2, 2), 0), torch.max(torch.ones(2, 2), 0)
    for fn in ("is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance",
               "is_structseq", "is_structseq_class", "is_structseq_instance"):
        for ours, theirs in ((NT, NT), (NT(1, 2), NT(1, 2)), ((1,), (1,)),
                             (ours_max, theirs_max), (type(ours_max), type(theirs_max))):
            assert getattr(gp, fn)(ours) == getattr(tp, fn)(theirs), (fn, theirs)
    leaves, spec = gp.tree_flatten(ours_max)
    assert repr(spec) == repr(tp.tree_flatten(theirs_max)[1])
    rebuilt = gp.tree_unflatten(leaves, spec)
    assert type(rebuilt) is type(ours_max) and rebuilt.indices is leaves[1]
