"""CPU backend: NumPy kernels writing into memory from the CPU allocator."""
import warnings

import numpy as np

# PyTorch computes inf/nan silently; NumPy warns. Silence only warnings raised from
# glasstorch's own kernels (cheaper than np.errstate around every call).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"glasstorch\.",
                        message=r".*(overflow|invalid value|divide by zero|underflow) "
                                r"encountered")
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning,
                        module=r"glasstorch\.")   # copy_ warns in PyTorch's words instead
