import numpy as np

import glasstorch as torch
from oracle import assert_same, oracle_torch


def test_add_broadcast_against_numpy():
    a = torch.tensor([[1.0, 2.0, 3.0]])
    b = torch.tensor([[10.0], [20.0]])
    assert_same(a + b, np.array([[11, 12, 13], [21, 22, 23]], np.float32))


def test_transposed_add_keeps_layout_like_torch():
    T = oracle_torch()
    x = torch.ones(2, 3).t()
    assert_same(x * 2, T.ones(2, 3).t() * 2)
