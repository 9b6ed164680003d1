"""The CUDA backend: CuPy as the runtime (devices, streams, events, cuBLAS and its kernels),
glasstorch's caching allocator over cudaMalloc, and glasstorch's own CUDA C through NVRTC.

Nothing here is imported until a CUDA tensor or `glasstorch.cuda` call needs it, and CuPy
itself is imported only then (runtime.cupy()).
"""


class _MatmulFlags:
    """torch.backends.cuda.matmul: read by scripts; glasstorch's cuBLAS calls go through CuPy,
    which uses TF32 only when the CUPY_TF32=1 environment variable is set."""

    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether glasstorch can use CUDA at all: CuPy is importable (a GPU is another matter)."""
    import importlib.util
    return importlib.util.find_spec("cupy") is not None
