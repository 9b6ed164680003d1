import numpy as np
import pytest

import glasstorch as torch
from glasstorch.compiler.inductor import compile_fx
from glasstorch.fx.experimental.proxy_tensor import make_fx


@pytest.fixture(autouse=True, scope="session")
def kernel_cache(tmp_path_factory):
    """Kernels built by these tests go to a cache of their own, shared by the session."""
    mp = pytest.MonkeyPatch()
    mp.setenv("GLASSTORCH_CACHE_DIR", str(tmp_path_factory.mktemp("inductor-cache")))
    yield
    mp.undo()


def compiled(fn, *inputs):
    """fn traced to an ATen graph with make_fx and compiled; returns the CompiledGraph."""
    return compile_fx(make_fx(fn)(*inputs), list(inputs))


def assert_same(out, ref, rtol=0.0, atol=0.0):
    """Compiled equals eager: dtype, shape, strides and values (exactly, unless a tolerance
    is given for math whose last bits may differ)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == r.dtype, (i, o.dtype, r.dtype)
        assert o.shape == r.shape, (i, o.shape, r.shape)
        assert o.stride() == r.stride(), (i, o.stride(), r.stride())
        got, want = as_float64(o), as_float64(r)
        if rtol == atol == 0.0:
            assert np.array_equal(got, want, equal_nan=True), (i, got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {i}")


def as_float64(t):
    return t.detach().to(torch.float64).numpy()
