"""glasstorch: PyTorch's API over machinery you can read and watch.

    import glasstorch as torch
"""
from __future__ import annotations

import gc as _gc
import os as _os
import sys as _sys

from .version import __version__  # the PyTorch API version; glasstorch.version.glasstorch

from .core.dtype import (ALIASES as _ALIASES, bfloat16, bool, can_cast, complex64, complex128,
                         dtype, finfo, float16, float32, float64, get_default_dtype, iinfo,
                         int8, int16, int32, int64, is_complex, is_floating_point,
                         promote_types, result_type, set_default_dtype, uint8)
from .core import dtype as _dtypes
from .core.device import device, get_default_device, set_default_device  # noqa: F401
from .core.shape import Size, broadcast_shapes
from .core.storage import UntypedStorage
from .core.tensor import (Tensor, channels_last, channels_last_3d, contiguous_format, layout,
                          memory_format, preserve_format, strided)
from .core.tensor import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr  # noqa: F401
from . import memory
from .memory.errors import OutOfMemoryError  # noqa: F401  (torch.OutOfMemoryError)
from . import return_types

# Op declarations register themselves with the dispatcher and export their functions.
from .ops import registry as _registry
from .dispatch import modes as _modes  # noqa: F401  (the Python key's kernel)
from .ops import families as _families  # noqa: F401  (every op, with its derivative)
from .random import *  # noqa: F401,F403  (Generator, manual_seed, ...)
from .backends.cpu.parallel import (get_num_interop_threads, get_num_threads,  # noqa: F401
                                     set_num_interop_threads, set_num_threads)
from .core.printing import *  # noqa: F401,F403  (set_printoptions)
from . import debug  # noqa: F401
from .dispatch import library  # noqa: F401  (torch.library: operators defined from Python)
_sys.modules[__name__ + ".library"] = library   # so `import glasstorch.library` finds it
from . import _C, overrides  # noqa: F401  (torch._C's protocol names, torch.overrides)
from .overrides import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: F401
from . import autograd  # noqa: F401  (the Autograd dispatch key and the engine)
from .autograd import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                       is_inference_mode_enabled, no_grad, set_grad_enabled)

globals().update(_ALIASES)
globals().update({_d.name: _d for _d in _dtypes.PARTIAL_DTYPES})   # uint32, float8_e4m3fn, ...
globals().update(_registry.functions)
from . import fft, linalg, nn, optim, profiler, special, utils  # noqa: E402,F401
from . import fx  # noqa: E402,F401
from .utils.dlpack import from_dlpack  # noqa: E402,F401  (torch.from_dlpack)
from . import func  # noqa: E402,F401  (torch.func: grad, vjp, jacrev, vmap, ...)
from .func import vmap  # noqa: E402,F401
from . import testing  # noqa: E402,F401  (torch.testing: assert_close, make_tensor)
from . import accelerator, hub  # noqa: E402,F401  (torch.accelerator, torch.hub)
from . import signal  # noqa: E402,F401  (torch.signal.windows)
from . import sparse  # noqa: E402,F401  (torch.sparse; the sparse layouts' kernels)
from .sparse.functions import *  # noqa: E402,F401,F403  (sparse_coo_tensor, spmm, ...)
from .signal.windows.windows import (bartlett_window, blackman_window,  # noqa: E402,F401
                                     hamming_window, hann_window, kaiser_window)
from . import _decomp, _prims  # noqa: E402,F401  (torch._prims, torch._decomp)
from . import _subclasses  # noqa: E402,F401  (torch._subclasses: FakeTensor)
from . import amp, cpu, cuda  # noqa: E402,F401  (amp: the Autocast keys' kernels)
from .amp.autocast_mode import (autocast, clear_autocast_cache,  # noqa: E402,F401
                                get_autocast_dtype, is_autocast_available,
                                is_autocast_cache_enabled, is_autocast_enabled,
                                set_autocast_cache_enabled, set_autocast_dtype)
from .serialization import *  # noqa: E402,F401,F403  (save, load)
from .compiler import compile  # noqa: E402,F401  (torch.compile; torch.compiler, torch._dynamo)
from . import export  # noqa: E402,F401  (torch.export)
from . import onnx  # noqa: E402,F401  (torch.onnx; writing a model needs the onnx package)
from . import jit  # noqa: E402,F401  (torch.jit: trace, script, save/load)
from .ops import gpu_kernels as _gpu_kernels  # noqa: E402  (after every op is declared)
from . import distributed, distributions, futures, multiprocessing  # noqa: E402,F401
from . import masked  # noqa: E402,F401  (torch.masked: masked reductions, MaskedTensor)
from . import _tensor_classes, _tensor_functions  # noqa: E402
from ._settings import *  # noqa: E402,F401,F403  (use_deterministic_algorithms, ...)
from ._sym import *  # noqa: E402,F401,F403  (SymInt, sym_max, sym_int, ...)
from .amp.state_functions import *  # noqa: E402,F401,F403  (set_autocast_enabled, ...)
from .amp import GradScaler  # noqa: E402,F401
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled,  # noqa: E402,F401
                                    is_anomaly_enabled, set_anomaly_enabled)
from ._device_streams import Event, Stream  # noqa: E402,F401
from .futures import Future  # noqa: E402,F401
from .jit._async import fork, wait  # noqa: E402,F401
from .dispatch.keys import DispatchKey, DispatchKeySet  # noqa: E402,F401
from .dispatch.tags import Tag  # noqa: E402,F401
from ._schema_names import FunctionSchema, parse_schema  # noqa: E402,F401
from ._aggregation import AVG, SUM, AggregationType  # noqa: E402,F401
from ._higher_order_ops import cond  # noqa: E402,F401
from ._from_file import from_file  # noqa: E402,F401
from ._runtime_info import *  # noqa: E402,F401,F403  (has_lapack, is_distributed, ...)
from ._accelerator_error import AcceleratorError  # noqa: E402,F401
from .random import thread_safe_generator  # noqa: E402,F401

globals().update(_tensor_classes.exported_names())     # FloatTensor, FloatStorage, ...
globals().update(_tensor_functions.exported_names())   # exp_, dist, ravel, pi, ...
cuda.__dict__.update(_tensor_classes.cuda_names())     # torch.cuda.FloatTensor, ...

from .ops import dtype_support as _dtype_support  # noqa: E402
_dtype_support.install()    # the partial dtypes refused as PyTorch's kernels refuse them
from .autograd import complex_support as _complex_support  # noqa: E402
_complex_support.register()  # autograd's refusals of complex outputs, as PyTorch's
_gpu_kernels.register()

cfloat, cdouble = complex64, complex128


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_storage(obj) -> bool:
    return isinstance(obj, UntypedStorage)


def numel(input) -> int:
    return input.numel()


debug.levels._from_environment()    # GLASSTORCH_DEBUG=1..4: print what the machinery does

# Importing glasstorch made about 100,000 objects the cyclic garbage collector tracks (its
# operators, schemas, kernels and their closures: what PyTorch keeps in C++), and every full
# collection walked them all: 70 ms, once every ~100 steps of a small model's training loop.
# They live as long as the process, so they move to the collector's permanent generation
# (docs/07-performance.md, "The garbage collector"); gc.unfreeze() undoes it, and
# GLASSTORCH_GC_FREEZE=0 leaves the collector alone.
if _os.environ.get("GLASSTORCH_GC_FREEZE", "1") != "0":
    _gc.freeze()
