"""The CUDA backend: CuPy as the runtime (devices, streams, events, cuBLAS and its kernels),
glasstorch's caching allocator over cudaMalloc, and glasstorch's own CUDA C through NVRTC.

Nothing here is imported until a CUDA tensor or `glasstorch.cuda` call needs it, and CuPy
itself is imported only then (runtime.cupy()).
"""
