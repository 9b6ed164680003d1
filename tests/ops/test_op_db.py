"""PyTorch's operator database (OpInfo `op_db`) walked against glasstorch.

For every OpInfo whose function glasstorch has, each of its first sample inputs (made by
PyTorch, converted through NumPy with their strides) runs through both libraries, in
float32, int64, bool and bfloat16 (FORWARD_DTYPES; SKIP_BFLOAT16 leaves out the bfloat16
samples of a few entries): outputs must agree in values, dtype and shape, and in float64
the gradients of a weighted sum of the outputs must agree too. A sample PyTorch itself
rejects is skipped. Entries glasstorch lacks are listed in NOT_IN_GLASSTORCH with the
reason (a test keeps that list exact); entries known to differ are in SKIP with the
reason. Which of several tied elements an index output names is left to each library's
algorithm (TIES): there only the values are compared, and the indices by shape and dtype.
Samples holding ±inf or nan, where PyTorch's answer can depend on the CPU, are left out but
for entries exact there (EXACT_AT_SPECIAL_VALUES).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")
cmi = pytest.importorskip("torch.testing._internal.common_methods_invocations")

SAMPLES = 6          # samples per dtype and entry: enough variety, a fast suite
FORWARD_DTYPES = (torch.float32, torch.int64, torch.bool, torch.bfloat16)
GRAD_SAMPLES = 3

# "name" or "name.variant" -> why the entry is not compared.
SKIP: dict[str, str] = {
    "empty": "uninitialised values", "empty_like": "uninitialised values",
    "new_empty": "uninitialised values", "new_empty_strided": "uninitialised values",
    "empty_strided": "uninitialised values", "empty_permuted": "uninitialised values",
    "to_sparse": "a sparse result (tests/sparse compares the sparse layouts with PyTorch)",
    "linalg.eig": "eigenvector phases are LAPACK's choice (tests/test_linalg_namespace.py "
                  "compares invariants)",
    "linalg.eigh": "eigenvector signs are LAPACK's choice (tests/test_linalg_namespace.py "
                   "compares invariants)",
    "nn.functional.triplet_margin_with_distance_loss": "samples pass torch functions as the "
                                                       "distance_function argument",
    "nn.functional.batch_norm": "a sample is a 1-D empty input, which torch passes through "
                                "and glasstorch refuses as not (N, C, *)",
}

# Entries compared without their bfloat16 samples, and why.
SKIP_BFLOAT16: dict[str, str] = {
    "matrix_exp": "PyTorch's bfloat16 matrix_exp is wrong (NaN for these samples, inf for "
                  "exp(2 * I)); glasstorch's is the float32 one rounded",
}

# Entries compared forward only, and why their gradients are not compared here.
SKIP_BACKWARD: dict[str, str] = {
    "native_layer_norm": "mean/rstd outputs are differentiable in glasstorch (its double "
                         "backward runs through them); torch marks them non-differentiable",
    "native_batch_norm": "save_mean/save_invstd outputs are differentiable in glasstorch; "
                         "torch marks them non-differentiable",
    "_native_batch_norm_legit": "save_mean/save_rstd are differentiable in glasstorch (it is "
                                "native_batch_norm); torch marks them non-differentiable",
    "linalg.matrix_power": "n=0 returns a constant identity; torch attaches a node with a "
                           "zero gradient",
    "as_strided_scatter": "torch's gradient also reaches the overwritten elements (its own "
                          "gradcheck fails; its OpInfo skips the gradient tests); glasstorch's "
                          "passes gradcheck (tests/ops/test_extra_ops.py)",
}

# Entries whose float32 results are compared with a looser (rtol, atol).
TOLERANCE = {"matrix_exp": (1e-4, 1e-2), "linalg.matrix_exp": (1e-4, 1e-2)}

# A sample whose tensors hold ±inf or nan is compared only for these entries, whose result
# there is exact by definition. Elsewhere PyTorch's answer at such points can depend on the
# CPU (its vectorised exp, erf, tanh, ... differ between AVX-512, AVX2 and the scalar path),
# so it is no oracle there: such samples are left out (the pointwise and activation tests
# check those points against the IEEE answer). Of OpInfo's sample_inputs (its extremal
# values are in reference_inputs, not walked here) only these entries' hold any today.
EXACT_AT_SPECIAL_VALUES = {
    "addr": "the samples with beta=0 put nan in the input, which beta=0 ignores by definition",
}

# Entries glasstorch has no function for, and why. test_missing_entries_are_listed fails when
# an entry is missing without a reason here (or is listed but no longer missing).
NOT_IN_GLASSTORCH: dict[str, str] = {
    "_batch_norm_with_update": "an aten-internal form of native_batch_norm for export; not "
                               "declared",
    "_upsample_bilinear2d_aa": "antialiased bilinear resampling is not implemented",
    "max_pool2d_with_indices_backward": "the entry calls a helper of the test module around "
                                        "the backward kernel; glasstorch declares that kernel "
                                        "(torch.ops.aten.max_pool2d_with_indices_backward)",
    "torch._scaled_mm": "float8 scaled matrix products: no float8 GEMM kernels",
    "torch._scaled_mm_v2": "float8 scaled matrix products: no float8 GEMM kernels",
    "torch.ops.aten._safe_softmax.default": "an aten-internal softmax for SDPA masks; not "
                                            "declared",
    "torch.ops.aten._flash_attention_forward": "a CUDA-only attention kernel",
    "torch.ops.aten._efficient_attention_forward": "a CUDA-only attention kernel",
    "__rdiv__": "Python 3 calls __rtruediv__, which glasstorch's Tensor defines; the "
                "Python-2 name is not",
    "jiterator_unary": "CUDA-only runtime-compiled kernels",
    "jiterator_binary": "CUDA-only runtime-compiled kernels",
    "jiterator_4inputs_with_extra_args": "CUDA-only runtime-compiled kernels",
    "jiterator_binary_return_by_ref": "CUDA-only runtime-compiled kernels",
    "jiterator_2inputs_2outputs": "CUDA-only runtime-compiled kernels",
    "hash_tensor": "its result is torch.uint64, a dtype glasstorch does not have",
}

# Entries whose op is `wrapper_set_seed(Tensor.<method>, ...)`: the generator seeded with 42,
# then the in-place sampler. glasstorch's generator gives PyTorch's streams, so the samples
# compare value for value.
SEEDED = {"cauchy": "cauchy_", "exponential": "exponential_", "geometric": "geometric_",
          "log_normal": "log_normal_", "uniform": "uniform_"}

# Entries whose integer outputs are positions among possibly tied values.
TIES = {"sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
        "max.reduction_with_dim", "min.reduction_with_dim", "argmax", "argmin", "cummax",
        "cummin", "sort.stable"}


def _key(info) -> str:
    return info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")


def _resolve(root, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _aten_overload(op):
    """glasstorch's torch.ops.aten.<name>.<overload> for an entry whose op is PyTorch's
    OpOverload, or None."""
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != "aten":
        return None
    packet = getattr(gt.ops.aten, op.__name__.split(".")[0], None)
    return getattr(packet, op._overloadname, None) if packet is not None else None


def _target(info):
    """('function', gt_fn) when glasstorch has the entry's function and the entry calls it
    directly (or is an aten overload glasstorch declares); ('method', name) for
    dunder/method-only entries; None when glasstorch lacks it or the entry wraps its function
    in a lambda we cannot mirror."""
    if info.name.startswith("__") and info.name.endswith("__"):
        return ("method", info.name) if hasattr(gt.Tensor, info.name) else None
    overload = _aten_overload(info.op)
    if overload is not None:
        return ("function", overload)
    if info.name in SEEDED and hasattr(gt.Tensor, SEEDED[info.name]):
        return ("seeded", SEEDED[info.name])
    ours = _resolve(gt, info.name)
    theirs = _resolve(torch, info.name)
    if ours is not None and theirs is not None and info.op is theirs:
        return ("function", ours)
    if ours is None and info.method_variant is not None and hasattr(gt.Tensor, info.name) \
            and getattr(info.method_variant, "__name__", None) == info.name:
        return ("method", info.name)
    called = getattr(info.op, "__name__", None)      # an entry named apart from its function
    if ours is None and called and getattr(torch, called, None) is info.op \
            and hasattr(gt, called):
        return ("function", getattr(gt, called))
    return None


ENTRIES = [info for info in cmi.op_db if _target(info) is not None]


# ---- converting PyTorch's arguments --------------------------------------------------------

def _dtype(d):
    return getattr(gt, str(d).replace("torch.", ""))


def _tensor(t):
    """The same values over the same strides (a copy of t's storage viewed like t)."""
    t = t.detach().resolve_conj().resolve_neg()
    if t.layout != torch.strided:
        raise NotImplementedError("layout")
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))
    if t.dtype == torch.bfloat16:
        data = gt.from_numpy(flat.view(torch.int16).numpy().copy()).view(gt.bfloat16)
    else:
        data = gt.from_numpy(flat.numpy().copy())
    return data.as_strided(tuple(t.shape), t.stride(), t.storage_offset())


def convert(x, leaves=None):
    if isinstance(x, torch.Tensor):
        out = _tensor(x)
        if x.requires_grad and leaves is not None:
            out.requires_grad_()
            leaves.append((x, out))
        return out
    if isinstance(x, torch.dtype):
        return _dtype(x)
    if isinstance(x, torch.device):
        return gt.device(str(x))
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.memory_format):
        return getattr(gt, str(x).replace("torch.", ""))
    if isinstance(x, torch.Generator):
        raise NotImplementedError("generator")
    if isinstance(x, (list, tuple)):
        items = [convert(v, leaves) for v in x]
        return type(x)(items) if not hasattr(x, "_fields") else type(x)(*items)
    if isinstance(x, dict):
        return {k: convert(v, leaves) for k, v in x.items()}
    return x


def _call(target, sample, lib_input, args, kwargs):
    kind, fn = target
    if kind == "method":
        return getattr(lib_input, fn)(*args, **kwargs)
    if kind == "seeded":
        state = gt.get_rng_state()
        gt.manual_seed(42)
        try:
            return getattr(lib_input, fn)(*args, **kwargs)
        finally:
            gt.set_rng_state(state)
    return fn(lib_input, *args, **kwargs)


def _torch_call(info, target, sample):
    if target[0] == "method":
        return getattr(sample.input, target[1])(*sample.args, **sample.kwargs)
    return info.op(sample.input, *sample.args, **sample.kwargs)


# ---- comparing ------------------------------------------------------------------------------

def _tolerance(dtype):
    return {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2),
            torch.float32: (1e-4, 1e-5), torch.complex64: (1e-4, 1e-5)}.get(dtype, (1e-7, 1e-7))


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _flat(v)]
    return [x]


def _numpy(t):
    if t._is_zerotensor():
        t = torch.zeros_like(t)
    t = t.detach().resolve_conj().resolve_neg()
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


def compare(ours, theirs, what: str, ties: bool = False, tolerance=None):
    ours_flat, theirs_flat = _flat(ours), _flat(theirs)
    assert len(ours_flat) == len(theirs_flat), f"{what}: {len(ours_flat)} outputs, torch " \
                                                f"{len(theirs_flat)}"
    for i, (a, b) in enumerate(zip(ours_flat, theirs_flat)):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, gt.Tensor), f"{what}[{i}]: got {type(a).__name__}"
            assert tuple(a.shape) == tuple(b.shape), f"{what}[{i}]: shape {tuple(a.shape)} " \
                                                     f"vs torch {tuple(b.shape)}"
            assert str(a.dtype) == str(b.dtype), f"{what}[{i}]: dtype {a.dtype} vs {b.dtype}"
            a = a.detach().resolve_conj().resolve_neg()       # values through the bits
            av = a.float().numpy() if a.dtype == gt.bfloat16 else a.numpy()
            bv = _numpy(b)
            if ties and b.dtype == torch.int64:
                continue
            if av.dtype.kind in "biu":
                np.testing.assert_array_equal(av, bv, err_msg=f"{what}[{i}]")
            else:
                rtol, atol = tolerance or _tolerance(b.dtype)
                np.testing.assert_allclose(av, bv, rtol=rtol, atol=atol, equal_nan=True,
                                           err_msg=f"{what}[{i}]")
        elif isinstance(b, (bool, int, float, complex)):
            assert (a == b) or (isinstance(b, float) and math.isclose(a, b, rel_tol=1e-6)) or \
                (isinstance(b, float) and math.isnan(a) and math.isnan(b)), f"{what}[{i}]"


def _holds_special_values(sample) -> bool:
    """Whether a floating tensor among the sample's arguments holds ±inf or nan."""
    return any(isinstance(t, torch.Tensor) and t.layout == torch.strided
               and (t.is_floating_point() or t.is_complex())
               and not bool(torch.isfinite(t.detach()).all())
               for t in _flat([sample.input, list(sample.args), list(sample.kwargs.values())]))


def _samples(info, dtype, requires_grad=False):
    if not info.supports_dtype(dtype, "cpu"):
        return []
    out = []
    for sample in info.sample_inputs("cpu", dtype, requires_grad=requires_grad):
        if _key(info) not in EXACT_AT_SPECIAL_VALUES and _holds_special_values(sample):
            continue
        out.append(sample)
        if len(out) == (GRAD_SAMPLES if requires_grad else SAMPLES):
            break
    return out


def _run_forward(info, target, dtype) -> int:
    compared = 0
    for n, sample in enumerate(_samples(info, dtype)):
        try:
            expected = _torch_call(info, target, sample)
        except Exception:
            continue                       # torch rejects the sample itself
        try:
            inp, args, kwargs = convert(sample.input), convert(sample.args), \
                convert(sample.kwargs)
        except NotImplementedError:
            continue
        got = _call(target, sample, inp, args, kwargs)
        compare(got, expected, f"{_key(info)} {dtype} sample {n}", ties=_key(info) in TIES,
                tolerance=TOLERANCE.get(_key(info)) if dtype == torch.float32 else None)
        compared += 1
    return compared


def _weights(outputs):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(tuple(o.shape)) for o in outputs]


def _differentiable(outputs):
    return [o for o in _flat(outputs) if isinstance(o, (torch.Tensor, gt.Tensor))
            and o.requires_grad]


def _run_backward(info, target) -> int:
    compared = 0
    for n, sample in enumerate(_samples(info, torch.float64, requires_grad=True)):
        try:
            expected = _differentiable(_torch_call(info, target, sample))
        except Exception:
            continue
        leaves: list = []
        try:
            inp, args, kwargs = convert(sample.input, leaves), convert(sample.args, leaves), \
                convert(sample.kwargs, leaves)
        except NotImplementedError:
            continue
        got = _differentiable(_call(target, sample, inp, args, kwargs))
        what = f"{_key(info)} gradient, sample {n}"
        if not expected or not leaves:
            continue
        assert len(got) == len(expected), f"{what}: {len(got)} differentiable outputs"
        weights = _weights(expected)
        t_loss = sum(((o * torch.from_numpy(w)).real.sum() if o.is_complex()
                      else (o * torch.from_numpy(w)).sum()) for o, w in zip(expected, weights))
        g_loss = sum(((o * gt.tensor(w)).real.sum() if o.is_complex()
                      else (o * gt.tensor(w)).sum()) for o, w in zip(got, weights))
        t_grads = torch.autograd.grad(t_loss, [t for t, _ in leaves], allow_unused=True)
        g_grads = gt.autograd.grad(g_loss, [g for _, g in leaves], allow_unused=True)
        for i, (a, b) in enumerate(zip(g_grads, t_grads)):
            if b is None or a is None:
                assert a is None or b is None or float(abs(a).max()) == 0, f"{what}[{i}]"
                continue
            compare(a, b, f"{what} input {i}")
        compared += 1
    return compared


@pytest.mark.parametrize("info", ENTRIES, ids=_key)
def test_forward(info):
    if _key(info) in SKIP or info.name in SKIP:
        pytest.skip(SKIP.get(_key(info)) or SKIP[info.name])
    target = _target(info)
    if not sum(_run_forward(info, target, dtype) for dtype in FORWARD_DTYPES
               if not (dtype == torch.bfloat16 and _key(info) in SKIP_BFLOAT16)):
        pytest.skip("no sample that torch runs and glasstorch can receive")


@pytest.mark.parametrize("info", [i for i in ENTRIES if i.supports_autograd], ids=_key)
def test_backward(info):
    if _key(info) in SKIP or info.name in SKIP:
        pytest.skip(SKIP.get(_key(info)) or SKIP[info.name])
    if _key(info) in SKIP_BACKWARD:
        pytest.skip(SKIP_BACKWARD[_key(info)])
    if not _run_backward(info, _target(info)):
        pytest.skip("no differentiable sample that torch runs and glasstorch can receive")


def _has_no_function(info) -> bool:
    """Whether glasstorch lacks the entry's function altogether (not merely a form the walk
    cannot call, such as a lambda around a function glasstorch has)."""
    if _target(info) is not None:
        return False
    if info.name.startswith("__"):
        return True
    return _resolve(gt, info.name) is None and not hasattr(gt.Tensor, info.name) \
        and _aten_overload(info.op) is None


def test_missing_entries_are_listed():
    missing = {_key(info) for info in cmi.op_db if _has_no_function(info)}
    print(f"{len(missing)} of {len(cmi.op_db)} op_db entries have no glasstorch function")
    assert not missing - set(NOT_IN_GLASSTORCH), "missing without a reason in NOT_IN_GLASSTORCH"
    assert not set(NOT_IN_GLASSTORCH) - missing, "listed in NOT_IN_GLASSTORCH but present now"
