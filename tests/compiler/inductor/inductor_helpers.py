"""Helpers of the inductor tests: compile a function's graph, compare with eager."""
import numpy as np

import glasstorch as torch
from glasstorch.compiler.inductor import compile_fx
from glasstorch.fx.experimental.proxy_tensor import make_fx


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
