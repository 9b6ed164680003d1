"""An op that would give an integer or bool output a history refuses, as PyTorch's
set_history does ("Autograd not support dtype"), where a cast declares such an output not
differentiable and an in-place op rebases the history without the check."""
import pytest

import glasstorch as gt
from oracle import oracle_torch

CASES = {
    "sum_int": lambda T, x, v: x.sum(dtype=T.int64),
    "prod_bool": lambda T, x, v: x.prod(dtype=T.bool),
    "nansum_int": lambda T, x, v: x.nansum(dtype=T.int64),
    "cumsum_int": lambda T, x, v: x.cumsum(0, dtype=T.int32),
    "cumprod_int": lambda T, x, v: x.cumprod(0, dtype=T.int64),
    "masked_fill_into_int": lambda T, x, v: T.zeros(3, dtype=T.long).masked_fill(
        T.tensor([True, False, True]), v),
    "sum_float": lambda T, x, v: x.sum(dtype=T.float64),
    "long": lambda T, x, v: x.long(),
    "to_int": lambda T, x, v: x.to(T.int32),
    "type_as": lambda T, x, v: x.type_as(T.zeros(1, dtype=T.long)),
    "copy_into_int": lambda T, x, v: T.zeros(3, dtype=T.long).copy_(x),
    "argmax": lambda T, x, v: x.argmax(),
    "max_dim": lambda T, x, v: x.max(0),
}


def _outcome(T, case):
    x = T.tensor([1.5, -2.0, 3.0], requires_grad=True)
    v = T.tensor(2.0, requires_grad=True)
    try:
        r = case(T, x, v)
    except RuntimeError as e:
        return "RuntimeError", str(e)
    outs = r if isinstance(r, tuple) else (r,)
    return [(str(o.dtype).split(".")[-1], o.requires_grad, o.tolist()) for o in outs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_as_pytorch(name):
    assert _outcome(gt, CASES[name]) == _outcome(oracle_torch(), CASES[name])


def test_the_refusal_names_the_dtype():
    x = gt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Autograd not support dtype: Long$"):
        x.sum(dtype=gt.int64)
    with gt.no_grad():
        assert x.sum(dtype=gt.int64).item() == 3
