"""F.linear's calls as a dispatch mode sees them, against PyTorch's: the ops, in order, with
their tensors' shapes and strides and their size arguments, for every layout linear folds
or copies (linear reads shapes and calls views directly, so this is what says it still runs
PyTorch's decomposition); values and gradients too."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import assert_same, dispatch_module, oracle_torch


def _plain(T, value):
    if isinstance(value, T.Tensor):
        return ("Tensor", tuple(value.shape), tuple(value.stride()))
    if isinstance(value, (list, tuple)):
        return [_plain(T, v) for v in value]
    return value


def _logged(T, program):
    log = []

    class Logging(dispatch_module(T).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            log.append((str(func), _plain(T, args)))
            return func(*args, **kwargs)

    with Logging():
        out = program()
    return log, out


LAYOUTS = {   # name: the input made from a (8, 4, 6) array
    "contiguous 3-D": lambda x: x,
    "transposed 3-D": lambda x: x.transpose(0, 1),          # reshape copies
    "strided 3-D": lambda x: x[::2],                       # not contiguous, still a view
    "2-D": lambda x: x[0],
    "1-D": lambda x: x[0, 0],
    "empty": lambda x: x[:0],
    "4-D": lambda x: x.reshape(2, 4, 4, 6),
}


# A 1-D input without a bias goes through matmul, which a mode sees as one op here and as
# unsqueeze, mm, squeeze_ in PyTorch (matmul's decomposition, not linear's).
CASES = [pytest.param(layout, bias, marks=pytest.mark.xfail(strict=True, reason="matmul is "
                                                            "one op a mode sees"))
         if (layout, bias) == ("1-D", False) else (layout, bias)
         for layout in LAYOUTS for bias in (False, True)]


@pytest.mark.parametrize("layout,bias", CASES)
def test_linear_calls_values_and_gradients_match_torch(layout, bias):
    torch = oracle_torch()
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal((8, 4, 6)), rng.standard_normal((5, 6)),
              rng.standard_normal(5)]
    results = []
    for T in (gt, torch):
        x, w, b = (T.tensor(a, requires_grad=True) for a in arrays)
        inp = LAYOUTS[layout](x)

        log, y = _logged(T, lambda: T.nn.functional.linear(inp, w, b if bias else None))
        (y * y).sum().backward()
        results.append((log, y, x.grad, w.grad, b.grad))
    (g_log, *g_values), (t_log, *t_values) = results
    assert g_log == t_log
    for a, e in zip(g_values, t_values):
        if e is not None:
            assert_same(a, e, rtol=1e-12, atol=1e-12, check_stride=False)


def test_linear_rejects_zero_dimensional_arguments_as_torch():
    torch = oracle_torch()
    for T in (gt, torch):
        with pytest.raises(RuntimeError, match="both arguments to linear need to be at least "
                                               "1D, but they are 0D and 2D"):
            T.nn.functional.linear(T.tensor(1.0), T.ones(2, 3))
