"""What a TorchDispatchMode sees of a Scalar argument at its default value: PyTorch leaves it
out only when it has the default's Python type too (alpha=1.0 is not the default alpha=1),
so the argument lists a mode logs are the same in both libraries."""
import pytest

import glasstorch as gt
from tests.oracle import dispatch_module, oracle_torch


def _logged(T, calls):
    mode_base = dispatch_module(T).TorchDispatchMode
    seen = []

    class Log(mode_base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            # repr: 1.0 == 1 in Python, the types are what is compared
            seen.append((str(func).split(".", 1)[-1],
                         [repr(a) for a in args if not isinstance(a, T.Tensor)],
                         {k: repr(v) for k, v in kwargs.items() if not isinstance(v, T.Tensor)}))
            return func(*args, **kwargs)

    x = T.ones(3)
    with Log():
        for call in calls:
            call(T, x)
    return seen


CALLS = {
    "sub alpha=1.0": lambda T, x: T.sub(x, x, alpha=1.0),
    "sub alpha=1": lambda T, x: T.sub(x, x, alpha=1),
    "add alpha=2": lambda T, x: T.add(x, x, alpha=2),
    "F.softplus()": lambda T, x: T.nn.functional.softplus(x),
    "F.softplus(1, 20)": lambda T, x: T.nn.functional.softplus(x, 1, 20),
    "F.softplus(beta=1.0)": lambda T, x: T.nn.functional.softplus(x, beta=1.0),
    "nn.Softplus": lambda T, x: T.nn.Softplus()(x),
    "F.elu": lambda T, x: T.nn.functional.elu(x),
    "F.hardtanh": lambda T, x: T.nn.functional.hardtanh(x),
    "F.leaky_relu": lambda T, x: T.nn.functional.leaky_relu(x, 0.01),
    "threshold ints": lambda T, x: T.nn.functional.threshold(x, 1, 2),
    "addcmul value=1.0": lambda T, x: T.addcmul(x, x, x, value=1.0),
}


@pytest.mark.parametrize("name", CALLS)
def test_scalar_arguments_at_default_as_torch(name):
    torch = oracle_torch()
    assert _logged(gt, [CALLS[name]]) == _logged(torch, [CALLS[name]])


def test_alpha_one_float_is_kept_and_int_dropped():
    seen = _logged(gt, [CALLS["sub alpha=1.0"], CALLS["sub alpha=1"]])
    assert seen == [("sub.Tensor", [], {"alpha": "1.0"}), ("sub.Tensor", [], {})]
