"""Operators whose derivative PyTorch has not implemented for complex outputs.

PyTorch's autograd lists the operators whose backward is right for complex tensors
(GRADIENT_IMPLEMENTED_FOR_COMPLEX in its code generator); any other operator with a derivative
raises once it has run, when an output it gives a grad_fn is complex:

    RuntimeError: _softmax does not support automatic differentiation for outputs with
    complex dtype.

Most such operators have no complex kernel and fail before that (softmax's kernel refuses
complex input), so the refusal shows where the kernel computes nothing (an empty tensor)
or accepts complex (silu, nan_to_num, amax). The table below is those operators of
glasstorch's, each named as PyTorch's message names it; tests/autograd/test_complex_refusals.py
checks every entry, and operators left out of it, against PyTorch. Only the functional form
refuses: PyTorch's in-place variants (silu_, nan_to_num_) record as usual.

Each listed operator gets its own Autograd kernel, the shared one followed by the check
(skipped while an in-place variant records through it), so no other operator pays anything
for it.
"""
from __future__ import annotations

from ..core.dtype import COMPLEX
from ..core.tensor import Tensor
from ..dispatch.dispatcher import all_operators
from ..dispatch.keys import DispatchKey
from .recording import autograd_kernel, recording_in_place

# aten operators (every overload of each), named as PyTorch's message names them
NOT_DIFFERENTIABLE_FOR_COMPLEX = frozenset((
    "_softmax", "_log_softmax", "cummax", "cummin", "amax", "amin", "silu", "nan_to_num",
    "select_scatter", "slice_scatter", "embedding", "scatter_reduce", "lift_fresh_copy",
    "_to_sparse", "geqrf"))

_AUTOGRAD_KEYS = (DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA, DispatchKey.AutogradMeta)


def _refusing_complex(name: str):
    message = f"{name} does not support automatic differentiation for outputs with complex dtype."

    def check(result):
        if recording_in_place():
            return result
        for out in result if isinstance(result, (tuple, list)) else (result,):
            if isinstance(out, Tensor) and out._requires_grad and out.dtype.is_complex:
                raise RuntimeError(message)
        return result

    def kernel(op, ks, *args):
        return check(autograd_kernel(op, ks, *args))

    def direct(op, ks):
        """`autograd_kernel.direct` followed by the check, as the dispatcher's direct kernel
        (`Operator._direct_kernel`): every _softmax and _log_softmax with grad (attention,
        cross_entropy) then records through the generated history. A real output passes
        with two reads."""
        below = autograd_kernel.direct(op, ks)

        def refusing_direct(*args):
            result = below(*args)
            if result.__class__ is Tensor and result.dtype.category != COMPLEX:
                return result
            return check(result)
        return refusing_direct

    kernel.direct = direct
    return kernel


def register() -> None:
    """Give each functional overload of the listed operators the refusing Autograd kernel
    (called once every operator is declared: glasstorch/__init__.py)."""
    for op in all_operators():
        schema = op.schema
        name = schema.name.removeprefix("aten::")
        if name not in NOT_DIFFERENTIABLE_FOR_COMPLEX or schema.namespace != "aten" or \
                op.info.get("mutated"):
            continue
        for key in _AUTOGRAD_KEYS:
            op.register(key, _refusing_complex(name))
