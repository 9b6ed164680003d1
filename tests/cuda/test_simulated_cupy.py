"""The simulated CuPy against real CuPy 14.2: its names (cupy_api_14.2.0.json, read from the
real module), CuPy's documented behaviour, and NumPy's values."""
from __future__ import annotations

import ctypes
import gc
import inspect
import json
import pathlib
import re
import subprocess
import threading
import time

import ml_dtypes
import numpy as np
import pytest

import simulated_cupy as cp

API = json.loads(pathlib.Path(cp.__file__).with_name("cupy_api_14.2.0.json").read_text())
rt = cp.cuda.runtime


@pytest.fixture(autouse=True)
def fresh():
    cp.reset()
    yield
    cp.reset()


def public(namespace):
    return {n for n in vars(namespace) if not n.startswith("_")}


# --- names: nothing here that real CuPy lacks --------------------------------------------------

@pytest.mark.parametrize("key, namespace", [
    ("cupy", cp), ("cuda", cp.cuda), ("cuda.runtime", cp.cuda.runtime),
    ("cuda.memory", cp.cuda.memory), ("linalg", cp.linalg), ("fft", cp.fft),
    ("random", cp.random), ("lib.stride_tricks", cp.lib.stride_tricks)])
def test_every_public_name_is_real_cupys(key, namespace):
    extra = {"reset", "live_allocations", "SIMULATED"} if key == "cupy" else set()
    assert public(namespace) - extra <= set(API[key])


def test_the_module_offers_cupys_everyday_surface():
    for name in ["empty", "zeros", "ones", "full", "arange", "empty_like", "zeros_like", "sum",
                 "where", "take", "concatenate", "stack", "matmul", "exp", "maximum", "float32",
                 "bool_", "newaxis", "pi", "asarray", "array", "asnumpy", "get_array_module",
                 "ElementwiseKernel", "RawKernel", "RawModule", "ReductionKernel", "ufunc"]:
        assert hasattr(cp, name), name
    assert public(cp.lib) == {"stride_tricks"}


def test_ndarray_attributes_are_real_cupys():
    names = {n for n in dir(cp.ndarray) if not n.startswith("_")}
    assert names <= set(API["ndarray"])
    assert {"get", "set", "copy", "astype", "item", "tolist", "fill", "view", "reshape", "sum",
            "T", "real", "imag", "data", "base", "flags", "device"} <= names
    assert not hasattr(cp.arange(3), "tofile_missing")
    with pytest.raises(AttributeError):
        cp.arange(3).newbyteorder      # NumPy has it, CuPy does not


def test_ufunc_methods_are_real_cupys():
    assert cp.add.reduce is not None and cp.multiply.outer is not None
    with pytest.raises(AttributeError):
        cp.matmul.reduce               # not in CuPy's ufunc_methods


def test_numpy_functions_cupy_lacks_are_refused():
    a = cp.ones(3)
    with pytest.raises(TypeError, match="no implementation found"):
        np.block([a])                  # CuPy has no block
    with pytest.raises(TypeError):
        np.vecdot(a, a)                # nor vecdot


REAL_CUPY_PYTHON = pathlib.Path("/tmp/cpv/bin/python")   # real CuPy 14.2, usable without a GPU
REAL_FACTS = """
import inspect, json, sys, numpy, cupy
rt, request = cupy.cuda.runtime, json.loads(sys.argv[1])
print(json.dumps({
    "names": sorted(n for n in dir(cupy) if not n.startswith("_")),
    "constants": {n: getattr(rt, n) for n in request["constants"]},
    "errors": {s: str(rt.CUDARuntimeError(s)) for s in request["statuses"]},
    "oom": [str(cupy.cuda.memory.OutOfMemoryError(10, 5)),
            str(cupy.cuda.memory.OutOfMemoryError(10, 5, 100))],
    "streams": [cupy.cuda.Stream.null.ptr, cupy.cuda.Stream.ptds.ptr],
    "signatures": {n: str(inspect.signature(eval("cupy." + n))) for n in request["signatures"]},
    "dtype_is_numpys": cupy.dtype is numpy.dtype}))
"""


@pytest.mark.skipif(not REAL_CUPY_PYTHON.exists(),
                    reason="real CuPy is installed (in /tmp/cpv) only on the development machine")
def test_against_real_cupy_without_a_gpu():
    constants = sorted(n for n, v in vars(rt).items() if type(v) is int)
    signatures = ["asarray", "array", "asnumpy", "get_array_module", "cuda.Stream",
                  "cuda.ExternalStream", "cuda.Event"]
    request = {"constants": constants, "statuses": [1, 2, 21, 100, 101, 400, 700],
               "signatures": signatures}
    real = json.loads(subprocess.run(
        [str(REAL_CUPY_PYTHON), "-c", REAL_FACTS, json.dumps(request)], capture_output=True,
        text=True, check=True, timeout=120).stdout)
    assert real["names"] == sorted(API["cupy"])
    assert real["constants"] == {n: getattr(rt, n) for n in constants}
    assert real["errors"] == {str(s): str(rt.CUDARuntimeError(s)) for s in request["statuses"]}
    assert real["oom"] == [str(cp.cuda.memory.OutOfMemoryError(10, 5)),
                           str(cp.cuda.memory.OutOfMemoryError(10, 5, 100))]
    assert real["streams"] == [cp.cuda.Stream.null.ptr, cp.cuda.Stream.ptds.ptr]
    for name in signatures:
        simulated = cp
        for part in name.split("."):
            simulated = getattr(simulated, part)
        assert real["signatures"][name] == str(inspect.signature(simulated)), name
    assert real["dtype_is_numpys"] and cp.dtype is np.dtype


# --- values equal NumPy's ---------------------------------------------------------------------

LAYOUTS = {         # the same view of a base array, made with NumPy or on the device
    "contiguous": lambda xp, x: x, "transposed": lambda xp, x: x.T,
    "stepped": lambda xp, x: x[::2, 1::2], "offset": lambda xp, x: x[1:, 2:],
    "broadcast": lambda xp, x: xp.broadcast_to(x[1], (3, 6)), "empty": lambda xp, x: x[:0],
    "0-d": lambda xp, x: x[1, 2:3].reshape(())}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op", [
    lambda xp, a: xp.exp(a), lambda xp, a: a * 2 - 1, lambda xp, a: -a, lambda xp, a: abs(a),
    lambda xp, a: a ** 2, lambda xp, a: a > 0, lambda xp, a: xp.maximum(a, 0.5),
    lambda xp, a: a.sum(), lambda xp, a: xp.sum(a, axis=-1) if a.ndim else a.sum(),
    lambda xp, a: xp.where(a > 0, a, 0), lambda xp, a: a.astype(xp.float64),
    lambda xp, a: xp.sort(a.ravel()), lambda xp, a: xp.cumsum(a), lambda xp, a: a.T.copy(),
    lambda xp, a: xp.concatenate([a.ravel(), a.ravel()]), lambda xp, a: a.max(initial=-9),
    lambda xp, a: xp.add.reduce(a.ravel()), lambda xp, a: 1.5 / (a + 10)])
def test_results_equal_numpys(op, layout):
    base = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    host, device = LAYOUTS[layout](np, base), LAYOUTS[layout](cp, cp.asarray(base))
    assert device.strides == host.strides
    expected, got = op(np, host), op(cp, device)
    assert isinstance(got, cp.ndarray)
    result = got.get()
    assert result.dtype == np.asarray(expected).dtype and result.shape == np.shape(expected)
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_linalg_fft_random_run_on_device_arrays():
    m = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    d = cp.asarray(m)
    np.testing.assert_allclose(cp.linalg.inv(d).get(), np.linalg.inv(m), rtol=1e-6)
    assert cp.fft.rfft(d).dtype == np.complex64
    u, s, vh = cp.linalg.svd(d)          # a plain tuple of device arrays, as in CuPy
    assert all(isinstance(x, cp.ndarray) for x in (u, s, vh))
    r = cp.random.standard_normal((3, 2), dtype=cp.float32)
    assert isinstance(r, cp.ndarray) and r.dtype == np.float32 and r.shape == (3, 2)


def test_numpy_functions_dispatch_to_the_simulation():
    host = np.arange(12.0).reshape(3, 4)
    d = cp.asarray(host)
    for f in (np.mean, np.transpose, np.linalg.norm, lambda x: np.split(x, 2, axis=1)):
        got, expected = f(d), f(host)
        got = got if isinstance(got, list) else [got]
        expected = expected if isinstance(expected, list) else [expected]
        for g, e in zip(got, expected):
            assert isinstance(g, cp.ndarray)
            np.testing.assert_array_equal(g.get(), e)


def test_reductions_return_0d_device_arrays():
    d = cp.arange(6.0)
    for r in (d.sum(), d.max(), cp.mean(d), np.sum(d), cp.add.reduce(d), d[2],
              cp.count_nonzero(d), cp.array_equal(d, d), cp.linalg.norm(d)):
        assert isinstance(r, cp.ndarray) and r.shape == (), r
    assert float(d.sum()) == 15.0 and int(d[3]) == 3 and bool(d[1])
    assert d.item(4) == 4.0 and type(d.sum().item()) is float
    assert d.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert repr(cp.arange(3)) == "array([0, 1, 2])" and repr(d.sum()) == "array(15.)"


# --- views share device memory ----------------------------------------------------------------

def test_views_share_memory_and_copies_do_not():
    a = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    ptr = a.data.ptr
    row, col, t = a[1], a[:, 2], a.T
    assert row.data.ptr == ptr + 16 and col.data.ptr == ptr + 8 and t.data.ptr == ptr
    assert col.strides == (16,) and t.strides == (4, 16)
    root = a.base                      # the arange result that a reshapes
    assert root is not None and row.base is root and t.base is root and root.base is None
    assert a.view(cp.int32).data.ptr == ptr and a.reshape(12).data.ptr == ptr
    assert a[1:, ::2][1, 1].data.ptr == ptr + (2 * 4 + 2) * 4
    element = a[2, 3]                  # an int index gives a 0-d view, as in CuPy
    element[...] = -1
    t[0, 1] = 100                      # writes through every view reach the same memory
    row += 1
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected[2, 3], expected[1, 0] = -1, 100
    expected[1] += 1
    np.testing.assert_array_equal(a.get(), expected)
    for c in (a.copy(), a[[0, 2]], a[a > 3], a.T.reshape(12), a.astype(cp.float64)):
        assert c.data.mem is not a.data.mem and c.base is None


def test_as_strided_is_a_view_and_stays_inside_its_allocation():
    a = cp.arange(6.0)
    w = cp.lib.stride_tricks.as_strided(a, (4, 3), (8, 8))
    np.testing.assert_array_equal(w.get(), np.lib.stride_tricks.sliding_window_view(
        np.arange(6.0), 3)[:4])
    with pytest.raises(rt.CUDARuntimeError, match="illegal memory access"):
        cp.lib.stride_tricks.as_strided(a, (5, 3), (8, 8))   # reads past the end


def test_memory_is_256_byte_aligned_and_pointers_resolve_inside_blocks():
    ptr = rt.malloc(1000)
    assert ptr % 256 == 0
    inner = cp.ndarray((4,), cp.float64, cp.cuda.MemoryPointer(
        cp.cuda.UnownedMemory(ptr, 1000, owner=None), 960))
    inner.fill(7)
    assert inner.data.ptr == ptr + 960 and inner.sum().item() == 28
    with pytest.raises(rt.CUDARuntimeError, match="illegal memory access"):
        cp.ndarray((6,), cp.float64, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(ptr, 1000, owner=None), 960))
    rt.free(ptr)


def test_unowned_memory_keeps_its_owner_alive():
    class Owner:
        def __init__(self):
            self.ptr = rt.malloc(64)

        def __del__(self):
            rt.free(self.ptr)

    owner = Owner()
    a = cp.ndarray((8,), cp.float64, cp.cuda.MemoryPointer(
        cp.cuda.UnownedMemory(owner.ptr, 64, owner), 0))
    del owner
    gc.collect()
    a.fill(1)
    assert cp.live_allocations() == 1
    del a
    gc.collect()
    assert cp.live_allocations() == 0


# --- use after free, capacity -----------------------------------------------------------------

def test_use_after_free_raises_illegal_address():
    ptr = rt.malloc(64)
    mem = cp.cuda.UnownedMemory(ptr, 64, owner=None)
    a = cp.ndarray((8,), cp.float64, cp.cuda.MemoryPointer(mem, 0))
    view = a[2:]
    rt.free(ptr)
    for use in (lambda: a + 1, lambda: view.get(), lambda: a.sum(), lambda: a.fill(0),
                lambda: cp.ndarray((8,), cp.float64, cp.cuda.MemoryPointer(mem, 0))):
        with pytest.raises(rt.CUDARuntimeError) as info:
            use()
        assert info.value.status == 700
        assert str(info.value) == "cudaErrorIllegalAddress: an illegal memory access was encountered"
    with pytest.raises(rt.CUDARuntimeError):
        rt.free(ptr)                     # double free
    with pytest.raises(rt.CUDARuntimeError):
        cp.ndarray((2,), cp.float32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(12345678, 8, owner=None, device_id=0), 0))


def test_capacity_out_of_memory():
    cp.reset(capacity_bytes=1 << 20)
    assert rt.memGetInfo() == (1 << 20, 1 << 20)
    ptr = rt.malloc(1 << 19)
    assert rt.memGetInfo() == (1 << 19, 1 << 20)
    with pytest.raises(rt.CUDARuntimeError) as info:
        rt.malloc((1 << 19) + 1)
    assert info.value.status == 2 and isinstance(info.value, RuntimeError)
    assert str(info.value) == "cudaErrorMemoryAllocation: out of memory"
    with pytest.raises(cp.cuda.memory.OutOfMemoryError, match=r"Out of memory allocating "
                       r"800000 bytes \(allocated so far: 524288 bytes\)\."):
        cp.zeros(100000)                 # CuPy's own allocator raises its MemoryError
    rt.free(ptr)
    a = cp.zeros(100000)
    assert rt.memGetInfo()[0] == (1 << 20) - 800000 == cp.cuda.Device(0).mem_info[0]
    del a
    assert rt.memGetInfo()[0] == 1 << 20


def test_allocations_are_freed_with_their_last_array():
    a = cp.ones((10, 10))
    b = a[1:].T
    del a
    assert cp.live_allocations() == 1
    del b
    assert cp.live_allocations() == 0
    for _ in range(3):
        (cp.arange(5.0) * 2).sum()
    assert cp.live_allocations() == 0


# --- allocator hooks --------------------------------------------------------------------------

def test_set_allocator_serves_every_allocation():
    requests = []

    def allocator(nbytes):
        requests.append(nbytes)
        return cp.cuda.MemoryPointer(cp.cuda.Memory(nbytes), 0)

    cp.cuda.set_allocator(allocator)
    assert cp.cuda.get_allocator() is allocator is cp.cuda.memory.get_allocator()
    a = cp.ones((3, 4), cp.float32)            # 48
    b = a + 1                                  # 48
    a.sum()                                    # 4: the 0-d result
    a.T.copy()                                 # 48
    a.astype(cp.float64)                       # 96
    cp.asarray(np.zeros(5, np.int16))          # 10
    b[b > 1]                                   # 12 for the mask, 48 for the selection
    np.exp(b, out=b)                           # in place: nothing
    assert requests == [48, 48, 4, 48, 96, 10, 12, 48]
    cp.cuda.set_allocator(None)
    cp.ones(3)
    assert len(requests) == 8


def test_allocator_must_return_a_memory_pointer():
    cp.cuda.set_allocator(lambda nbytes: rt.malloc(nbytes))
    with pytest.raises(TypeError, match="MemoryPointer"):
        cp.zeros(3)


def test_pinned_memory_and_its_allocator():
    pinned = cp.cuda.alloc_pinned_memory(32)
    host = np.frombuffer((ctypes.c_char * 32).from_address(pinned.ptr), np.float32)
    host[:] = np.arange(8)
    d = cp.empty(8, cp.float32)
    rt.memcpy(d.data.ptr, pinned.ptr, 32, rt.memcpyHostToDevice)
    np.testing.assert_array_equal(d.get(), np.arange(8))
    seen = []
    cp.cuda.set_pinned_memory_allocator(
        lambda n: seen.append(n) or cp.cuda.PinnedMemoryPointer(cp.cuda.PinnedMemory(n), 0))
    assert cp.cuda.alloc_pinned_memory(16).size == 16 and seen == [16]


# --- memcpy and friends -----------------------------------------------------------------------

def test_memcpy_checks_device_ranges():
    src = np.arange(8, dtype=np.float64)
    d = rt.malloc(64)
    rt.memcpy(d, src.ctypes.data, 64, rt.memcpyHostToDevice)
    d2 = rt.malloc(64)
    rt.memcpyAsync(d2, d, 64, rt.memcpyDeviceToDevice, cp.cuda.Stream().ptr)
    out = np.empty(8)
    rt.memcpy(out.ctypes.data, d2, 64, rt.memcpyDefault)
    np.testing.assert_array_equal(out, src)
    for bad in (lambda: rt.memcpy(d, src.ctypes.data, 65, rt.memcpyHostToDevice),
                lambda: rt.memcpy(out.ctypes.data, 4096, 8, rt.memcpyDeviceToHost)):
        with pytest.raises(rt.CUDARuntimeError):
            bad()
    rt.free(d2)
    with pytest.raises(rt.CUDARuntimeError):
        rt.memcpy(d, d2, 8, rt.memcpyDeviceToDevice)
    h = rt.hostAlloc(16, 0)
    rt.memcpy(h, d, 16, rt.memcpyDeviceToHost)
    with pytest.raises(rt.CUDARuntimeError):
        rt.memcpy(h, d, 32, rt.memcpyDeviceToHost)   # past the pinned buffer
    rt.freeHost(h)
    rt.free(d)


def test_memory_pointer_copies():
    a, b = cp.arange(4.0), cp.zeros(4)
    b.data.copy_from_device(a.data, 16)
    host = np.full(4, 9.0)
    b.data.copy_from_host_async(host.ctypes.data, 8, cp.cuda.Stream())
    (b.data + 16).memset(0xFF, 8)
    b.data.copy_to_host(ctypes.c_void_p(host.ctypes.data + 8), 24)
    assert np.isnan(host[3]) and host[:3].tolist() == [9.0, 9.0, 1.0]
    assert int(b.data + 8) == b.data.ptr + 8 and (b.data + 8 - 8).ptr == b.data.ptr


# --- CuPy's strictness ------------------------------------------------------------------------

def test_implicit_conversion_to_numpy_raises():
    message = ("Implicit conversion to a NumPy array is not allowed. "
               "Please use `.get()` to construct a NumPy array explicitly.")
    d = cp.arange(3)
    for convert in (np.asarray, np.array, lambda x: np.array([x, x]),
                    lambda x: np.asarray(x, dtype=float)):
        with pytest.raises(TypeError, match=re.escape(message)):
            convert(d)


def test_numpy_arrays_cannot_be_mixed_in():
    d, host = cp.arange(3.0), np.arange(3.0)
    for mix in (lambda: d + host, lambda: host + d, lambda: d * host, lambda: np.add(d, host),
                lambda: cp.concatenate([d, host]), lambda: cp.where(d > 0, host, d),
                lambda: d.__setitem__(slice(None), host), lambda: d.dot(host)):
        with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy.ndarray'>"):
            mix()
    with pytest.raises(TypeError, match="Output arguments must be cupy.ndarray"):
        np.add(d, d, out=host)
    # NumPy scalars and Python numbers are fine, either side; a 0-d NumPy array is not
    # (CuPy's scalar conversion refuses it), except in comparisons, which take its .item()
    for ok in (d + np.float32(2), np.float64(2) * d, 3 - d, d ** 2, d > np.array(1.0)):
        assert isinstance(ok, cp.ndarray)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy.ndarray'>"):
        d + np.array(2.0)
    d[1] = np.float32(5)
    d[[0, 2]] = 7                        # list and NumPy index arrays are indices
    d[np.array([0])] = 1
    assert d.get().tolist() == [1.0, 5.0, 7.0]


def test_bfloat16_is_refused():
    bf16 = ml_dtypes.bfloat16
    for make in (lambda: cp.zeros(3, dtype=bf16), lambda: cp.ndarray((3,), bf16),
                 lambda: cp.arange(3.0).astype(bf16), lambda: cp.asarray(np.zeros(3, bf16)),
                 lambda: cp.zeros(4, cp.uint16).view(bf16), lambda: cp.empty_like(
                     cp.zeros(3), dtype=bf16), lambda: cp.add(cp.ones(2), 1, dtype=bf16)):
        with pytest.raises(TypeError, match="Unsupported dtype bfloat16"):
            make()
    assert cp.dtype(bf16).name == "bfloat16"     # numpy.dtype itself, as cupy.dtype is
    with pytest.raises(TypeError, match="Unsupported dtype object"):
        cp.asarray([object()])


def test_get_set_asnumpy():
    d = cp.arange(6.0).reshape(2, 3)
    out = np.empty((2, 3))
    assert cp.asnumpy(d, out=out) is out and out.tolist() == d.tolist()
    assert d.T.get(order="F").flags.f_contiguous
    with pytest.raises(TypeError, match="float32 array cannot be obtained from float64 array"):
        d.get(out=np.empty((2, 3), np.float32))
    with pytest.raises(ValueError, match="Shape mismatch"):
        d.get(out=np.empty(6))
    d.set(np.ones((2, 3)))
    assert d.sum().item() == 6
    with pytest.raises(TypeError, match="int64 array cannot be set to float64 array"):
        d.set(np.ones((2, 3), np.int64))
    with pytest.raises(RuntimeError, match="non-contiguous"):
        d[:, ::2].set(np.ones((2, 2)))
    assert isinstance(cp.asnumpy([1, 2]), np.ndarray)


def test_asarray_array_and_get_array_module():
    d = cp.arange(3)
    assert cp.asarray(d) is d and cp.array(d) is not d and cp.array(d, copy=False) is d
    assert cp.asarray(d, dtype=cp.float32).dtype == np.float32
    f = cp.asarray(np.asfortranarray(np.ones((2, 3))))
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    assert cp.asarray(2.5).shape == () and cp.array([1, 2], ndmin=2).shape == (1, 2)
    assert cp.get_array_module(1, d) is cp and cp.get_array_module(np.ones(1)) is np


def test_cuda_array_interface():
    d = cp.zeros((3, 4), cp.float32)
    ai = d.__cuda_array_interface__
    assert ai["data"] == (d.data.ptr, False) and ai["shape"] == (3, 4)
    assert ai["typestr"] == "<f4" and ai["version"] == 3 and ai["strides"] is None
    assert d.T.__cuda_array_interface__["strides"] == (4, 16)


def test_iteration_and_scalar_conversions():
    d = cp.arange(3)
    assert [x.item() for x in d] == [0, 1, 2] and len(d) == 3
    assert [10, 20, 30][d[2]] == 30 and f"{d.sum():d}" == "3"
    with pytest.raises(TypeError):
        iter(d.sum())
    with pytest.raises(TypeError):
        [0][cp.arange(2.0)[1]]


def test_kernels_construct_but_do_not_run():
    k = cp.RawKernel(r'extern "C" __global__ void f(float* x) { x[0] = 1; }', "f")
    e = cp.ElementwiseKernel("T x", "T y", "y = x * 2", "double_it")
    r = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total")
    m = cp.RawModule(code=k.code)
    assert "x[0] = 1" in k.code and e.operation == "y = x * 2"
    for run in (lambda: k((1,), (1,), (cp.zeros(1),)), lambda: e(cp.ones(2)),
                lambda: r(cp.ones(2)), lambda: m.get_function("f")((1,), (1,), ())):
        with pytest.raises(NotImplementedError, match="cannot run CUDA C"):
            run()


# --- devices, streams, events -----------------------------------------------------------------

def test_device_properties_have_real_keys_and_types():
    props = rt.getDeviceProperties(0)
    assert props["name"] == b"Simulated GPU" and isinstance(props["uuid"], bytes)
    for key in ("totalGlobalMem", "major", "minor", "multiProcessorCount", "l2CacheSize",
                "warpSize", "maxThreadsPerBlock", "clockRate", "memoryClockRate",
                "memoryBusWidth", "pciBusID", "pciDeviceID", "integrated", "isMultiGpuBoard"):
        assert type(props[key]) is int, key
    assert (props["major"], props["minor"], props["warpSize"]) == (9, 0, 32)
    assert cp.cuda.Device().compute_capability == "90"
    assert rt.runtimeGetVersion() >= 13000 and cp.is_available() and cp.cuda.is_available()


def test_devices():
    cp.reset(device_count=2)
    assert rt.getDeviceCount() == 2 and rt.getDevice() == 0
    a = cp.ones(3)
    with cp.cuda.Device(1) as dev:
        assert rt.getDevice() == 1 == dev.id and cp.cuda.Device() == dev
        b = cp.ones(3)
        assert b.device.id == 1 and b.data.device_id == 1
        with pytest.raises(ValueError, match="different from the current device"):
            a + b
        c = a.copy()                     # copies run on the array's own device
        assert c.device.id == 0
    assert rt.getDevice() == 0
    for bad in (lambda: rt.setDevice(2), lambda: cp.cuda.Device(5).use(),
                lambda: rt.getDeviceProperties(-1)):
        with pytest.raises(rt.CUDARuntimeError, match="cudaErrorInvalidDevice: invalid "
                           "device ordinal"):
            bad()
    cp.reset(device_count=0)
    assert not cp.is_available()
    with pytest.raises(rt.CUDARuntimeError):
        rt.getDeviceCount()


def test_streams():
    null = cp.cuda.Stream.null
    assert null.ptr == 0 and cp.cuda.get_current_stream() is null
    s1, s2 = cp.cuda.Stream(), cp.cuda.Stream(non_blocking=True, priority=-1)
    assert len({s1.ptr, s2.ptr, 0}) == 3 and s2.priority == -1 and s2.is_non_blocking
    with s1:
        assert cp.cuda.get_current_stream() is s1
        with s2:
            assert cp.cuda.get_current_stream() is s2
        assert cp.cuda.get_current_stream() is s1
    assert cp.cuda.get_current_stream() is null
    s1.use()
    assert cp.cuda.get_current_stream() is s1 and s1.done and s1.device_id == 0
    ext = cp.cuda.ExternalStream(0xdead)
    assert ext.ptr == 0xdead
    event = s1.record()
    s2.wait_event(event)
    s1.synchronize()


def test_events_and_elapsed_time():
    start, end = cp.cuda.Event(), cp.cuda.Event()
    assert start.ptr != end.ptr and start.done
    with pytest.raises(rt.CUDARuntimeError, match="invalid resource handle"):
        cp.cuda.get_elapsed_time(start, end)          # not recorded
    start.record()
    time.sleep(0.01)
    end.record(cp.cuda.Stream())
    end.synchronize()
    assert 5 < cp.cuda.get_elapsed_time(start, end) < 1000
    untimed = cp.cuda.Event(disable_timing=True)
    untimed.record()
    with pytest.raises(rt.CUDARuntimeError) as info:
        cp.cuda.get_elapsed_time(start, untimed)
    assert info.value.status == 400
    with pytest.raises(ValueError):
        cp.cuda.Event(interprocess=True)


def test_threads_have_their_own_device_and_stream():
    cp.reset(device_count=2)
    rt.setDevice(1)
    mine = cp.cuda.Stream().use()
    seen = {}

    def worker():
        seen["device"] = rt.getDevice()
        seen["stream"] = cp.cuda.get_current_stream()
        seen["sums"] = [cp.arange(100).sum().item() for _ in range(50)]

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["device"] == 0 and seen["stream"] is cp.cuda.Stream.null
    assert seen["sums"] == [4950] * 50
    assert rt.getDevice() == 1 and cp.cuda.get_current_stream() is mine


# --- reset ------------------------------------------------------------------------------------

def test_reset_clears_everything():
    cp.reset(device_count=2, capacity_bytes=1 << 16)
    rt.setDevice(1)
    cp.cuda.Stream().use()
    cp.cuda.set_allocator(lambda n: cp.cuda.MemoryPointer(cp.cuda.Memory(n), 0))
    kept = cp.ones(4)
    rt.malloc(128)
    assert cp.live_allocations() == 2
    cp.reset()
    assert cp.live_allocations() == 0 and rt.getDeviceCount() == 1 and rt.getDevice() == 0
    assert cp.cuda.get_current_stream() is cp.cuda.Stream.null
    assert cp.cuda.get_allocator() is not None and rt.memGetInfo()[1] == 80 << 30
    with pytest.raises(rt.CUDARuntimeError):
        kept + 1                         # its memory belonged to the old machine
    del kept
    gc.collect()
    assert cp.live_allocations() == 0


def test_ufunc_methods_and_keywords_are_real_cupys():
    # Real CuPy 14.2: reduce/accumulate only for add and multiply, reduceat only add, `at`
    # for add/subtract/maximum/minimum/bitwise in some dtypes; no initial=/where= keywords.
    d = cp.arange(6.0)
    assert float(np.add.reduce(d)) == 15.0 and float(np.multiply.reduce(d + 1)) == 720.0
    for refused in (lambda: np.maximum.reduce(d), lambda: np.logical_and.reduce(d > 0),
                    lambda: np.maximum.accumulate(d), lambda: np.multiply.at(d, [0], 2.0),
                    lambda: np.add.reduce(d, initial=1.0), lambda: np.add(d, 1, where=d > 2),
                    lambda: np.add.at(cp.zeros(3, cp.int8), [0], 1)):
        with pytest.raises((TypeError, AttributeError, NotImplementedError)):
            refused()
    np.add.at(d, cp.asarray([0, 0]), 1.0)
    assert d.get().tolist()[:2] == [2.0, 1.0]
