"""torch.func.rearrange against PyTorch's: shapes, values, and the errors."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

CASES = [("a b c -> c (a b)", {}), ("a (b1 b2) c -> b1 a b2 c", {"b1": 3}),
         ("... c -> c ...", {}), ("a ... -> (...) a", {}), ("a b c -> a b c 1", {}),
         ("a b c -> (a b c)", {}), ("a b c -> a () b c", {}), ("a b 1 -> b a", {}),
         ("(a1 a2) b c -> a2 (b a1) c", {"a2": 1})]


@pytest.mark.parametrize("pattern,lengths", CASES)
def test_rearrange_equals_pytorchs(pattern, lengths):
    x = np.arange(24).reshape(2, 3, 4) if "1 ->" not in pattern else np.arange(6).reshape(2, 3, 1)
    ours = gt.func.rearrange(gt.tensor(x), pattern, **lengths)
    theirs = torch.func.rearrange(torch.tensor(x), pattern, **lengths)
    assert ours.tolist() == theirs.tolist() and tuple(ours.shape) == tuple(theirs.shape)


def test_a_list_is_stacked_first():
    x = np.arange(6).reshape(2, 3)
    ours = gt.func.rearrange([gt.tensor(x), gt.tensor(x + 1)], "n a b -> a (n b)")
    theirs = torch.func.rearrange([torch.tensor(x), torch.tensor(x + 1)], "n a b -> a (n b)")
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("pattern,lengths,match", [
    ("a b -> b a", {}, r"Number of dimensions in pattern \(2\)"),
    ("a b c -> a b", {}, "Identifiers only on one side"),
    ("a (b1 b2) c -> a b1 b2 c", {"b1": 2}, "does not evenly fit")])
def test_errors_as_pytorchs(pattern, lengths, match):
    for lib in (gt, torch):
        with pytest.raises(Exception, match=match):    # PyTorch: a DimensionBindError
            lib.func.rearrange(lib.arange(24).reshape(2, 3, 4), pattern, **lengths)
