"""Batching rules: how each op runs once over a whole vmap batch.

A rule moves the batch dimension of its batched arguments to the front, runs the op (or a
few ops) on the physical tensors with dimension arguments shifted past the batch dimension,
and wraps the result, whose batch dimension it states. The families:

- pointwise ops (tag 'pointwise', `where`, `masked_fill`): batch first, logical dimensions
  padded with 1s so that broadcasting lines up from the right;
- ops with dimension arguments (reductions, scans, softmax, views like select/transpose):
  dims shifted by one, `None`/`[]` ("every dimension") spelled out;
- ops that already treat leading dimensions as a batch (tril, linalg, layer_norm, the
  `*_like` factories): the physical tensor as is;
- shape ops (view, expand, permute), matmul and its relatives, cat/stack, indexing,
  convolution (the batch folded into N, or into groups for batched weights), embedding,
  nll_loss and mse_loss (per-example reductions), and the random ops' randomness modes.
"""
from __future__ import annotations

from ..core import dtype as dt
from ..core.promotion import common_dtype
from ..core.shape import broadcast_shapes
from ..core.tensor import Tensor
from ..dispatch.dispatcher import find, overloads_of
from ..ops.creation.factories import ones
from ..ops.creation.ranges import arange
from ..ops.shape.joining import cat, stack
from ._levels import vmap_level
from .batched_tensor import BatchedTensor, wrap
from .batching import SAME_RULES, check_inplace_self, loop_fallback, rule, tag_rule

# ---- helpers ----------------------------------------------------------------------------------


def batch_size(level: int) -> int:
    return vmap_level(level).batch_size


def is_batched(x, level: int) -> bool:
    return x.__class__ is BatchedTensor and x._level == level


def front(x, level: int):
    """(x's physical value with the batch dimension first, whether x is batched)."""
    if x.__class__ is BatchedTensor and x._level == level:
        v = x._value
        return (v if x._bdim == 0 else v.movedim(x._bdim, 0)), True
    return x, False


def pad(v: Tensor, logical_rank: int) -> Tensor:
    """A batch-first value with 1s inserted after the batch dimension up to `logical_rank`."""
    missing = logical_rank - (v.dim() - 1)
    if missing > 0:
        v = v.view((v.shape[0],) + (1,) * missing + tuple(v.shape[1:]))
    return v


def materialize(v: Tensor, batched: bool, size: int) -> Tensor:
    """A batch-first value: an unbatched one expanded along a new first dimension."""
    return v if batched else v.unsqueeze(0).expand(size, *v.shape)


def wrap_all(result, level: int, bdim: int = 0):
    if isinstance(result, Tensor):
        return wrap(result, bdim, level)
    if isinstance(result, (tuple, list)):
        return _same_kind(result, [wrap_all(r, level, bdim) for r in result])
    return result


def _same_kind(sequence, items):
    """`items` in a sequence of `sequence`'s type (list, tuple, namedtuple, return_types)."""
    if hasattr(sequence, "_make"):
        return sequence._make(items)
    return type(sequence)(items)


def wrap_dim(d: int, rank: int) -> int:
    r = max(rank, 1)
    if not -r <= d < r:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-r}, {r - 1}], "
                         f"but got {d})")
    return d % r


def others_unbatched(op, level, args, skip=(0,)) -> bool:
    for i in op.tensor_positions:
        if i in skip:
            continue
        a = args[i]
        items = a if isinstance(a, (list, tuple)) else (a,)
        if any(is_batched(t, level) for t in items):
            return False
    return True


# ---- pointwise ------------------------------------------------------------------------------

@tag_rule("pointwise")
@rule("aten::where.self", "aten::masked_fill.Scalar", "aten::masked_fill_.Scalar",
      "aten::masked_fill.Tensor", "aten::masked_fill_.Tensor", "aten::fill_.Tensor",
      "aten::lerp.Scalar", "aten::lerp.Tensor")
def pointwise(op, level, args):
    """Batch first, then pad every batched argument to the widest logical rank."""
    new = list(args)
    tensors = [i for i in op.tensor_positions if isinstance(args[i], Tensor)]
    rank = max(args[i].dim() for i in tensors)
    for i in tensors:
        v, batched = front(args[i], level)
        new[i] = pad(v, rank) if batched else v
    _keep_scalar_promotion(op, level, args, new, tensors)
    mutated = op.info.get("mutated")
    if mutated:
        check_inplace_self(op, level, args[mutated[0]])
        op(*new)
        return args[mutated[0]]
    return wrap_all(op(*new), level)


def _keep_scalar_promotion(op, level, args, new, tensors) -> None:
    """A 0-dim example is a dimensioned physical tensor, which would outrank the other
    operands in type promotion: give it the dtype the logical operands promote to."""
    scalars = [i for i in tensors if args[i].dim() == 0 and is_batched(args[i], level)]
    if not scalars or len({args[i].dtype for i in tensors}) == 1:
        return
    operands = [args[i] for i in op.tensor_positions if args[i] is not None]
    want = common_dtype(*operands)
    if common_dtype(*(new[i] for i in op.tensor_positions if new[i] is not None)) is not want:
        for i in scalars:
            new[i] = new[i].to(want)


# ---- ops that treat leading dimensions as a batch already -----------------------------------

FRONT_OPS = (
    "aten::tril", "aten::triu", "aten::tril_", "aten::triu_", "aten::clone", "aten::_to_copy",
    "aten::detach", "aten::alias", "aten::lift_fresh", "aten::zeros_like", "aten::ones_like",
    "aten::empty_like", "aten::full_like", "aten::rand_like", "aten::rand_like.generator",
    "aten::randn_like", "aten::randn_like.generator", "aten::randint_like",
    "aten::randint_like.generator", "aten::randint_like.low_dtype",
    "aten::randint_like.low_generator_dtype", "aten::native_layer_norm", "aten::view.dtype",
    "aten::fill_.Scalar", "aten::zero_", "aten::uniform_", "aten::normal_",
    "aten::bernoulli_.float", "aten::bernoulli", "aten::random_.from", "aten::random_.to",
    "aten::random_", "aten::exponential_", "aten::geometric_", "aten::log_normal_",
    "aten::cauchy_", "aten::poisson", "aten::native_dropout", "aten::linalg_inv_ex",
    "aten::linalg_cholesky_ex", "aten::linalg_det", "aten::_linalg_det", "aten::linalg_eigh",
    "aten::_linalg_eigh", "aten::linalg_qr", "aten::_linalg_svd", "aten::linalg_svd",
    "aten::linalg_matrix_exp", "aten::matrix_exp", "aten::inverse", "aten::det",
    "aten::logdet", "aten::linalg_slogdet", "aten::_linalg_slogdet", "aten::cholesky",
    "aten::linalg_pinv", "aten::pinverse")


@rule(*FRONT_OPS)
def batch_in_front(op, level, args):
    """The op on the batch-first physical tensor, other tensor arguments unbatched."""
    if not (is_batched(args[0], level) and others_unbatched(op, level, args)):
        return loop_fallback(op, level, args)
    new = list(args)
    new[0] = front(args[0], level)[0]
    if op.info.get("mutated"):
        op(*new)
        return args[0]
    return wrap_all(op(*new), level)


# ---- ops with dimension arguments -----------------------------------------------------------

DIM_NAMES = frozenset(("dim", "dims", "dim0", "dim1", "dim2", "start_dim", "end_dim",
                       "dimension", "source", "destination"))
DIM_OPS = (
    "aten::_softmax", "aten::_log_softmax", "aten::transpose.int", "aten::select.int",
    "aten::slice.Tensor", "aten::narrow", "aten::squeeze.dims", "aten::squeeze.dim",
    "aten::unsqueeze",
    "aten::flip", "aten::roll", "aten::split.Tensor", "aten::split_with_sizes",
    "aten::unbind.int", "aten::diagonal", "aten::unfold", "aten::sort", "aten::sort.stable",
    "aten::topk", "aten::kthvalue", "aten::index_select", "aten::glu", "aten::cummax",
    "aten::cummin", "aten::logcumsumexp", "aten::cumsum", "aten::cumprod", "aten::movedim.int",
    "aten::diag_embed", "aten::repeat_interleave.self_int", "aten::chunk",
    "aten::tensor_split.sections",
    "aten::renorm", "aten::_log_softmax_backward_data", "aten::_softmax_backward_data")


def _dims_of(op):
    return [(i, a) for i, a in enumerate(op.schema.arguments) if a.name in DIM_NAMES]


@tag_rule("reduction")
@tag_rule("scan")
@rule(*DIM_OPS)
def dim_shift(op, level, args):
    """Dimension arguments shifted past the batch dimension; for reductions, `None` or `[]`
    means every logical dimension."""
    dims = _dims_of(op)
    if not dims and "reduction" in op.tags:
        return full_reduction(op, level, args)
    if not (is_batched(args[0], level) and others_unbatched(op, level, args)):
        return loop_fallback(op, level, args)
    v = front(args[0], level)[0]
    rank = args[0].dim()
    reduction = "reduction" in op.tags or "scan" in op.tags
    scalar = rank == 0 and reduction
    if scalar:                         # reduce a 0-dim example along a dimension of size 1
        v, rank = v.unsqueeze(1), 1
    norm_rank = rank + 1 if op.name in ("aten::unsqueeze", "aten::diag_embed") else rank
    new = list(args)
    new[0] = v
    for i, a in dims:
        value = args[i]
        if value is None or (isinstance(value, (list, tuple)) and not value):
            if reduction and op.name not in ("aten::argmax", "aten::argmin"):
                new[i] = list(range(1, rank + 1))
            elif op.name in ("aten::argmax", "aten::argmin") and value is None:
                new[0] = v.reshape(v.shape[0], -1)
                new[i] = 1
            elif op.name == "aten::squeeze.dims" and value is None:
                new[i] = [d + 1 for d in range(rank) if args[0].shape[d] == 1]
            continue
        if isinstance(value, (list, tuple)):
            new[i] = [wrap_dim(d, norm_rank) + 1 for d in value]
        else:
            new[i] = wrap_dim(value, norm_rank) + 1
    result = op(*new)
    if scalar:
        result = _squeeze_scalar(result)
    return wrap_all(result, level)


@rule("aten::squeeze")
def squeeze_all(op, level, args):
    """squeeze() of every size-1 logical dimension: squeeze.dims past the batch dimension."""
    if not is_batched(args[0], level):
        return loop_fallback(op, level, args)
    v = front(args[0], level)[0]
    dims = [d + 1 for d in range(args[0].dim()) if args[0].shape[d] == 1]
    return wrap_all(v.squeeze(tuple(dims)) if dims else v.view(v.shape), level)


def _squeeze_scalar(result):
    if isinstance(result, Tensor):
        return result.reshape(result.shape[:1])
    return _same_kind(result, [_squeeze_scalar(r) for r in result])


def full_reduction(op, level, args):
    """A reduction over every element (sum(), max()): its overload with a `dim`, over the
    flattened example."""
    if not (is_batched(args[0], level) and others_unbatched(op, level, args)):
        return loop_fallback(op, level, args)
    v = front(args[0], level)[0]
    flat = v.reshape(v.shape[0], -1)
    given = {a.name: value for a, value in zip(op.schema.arguments, args)}
    packet = overloads_of(f"{op.schema.namespace}::{op.schema.name}")
    sibling = next((o for o in packet.values() if any(a.name == "dim" for a in
                                                      o.schema.arguments)
                    and not o.info.get("out")), None)
    if sibling is None:
        return loop_fallback(op, level, args)
    call = []
    for a in sibling.schema.arguments:
        if a.name == "self":
            call.append(flat)
        elif a.name == "dim":
            call.append([1] if a.type.startswith("int[") else 1)
        elif a.name == "keepdim":
            call.append(False)
        else:
            call.append(given.get(a.name, a.default))
    result = sibling(*call)
    if not isinstance(result, Tensor) and len(op.schema.returns) == 1:
        result = result[0]
    return wrap_all(result, level)


# ---- shape ops ------------------------------------------------------------------------------

@rule("aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias")
def view(op, level, args):
    v = front(args[0], level)[0]
    size = (v.shape[0],) + tuple(args[1])
    try:
        return wrap(v.view(size), 0, level)
    except RuntimeError:
        if op.name == "aten::view":
            raise
        return wrap(v.reshape(size), 0, level)


@rule("aten::expand")
def expand(op, level, args):
    v = front(args[0], level)[0]
    size = tuple(args[1])
    v = pad(v, len(size))
    return wrap(v.expand((v.shape[0],) + size), 0, level)


@rule("aten::permute")
def permute(op, level, args):
    v = front(args[0], level)[0]
    rank = args[0].dim()
    return wrap(v.permute([0] + [wrap_dim(d, rank) + 1 for d in args[1]]), 0, level)


@rule("aten::t")
def transpose_2d(op, level, args):
    v = front(args[0], level)[0]
    return wrap(v.transpose(1, 2) if args[0].dim() == 2 else v, 0, level)


@rule("aten::copy_")
def copy_(op, level, args):
    self, src = args[0], args[1]
    check_inplace_self(op, level, self)
    s = front(self, level)[0]
    v, batched = front(src, level)
    s.copy_(pad(v, self.dim()) if batched else v, args[2])
    return self


# ---- joining ------------------------------------------------------------------------------

def _batch_first_list(tensors, level):
    size = batch_size(level)
    return [materialize(*front(t, level), size) for t in tensors]


@rule("aten::cat")
def cat_rule(op, level, args):
    tensors, dim = args
    ranks = [t.dim() for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    rank = ranks[0] if ranks else 1
    values = _batch_first_list(tensors, level)
    values = [v for v, t in zip(values, tensors) if not (t.dim() == 1 and t.shape[0] == 0)]
    return wrap(cat(values, wrap_dim(dim, rank) + 1), 0, level)


@rule("aten::stack")
def stack_rule(op, level, args):
    tensors, dim = args
    rank = tensors[0].dim() + 1
    return wrap(stack(_batch_first_list(tensors, level), wrap_dim(dim, rank) + 1), 0, level)


# ---- matmul and relatives -----------------------------------------------------------------

def matmul_values(a, a_batched, b, b_batched, ra: int, rb: int):
    """The physical matmul of batch-first (or unbatched) values of logical ranks ra, rb."""
    if ra == 1 and rb == 1:
        return (a * b).sum(-1)
    a_vec, b_vec = ra == 1, rb == 1
    if a_vec:
        a, ra = a.unsqueeze(-2), 2
    if b_vec:
        b, rb = b.unsqueeze(-1), 2
    rank = max(ra, rb)
    if a_batched:
        a = pad(a, rank)
    if b_batched:
        b = pad(b, rank)
    out = a.matmul(b)
    if a_vec:
        out = out.squeeze(-2)
    if b_vec:
        out = out.squeeze(-1)
    return out


@rule("aten::mm", "aten::bmm", "aten::matmul", "aten::dot", "aten::mv")
def matmul(op, level, args):
    a, b = args[0], args[1]
    av, ab = front(a, level)
    bv, bb = front(b, level)
    return wrap(matmul_values(av, ab, bv, bb, a.dim(), b.dim()), 0, level)


@rule("aten::addmm", "aten::baddbmm")
def addmm(op, level, args):
    self, m1, m2, beta, alpha = args
    rank = m1.dim()
    av, ab = front(m1, level)
    bv, bb = front(m2, level)
    out = matmul_values(av, ab, bv, bb, rank, rank)
    if not (ab or bb):
        out = materialize(out, False, batch_size(level))
    if alpha != 1:
        out = out * alpha
    sv, sb = front(self, level)
    sv = pad(sv, rank) if sb else sv
    return wrap(out + (sv if beta == 1 else sv * beta), 0, level)


@rule("aten::trace")
def trace(op, level, args):
    v = front(args[0], level)[0]
    return wrap(v.diagonal(0, 1, 2).sum(-1), 0, level)


@rule("aten::linalg_cross")
def linalg_cross(op, level, args):
    a, b, dim = args
    rank = max(a.dim(), b.dim())
    av, ab = front(a, level)
    bv, bb = front(b, level)
    av, bv = (pad(av, rank) if ab else av), (pad(bv, rank) if bb else bv)
    size = batch_size(level)
    av, bv = materialize(av, ab, size), materialize(bv, bb, size)
    return wrap(op(av, bv, wrap_dim(dim, rank) + 1), 0, level)


@rule("aten::_cdist_forward")
def cdist(op, level, args):
    """cdist broadcasts its leading dimensions: the batch is one more."""
    x1, x2 = args[0], args[1]
    rank = max(x1.dim(), x2.dim())
    values = []
    for t in (x1, x2):
        v, batched = front(t, level)
        values.append(pad(v, rank) if batched else v)
    return wrap(op(*values, *args[2:]), 0, level)


# ---- indexing -----------------------------------------------------------------------------

@rule("aten::index.Tensor")
def index(op, level, args):
    self, indices = args
    v, batched = front(self, level)
    v = materialize(v, batched, batch_size(level))
    present = [i for i in indices if i is not None]
    if not any(is_batched(i, level) for i in present):
        return wrap(v[(slice(None),) + tuple(slice(None) if i is None else i
                                             for i in indices)], 0, level)
    if any(i is None for i in indices):
        return loop_fallback(op, level, args)
    fronted = [front(i, level) for i in indices]
    rank = max(i.dim() for i in indices)
    values = [pad(iv, rank) if ib else iv for iv, ib in fronted]
    batch = arange(v.shape[0], device=v.device).view((v.shape[0],) + (1,) * rank)
    return wrap(find("aten::index.Tensor")(v, [batch] + values), 0, level)


@rule("aten::gather")
def gather(op, level, args):
    self, dim, index_, sparse = args
    size = batch_size(level)
    v = materialize(*front(self, level), size)
    i = materialize(*front(index_, level), size)
    return wrap(op(v, wrap_dim(dim, self.dim()) + 1, i, sparse), 0, level)


@rule("aten::take")
def take(op, level, args):
    """Each example's flat index into its own flattened values: gather along the flattened
    dimension, negative indices counted from the end as take does."""
    self, index_ = args
    size = batch_size(level)
    v = materialize(*front(self, level), size).reshape(size, -1)
    i = materialize(*front(index_, level), size)
    n = v.shape[1]
    flat = i.reshape(size, -1)
    if n == 0 and flat.shape[1]:
        return loop_fallback(op, level, args)        # take's own error text
    flat = flat + (flat < 0) * n
    return wrap(v.gather(1, flat).view(i.shape), 0, level)


def _along_dim(op, level, args, batch_index: bool):
    """self (and a src/source tensor) batch first, dim past the batch dimension; the index
    too when each example has its own."""
    self, dim, index_ = args[0], args[1], args[2]
    size = batch_size(level)
    mutated = op.info.get("mutated")
    if mutated:
        check_inplace_self(op, level, self, f"{op.schema.namespace}::{op.schema.name}")
    new = list(args)
    new[0] = materialize(*front(self, level), size)
    new[1] = wrap_dim(dim, self.dim()) + 1
    if batch_index:
        new[2] = materialize(*front(index_, level), size)
    if len(args) > 3 and isinstance(args[3], Tensor):
        new[3] = materialize(*front(args[3], level), size)
    result = op(*new)
    return self if mutated else wrap(result, 0, level)


@rule("aten::scatter.src", "aten::scatter.value", "aten::scatter.reduce",
      "aten::scatter.value_reduce", "aten::scatter_add", "aten::scatter_reduce.two",
      "aten::scatter_.src", "aten::scatter_.value", "aten::scatter_add_",
      "aten::scatter_reduce_.two")
def scatter(op, level, args):
    if args[0].dim() == 0:         # a 0-dim example: scatter along a dimension of size 1
        return loop_fallback(op, level, args)
    return _along_dim(op, level, args, batch_index=True)


@rule("aten::index_add", "aten::index_add_", "aten::index_copy", "aten::index_copy_",
      "aten::index_fill.int_Scalar", "aten::index_fill_.int_Scalar")
def index_add(op, level, args):
    """A 1-D index shared by every example."""
    if is_batched(args[2], level) or args[0].dim() == 0:
        return loop_fallback(op, level, args)
    return _along_dim(op, level, args, batch_index=False)


@rule("aten::index_put", "aten::index_put_")
def index_put(op, level, args):
    """x[indices] = values for every example: the batch as one more (leading) index."""
    self, indices, values, accumulate = args
    size = batch_size(level)
    mutated = op.info.get("mutated")
    if mutated:
        check_inplace_self(op, level, self, f"{op.schema.namespace}::{op.schema.name}")
    present = [i for i in indices if i is not None]
    any_batched = any(is_batched(i, level) for i in present)
    positions = [k for k, i in enumerate(indices) if i is not None]
    if (any_batched and len(present) < len(indices)) \
            or positions != list(range(positions[0], positions[-1] + 1)) \
            or any(i.dtype in (dt.bool, dt.uint8) for i in present):
        return loop_fallback(op, level, args)    # masks, or index dims that would move
    v = materialize(*front(self, level), size)
    index_shape = broadcast_shapes(*(tuple(i.shape) for i in present))
    out_rank = len(index_shape) + self.dim() - len(indices)
    if any_batched:
        fronted = [front(i, level) for i in indices]
        rank = max(i.dim() for i in indices)
        batch = arange(size, device=v.device).view((size,) + (1,) * rank)
        new_indices = [batch] + [pad(iv, rank) if ib else iv for iv, ib in fronted]
    else:
        new_indices = [None] + list(indices)
    vv, vb = front(values, level)
    if vb:
        vv = pad(vv, out_rank)
    result = op(v, new_indices, vv, accumulate)
    return self if mutated else wrap(result, 0, level)


@rule("aten::one_hot")
def one_hot(op, level, args):
    if args[1] == -1:                 # the class count would be read from the whole batch
        return loop_fallback(op, level, args)
    return wrap(op(front(args[0], level)[0], args[1]), 0, level)


@rule("aten::searchsorted.Tensor")
def searchsorted(op, level, args):
    sequence, values = args[0], args[1]
    size = batch_size(level)
    sv, sb = front(sequence, level)
    vv, vb = front(values, level)
    if sequence.dim() == 1 and not sb:
        return wrap(op(sv, vv, *args[2:]), 0, level)
    return wrap(op(materialize(sv, sb, size), materialize(vv, vb, size), *args[2:]), 0, level)


@rule("aten::native_group_norm")
def group_norm(op, level, args):
    """The batch folded into N; mean and rstd unfolded back."""
    x, weight, bias, n, c, hw, group, eps = args
    if not (is_batched(x, level) and others_unbatched(op, level, args)):
        return loop_fallback(op, level, args)
    v = front(x, level)[0]
    size = v.shape[0]
    out, mean, rstd = op(v.reshape((-1,) + tuple(v.shape[2:])), weight, bias, size * n, c, hw,
                         group, eps)
    return (wrap(out.view(v.shape), 0, level), wrap(mean.view(size, n, group), 0, level),
            wrap(rstd.view(size, n, group), 0, level))


@rule("aten::embedding")
def embedding(op, level, args):
    weight, indices = args[0], args[1]
    if is_batched(weight, level):
        return loop_fallback(op, level, args)
    return wrap(op(weight, front(indices, level)[0], *args[2:]), 0, level)


# ---- convolution ------------------------------------------------------------------------

@rule("aten::convolution")
def convolution(op, level, args):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args
    xv, xb = front(x, level)
    wv, wb = front(w, level)
    bv, bb = front(bias, level) if bias is not None else (None, False)
    if transposed or (bb and not wb):
        return loop_fallback(op, level, args)
    size = batch_size(level)
    rest = (stride, padding, dilation, transposed, output_padding)
    if not wb:               # fold the batch into N
        out = op(xv.reshape((-1,) + tuple(xv.shape[2:])), wv, bv, *rest, groups)
        return wrap(out.view((size, -1) + tuple(out.shape[1:])), 0, level)
    # batched weights: each example's filters are a group of their own
    out_channels = wv.shape[1]
    wv = wv.reshape((-1,) + tuple(wv.shape[2:]))
    if bv is not None:
        bv = materialize(bv, bb, size).reshape(-1)
    if xb:                   # [B, N, C, ...] -> [N, B*C, ...]
        xv = xv.movedim(0, 1).reshape((xv.shape[1], -1) + tuple(xv.shape[3:]))
    else:
        xv = xv.repeat((1, size) + (1,) * (xv.dim() - 2))
    out = op(xv, wv, bv, *rest, groups * size)
    out = out.view((out.shape[0], size, out_channels) + tuple(out.shape[2:]))
    return wrap(out, 1, level)


# ---- pooling and padding: the batch folded into N -----------------------------------------

_SPATIAL = {"aten::max_pool2d_with_indices": 2, "aten::avg_pool2d": 2,
            "aten::upsample_nearest1d": 1, "aten::upsample_nearest2d": 2,
            "aten::upsample_nearest3d": 3, "aten::upsample_linear1d": 1,
            "aten::upsample_bilinear2d": 2, "aten::upsample_bicubic2d": 2,
            "aten::upsample_trilinear3d": 3, "aten::_upsample_nearest_exact1d": 1,
            "aten::_upsample_nearest_exact2d": 2, "aten::_upsample_nearest_exact3d": 3,
            "aten::max_pool3d_with_indices": 3, "aten::avg_pool3d": 3,
            "aten::_adaptive_avg_pool2d": 2, "aten::adaptive_max_pool2d": 2,
            "aten::_adaptive_avg_pool3d": 3, "aten::reflection_pad2d": 2,
            "aten::replication_pad2d": 2, "aten::pixel_shuffle": 2}


@rule(*_SPATIAL)
def fold_into_n(op, level, args):
    """Ops over (N, C, *spatial) or (C, *spatial): an unbatched-N example gets the batch as
    its N; a batched N is merged with it."""
    if not (is_batched(args[0], level) and others_unbatched(op, level, args)):
        return loop_fallback(op, level, args)
    v = front(args[0], level)[0]
    if args[0].dim() == _SPATIAL[op.name] + 1:
        return wrap_all(op(v, *args[1:]), level)
    size = v.shape[0]
    result = op(v.reshape((-1,) + tuple(v.shape[2:])), *args[1:])

    def unfold(r):
        return r.view((size, -1) + tuple(r.shape[1:]))
    return wrap_all(unfold(result) if isinstance(result, Tensor) else
                    _same_kind(result, [unfold(r) for r in result]), level)


@rule("aten::constant_pad_nd")
def constant_pad(op, level, args):
    if len(args[1]) > 2 * args[0].dim():
        return loop_fallback(op, level, args)
    return batch_in_front(op, level, args)


@rule("aten::repeat")
def repeat(op, level, args):
    v = pad(front(args[0], level)[0], len(args[1]))
    return wrap(v.repeat((1,) + tuple(args[1])), 0, level)


@rule("aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::new_empty")
def new_factory(op, level, args):
    """A new tensor of the given size: the same for every example, so not batched."""
    return op(front(args[0], level)[0], *args[1:])


@rule("aten::outer")
def outer(op, level, args):
    a, ab = front(args[0], level)
    b, bb = front(args[1], level)
    return wrap(a.unsqueeze(-1) * (b.unsqueeze(-2) if bb else b), 0, level)


@rule("aten::einsum")
def einsum(op, level, args):
    """The batch as one more subscript, in front of every batched operand and the output."""
    equation, tensors, path = args
    if "->" not in equation:
        return loop_fallback(op, level, args)
    inputs, output = equation.replace(" ", "").split("->")
    label = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"
                 if c not in equation)
    terms, values = [], []
    for term, t in zip(inputs.split(","), tensors):
        v, batched = front(t, level)
        terms.append(label + term if batched else term)
        values.append(v)
    return wrap(op(f"{','.join(terms)}->{label}{output}", values, path), 0, level)


# ---- losses -------------------------------------------------------------------------------

@rule("aten::nll_loss_forward")
def nll_loss_forward(op, level, args):
    self, target, weight, reduction, ignore_index = args
    if weight is not None and is_batched(weight, level):
        return loop_fallback(op, level, args)
    size = batch_size(level)
    x = materialize(*front(self, level), size)
    t = materialize(*front(target, level), size)
    x2 = x.reshape(-1, x.shape[-1])
    t1 = t.reshape(-1)
    losses, _ = op(x2, t1, weight, 0, ignore_index)
    losses = losses.view(size, -1)
    picked = (weight.index_select(0, t1.clamp(0, x.shape[-1] - 1)) if weight is not None
              else ones(t1.shape, dtype=x.dtype, device=x.device))
    total = (picked * (t1 != ignore_index)).view(size, -1).sum(1)
    if reduction == 0:
        out = losses.view(t.shape)
    elif reduction == 2:
        out = losses.sum(1)
    else:
        out = losses.sum(1) / total
    return wrap(out, 0, level), wrap(total, 0, level)


@rule("aten::mse_loss")
def mse_loss(op, level, args):
    self, target, reduction = args
    rank = max(self.dim(), target.dim())
    sv, sb = front(self, level)
    tv, tb = front(target, level)
    size = batch_size(level)
    sv = materialize(pad(sv, rank) if sb else sv, sb, size)
    tv = materialize(pad(tv, rank) if tb else tv, tb, size)
    losses = op(sv, tv, 0)
    if reduction == 0:
        return wrap(losses, 0, level)
    flat = losses.reshape(size, -1)
    return wrap(flat.sum(1) if reduction == 2 else flat.mean(1), 0, level)


# ---- randomness='same': one draw for every example ----------------------------------------

def _one_example(x, level):
    return x._value.select(x._bdim, 0) if is_batched(x, level) else x


def _same_like(op, level, args):
    return op(_one_example(args[0], level), *args[1:])


def _same_inplace(op, level, args):
    self = args[0]
    check_inplace_self(op, level, self)
    draw = op(_one_example(self, level).clone(), *args[1:])
    front(self, level)[0].copy_(draw)
    return self


def _same_bernoulli(op, level, args):
    p, generator = args
    draw = find("aten::rand_like")(_one_example(p, level), dtype=p.dtype)
    return (draw < p).to(p.dtype)


def _same_dropout(op, level, args):
    x, p, train = args
    scaled, mask = op(ones(x.shape, dtype=x.dtype, device=x.device), p, train)
    return x * scaled, mask


for _name in ("aten::rand_like", "aten::rand_like.generator", "aten::randn_like",
              "aten::randn_like.generator", "aten::randint_like", "aten::randint_like.generator",
              "aten::randint_like.low_dtype", "aten::randint_like.low_generator_dtype"):
    SAME_RULES[_name] = _same_like
for _name in ("aten::uniform_", "aten::normal_", "aten::bernoulli_.float", "aten::random_.from",
              "aten::random_.to", "aten::random_", "aten::exponential_", "aten::geometric_",
              "aten::log_normal_", "aten::cauchy_"):
    SAME_RULES[_name] = _same_inplace
SAME_RULES["aten::bernoulli"] = _same_bernoulli
SAME_RULES["aten::native_dropout"] = _same_dropout

