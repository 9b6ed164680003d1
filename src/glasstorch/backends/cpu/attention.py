"""CPU kernels of PyTorch's fused CPU attention, `_scaled_dot_product_flash_attention_for_cpu`
and its backward: softmax(q k^T * scale) v over (batch, heads, length, head size) inputs as
batched matrix products, a causal mask added as a cached 0/-inf bias (no boolean matrix per
call), the backward recomputing the probabilities from the saved logsumexp instead of
keeping them. float16/bfloat16 compute in float32 (the logsumexp stays float32).

For short keys (the GPTs' S = 32-128) the forward holds its scores transposed, key position
outermost: an (S, B*H*L) buffer whose (B, H, S, L) view the matrix products write and read
(BLAS takes either orientation). The softmax's max and sum then reduce over the outer axis,
NumPy's vectorised reduction (across rows B*H*L long), instead of along rows of S elements,
which NumPy reduces one short row at a time (10x slower at S = 64). The backward, which
reduces nothing over those rows, measured no faster so (its two products written transposed
cost what its faster broadcasts save): it keeps the products' own layout.

Where the C kernels of native/attention.c build, the softmax runs there instead, on the
products' rows in one pass (the layout games above are for NumPy's reductions): at the tiny
GPT's shapes (16 x 4 heads x 64 x 32, float32, one thread) the forward took 688 -> 400 us
and the backward 1475 -> 860 us, leaving mostly the matrix products.

The NumPy kernels run on the calling thread: split by batch across glasstorch's pool, the
tiny GPT's attention measured 12% (best round) to 50% (median) slower on 2 shared cores."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import native
from .loss import row_max, row_sums
from .normalization import compute_array
from ...core import dtype as dt
from ...core.device import CPU
from ...core.promotion import opmath
from ...core.tensor import Tensor


def heads_last_strides(shape: tuple) -> tuple:
    """Strides of a (B, H, L, E) tensor laid out as (B, L, H, E), as PyTorch's kernel makes
    its outputs: the usual `y.transpose(1, 2)` back to (B, L, H * E) is then contiguous."""
    b, h, n, e = shape
    return (n * h * e, e, h * e, 1)


def _empty_heads_last(shape: tuple, dtype: dt.dtype) -> Tensor:
    return Tensor._empty(tuple(shape), dtype, CPU, heads_last_strides(tuple(shape)))


@lru_cache(maxsize=16)
def causal_bias(n_q: int, n_k: int, dtype: np.dtype) -> np.ndarray:
    """0 where query i may see key j (j <= i, top-left aligned), -inf above; read-only."""
    bias = np.zeros((n_q, n_k), dtype)
    bias[np.triu_indices(n_q, 1, n_k)] = -np.inf
    bias.flags.writeable = False
    return bias


# Elements each row of a transposed buffer is padded by: rows a power of two apart (B*H*L
# usually is one) map to the same cache sets, which makes the products' scattered writes
# 10-30% slower. The padding columns are zeroed and then computed on with the rest, so that
# every elementwise pass runs over one contiguous array (NumPy's fast path: a strided 2-D
# operand costs ~10 us more per pass).
_PAD = 16


@lru_cache(maxsize=16)
def _causal_bias_t(n_q: int, n_k: int, dtype: np.dtype) -> np.ndarray:
    """causal_bias transposed, (S, L); read-only."""
    bias = np.ascontiguousarray(causal_bias(n_q, n_k, dtype).T)
    bias.flags.writeable = False
    return bias


# Transposed buffers up to this size get their causal mask from a cached copy of the mask
# repeated for every (batch, head), added as one same-shape pass; larger ones (whose copy
# would hold as much memory as the scores) by a broadcast over (S, B*H, L), which NumPy
# loops over rows of L elements, 3-5x slower.
_BIAS_ROWS_BYTES = 1 << 22


@lru_cache(maxsize=8)
def _causal_bias_rows(n_q: int, n_k: int, width: int, dtype: np.dtype) -> np.ndarray:
    """The transposed causal mask repeated for every (batch, head), padded like a
    transposed buffer: (S, B*H*L + _PAD), zero in the padding; read-only."""
    bias = _causal_bias_t(n_q, n_k, dtype)
    rows = np.zeros((n_k, width + _PAD), dtype)
    rows[:, :width].reshape(n_k, width // n_q, n_q)[...] = bias[:, None, :]
    rows.flags.writeable = False
    return rows


def _scale(scale, q: np.ndarray) -> float:
    return 1 / math.sqrt(q.shape[-1]) if scale is None else scale


def _transpose(a: np.ndarray) -> np.ndarray:
    """a^T (over the last two axes) as the right operand of a stacked product. At the GPTs'
    sizes (products of 32-64 keys) NumPy's OpenBLAS runs a product with a transposed right
    operand 1.3-1.4x slower than one with a contiguous copy, the copy included; from 128
    keys, or 16, the copy costs more than it saves: the view is kept."""
    n = a.shape[-2]
    return np.ascontiguousarray(a.swapaxes(-1, -2)) if 32 <= n <= 64 else a.swapaxes(-1, -2)


def _scores(q: np.ndarray, k: np.ndarray, scale: float, is_causal: bool) -> np.ndarray:
    """q k^T * scale, masked: a fresh (B, H, L, S) array."""
    s = np.matmul(q, _transpose(k))
    s *= scale
    if is_causal:
        s += causal_bias(s.shape[-2], s.shape[-1], s.dtype)
    return s


def _transposed(n_k: int, lead: tuple, dtype: np.dtype) -> tuple:
    """(buffer, view): a contiguous (S, B*H*L + _PAD) array, its padding zero and the rest
    uninitialised, and the (B, H, S, L) view of its first B*H*L columns, for a transposed
    (S, L) matrix per batch and head; `lead` is (B, H, L)."""
    width = math.prod(lead)
    buf = np.empty((n_k, width + _PAD), dtype)
    buf[:, width:] = 0
    return buf, buf[:, :width].reshape((n_k,) + lead).transpose(1, 2, 0, 3)


def _products_t(q: np.ndarray, k: np.ndarray) -> tuple:
    """(buffer, view): q k^T, transposed (see `_transposed`)."""
    buf, view = _transposed(k.shape[2], q.shape[:3], q.dtype)
    np.matmul(k, _transpose(q), out=view)
    return buf, view


def _scores_t(q: np.ndarray, k: np.ndarray, scale: float, is_causal: bool) -> tuple:
    """(buffer, view): the masked q k^T * scale, transposed (see `_transposed`)."""
    buf, view = _products_t(q, k)
    buf *= scale
    if is_causal:
        n_q, n_k, width = q.shape[2], k.shape[2], buf.shape[1] - _PAD
        if buf.nbytes <= _BIAS_ROWS_BYTES:
            buf += _causal_bias_rows(n_q, n_k, width, buf.dtype)
        else:
            by_query = buf[:, :width].reshape(n_k, -1, n_q)
            by_query += _causal_bias_t(n_q, n_k, buf.dtype)[:, None, :]
    return buf, view


# Key lengths up to which the forward holds its scores transposed: beyond, NumPy's per-row
# reduce is amortised over long rows and the products' scattered writes into the transposed
# buffer cost more (measured: S = 128 16% faster, S = 256 3-14% slower, S = 1024 31%).
_TRANSPOSED_MAX_KEYS = 128


def flash_attention_cpu(outs, query, key, value, dropout_p=0.0, is_causal=False,
                        attn_mask=None, scale=None):
    """(output, logsumexp), the scores transposed for short keys, else in rows."""
    cd = opmath(query.dtype)
    q, k, v = (compute_array(t, cd) for t in (query, key, value))
    o, lse = outs[0]._array(), outs[1]._array()
    if k.shape[2] <= _TRANSPOSED_MAX_KEYS:
        attend, softmax = _attend_transposed, _native_softmax(q, "softmax_columns", "nnnnppdii")
    else:
        attend, softmax = _attend_rows, _native_softmax(q, "softmax_rows", "nnnppdii")
    with np.errstate(all="ignore"):
        y, total = attend(q, k, v, _scale(scale, q), is_causal, o if o.dtype == cd else None,
                          softmax)
    if y is not o:
        np.copyto(o, y, casting="unsafe")
    np.copyto(lse, total.reshape(lse.shape), casting="unsafe")


def _native_softmax(q: np.ndarray, name: str, signature: str):
    """The C softmax kernel `name` for q's (compute) dtype, or None (see native/)."""
    if q.dtype not in (np.float32, np.float64) or q.__class__ is not np.ndarray:
        return None
    return native.function("attention", f"{name}_{native.suffix(q)}", signature)


def _attend_transposed(q, k, v, scale, is_causal, out, softmax=None) -> tuple:
    """(p v, logsumexp) with p = exp(s - max) / sum computed on the transposed scores, by
    the C kernel `softmax` where given."""
    if softmax is not None:
        buf, p = _products_t(q, k)
        width = buf.shape[1] - _PAD
        total = np.empty(width, buf.dtype)
        softmax(k.shape[2], width, buf.shape[1], q.shape[2], native.pointer(buf),
                native.pointer(total), scale, is_causal, native.threads(buf.size))
        return np.matmul(p.swapaxes(-1, -2), v, out=out), total
    buf, p = _scores_t(q, k, scale, is_causal)
    m = np.maximum.reduce(buf, axis=0)
    buf -= m
    np.exp(buf, out=buf)
    total = np.add.reduce(buf, axis=0)
    buf /= total
    y = np.matmul(p.swapaxes(-1, -2), v, out=out)
    np.log(total, out=total)
    total += m
    return y, total[:buf.shape[1] - _PAD]


def _attend_rows(q, k, v, scale, is_causal, out, softmax=None) -> tuple:
    """(p v, logsumexp) on the scores in the products' (B, H, L, S) layout: the
    probabilities' rows are left unnormalised through the product with v, whose (L, E) rows
    are divided instead of the (L, S) ones; or normalised by the C kernel `softmax`."""
    if softmax is not None:
        s = np.matmul(q, _transpose(k))
        n_q, n_k = s.shape[-2:]
        total = np.empty(s.shape[:-1], s.dtype)
        softmax(s.size // n_k if n_k else 0, n_q, n_k, native.pointer(s),
                native.pointer(total), scale, is_causal, native.threads(s.size))
        return np.matmul(s, v, out=out), total
    s = _scores(q, k, scale, is_causal)
    rows = s.reshape(-1, s.shape[-1])
    m = row_max(rows)
    rows -= m
    np.exp(rows, out=rows)
    total = row_sums(rows)
    y = np.matmul(s, v, out=out)
    y /= total.reshape(y.shape[:-1] + (1,))
    np.log(total, out=total)
    total += m
    return y, total


def flash_attention_backward_cpu(grad_out, query, key, value, out, logsumexp, dropout_p,
                                 is_causal, attn_mask=None, scale=None):
    """(dq, dk, dv) with p = exp(s - logsumexp): dv = p^T g, ds = p * (g v^T - rowsum(g *
    out)), dq = ds k * scale, dk = ds^T q * scale."""
    cd = opmath(query.dtype)
    q, k, v, o, g = (compute_array(t, cd) for t in (query, key, value, out, grad_out))
    sc = _scale(scale, q)
    softmax_backward = _native_softmax(q, "softmax_backward_rows", "nnnppppdii")
    with np.errstate(all="ignore"):
        if softmax_backward is not None:
            p = np.matmul(q, _transpose(k))
            ds = np.matmul(g, _transpose(v))
            lse = np.ascontiguousarray(compute_array(logsumexp, cd))
            rowdot = np.ascontiguousarray(np.einsum("...e,...e->...", g, o))
            n_q, n_k = p.shape[-2:]
            softmax_backward(p.size // n_k if n_k else 0, n_q, n_k, native.pointer(p),
                             native.pointer(ds), native.pointer(lse), native.pointer(rowdot),
                             sc, is_causal, native.threads(p.size))
            return (_product(query, ds, k, sc), _product(key, ds.swapaxes(-1, -2), q, sc),
                    _product(value, p.swapaxes(-1, -2), g, None))
        p = _scores(q, k, sc, is_causal)
        p -= compute_array(logsumexp, cd)[..., None]
        np.exp(p, out=p)
        ds = np.matmul(g, _transpose(v))
        ds -= np.einsum("...e,...e->...", g, o)[..., None]
        ds *= p
        return (_product(query, ds, k, sc), _product(key, ds.swapaxes(-1, -2), q, sc),
                _product(value, p.swapaxes(-1, -2), g, None))


def _product(like: Tensor, a: np.ndarray, b: np.ndarray, factor) -> Tensor:
    """a @ b (times factor) as a new tensor with like's shape and dtype, heads-last."""
    t = _empty_heads_last(like._shape, like.dtype)
    dst = t._array()
    r = np.matmul(a, b, out=dst) if dst.dtype == a.dtype else np.matmul(a, b)
    if factor is not None:
        r *= factor
    if r is not dst:
        np.copyto(dst, r, casting="unsafe")
    return t
