"""gradcheck / gradgradcheck: compare autograd's gradients with finite differences.

Everything is compared as real Jacobians: a complex element counts as two real coordinates
(its real part, then its imaginary part), so a complex function is checked as the map of
real vectors it is, holomorphic or not. The numerical Jacobian perturbs each input coordinate
in place by +-eps (central difference) through its NumPy view, so nothing is recorded and no
version is bumped, then restores it. The analytical one runs one vector-Jacobian product per
output coordinate (a one-hot grad_output: 1, or 1j for an imaginary part): by PyTorch's
convention the gradient of the real function Re(sum(conj(g) * out)) is d/dx + i d/dy of its
input, one row of each part. Forward mode (`check_forward_ad`) builds the same Jacobian from
one jvp per input coordinate. Jacobians are laid out as PyTorch prints them: one row per
input coordinate, one column per output coordinate. Fast mode compares the scalar
Re(sum(conj(v) * J u)) for random vectors u (per input) and v (per output).
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
    return tuple(o for o in outputs if isinstance(o, Tensor)
                 and (o.dtype.is_floating_point or o.dtype.is_complex))


def _flat(t: Tensor) -> np.ndarray:
    """A tensor's elements in logical (row-major) order, as a float64/complex copy."""
    t = t.detach().resolve_conj().resolve_neg()
    if t.device.type != "cpu":
        t = t.cpu()                         # GPU tensors come home for the comparison
    return np.array(t._array(), copy=True).reshape(-1)


def _real_coordinates(a: np.ndarray, complex_: bool) -> np.ndarray:
    """A flat array as real coordinates: (re, im) per element when complex_, else itself."""
    if not complex_:
        return np.real(a).astype(np.float64)
    return np.stack([np.real(a), np.imag(a)], axis=-1).reshape(-1).astype(np.float64)


def _parts(t: Tensor) -> tuple:
    """The unit directions of one element's real coordinates."""
    return (1, 1j) if t.dtype.is_complex else (1,)


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


def _one_hot_directions(t: Tensor):
    """(row, direction array) for each real coordinate of t, in the Jacobians' row order."""
    direction = np.zeros(tuple(t.shape), dtype=t.dtype.np)
    flat = direction.reshape(-1)
    row = 0
    for k in range(t.numel()):
        for part in _parts(t):
            flat[k] = part
            yield row, direction
            row += 1
        flat[k] = 0


def _n_coordinates(t: Tensor) -> int:
    return t.numel() * len(_parts(t))


def _numerical_jacobians(func, inputs, wanted, outputs, eps) -> list:
    """jac[j][i]: (input j coordinates, output i coordinates) for each wanted input j."""
    result = []
    for j in wanted:
        t = inputs[j]
        cols = [np.zeros((_n_coordinates(t), _n_coordinates(o))) for o in outputs]
        for row, direction in _one_hot_directions(t):
            diffs = _perturbed(func, inputs, t, direction, eps)
            for i, (o, d) in enumerate(zip(outputs, diffs)):
                cols[i][row] = _real_coordinates(d, o.dtype.is_complex)
        result.append(cols)
    return result


def _vjp(output: Tensor, grad_output: Tensor, diff_inputs) -> list:
    """The gradient of each input as real coordinates."""
    from . import grad as autograd_grad
    if not output.requires_grad:
        return [np.zeros(_n_coordinates(t)) for t in diff_inputs]
    grads = autograd_grad(output, diff_inputs, grad_output, retain_graph=True,
                          allow_unused=True)
    return [np.zeros(_n_coordinates(t)) if g is None
            else _real_coordinates(_flat(g), t.dtype.is_complex)
            for g, t in zip(grads, diff_inputs)]


def _analytical_jacobians(outputs, diff_inputs) -> list:
    """jac[j][i] as in _numerical_jacobians, built from one-hot vector-Jacobian products."""
    from ..ops.creation.factories import zeros_like
    jac = [[np.zeros((_n_coordinates(t), _n_coordinates(o))) for o in outputs]
           for t in diff_inputs]
    for i, o in enumerate(outputs):
        column = 0
        for k in range(o.numel()):
            for part in _parts(o):
                g = zeros_like(o, memory_format=_contiguous())
                g._array().reshape(-1)[k] = part
                for j, col in enumerate(_vjp(o, g, diff_inputs)):
                    jac[j][i][:, column] = col
                column += 1
    return jac


def _forward_jacobians(func, inputs, wanted, outputs) -> list:
    """jac[j][i] as in _numerical_jacobians, built from one jvp per input coordinate."""
    from . import forward_ad as fwAD
    from ..ops.creation.factories import tensor as make_tensor
    jac = [[np.zeros((_n_coordinates(inputs[j]), _n_coordinates(o))) for o in outputs]
           for j in wanted]
    for jj, j in enumerate(wanted):
        t = inputs[j]
        for row, direction in _one_hot_directions(t):
            with fwAD.dual_level():
                duals = list(inputs)
                duals[j] = fwAD.make_dual(t.detach(), make_tensor(direction, dtype=t.dtype,
                                                                  device=t.device))
                outs = _differentiable_outputs(_as_tuple(func(*duals)))
                for i, o in enumerate(outs):
                    tangent = fwAD.unpack_dual(o).tangent
                    if tangent is not None:
                        jac[jj][i][row] = _real_coordinates(_flat(tangent), o.dtype.is_complex)
    return jac


def _contiguous():
    from ..core.tensor import contiguous_format
    return contiguous_format


def _as_tensor(a: np.ndarray, like: Tensor) -> Tensor:
    """A Jacobian for the message, in the input's (real) dtype as PyTorch prints it."""
    from ..ops.creation.factories import tensor
    return tensor(a, dtype=like.dtype.to_real())


def _mismatch(i, j, numerical, analytical, mode="") -> str:
    return (f"Jacobian mismatch for output {i:d} with respect to input {j:d}{mode},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _compare(numerical, analytical, outputs, wanted, inputs, atol, rtol, raise_exception,
             mode=""):
    for jj, j in enumerate(wanted):
        for i, o in enumerate(outputs):
            n, a = numerical[jj][i], analytical[jj][i]
            if not mode and not o.requires_grad and np.any(n != 0):
                return _fail("Numerical gradient for function expected to be zero",
                             raise_exception)
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                like = inputs[j]
                return _fail(_mismatch(i, j, _as_tensor(n, like), _as_tensor(a, like), mode),
                             raise_exception)
    return True


def _slow(func, inputs, wanted, outputs, eps, atol, rtol, nondet_tol, raise_exception):
    diff_inputs = [inputs[j] for j in wanted]
    numerical = _numerical_jacobians(func, inputs, wanted, outputs, eps)
    analytical = _analytical_jacobians(outputs, diff_inputs)
    if not _compare(numerical, analytical, outputs, wanted, inputs, atol, rtol,
                    raise_exception):
        return False
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


def _random_direction(rng, t: Tensor) -> np.ndarray:
    u = rng.standard_normal(tuple(t.shape))
    if t.dtype.is_complex:
        u = u + 1j * rng.standard_normal(tuple(t.shape))
    norm = np.linalg.norm(u)
    return u / norm if norm > 0 else u


def _fast(func, inputs, wanted, outputs, eps, atol, rtol, raise_exception):
    from ..ops.creation.factories import tensor
    rng = np.random.default_rng(0)
    us = [_random_direction(rng, inputs[j]) for j in wanted]
    vs = [_random_direction(rng, o) for o in outputs]
    diff_inputs = [inputs[j] for j in wanted]
    for jj, j in enumerate(wanted):
        diffs = _perturbed(func, inputs, inputs[j], us[jj], eps)
        u = _real_coordinates(us[jj].reshape(-1), inputs[j].dtype.is_complex)
        for i, o in enumerate(outputs):
            n = np.dot(_real_coordinates(vs[i].reshape(-1), o.dtype.is_complex),
                       _real_coordinates(diffs[i], o.dtype.is_complex))
            g = tensor(vs[i], dtype=o.dtype)
            a = np.dot(_vjp(o, g, diff_inputs)[jj], u)
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
    if check_forward_ad:
        numerical = _numerical_jacobians(func, inputs, wanted, outputs, eps)
        forward = _forward_jacobians(func, inputs, wanted, outputs)
        if not _compare(numerical, forward, outputs, wanted, inputs, atol, rtol,
                        raise_exception, mode=" (forward mode)"):
            return False
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
