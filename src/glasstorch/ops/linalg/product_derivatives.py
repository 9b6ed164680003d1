"""Derivative formulas of the matrix products (products.py).

Node names are PyTorch's: ops that PyTorch decomposes (outer/ger into a product, inner and
tensordot into a reshaped mm, einsum into permutes, sums, bmm and a final view) are named
after the last op of that decomposition. Each formula is written in glasstorch ops so that
double backward records too; broadcast inputs (addmm's `input`, size-1 einsum labels) are
summed back by the engine.
"""
from __future__ import annotations

from ..derivative import derivative
from ..derivative import forward_derivative
from ...core.shape import wrap_dims
from ..pointwise.arithmetic_derivatives import conj
from .products import (_ELLIPSIS, _label_char, _label_index, _parse_operands, einsum,
                     tensordot)
from . import products
import math
from . import structure
from ...core.shape import wrap_dim
from ..shape.joining import where


def _scaled(grad, factor):
    return grad if factor == 1 else grad * conj(factor)


# ---- vector products -------------------------------------------------------------------

@derivative(products.mv, "MvBackward0")
def _mv(grad, self, vec):
    return grad.outer(conj(vec)), conj(self).t().mv(grad)


@derivative(products.dot, "DotBackward0")
def _dot(grad, self, tensor):
    return grad * conj(tensor), grad * conj(self)


@derivative(products.vdot, "VdotBackward0")
def _vdot(grad, self, other):
    # vdot conjugates self: d/dself = conj(grad) * other, d/dother = grad * self
    if self.dtype.is_complex:
        return grad.conj() * other, grad * self
    return grad * other, grad * self


def _outer(grad, self, vec2):
    # PyTorch computes outer as self[:, None] * vec2 (and so promotes): the same gradients
    return (grad * conj(vec2)).sum(1), (grad * conj(self).unsqueeze(1)).sum(0)


derivative(products.outer, "MulBackward0")(_outer)
derivative(products.ger, "MulBackward0")(_outer)


def _inner_name(self, other):
    return "MulBackward0" if self.dim() == 0 or other.dim() == 0 else "ViewBackward0"


@derivative(products.inner, _inner_name)
def _inner(grad, self, other):
    if self.dim() == 0 or other.dim() == 0:
        return grad * conj(other), grad * conj(self)
    return _tensordot_grads(grad, self, other, (self.dim() - 1,), (other.dim() - 1,))


# ---- add + product -----------------------------------------------------------------------

def _mat2_grad(grad, mat1, mat2):
    """mat1^H @ grad, laid out like mat2: a column-major mat2 (linear's weight.t()) gets the
    transposed product of a row-major one, as PyTorch's mm_mat2_backward, so the weight's
    gradient arrives contiguous and becomes .grad without a copy."""
    if mat2._stride[0] == 1 and mat2._stride[1] == mat2._shape[0] and mat2._shape[0] > 1:
        return grad.t().mm(conj(mat1)).t()
    return conj(mat1).t().mm(grad)


@derivative(products.mm, "MmBackward0")
def _mm(grad, self, mat2, grad_input_mask):
    # mat2's first, as PyTorch's: a mode sees linear's backward as t, mm, t, t, mm
    g_mat2 = _mat2_grad(grad, self, mat2) if grad_input_mask[1] else None
    return (_mat1_grad(grad, self, mat2) if grad_input_mask[0] else None), g_mat2


def _mat1_grad(grad, mat1, mat2):
    """grad @ mat2^H; for a sparse mat1, only at mat1's entries (a sparse gradient with its
    pattern, as PyTorch's mm_mat1_backward)."""
    g = grad.mm(conj(mat2).t())
    return g if mat1._sparse is None else g.sparse_mask(mat1)


@forward_derivative(products.mm)
def _mm_jvp(primals, tangents, result):
    return _product_jvp(lambda a, b: a.mm(b), *primals, *tangents)


@derivative(products.addmm, "AddmmBackward0")
def _addmm(grad, beta, alpha, mat1, mat2, grad_input_mask):
    need_self, need_mat1, need_mat2 = grad_input_mask
    return (_scaled(grad, beta) if need_self else None,
            _scaled(_mat1_grad(grad, mat1, mat2), alpha) if need_mat1 else None,
            _scaled(_mat2_grad(grad, mat1, mat2), alpha) if need_mat2 else None)


@forward_derivative(products.addmm)
def _addmm_jvp(primals, tangents, result):
    self, mat1, mat2, beta, alpha = primals
    t_self, t_mat1, t_mat2 = tangents[:3]
    out = _product_jvp(lambda a, b: a.mm(b), mat1, mat2, t_mat1, t_mat2)
    if out is not None and alpha != 1:
        out = out * alpha
    if t_self is not None:
        scaled = t_self if beta == 1 else t_self * beta
        out = scaled.expand(result.shape) if out is None else out + scaled
    return out


def _product_jvp(product, a, b, t_a, t_b):
    """d(a·b) = t_a·b + a·t_b for a bilinear product (None where neither has a tangent)."""
    if t_a is None and t_b is None:
        return None
    if t_b is None:
        return product(t_a, b)
    return product(a, t_b) if t_a is None else product(t_a, b) + product(a, t_b)


@derivative(products.addmv, "AddmvBackward0")
def _addmv(grad, beta, alpha, mat, vec):
    return (_scaled(grad, beta), _scaled(grad.outer(conj(vec)), alpha),
            _scaled(conj(mat).t().mv(grad), alpha))


@derivative(products.addr, "AddrBackward0")
def _addr(grad, beta, alpha, vec1, vec2):
    return (_scaled(grad, beta), _scaled(grad.mv(conj(vec2)), alpha),
            _scaled(grad.t().mv(conj(vec1)), alpha))


@derivative(products.baddbmm, "BaddbmmBackward0")
def _baddbmm(grad, beta, alpha, batch1, batch2, grad_input_mask):
    need_self, need_batch1, need_batch2 = grad_input_mask
    return (_scaled(grad, beta) if need_self else None,
            _scaled(grad.bmm(conj(batch2).transpose(1, 2)), alpha) if need_batch1 else None,
            _scaled(conj(batch1).transpose(1, 2).bmm(grad), alpha) if need_batch2 else None)


@derivative(products.addbmm, "AddbmmBackward0")
def _addbmm(grad, beta, alpha, batch1, batch2):
    g = grad.unsqueeze(0).expand((batch1.shape[0],) + tuple(grad.shape))
    return (_scaled(grad, beta), _scaled(g.bmm(conj(batch2).transpose(1, 2)), alpha),
            _scaled(conj(batch1).transpose(1, 2).bmm(g), alpha))


# ---- tensordot ---------------------------------------------------------------------------

def _tensordot_grads(grad, a, b, c1, c2):
    """Gradients of tensordot(a, b, (c1, c2)): contract grad with the other operand over
    its free dims, then permute the contracted dims back into place."""
    na, nb = a.dim(), b.dim()
    a_free = [d for d in range(na) if d not in c1]
    b_free = [d for d in range(nb) if d not in c2]
    nfa = len(a_free)
    # grad x b over b's free dims -> [a_free..., b's contracted dims in b's order]
    ga = tensordot(grad, conj(b), dims=(list(range(nfa, grad.dim())), b_free))
    rank_c2 = {d: r for r, d in enumerate(sorted(c2))}
    pos_a = [a_free.index(d) if d in a_free else nfa + rank_c2[c2[c1.index(d)]]
             for d in range(na)]
    # a x grad over a's free dims -> [a's contracted dims in a's order, b_free...]
    gb = tensordot(conj(a), grad, dims=(a_free, list(range(nfa))))
    rank_c1 = {d: r for r, d in enumerate(sorted(c1))}
    pos_b = [len(c1) + b_free.index(d) if d in b_free else rank_c1[c1[c2.index(d)]]
             for d in range(nb)]
    # a contracted dim of size 1 broadcast against the other operand's: expand it
    return _expand_broadcast(ga.permute(pos_a), a), _expand_broadcast(gb.permute(pos_b), b)


@derivative(products.tensordot_op, "ViewBackward0")
def _tensordot(grad, self, other, dims_self, dims_other):
    c1 = list(wrap_dims(dims_self, self.dim()))
    c2 = list(wrap_dims(dims_other, other.dim()))
    return _tensordot_grads(grad, self, other, c1, c2)


# ---- einsum ------------------------------------------------------------------------------

def _einsum_labels(equation: str, num_ops: int):
    """(labels per operand, output labels), ellipsis as _ELLIPSIS: the explicit output, or
    the implicit one ('...' then the labels seen once, sorted)."""
    arrow = equation.find("->")
    ops = _parse_operands(equation if arrow < 0 else equation[:arrow], num_ops)
    if arrow >= 0:
        rhs = equation[arrow + 2:].replace(" ", "").replace("...", ".")
        return ops, tuple(_ELLIPSIS if ch == "." else _label_index(ch) for ch in rhs)
    counts: dict = {}
    for labels in ops:
        for lab in labels:
            counts[lab] = counts.get(lab, 0) + 1
    has_ell = _ELLIPSIS in counts
    return ops, ((_ELLIPSIS,) if has_ell else ()) + tuple(
        lab for lab in sorted(counts) if counts[lab] == 1 and lab != _ELLIPSIS)


def _subscripts(labels) -> str:
    return "".join("..." if lab == _ELLIPSIS else _label_char(lab) for lab in labels)


def _einsum_name(equation, tensors, path=None):
    """PyTorch ends einsum with a sum (one operand), a view dropping the contracted dims
    (several operands, some label or ellipsis dim summed), or the last pairwise product."""
    if len(tensors) == 1:
        return "SumBackward1"
    ops, out = _einsum_labels(equation, len(tensors))
    for t, labels in zip(tensors, ops):
        for lab in labels:
            if lab not in out and (lab != _ELLIPSIS or t.dim() >= len(labels)):
                return "ViewBackward0"
    return "MulBackward0"


@derivative(products.einsum_op, _einsum_name)
def _einsum(grad, equation, tensors):
    ops, out = _einsum_labels(equation, len(tensors))
    ops, tensors, diagonals = list(ops), list(tensors), {}
    for k, labels in enumerate(ops):
        # a repeated subscript reads a diagonal: differentiate with respect to the diagonal
        unique = tuple(dict.fromkeys(labels))
        if len(unique) != len(labels):
            diagonals[k] = (tensors[k], labels)
            tensors[k] = einsum(f"{_subscripts(labels)}->{_subscripts(unique)}", tensors[k])
            ops[k] = unique
    grads = []
    for k, t in enumerate(tensors):
        labels = ops[k]
        others = [ops[j] for j in range(len(tensors)) if j != k]
        known = set(out).union(*map(set, others))
        # dims of operand k that occur nowhere else were summed away: the gradient is
        # constant along them, so contract without them and expand afterwards
        kept = [lab for lab in labels if lab in known]
        lhs = ",".join([_subscripts(out)] + [_subscripts(o) for o in others])
        if others:
            g = einsum(lhs + "->" + _subscripts(kept),
                       grad, *[conj(tensors[j]) for j in range(len(tensors)) if j != k])
        else:       # a relabelling of grad: a permute (einsum would return as_strided)
            g = grad.permute(_relabel(out, kept, grad.dim()))
        if g.dim() != t.dim() or len(kept) != len(labels):
            g = _expand_missing(g, t, labels, kept)
        grads.append(_expand_broadcast(g, t))
    for k, (t, labels) in diagonals.items():
        grads[k] = _embed_diagonal(grads[k], t, labels)
    return tuple(grads)


def _embed_diagonal(g, t, labels):
    """The gradient of `t` from that of its diagonal over repeated labels: zeros with `g`
    written through a strided view whose each label steps along all of its dims at once."""
    ell = t.dim() - len(labels) + 1
    per_dim = []
    for lab in labels:
        per_dim.extend([(_ELLIPSIS, i) for i in range(ell)] if lab == _ELLIPSIS else [lab])
    full = g.new_zeros(tuple(t.shape))
    size, stride = {}, {}
    for d, lab in enumerate(per_dim):
        size[lab] = t.shape[d]
        stride[lab] = stride.get(lab, 0) + full.stride(d)
    full.as_strided(tuple(size.values()), tuple(stride.values())).copy_(g)
    return full


def _expand_broadcast(g, t):
    """A label of size 1 in every other operand broadcast against operand `t`: its
    gradient is constant along that dim, so expand it to t's size there."""
    lead = g.dim() - t.dim()
    gs = tuple(g.shape)
    if all(gs[lead + i] != 1 or s == 1 for i, s in enumerate(t.shape)):
        return g
    return g.expand(gs[:lead] + tuple(max(gs[lead + i], s) for i, s in enumerate(t.shape)))


def _relabel(out, kept, ndim):
    """The permutation of grad's dims (labelled `out`) into the order of `kept`."""
    ell = ndim - len(out) + 1
    where, d = {}, 0
    for lab in out:
        n = ell if lab == _ELLIPSIS else 1
        where[lab] = list(range(d, d + n))
        d += n
    return [i for lab in kept for i in where[lab]]


def _expand_missing(g, t, labels, kept):
    """Give `g` (labelled `kept`) operand `t`'s dims: size-1 dims where t had labels that
    no other term has and where its ellipsis has more dims than g's, extra leading
    ellipsis dims of g summed; then expand to t's sizes."""
    ell_dims = t.dim() - len(labels) + 1
    g_ell = g.dim() - len(kept) + 1 if _ELLIPSIS in kept else 0
    if g_ell > ell_dims:        # broadcast leading dims of the ellipsis: sum them first
        g = g.sum(list(range(g_ell - ell_dims)))
        g_ell = ell_dims
    shape, src = [], 0
    for lab in labels:
        if lab == _ELLIPSIS:
            shape.extend([1] * (ell_dims - g_ell) + list(g.shape[src:src + g_ell]))
            src += g_ell
        elif lab in kept:
            shape.append(g.shape[src])
            src += 1
        else:
            shape.append(1)
    return g.reshape(shape).expand([b if a == 1 else a for a, b in zip(shape, t.shape)])


def _matmul_name(self, other):
    dims = (self.dim(), other.dim())
    return {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0",
            (1, 2): "SqueezeBackward4"}.get(dims, "UnsafeViewBackward0")


@derivative(products.bmm, "BmmBackward0")
def _bmm(grad, self, mat2, grad_input_mask):
    return (grad.bmm(conj(mat2).transpose(1, 2)) if grad_input_mask[0] else None,
            conj(self).transpose(1, 2).bmm(grad) if grad_input_mask[1] else None)


@forward_derivative(products.bmm)
def _bmm_jvp(primals, tangents, result):
    return _product_jvp(lambda a, b: a.bmm(b), *primals, *tangents)


@derivative(products.matmul, _matmul_name, needs={"self": (1,), "other": (0,)})
def _matmul(grad, self, other, self_shape, other_shape, grad_input_mask):
    """Each operand is saved only for the other's gradient (PyTorch's mm saves per input):
    an in-place write into one whose partner needs no gradient is no error."""
    one_a, one_b = len(self_shape) == 1, len(other_shape) == 1
    if one_a and one_b:
        return (grad * conj(other) if grad_input_mask[0] else None,
                grad * conj(self) if grad_input_mask[1] else None)
    g = grad.unsqueeze(-2) if one_a else grad
    if one_b:
        g = g.unsqueeze(-1)
    ga = gb = None
    if grad_input_mask[0]:
        b = conj(other)
        ga = g.matmul((b.unsqueeze(-1) if one_b else b).transpose(-1, -2))
        if one_a:
            ga = ga.squeeze(-2)
    if grad_input_mask[1]:
        a = conj(self)
        gb = (a.unsqueeze(0) if one_a else a).transpose(-1, -2).matmul(g)
        if one_b:
            gb = gb.squeeze(-1)
    return ga, gb


@forward_derivative(products.matmul)
def _matmul_jvp(primals, tangents, result):
    return _product_jvp(lambda a, b: a.matmul(b), *primals, *tangents)


@derivative(structure.trace, "TraceBackward0")
def _trace(grad, self_shape):
    from ..creation.ranges import eye
    return (eye(self_shape[0], self_shape[1], dtype=grad.dtype, device=grad.device) * grad,)


@derivative(structure.renorm, "RenormBackward0")
def _renorm(grad, self, p, dim, maxnorm):
    """y = x * f(n) with f = maxnorm / (n + 1e-7) on the slices whose p-norm n exceeds
    maxnorm (else 1): dy/dx = f + x * f'(n) * dn/dx, summed over each slice."""
    d = wrap_dim(dim, self.dim())
    others = [i for i in range(self.dim()) if i != d]
    mag = self.abs()
    if p == math.inf:
        norm = mag.amax(others, keepdim=True)
        hit = (mag == norm).to(self.dtype)
        dnorm = self.sgn() * hit / hit.sum(others, keepdim=True)
    else:
        norm = mag.pow(p).sum(others, keepdim=True).pow(1.0 / p)
        dnorm = self.sgn() * (mag / norm).pow(p - 1)
    over = norm > maxnorm
    factor = where(over, maxnorm / (norm + 1e-7), 1.0)
    dfactor = where(over, -maxnorm / ((norm + 1e-7) * (norm + 1e-7)), 0.0)
    inner = (grad * self).sum(others, keepdim=True)
    return (grad * factor + where(over, inner * dfactor * dnorm, 0.0),)
