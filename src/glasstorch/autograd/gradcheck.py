"""gradcheck / gradgradcheck: compare autograd's gradients with finite differences.

The numerical Jacobian perturbs each input element in place by +-eps (central
difference) through its NumPy view, so nothing is recorded and no version is bumped, then
restores it; the analytical one runs one vector-Jacobian product per output element (a
one-hot grad_output). Jacobians are laid out as PyTorch prints them: one row per input
element, one column per output element. Fast mode compares the scalar v^T J u for random
vectors u (per input) and v (per output).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..backends.arrays import module_of
from ..core.tensor import Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails."""


def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(outputs):
    return tuple(o for o in outputs if isinstance(o, Tensor) and o.dtype.is_floating_point)


def _flat(t: Tensor) -> np.ndarray:
    """A tensor's elements in logical (row-major) order, as a float64/complex copy."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()                         # GPU tensors come home for the comparison
    return np.array(t._array(), copy=True).reshape(-1)


def _check_inputs(inputs) -> list:
    wanted = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not wanted:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")
    for i in wanted:
        t = inputs[i]
        if t.dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          "floating point or complex. This check will likely fail if all the "
                          "inputs are not of double precision floating point or complex. ")
    return wanted


def _evaluate(func, inputs) -> list:
    outs = _differentiable_outputs(_as_tuple(func(*inputs)))
    return [_flat(o) for o in outs]


def _perturbed(func, inputs, tensor: Tensor, direction: np.ndarray, eps: float) -> list:
    """(f(x + eps*d) - f(x - eps*d)) / (2 eps) per output, d shaped like `tensor`."""
    arr = tensor._array()
    direction = module_of(arr).asarray(direction)      # onto the GPU of a CUDA input
    orig = arr.copy()
    try:
        arr[...] = orig + eps * direction
        plus = _evaluate(func, inputs)
        arr[...] = orig - eps * direction
        minus = _evaluate(func, inputs)
    finally:
        arr[...] = orig
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _numerical_jacobians(func, inputs, wanted, n_outputs, eps) -> list:
    """jac[j][i]: (input j numel, output i numel) matrix for each wanted input j."""
    result = []
    for j in wanted:
        t = inputs[j]
        cols = None
        direction = np.zeros(tuple(t.shape), dtype=t.dtype.np)
        flat_dir = direction.reshape(-1)
        for k in range(t.numel()):
            flat_dir[k] = 1
            diffs = _perturbed(func, inputs, t, direction, eps)
            flat_dir[k] = 0
            if cols is None:
                cols = [np.zeros((t.numel(), d.size), dtype=d.dtype) for d in diffs]
            for i, d in enumerate(diffs):
                cols[i][k] = d
        if cols is None:   # empty input: shapes from an unperturbed call
            cols = [np.zeros((0, o.size)) for o in _evaluate(func, inputs)]
        result.append(cols[:n_outputs])
    return result


def _vjp(output: Tensor, grad_output: Tensor, diff_inputs) -> list:
    from . import grad as autograd_grad
    if not output.requires_grad:
        return [np.zeros(t.numel()) for t in diff_inputs]
    grads = autograd_grad(output, diff_inputs, grad_output, retain_graph=True,
                          allow_unused=True)
    return [np.zeros(t.numel()) if g is None else _flat(g)
            for g, t in zip(grads, diff_inputs)]


def _analytical_jacobians(outputs, diff_inputs) -> list:
    """jac[j][i] as in _numerical_jacobians, built from one-hot vector-Jacobian products."""
    from ..ops.creation.factories import zeros_like
    jac = [[np.zeros((t.numel(), o.numel())) for o in outputs] for t in diff_inputs]
    for i, o in enumerate(outputs):
        for k in range(o.numel()):
            g = zeros_like(o, memory_format=_contiguous())
            g._array().reshape(-1)[k] = 1
            for j, col in enumerate(_vjp(o, g, diff_inputs)):
                jac[j][i][:, k] = col
    return jac


def _contiguous():
    from ..core.tensor import contiguous_format
    return contiguous_format


def _as_tensor(a: np.ndarray, like: Tensor) -> Tensor:
    from ..ops.creation.factories import tensor
    return tensor(a, dtype=like.dtype)


def _mismatch(i, j, numerical, analytical) -> str:
    return (f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _slow(func, inputs, wanted, outputs, eps, atol, rtol, nondet_tol, raise_exception):
    diff_inputs = [inputs[j] for j in wanted]
    numerical = _numerical_jacobians(func, inputs, wanted, len(outputs), eps)
    analytical = _analytical_jacobians(outputs, diff_inputs)
    for jj, j in enumerate(wanted):
        for i, o in enumerate(outputs):
            n, a = numerical[jj][i], analytical[jj][i]
            if not o.requires_grad and np.any(n != 0):
                return _fail("Numerical gradient for function expected to be zero",
                             raise_exception)
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                like = inputs[j]
                return _fail(_mismatch(i, j, _as_tensor(n, like), _as_tensor(a, like)),
                             raise_exception)
    again = _analytical_jacobians(outputs, diff_inputs)
    for jj in range(len(wanted)):
        for i in range(len(outputs)):
            if np.max(np.abs(again[jj][i] - analytical[jj][i]), initial=0) > nondet_tol:
                return _fail("Backward is not reentrant, i.e., running backward with same "
                             "input and grad_output multiple times gives different values, "
                             "although analytical gradient matches numerical gradient.The "
                             f"tolerance for nondeterminism was {nondet_tol}.",
                             raise_exception)
    return True


def _fast(func, inputs, wanted, outputs, eps, atol, rtol, raise_exception):
    from ..ops.creation.factories import tensor
    rng = np.random.default_rng(0)
    us = []
    for j in wanted:
        u = rng.standard_normal(tuple(inputs[j].shape))
        norm = np.linalg.norm(u)
        us.append(u / norm if norm > 0 else u)
    vs = [rng.standard_normal(o.numel()) for o in outputs]
    diff_inputs = [inputs[j] for j in wanted]
    for jj, j in enumerate(wanted):
        diffs = _perturbed(func, inputs, inputs[j], us[jj], eps)
        for i, o in enumerate(outputs):
            n = np.dot(vs[i], diffs[i])
            g = tensor(vs[i].reshape(tuple(o.shape)), dtype=o.dtype)
            a = np.dot(_vjp(o, g, diff_inputs)[jj], us[jj].reshape(-1))
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                like = inputs[j]
                return _fail(_mismatch(i, j, _as_tensor(np.asarray(n), like),
                                       _as_tensor(np.asarray(a), like))
                             + "(computed in fast mode as v^T J u for random vectors u, v; "
                             "rerun with fast_mode=False for the full Jacobians)\n",
                             raise_exception)
    return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check func's analytical gradients against finite differences; True if they agree."""
    inputs = _as_tuple(inputs)
    wanted = _check_inputs(inputs)
    if not check_backward_ad:
        return True
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if fast_mode:
        return _fast(func, inputs, wanted, outputs, eps, atol, rtol, raise_exception)
    return _slow(func, inputs, wanted, outputs, eps, atol, rtol, nondet_tol, raise_exception)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the vector-Jacobian product: checks second derivatives."""
    from ..ops.creation.factories import tensor
    from . import grad as autograd_grad
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
        grad_outputs = tuple(
            tensor(rng.uniform(-9, 9, tuple(o.shape)), dtype=o.dtype,
                   device=o.device).requires_grad_()
            for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    if not check_rev_over_rev:
        return True

    def vjp(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _differentiable_outputs(_as_tuple(func(*ins)))
        pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
        diff = [t for t in ins if isinstance(t, Tensor) and t.requires_grad]
        grads = autograd_grad([o for o, _ in pairs], diff, [g for _, g in pairs],
                              create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     fast_mode=fast_mode)


__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]
