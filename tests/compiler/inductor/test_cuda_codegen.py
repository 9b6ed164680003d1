"""The CUDA C the compiler generates: every kernel of a varied set of graphs compiles with
NVRTC (no GPU needed), and the half-precision conversions it carries (its own, since it
uses no CUDA headers) round as NumPy's do, checked by compiling them as plain C."""
import ctypes
import subprocess

import numpy as np
import pytest

import glasstorch as torch
import glasstorch.nn.functional as F
from glasstorch.backends.cuda import nvrtc
from glasstorch.compiler.inductor import cuda_codegen

from inductor_helpers import compiled


def _graphs():
    g = np.random.default_rng(0)
    x = torch.from_numpy(g.standard_normal((6, 10)).astype(np.float32))
    w = torch.from_numpy(g.standard_normal(10).astype(np.float32))
    i = torch.from_numpy(g.integers(-4, 4, (6, 10)))
    return [
        (lambda x, w: (torch.softmax(x * 0.5, -1), F.layer_norm(x, (10,), w, w),
                       torch.log_softmax(x, 0), x.var(1), x.amin(0), x.sum()), (x, w)),
        (lambda x, i: (x.half() * 2 + 1, x.bfloat16().exp(), (i > 0).sum(1), i * 3 - i,
                       torch.where(x > 0, x, x.t().t() * 2), x.t() + 1,
                       F.gelu(x).double().sum(0)), (x, i)),
    ]


@pytest.mark.skipif(not nvrtc.nvrtc_available(), reason="libnvrtc not found")
def test_every_generated_kernel_compiles_with_nvrtc():
    for fn, inputs in _graphs():
        art = compiled(fn, *inputs).artefacts
        source, launches = art.cuda_source()
        ptx = nvrtc.compile_check(source)
        for k in art.kernels:
            assert f".entry {k.name}(" in ptx
            assert launches[k.name][0] in ("elements", "rows")
        assert "= gt_block_" in source and "blockIdx.x" in source    # block reductions


SHIM = r"""
#include <stdint.h>
#include <string.h>
#define __device__
#define __forceinline__ static inline
static inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
"""


@pytest.fixture(scope="module")
def conversions(tmp_path_factory):
    """The CUDA prelude's half/bfloat16 conversions, built as C for this CPU."""
    body = cuda_codegen.PRELUDE.split("#define NAN")[1].split("\n", 1)[1].split(
        "#define GT_BLOCK_REDUCE")[0]
    source = SHIM + body + r"""
#define EACH(NAME, FROM, TO, FN) \
    void NAME(const FROM* in, TO* out, long n) { for (long i = 0; i < n; i++) out[i] = FN(in[i]); }
EACH(f16_load_all, uint16_t, float, gt_f16_load)
EACH(f16_bits_all, float, uint16_t, gt_f16_bits)
EACH(bf16_bits_all, float, uint16_t, gt_bf16_bits)
"""
    work = tmp_path_factory.mktemp("conversions")
    (work / "c.c").write_text(source)
    try:
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", str(work / "c.c"), "-o",
                        str(work / "c.so")], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no C compiler")
    lib = ctypes.CDLL(str(work / "c.so"))
    for name in ("f16_load_all", "f16_bits_all", "bf16_bits_all"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    return lib


def _floats():
    g = np.random.default_rng(1)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 1e-8,
                        2.9802322e-08, 2.9802326e-08, 5.96e-08, 6.1e-05, 6.103515625e-05,
                        -3.5e-06, 1 + 2 ** -11, 1 + 3 * 2 ** -11], np.float32)
    wide = (g.standard_normal(20000) * np.exp(g.uniform(-20, 12, 20000))).astype(np.float32)
    return np.concatenate([special, wide])


def test_half_bits_convert_to_float_as_numpy(conversions):
    bits = np.arange(1 << 16, dtype=np.uint16)
    out = np.empty(bits.size, np.float32)
    conversions.f16_load_all(bits.ctypes.data, out.ctypes.data, bits.size)
    want = bits.view(np.float16).astype(np.float32)
    assert np.array_equal(out, want, equal_nan=True)


@pytest.mark.parametrize("name, dtype", [("f16_bits_all", np.float16),
                                         ("bf16_bits_all", "bfloat16")])
def test_float_rounds_to_half_bits_as_numpy(conversions, name, dtype):
    if dtype == "bfloat16":
        dtype = torch.bfloat16.np
    x = _floats()
    out = np.empty(x.size, np.uint16)
    getattr(conversions, name)(x.ctypes.data, out.ctypes.data, x.size)
    with np.errstate(over="ignore"):
        want = x.astype(dtype)
    got = out.view(dtype)
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32), equal_nan=True)
