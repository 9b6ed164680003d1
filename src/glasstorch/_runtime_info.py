"""What this glasstorch can do, as torch's build flags say it of PyTorch (torch.has_lapack,
has_mkl, has_openmp, has_spectral), and torch.is_distributed.

glasstorch's CPU kernels are NumPy's: LAPACK comes with NumPy's linear algebra and the
spectral ops are NumPy's FFT, so both are always there. MKL is there when NumPy was built
against it. OpenMP is used only by compiled (Inductor) kernels, which need a C compiler.
"""
from __future__ import annotations

import shutil

import numpy as np

__all__ = ["has_lapack", "has_mkl", "has_openmp", "has_spectral", "is_distributed"]


def _numpy_blas() -> str:
    try:
        config = np.show_config(mode="dicts")
    except TypeError:                    # NumPy older than 1.26 prints only
        return ""
    return str(config.get("Build Dependencies", {}).get("blas", {}).get("name", ""))


has_lapack = True
has_spectral = True
has_mkl = "mkl" in _numpy_blas().lower()
has_openmp = any(shutil.which(cc) for cc in ("cc", "gcc", "clang"))


def is_distributed(input) -> bool:
    """Whether `input` is split across processes: a glasstorch tensor never is."""
    return False
