"""PyTorch's operator database walked on the GPU: every OpInfo sample that
tests/ops/test_op_db.py compares on the CPU runs again with its tensors on 'cuda' (same
values, same strides), and the results must match PyTorch's CPU results in values, dtype
and shape, and come back on the GPU. In float64 the gradients are compared too.

On a machine without a GPU the directory's conftest runs this on simulated CuPy, which
refuses what real CuPy refuses (implicit host conversion, NumPy arrays mixed into device
ops, bfloat16 arrays, functions CuPy lacks), so a kernel that passes here is one that uses
only the array API both libraries share.
"""
import os
import sys
import warnings

import numpy as np
import pytest

import glasstorch as gt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "ops"))
pytest.importorskip("torch")
pytest.importorskip("torch.testing._internal.common_methods_invocations")
import torch  # noqa: E402
import test_op_db as cpu_db  # noqa: E402

DTYPES = (torch.float32, torch.int64, torch.bool, torch.bfloat16)
SAMPLES = 3              # per dtype and entry: the CPU walk covers more; this is the GPU pass
GRAD_SAMPLES = 2

# Entries not walked here, and why.
SKIP_CUDA: dict[str, str] = {
    "to": "its samples name the device to go to (the CPU): the result is meant to leave the "
          "GPU (copies both ways: tests/cuda/test_tensors_on_gpu.py)",
    "tensor_split": "PyTorch requires the indices tensor on the CPU, and this walk moves "
                    "every tensor argument to the GPU",
}

# Entries compared without their bfloat16 samples: the oracle is PyTorch's CPU kernel,
# which rounds intermediates to bfloat16, where PyTorch's CUDA kernel and glasstorch (on
# both devices) compute in float32 and round once.
SKIP_BFLOAT16: dict[str, str] = {
    name: "PyTorch's CPU kernel rounds each step to bfloat16; CUDA kernels compute in float32"
    for name in ("nn.functional.conv_transpose2d", "nn.functional.conv_transpose3d",
                 "nn.functional.grid_sample", "grid_sampler_2d", "grid_sampler_3d")}
SKIP_BFLOAT16["matrix_exp"] = "PyTorch's bfloat16 matrix_exp returns NaN for these samples"
SKIP_BFLOAT16["native_layer_norm"] = ("PyTorch's CUDA kernel returns float32 mean and rstd "
                                      "for bfloat16 input, its CPU oracle bfloat16 ones "
                                      "(tests/cuda/test_fused_ops.py checks the CUDA rule)")

if tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 13):
    SKIP_BFLOAT16["uniform"] = ("PyTorch before 2.13 draws other bfloat16 uniform_ values for "
                                "the same seed (seen with 2.11); glasstorch follows 2.13")


def _to_gpu(x):
    """The same values over the same strides, in GPU memory."""
    if isinstance(x, gt.Tensor):
        storage = x.untyped_storage()
        n = storage.nbytes() // x.element_size()
        flat = gt.Tensor._make(storage, 0, (n,), (1,), x.dtype)
        gpu = flat.to("cuda")
        out = gpu.as_strided(tuple(x.shape), x.stride(), x.storage_offset())
        if x.requires_grad:
            out = out.detach().requires_grad_()
        return out
    if isinstance(x, (list, tuple)):
        return _rebuild(x, [_to_gpu(v) for v in x])
    if isinstance(x, dict):        # factories: device="cpu" in a sample means the default
        return {k: gt.device("cuda", 0) if k == "device" and str(v) == "cpu" else _to_gpu(v)
                for k, v in x.items()}
    if isinstance(x, gt.device) and x.type == "cpu":
        return gt.device("cuda", 0)
    return x


def _rebuild(x, items):
    if isinstance(x, gt.return_types._StructSeq):
        return type(x)(items)
    return type(x)(items) if not hasattr(x, "_fields") else type(x)(*items)


def _to_host(x):
    if isinstance(x, gt.Tensor):
        assert x.device.type == "cuda", f"an output is on {x.device}, not the GPU"
        return x.detach().cpu()
    if isinstance(x, (list, tuple)):
        return _rebuild(x, [_to_host(v) for v in x])
    return x


def _run_forward(info, target, dtype) -> int:
    compared = 0
    for n, sample in enumerate(cpu_db._samples(info, dtype)[:SAMPLES]):
        try:
            expected = cpu_db._torch_call(info, target, sample)
        except Exception:
            continue
        try:
            inp, args, kwargs = (cpu_db.convert(sample.input), cpu_db.convert(sample.args),
                                 cpu_db.convert(sample.kwargs))
        except NotImplementedError:
            continue
        got = cpu_db._call(target, sample, _to_gpu(inp), _to_gpu(args), _to_gpu(kwargs))
        key = cpu_db._key(info)
        cpu_db.compare(_to_host(got), expected, f"{key} {dtype} sample {n} (cuda)",
                       ties=key in cpu_db.TIES,
                       tolerance=cpu_db.TOLERANCE.get(key) if dtype == torch.float32 else None)
        compared += 1
    return compared


def _skip_reason(info):
    key = cpu_db._key(info)
    for table in (cpu_db.SKIP, SKIP_CUDA):
        if key in table or info.name in table:
            return table.get(key) or table[info.name]
    return None


@pytest.mark.parametrize("info", cpu_db.ENTRIES, ids=cpu_db._key)
def test_forward_on_gpu(info):
    reason = _skip_reason(info)
    if reason:
        pytest.skip(reason)
    target = cpu_db._target(info)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)       # host-path notices
        compared = sum(_run_forward(info, target, d) for d in DTYPES
                       if not (d == torch.bfloat16 and cpu_db._key(info) in SKIP_BFLOAT16))
    if not compared:
        pytest.skip("no sample that torch runs and glasstorch can receive")


def _run_backward(info, target) -> int:
    compared = 0
    for n, sample in enumerate(cpu_db._samples(info, torch.float64,
                                               requires_grad=True)[:GRAD_SAMPLES]):
        try:
            expected = cpu_db._differentiable(cpu_db._torch_call(info, target, sample))
        except Exception:
            continue
        leaves: list = []
        try:
            inp, args, kwargs = (cpu_db.convert(sample.input, leaves),
                                 cpu_db.convert(sample.args, leaves),
                                 cpu_db.convert(sample.kwargs, leaves))
        except NotImplementedError:
            continue
        if not expected or not leaves:
            continue
        gpu_of = {id(g): _to_gpu(g) for _, g in leaves}

        def swap(x):
            if isinstance(x, gt.Tensor):
                return gpu_of.get(id(x)) if id(x) in gpu_of else _to_gpu(x)
            if isinstance(x, (list, tuple)):
                return _rebuild(x, [swap(v) for v in x])
            if isinstance(x, dict):
                return {k: swap(v) for k, v in x.items()}
            return _to_gpu(x)

        got = cpu_db._differentiable(cpu_db._call(target, sample, swap(inp), swap(args),
                                                  swap(kwargs)))
        what = f"{cpu_db._key(info)} gradient, sample {n} (cuda)"
        assert len(got) == len(expected), f"{what}: {len(got)} differentiable outputs"
        weights = cpu_db._weights(expected)
        t_loss = sum(((o * torch.from_numpy(w)).real.sum() if o.is_complex()
                      else (o * torch.from_numpy(w)).sum()) for o, w in zip(expected, weights))
        g_loss = sum(((o * gt.tensor(w, device="cuda")).real.sum() if o.is_complex()
                      else (o * gt.tensor(w, device="cuda")).sum())
                     for o, w in zip(got, weights))
        t_grads = torch.autograd.grad(t_loss, [t for t, _ in leaves], allow_unused=True)
        g_grads = gt.autograd.grad(g_loss, [gpu_of[id(g)] for _, g in leaves],
                                   allow_unused=True)
        for i, (a, b) in enumerate(zip(g_grads, t_grads)):
            if b is None or a is None:
                assert a is None or b is None or float(abs(a).max()) == 0, f"{what}[{i}]"
                continue
            cpu_db.compare(_to_host(a), b, f"{what} input {i}")
        compared += 1
    return compared


@pytest.mark.parametrize("info", [i for i in cpu_db.ENTRIES if i.supports_autograd],
                         ids=cpu_db._key)
def test_backward_on_gpu(info):
    reason = _skip_reason(info) or cpu_db.SKIP_BACKWARD.get(cpu_db._key(info))
    if reason:
        pytest.skip(reason)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if not _run_backward(info, cpu_db._target(info)):
            pytest.skip("no differentiable sample that torch runs and glasstorch can receive")


def test_numpy_is_untouched():
    assert np.add(np.ones(2), 1).tolist() == [2.0, 2.0]
