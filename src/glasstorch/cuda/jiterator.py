"""torch.cuda.jiterator: an elementwise CUDA kernel from a C++ template function.

`_create_jit_fn("template <typename T> T f(T x, T y, T alpha) { ... }", alpha=1.0)` returns a
callable `fn(*tensors, **scalars)`. On call the inputs broadcast against each other, their
common dtype is PyTorch's type promotion of them (`torch.result_type`: 0-dim tensors rank
below the others), each element is loaded in its own dtype and converted to that type `T`,
and the last function of the code string runs per element (the keyword scalars, converted
to `T`, follow the tensor inputs). The kernel is generated for the input dtypes and the
number of dimensions, with sizes and strides as arguments (so non-contiguous and broadcast
inputs are read in place), compiled by NVRTC (`--device-as-default-execution-space`: the
user's functions need no `__device__`) and launched through CuPy, as glasstorch's own CUDA
kernels are. `_create_multi_output_jit_fn` takes a function that returns by reference:
`void f(T x, ..., T& out0, T& out1)`.
"""
from __future__ import annotations

import re

from ..backends.cuda import nvrtc, runtime
from ..core import dtype as _dtypes
from ..core.promotion import common_dtype
from ..core.shape import broadcast_shapes
from ..core.tensor import Tensor

__all__: list = []

MAX_INPUTS = 8
# What CuPy's RawModule passes to NVRTC by itself; compile_check passes the same, so the
# check here compiles what a GPU would.
OPTIONS = ("-std=c++17", "--device-as-default-execution-space")
BLOCK = 256

_C_TYPES = {_dtypes.float32: "float", _dtypes.float64: "double", _dtypes.int8: "signed char",
            _dtypes.uint8: "unsigned char", _dtypes.int16: "short", _dtypes.int32: "int",
            _dtypes.int64: "long long", _dtypes.bool: "bool"}

_PATTERN = re.compile(r"\s*template\s*(?P<template_params><.+>)\s*(?P<return_type>\w+)\s+"
                      r"(?P<function_name>\w+)\s*(?P<function_params>\(.+\))\s*"
                      r"(?P<function_body>\{.+\})\s*", re.DOTALL)
_LAST_TEMPLATE = re.compile(r"template\s*<[^>]*>\s*\w+\s+(\w+)\s*\(")


class _JittedFunction:
    """What _create_jit_fn returns: call it with CUDA tensors (and scalar keywords)."""

    def __init__(self, code_string: str, return_by_ref: bool, num_outputs: int, **kwargs):
        if not (return_by_ref or num_outputs == 1):
            raise AssertionError("Return by value only works for single output.")
        if _PATTERN.match(code_string) is None:
            raise Exception(f"Couldn't parse code, please check correctness:\n {code_string}")
        self.code_string = code_string
        self.return_by_ref = return_by_ref
        self.num_outputs = num_outputs
        self.kernel_name = _LAST_TEMPLATE.findall(code_string)[-1]
        self.kwargs_dict = kwargs

    def __call__(self, *tensors: Tensor, **kwargs):
        if not runtime.is_available():
            raise AssertionError(
                "Jiterator is only supported on CUDA and ROCm GPUs, none are available.")
        if len(tensors) > MAX_INPUTS:
            raise AssertionError(
                f"jiterator only supports up to {MAX_INPUTS} tensor inputs, got {len(tensors)}")
        scalars = dict(self.kwargs_dict)
        for key, value in kwargs.items():
            if key not in self.kwargs_dict:
                raise KeyError(f"{key} is not declared in function definition")
            scalars[key] = value
        return self._launch(tensors, list(scalars.values()))

    def _source(self, input_dtypes, ndim: int, common=None) -> tuple:
        """(CUDA source, kernel name) of the kernel for inputs of `input_dtypes` broadcast
        to `ndim` dimensions; `common` is the computation and output dtype (by default the
        inputs' promoted dtype)."""
        if common is None:
            common = _promoted(input_dtypes)
        for d in (*input_dtypes, common):
            if d not in _C_TYPES:
                raise NotImplementedError(f"jiterator: {d} is not supported by glasstorch's "
                                          f"jiterator (supported: {sorted(map(str, _C_TYPES))})")
        n_in, n_extra, n_out = len(input_dtypes), len(self.kwargs_dict), self.num_outputs
        T = _C_TYPES[common]
        name = f"jiterator_{self.kernel_name}"
        params = ["long long numel"]
        params += [f"const {_C_TYPES[d]}* __restrict__ in{i}" for i, d in enumerate(input_dtypes)]
        params += [f"{T}* __restrict__ out{o}" for o in range(n_out)]
        params += [f"{T} extra{e}" for e in range(n_extra)]
        params += [f"long long size{d}" for d in range(ndim)]
        params += [f"long long stride{i}_{d}" for i in range(n_in) for d in range(ndim)]
        body = ["    long long rest = linear;"]
        body += [f"    long long off{i} = 0;" for i in range(n_in)]
        for d in reversed(range(ndim)):
            body.append(f"    {{ long long idx = rest % size{d}; rest /= size{d};")
            body += [f"      off{i} += idx * stride{i}_{d};" for i in range(n_in)]
            body.append("    }")
        call_args = [f"static_cast<{T}>(in{i}[off{i}])" for i in range(n_in)]
        call_args += [f"extra{e}" for e in range(n_extra)]
        if self.return_by_ref:
            results = [f"r{o}" for o in range(n_out)]
            body.append(f"    {T} {', '.join(results)};")
            body.append(f"    {self.kernel_name}<{T}>({', '.join(call_args + results)});")
            body += [f"    out{o}[linear] = r{o};" for o in range(n_out)]
        else:
            body.append(f"    out0[linear] = {self.kernel_name}<{T}>({', '.join(call_args)});")
        source = (f"{self.code_string}\n\n"
                  f'extern "C" __global__ void {name}({", ".join(params)}) {{\n'
                  "  for (long long linear = (long long)blockIdx.x * blockDim.x + threadIdx.x;"
                  " linear < numel; linear += (long long)blockDim.x * gridDim.x) {\n"
                  + "\n".join(body) + "\n  }\n}\n")
        return source, name

    def _compile_check(self, *input_dtypes, ndim: int = 1) -> str:
        """Compile the kernel for these input dtypes with NVRTC (no GPU needed); the PTX."""
        source, _ = self._source(input_dtypes, ndim)
        return nvrtc.compile_check(source, OPTIONS, name=f"{self.kernel_name}.cu")

    def _launch(self, tensors, scalars):
        import numpy as np
        from ..ops.creation import factories
        if not tensors:
            raise RuntimeError("jiterator needs at least one input tensor")
        for t in tensors:
            if not isinstance(t, Tensor) or not t.is_cuda:
                raise RuntimeError(f"jiterator: every input must be a CUDA tensor, got "
                                   f"{getattr(t, 'device', type(t).__name__)}")
        device = tensors[0].device
        if any(t.device != device for t in tensors):
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               "least two devices")
        shape = tuple(broadcast_shapes(*(t.shape for t in tensors)))
        expanded = [t.expand(shape) for t in tensors]
        common = _promoted([t.dtype for t in tensors], tensors)
        source, name = self._source([t.dtype for t in tensors], len(shape), common)
        outputs = [factories.empty(shape, dtype=common, device=device)
                   for _ in range(self.num_outputs)]
        numel = outputs[0].numel()
        if numel:
            scalar_type = np.dtype(common.np).type
            args = [np.int64(numel)]
            args += [np.uintp(t.data_ptr()) for t in expanded]
            args += [np.uintp(o.data_ptr()) for o in outputs]
            args += [scalar_type(v) for v in scalars]
            args += [np.int64(s) for s in shape]
            args += [np.int64(s) for t in expanded for s in t.stride()]
            with runtime.DeviceGuard(device.index or 0):
                kernel = nvrtc.load(source, [name])[name]
                grid = min((numel + BLOCK - 1) // BLOCK, 65535)
                kernel((grid,), (BLOCK,), tuple(args))
        return outputs[0] if not self.return_by_ref else tuple(outputs)


def _promoted(input_dtypes, tensors=None):
    """The inputs' common dtype under PyTorch's type promotion."""
    if tensors is not None:
        return common_dtype(*tensors)
    common = input_dtypes[0]
    for d in input_dtypes[1:]:
        common = _dtypes.promote_types(common, d)
    return common


def _create_jit_fn(code_string: str, **kwargs):
    """An elementwise CUDA kernel from `code_string`, a C++ template function returning one
    value by value; keyword arguments declare its extra scalar parameters with defaults.

    >>> fn = _create_jit_fn("template <typename T> T axpy(T x, T y, T a) { return a * x + y; }",
    ...                     a=1.0)
    >>> fn.kernel_name
    'axpy'
    """
    return _JittedFunction(code_string, return_by_ref=False, num_outputs=1, **kwargs)


def _create_multi_output_jit_fn(code_string: str, num_outputs: int, **kwargs):
    """As _create_jit_fn, for a function that returns `num_outputs` values by reference
    (its last parameters, `T&`)."""
    return _JittedFunction(code_string, return_by_ref=True, num_outputs=num_outputs, **kwargs)
