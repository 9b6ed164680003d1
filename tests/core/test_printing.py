"""repr(tensor) against PyTorch's, character for character.

Every glasstorch tensor is turned into a torch tensor with the same bytes, shape, strides and
offset (`oracle.to_torch`), so both libraries print exactly the same elements.
"""
import doctest
import math

import ml_dtypes
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.core import printing
from glasstorch.core.storage import UntypedStorage
from glasstorch.dispatch.dispatcher import Operator
from oracle import oracle_torch, to_torch

torch = oracle_torch()

NP_DTYPES = {
    "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
    "float64": np.float64, "complex64": np.complex64, "complex128": np.complex128,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "bool": np.bool_,
}
FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
INTS = ("int8", "int16", "int32", "int64", "uint8")


@pytest.fixture(autouse=True)
def default_options():
    """Every test starts and ends with the default print options and default dtype."""
    yield
    gt.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    gt.set_default_dtype(gt.float32)
    torch.set_default_dtype(torch.float32)


def gt_from(values, dtype_name):
    """A glasstorch tensor holding `values` (any array-like) cast to `dtype_name`."""
    a = np.asarray(values)
    np_dtype = NP_DTYPES[dtype_name]
    if dtype_name in INTS and a.dtype.kind == "f":
        a = np.nan_to_num(a, nan=0, posinf=0, neginf=0)
        info = np.iinfo(np_dtype)
        a = np.clip(np.round(a), info.min, info.max)
    with np.errstate(over="ignore"):  # float16 overflowing to inf is wanted data
        return gt.from_numpy(np.ascontiguousarray(a.astype(np_dtype)))


def check(t, **kwargs):
    """repr and str of `t` equal torch's for the same data."""
    expected = to_torch(t)
    if t.requires_grad:
        expected.requires_grad_()
    want = expected.__repr__(**kwargs)
    assert t.__repr__(**kwargs) == want
    if not kwargs:
        assert str(t) == want  # torch's str is its repr


# ---- the recorded examples (reference section 12) ----------------------------------------

@pytest.mark.parametrize("values", [
    [1., 2., 3.], [1.5, 2.25], [1e-5, 1.], [1e8, 1.], [1e-4, 1.], [123456.7, 1.],
    [100., 1000.], [1000., 10000.], [1e-3], [1e3], [math.nan, math.inf, -math.inf, 1.],
    [-1.5, 2.], [0., -0.], [-math.inf, 1.], [0., 0.], [math.nan], [-0.0, 1.5], [1e-8, 1e10],
    [0.99999, 1.], [9.99996, -0.5], [1e100, 1.], [5e-324, 1.],
    [1., 1000.], [1., 1000.5], [1e8, 1e6], [1.5e8, 1e6], [0.001, 0.5],  # sci-mode boundaries
])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_float_examples(values, dtype_name):
    check(gt_from(values, dtype_name))


@pytest.mark.parametrize("value", [3., 3, 1e-5, True, False, 1 + 2j, -0.0, math.nan, -7,
                                   1 - 0j, complex(0, -0.0), complex(math.nan, math.inf)])
def test_zero_dim(value):
    t = gt.tensor(value)
    assert repr(t) == repr(torch.tensor(value))


def test_format_zero_dim():
    assert format(gt.tensor(2.5), ".2f") == format(torch.tensor(2.5), ".2f")
    assert f"{gt.tensor(7)}" == f"{torch.tensor(7)}"
    assert f"{gt.tensor(1 - 2j)}" == f"{torch.tensor(1 - 2j)}"
    assert f"{gt.tensor([1., 2.])}" == f"{torch.tensor([1., 2.])}"
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor"):
        format(gt.tensor([1., 2.]), ".2f")


@pytest.mark.parametrize("values", [
    [1 + 2j, 3 - 1j], [1e-5 + 1j, 2 - 3e6j], [complex(0, -0.0), 1.5 + 0j],
    [complex(math.nan, 1), complex(1, math.inf), complex(-math.inf, -math.nan)],
    [0.5 - 0.25j, -100 + 12.125j],
])
@pytest.mark.parametrize("dtype_name", COMPLEX)
def test_complex_examples(values, dtype_name):
    check(gt_from(values, dtype_name))


@pytest.mark.parametrize("dtype_name", ["int8", "int16", "int32", "int64", "uint8", "bool"])
def test_integer_and_bool(dtype_name):
    info = np.iinfo(NP_DTYPES[dtype_name]) if dtype_name != "bool" else None
    values = [0, 1, 2] if info is None else [info.min, 0, 5, info.max]
    check(gt_from(values, dtype_name))
    check(gt_from([[True, False], [False, False]] if info is None else [[info.max], [1]],
                  dtype_name))


# ---- random data: every dtype, shape and magnitude -------------------------------------

SHAPES = [(1,), (5,), (7, 3), (2, 3, 4), (2, 2, 3, 2), (1, 1, 1), (30,), (1001,),
          (40, 30), (11, 12, 13), (3, 400), (2, 3, 4, 50), (6, 7, 1, 30)]

KINDS = ["normal", "tiny", "huge", "integral", "special", "mixed_magnitude"]


def make_values(shape, kind, rng):
    n = math.prod(shape)
    if kind == "normal":
        v = rng.standard_normal(n)
    elif kind == "tiny":
        v = rng.standard_normal(n) * 1e-6
    elif kind == "huge":
        v = rng.standard_normal(n) * 1e9
    elif kind == "integral":
        v = rng.integers(-300, 300, n).astype(np.float64)
    elif kind == "special":
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        picks = rng.integers(0, 5, n)
        v[picks == 0] = np.nan
        v[picks == 1] = np.inf
        v[(picks == 2) & (rng.random(n) < 0.5)] = -np.inf
        v[picks == 3] = -0.0
    else:
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 11, n)
    return v.reshape(shape)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype_name", ["float32", "float64", "float16", "bfloat16"])
def test_random_floats(dtype_name, shape, kind):
    rng = np.random.default_rng([len(shape), math.prod(shape), KINDS.index(kind)])
    check(gt_from(make_values(shape, kind, rng), dtype_name))


@pytest.mark.parametrize("kind", ["normal", "special", "mixed_magnitude", "integral"])
@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 4), (1200,), (20, 70)], ids=str)
@pytest.mark.parametrize("dtype_name", COMPLEX)
def test_random_complex(dtype_name, shape, kind):
    rng = np.random.default_rng([len(shape), math.prod(shape), 7])
    v = make_values(shape, kind, rng) + 1j * make_values(shape, "normal", rng)[::-1]
    check(gt_from(v, dtype_name))


@pytest.mark.parametrize("shape", [(6,), (4, 5), (2, 3, 4), (1001,), (9, 8, 20),
                                   (2, 2, 2, 200)], ids=str)
@pytest.mark.parametrize("dtype_name", INTS + ("bool",))
def test_random_integers(dtype_name, shape):
    rng = np.random.default_rng(math.prod(shape))
    if dtype_name == "bool":
        v = rng.random(shape) < 0.5
    else:
        info = np.iinfo(NP_DTYPES[dtype_name])
        v = rng.integers(max(info.min, -10**6), min(info.max, 10**6), shape, endpoint=True)
    check(gt_from(v, dtype_name))


def test_long_rows_wrap():
    check(gt_from(np.arange(1000), "int64"))
    check(gt_from(np.linspace(-5, 5, 300).reshape(3, 100), "float32"))
    check(gt_from(np.linspace(-5, 5, 1000), "complex64"))


# ---- layouts --------------------------------------------------------------------------

def test_non_contiguous():
    base = gt_from(np.random.default_rng(3).standard_normal((4, 5, 6)) * 100, "float32")
    check(base.permute(2, 0, 1))
    check(base.as_strided((3, 4), (12, 2), 7))        # stepped slice with an offset
    check(base.as_strided((5, 4), (0, 1), 3))         # an expanded row (stride 0)
    big = gt_from(np.arange(5000.0).reshape(50, 100), "float64")
    check(big.t())
    check(big.as_strided((40, 30), (100, 3), 11))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 4), (3, 0)], ids=str)
@pytest.mark.parametrize("dtype_name", list(NP_DTYPES))
def test_empty(shape, dtype_name):
    check(gt_from(np.zeros(shape), dtype_name))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float64", "complex64"])
@pytest.mark.parametrize("shape", [(2,), (0, 3), (), (3, 4)], ids=str)
def test_meta(shape, dtype):
    t = gt.empty(shape, device="meta", dtype=getattr(gt, dtype))
    assert repr(t) == repr(torch.empty(shape, device="meta", dtype=getattr(torch, dtype)))


def test_device_suffix_order():
    """A tensor on another device names it first (torch prints `device='cuda:0'`)."""
    data = np.array([1, 2], np.int32)
    storage = UntypedStorage._wrap(data.view(np.uint8), gt.device("cuda:0"))
    t = gt.Tensor._make(storage, 0, (2,), (1,), gt.int32)
    assert repr(t) == "tensor([1, 2], device='cuda:0', dtype=torch.int32)"
    f = gt.Tensor._make(UntypedStorage._wrap(np.array([1.5], np.float32).view(np.uint8),
                                             gt.device("cuda:0")), 0, (1,), (1,), gt.float32)
    f.requires_grad_()
    assert repr(f) == "tensor([1.5000], device='cuda:0', requires_grad=True)"


# ---- autograd suffixes ------------------------------------------------------------------

def test_requires_grad():
    check(gt.tensor([1., 2.], requires_grad=True))
    check(gt.tensor(3.5, requires_grad=True))
    check(gt_from(np.arange(12.0).reshape(3, 4), "float64").requires_grad_())


class MulBackward0:
    pass


class NamedNode:
    def name(self):
        return "MulBackward0"


@pytest.mark.parametrize("node", [MulBackward0(), NamedNode()])
def test_grad_fn_wins(node):
    a = torch.tensor([1., 2.], requires_grad=True)
    t = gt.tensor([2., 4.])
    t._requires_grad = True
    t.grad_fn = node
    assert repr(t) == repr(a * 2)


def test_suffixes_wrap_past_linewidth():
    v = np.random.default_rng(5).standard_normal((2, 9))
    check(gt_from(v, "float64").requires_grad_())
    check(gt_from(np.arange(13), "int16"))
    gt.set_printoptions(linewidth=40)
    torch.set_printoptions(linewidth=40)
    check(gt_from([1.5, 2.5, 3.5], "float16").requires_grad_())
    check(gt_from(np.zeros((0, 3)), "int8"))


def test_tensor_contents_argument():
    check(gt_from([1., 2.], "float64"), tensor_contents="[custom]")


def test_subclass_prints_its_name():
    class MyTensor(gt.Tensor):
        pass

    class MyTorchTensor(torch.Tensor):
        pass

    MyTensor.__name__ = MyTorchTensor.__name__ = "Special"
    t = MyTensor._make(UntypedStorage._wrap(np.array([1., 2.], np.float32).view(np.uint8)),
                       0, (2,), (1,), gt.float32)
    assert repr(t) == repr(torch.tensor([1., 2.]).as_subclass(MyTorchTensor))


# ---- options --------------------------------------------------------------------------

OPTIONS = [
    dict(precision=0), dict(precision=2), dict(precision=8), dict(threshold=5),
    dict(threshold=0), dict(edgeitems=1, threshold=10), dict(edgeitems=0, threshold=10),
    dict(edgeitems=0), dict(edgeitems=5, threshold=50), dict(linewidth=20),
    dict(linewidth=200), dict(sci_mode=True), dict(sci_mode=False), dict(profile="short"),
    dict(profile="full"), dict(profile="short", precision=6, sci_mode=True),
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                        o.items()))
def test_printoptions(options):
    gt.set_printoptions(**options)
    torch.set_printoptions(**options)
    rng = np.random.default_rng(11)
    for shape in [(), (7,), (4, 5), (3, 4, 5), (1001,), (11, 10, 10)]:
        check(gt_from(make_values(shape, "mixed_magnitude", rng) if shape else 1.25, "float32"))
        check(gt_from(make_values(shape, "integral", rng), "float64"))
        check(gt_from(make_values(shape, "normal", rng) * 100, "int32"))
        check(gt_from(make_values(shape, "special", rng) - 2j, "complex64"))
        check(gt_from(np.zeros(shape), "float32"))
    check(gt_from(np.zeros((0, 2)), "int32"))


def test_get_and_set_printoptions():
    assert gt.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3,
                                     "linewidth": 80, "sci_mode": None}
    gt.set_printoptions(precision=2, sci_mode=True)
    assert gt.get_printoptions()["precision"] == 2
    gt.set_printoptions(linewidth=100)  # like torch, sci_mode goes back to None
    assert gt.get_printoptions() == {"precision": 2, "threshold": 1000, "edgeitems": 3,
                                     "linewidth": 100, "sci_mode": None}
    gt.set_printoptions(profile="full")
    assert gt.get_printoptions()["threshold"] == math.inf
    gt.set_printoptions(**{**gt.get_printoptions(), "edgeitems": 1})
    assert gt.get_printoptions()["edgeitems"] == 1


def test_docstring_examples():
    results = doctest.testmod(printing)
    assert results.attempted and not results.failed


def test_unknown_profile_is_an_error():
    """torch silently ignores an unknown profile; glasstorch says what it expected."""
    with pytest.raises(ValueError, match="profile must be one of 'default', 'short' or"):
        gt.set_printoptions(profile="long")
    assert gt.get_printoptions()["precision"] == 4


@pytest.mark.parametrize("dtype_name", ["float32", "float64", "complex64", "complex128",
                                        "float16", "int64"])
def test_default_dtype_float64(dtype_name):
    gt.set_default_dtype(gt.float64)
    torch.set_default_dtype(torch.float64)
    check(gt_from([1.5, -2.0], dtype_name))
    check(gt_from(np.zeros((0,)), dtype_name))
    check(gt_from(np.zeros((2, 0)), dtype_name))


# ---- printing stays out of the dispatcher -----------------------------------------------

def test_printing_dispatches_no_op(monkeypatch):
    t = gt_from(np.random.default_rng(0).standard_normal((30, 40)) + 1j, "complex64")
    u = gt_from(np.arange(10.0), "bfloat16")
    m = gt.empty(3, device="meta")      # a factory dispatches: made before the patch

    def forbidden(self, *args):
        raise AssertionError(f"printing dispatched {self.name}")

    monkeypatch.setattr(Operator, "dispatch", forbidden)
    monkeypatch.setattr(Operator, "redispatch", forbidden)
    repr(t), repr(u), str(m)
