"""In-place ops on expanded (internally overlapping) tensors while autograd records.

PyTorch runs the in-place kernel on the expanded view itself: the fills (fill_, zero_,
masked_fill_, index_fill_, index_put_) write, every other op refuses the overlap in forward.
After a fill, the base's history runs through CopySlices, whose backward writes the op's
gradient back through the same expanded view and so refuses it: backward raises, unless the
base's old values need no gradient (then only the fill value's gradient is computed).
"""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import oracle_torch

OVERLAP = "more than one element of the written-to tensor refers to a single memory location"
LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation"


def expanded(L, b):
    return b.expand(2, 3)


def zero_strided(L, b):
    return b.as_strided((2, 3), (0, 1))


def column_of_expanded(L, b):       # b is (3,): a (3, 2) expansion's first column is b
    return b.unsqueeze(1).expand(3, 2)[:, 0].unsqueeze(0).expand(2, 3)


VIEWS = [expanded, zero_strided, column_of_expanded]

# Each fill with what it leaves in b = [1, -2, 3] through a (2, 3) expansion of it (the
# right answer: a position is written when any of the elements sharing it is).
FILLS = {
    "fill_": (lambda L, x: x.fill_(2.0), [2.0, 2.0, 2.0]),
    "zero_": (lambda L, x: x.zero_(), [0.0, 0.0, 0.0]),
    "masked_fill_": (lambda L, x: x.masked_fill_(L.tensor([[True, False, False],
                                                           [False, False, True]]), 2.0),
                     [2.0, -2.0, 2.0]),
    "index_fill_": (lambda L, x: x.index_fill_(1, L.tensor([0]), 2.0), [2.0, -2.0, 3.0]),
    "index_put_": (lambda L, x: x.index_put_((L.tensor([1]), L.tensor([2])),
                                            L.tensor(2.0, dtype=x.dtype)),
                   [1.0, -2.0, 2.0]),
    "setitem_mask": (lambda L, x: x.__setitem__(L.tensor([[False, True, False],
                                                          [False, False, False]]), 2.0),
                     [1.0, 2.0, 3.0]),
}

REFUSED = {
    "sign_": lambda L, x: x.sign_(),
    "neg_": lambda L, x: x.neg_(),
    "abs_": lambda L, x: x.abs_(),
    "exp_": lambda L, x: x.exp_(),
    "clamp_": lambda L, x: x.clamp_(0, 1),
    "add_tensor": lambda L, x: x.add_(L.ones(2, 3)),
    "add_number": lambda L, x: x.add_(1),
    "mul_tensor": lambda L, x: x.mul_(L.full((2, 3), 3.0)),
    "copy_": lambda L, x: x.copy_(L.ones(2, 3)),
    "fill_tensor": lambda L, x: x.fill_(L.tensor(2.0)),
    "uniform_": lambda L, x: x.uniform_(),
    "masked_scatter_": lambda L, x: x.masked_scatter_(L.tensor([True, False, True]),
                                                      L.ones(6, dtype=x.dtype)),
    "setitem_column": lambda L, x: x.__setitem__((slice(None), 0), 2.0),
}


def _nonleaf(L):
    leaf = L.tensor([1.0, -2.0, 3.0], dtype=L.float64, requires_grad=True)
    return leaf, leaf * 1


def _run(L, write, view):
    leaf, b = _nonleaf(L)
    x = view(L, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # masked_fill_/index_fill_ on expanded: deprecated
        write(L, x)
    return leaf, b, x


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.__name__)
@pytest.mark.parametrize("name", FILLS)
def test_a_fill_writes_the_expanded_view_and_backward_refuses_it(name, view):
    T = oracle_torch()
    write, written = FILLS[name]
    for L in (gt, T):
        leaf, b, x = _run(L, write, view)
        np.testing.assert_array_equal(b.detach().numpy(), written)
        assert b.grad_fn.name() == "torch::autograd::CopySlices"
        assert type(x.grad_fn).__name__ == "AsStridedBackward0"
        assert x._version == 1
        for out in (b, x):
            with pytest.raises(RuntimeError, match=OVERLAP):
                out.sum().backward(retain_graph=True)
        assert leaf.grad is None


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.__name__)
@pytest.mark.parametrize("name", REFUSED)
def test_other_inplace_ops_refuse_the_expanded_view_before_writing(name, view):
    T = oracle_torch()
    for L in (gt, T):
        leaf, b = _nonleaf(L)
        x = view(L, b)
        with pytest.raises(RuntimeError, match=OVERLAP):
            REFUSED[name](L, x)
        np.testing.assert_array_equal(b.detach().numpy(), [1.0, -2.0, 3.0])
        assert b.grad_fn.name() == "MulBackward0"
        b.sum().backward()
        np.testing.assert_array_equal(leaf.grad.numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("name", [*FILLS, *REFUSED])
def test_an_expanded_view_of_a_leaf_is_refused_as_a_leaf_view_first(name):
    T = oracle_torch()
    write = FILLS[name][0] if name in FILLS else REFUSED[name]
    for L in (gt, T):
        leaf = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
        with pytest.raises(RuntimeError, match=LEAF_VIEW):
            write(L, leaf.expand(2, 3))


VALUE_FILLS = {
    "masked_fill_": lambda L, x, v: x.masked_fill_(L.tensor([True, False, True]), v),
    "index_fill_": lambda L, x, v: x.index_fill_(1, L.tensor([0]), v),
    "index_put_": lambda L, x, v: x.index_put_((L.tensor([0]),), v),
}


def _written_with_value(L, name, base_requires_grad):
    b = L.tensor([1.0, -2.0, 3.0], dtype=L.float64, requires_grad=base_requires_grad) * 1
    value = L.tensor(5.0, dtype=L.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        VALUE_FILLS[name](L, b.expand(2, 3), value)
    return b, value


@pytest.mark.parametrize("name", VALUE_FILLS)
def test_the_fill_value_gets_its_gradient_when_the_base_needs_none(name):
    """The base needs no gradient: CopySlices leaves the expanded view alone and passes the
    region's gradient to the fill's node. PyTorch's region is an as_strided of the base's
    gradient, so each element sharing memory brings that element's gradient again."""
    T = oracle_torch()
    weights = [1.0, 10.0, 100.0]
    # the region's gradient is the weight of the base element each view element reads
    region = np.broadcast_to(weights, (2, 3))
    written = {"masked_fill_": np.array([True, False, True]),
               "index_fill_": np.array([True, False, False]),
               "index_put_": np.array([[True] * 3, [False] * 3])}[name]
    expected = (region * np.broadcast_to(written, (2, 3))).sum()
    for L in (gt, T):
        b, value = _written_with_value(L, name, base_requires_grad=False)
        (b * L.tensor(weights, dtype=L.float64)).sum().backward()
        assert value.grad.item() == expected


@pytest.mark.parametrize("name", VALUE_FILLS)
def test_grad_of_the_value_alone_skips_the_base(name):
    """autograd.grad asked only for the value: the base's old history is not needed, so its
    refused write-back is not attempted (PyTorch's task_should_compute_output)."""
    T = oracle_torch()
    written = {"masked_fill_": 4, "index_fill_": 2, "index_put_": 3}[name]
    for L in (gt, T):
        b, value = _written_with_value(L, name, base_requires_grad=True)
        (g,) = L.autograd.grad(b.sum(), [value], retain_graph=True)
        assert g.item() == written * 1.0      # each written view element reads a weight of 1
        with pytest.raises(RuntimeError, match=OVERLAP):
            b.sum().backward()                # the base's leaf too: the write-back is refused


def test_a_fill_without_grad_mode_writes_and_leaves_the_history():
    T = oracle_torch()
    for L in (gt, T):
        leaf, b = _nonleaf(L)
        x = b.expand(2, 3)
        with L.no_grad():
            x.masked_fill_(L.tensor([True, False, True]), 2.0)
        np.testing.assert_array_equal(b.detach().numpy(), [2.0, -2.0, 2.0])
        assert b.grad_fn.name() == "MulBackward0"
        x.sum().backward()
        np.testing.assert_array_equal(leaf.grad.numpy(), [2.0, 2.0, 2.0])


def test_an_expanded_tensor_that_is_no_view_takes_the_fill_node():
    T = oracle_torch()
    weights = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    for L in (gt, T):
        s = L.empty_strided((2, 3), (0, 1)).zero_()
        value = L.tensor(5.0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s.masked_fill_(L.tensor([True, False, True]), value)
        assert s._base is None and s.grad_fn.name() == "MaskedFillBackward1"
        np.testing.assert_array_equal(s.detach().numpy(), [[5.0, 0.0, 5.0]] * 2)
        (s * L.tensor(weights)).sum().backward()
        assert value.grad.item() == 1.0 + 3.0 + 4.0 + 6.0     # the masked positions' weights


def test_fill_with_a_tensor_refuses_an_expanded_tensor_without_autograd():
    """fill_.Tensor copies a value on self's device (copy_ refuses the overlap); fill_ with
    a number fills it."""
    T = oracle_torch()
    for L in (gt, T):
        with pytest.raises(RuntimeError, match=OVERLAP):
            L.zeros(3).expand(2, 3).fill_(L.tensor(5.0))
        b = L.zeros(3)
        b.expand(2, 3).fill_(5.0)
        np.testing.assert_array_equal(b.numpy(), [5.0, 5.0, 5.0])
        single = L.zeros(1)
        single.expand(1, 1).fill_(L.tensor(3.0))       # one element: no overlap
        assert single.item() == 3.0


def test_copyslices_refuses_a_second_backward_even_when_its_op_saved_nothing():
    T = oracle_torch()
    for L in (gt, T):
        leaf = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = leaf * leaf
        b[0] = 5.0                                      # CopySlices over a fill: nothing saved
        b.sum().backward(retain_graph=True)
        b.sum().backward()
        np.testing.assert_array_equal(leaf.grad.numpy(), [0.0, 8.0, 12.0])
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            b.sum().backward()


def test_setitem_with_a_full_slice_before_an_index_tensor_has_a_gradient():
    """x[:, i] = v records index_put with a None index; its backward writes zeros there."""
    T = oracle_torch()
    rng = np.random.default_rng(0)
    data, weights = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    grads = {}
    for L in (gt, T):
        leaf = L.tensor(data, requires_grad=True)
        value = L.tensor([[3.0], [4.0]], dtype=L.float64, requires_grad=True)
        b = leaf * 1
        b[:, L.tensor([0])] = value
        (b * L.tensor(weights)).sum().backward()
        grads[L.__name__] = leaf.grad.numpy(), value.grad.numpy()
    expected_leaf = weights.copy()
    expected_leaf[:, 0] = 0
    np.testing.assert_allclose(grads["glasstorch"][0], expected_leaf)
    np.testing.assert_allclose(grads["glasstorch"][1], weights[:, :1])
    np.testing.assert_allclose(grads["torch"][0], expected_leaf)


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "recording"])
def test_each_fill_of_an_expanded_tensor_warns_once_as_pytorch(grad):
    T = oracle_torch()
    writes = [lambda L, x: x.masked_fill_(L.tensor([True, False, True]), 2.0),
              lambda L, x: x.index_fill_(1, L.tensor([0]), 2.0),
              lambda L, x: x.index_put_((L.tensor([0]),), L.tensor(2.0)),
              lambda L, x: x.__setitem__(L.tensor([[True, False, True], [False] * 3]), 2.0)]
    messages = {}
    for L in (gt, T):
        b = L.tensor([1.0, 2.0, 3.0], requires_grad=grad) * 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for write in writes:
                write(L, b.expand(2, 3))
        messages[L] = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    assert messages[gt] == messages[T]
    assert [m.split(" on ")[0] for m in messages[gt]] == [
        "Use of masked_fill_", "Use of index_fill_", "Use of index_put_", "Use of index_put_",
        "Use of masked_fill_"]


@pytest.mark.parametrize("seed", [2007122, 2012468])
def test_the_campaign_programs_that_found_the_gap_run_as_in_pytorch(seed):
    """fill_ and masked_fill_ on an expanded non-leaf, then backward (glasstorch refused in
    forward)."""
    oracle_torch()
    from tests.fuzz.differential import generate, run_pair
    assert run_pair(generate(seed)) == []
