"""Writing a source into a view of a copy (diagonal/select/slice/as_strided_scatter) and the
*_copy forms of the view ops.

A scatter's result has input's values and layout (clone's strides) with `src` (cast to
input's dtype) written into the view; the view's geometry comes from the view op's own meta
function, applied to the output. The view's part of the gradient goes to `src`, the rest to
`input` (derivatives in derivatives_misc.py). as_strided_scatter is a composite of clone
and an in-place copy instead: torch's own formula fails its gradcheck, this one follows
the elements. A *_copy op is a composite: the view, then a contiguous copy. The scatters'
kernel is in backends/cpu/view_scatter.py.
"""
from __future__ import annotations

from ...core.shape import wrap_dim
from ...dispatch.dispatcher import define
from ...core.tensor import Tensor, contiguous_format, preserve_format
from . import views
from ..copying.copies import strides_for
from ..registry import composite, into_out, require_tensor, spec, structured
from ...backends.cpu.view_scatter import scatter_kernel


def _check_src(src, target_shape) -> None:
    if tuple(target_shape) != tuple(src._shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target_shape)}")


def _scatter_meta(fname, view_meta, check_args=None):
    def meta(self, src, *args):
        require_tensor(fname, "src", 2, src)
        if check_args is not None:
            check_args(self, *args)
        _check_src(src, view_meta(self, *args)[0])
        return spec(self._shape, self.dtype, strides_for(self, preserve_format))
    return meta


def _check_select(self, dim, index):
    size = self.shape[wrap_dim(dim, self.dim())] if self.dim() else 1
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self.shape)} at dimension {dim}")


def _check_slice(self, dim=0, start=None, end=None, step=1):
    if self.dim() and step <= 0:
        wrap_dim(dim, self.dim())
        raise RuntimeError("slice step must be positive")


diagonal_scatter = structured(
    "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
    _scatter_meta("diagonal_scatter", views._diagonal_meta), inplace=False, promotes=False,
    doc="A copy of input with src written on its diagonal (see Tensor.diagonal).")
diagonal_scatter.impl("CPU")(scatter_kernel(views._diagonal_meta))

select_scatter = structured(
    "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
    _scatter_meta("select_scatter", views._select_meta, _check_select), inplace=False,
    promotes=False, doc="A copy of input with src written at `index` along `dim`.")
select_scatter.impl("CPU")(scatter_kernel(views._select_meta))

slice_scatter = structured(
    "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
    "SymInt step=1) -> Tensor",
    _scatter_meta("slice_scatter", views._slice_meta, _check_slice), inplace=False,
    promotes=False,
    doc="A copy of input with src written into input[..., start:end:step, ...] along `dim`.")
slice_scatter.impl("CPU")(scatter_kernel(views._slice_meta))


def _sliced(t: Tensor, dim, start, end, step) -> Tensor:
    """t[..., start:end:step] along dim (torch's slice)."""
    if t.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, t.dim())
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return t[(slice(None),) * d + (slice(start, end, step),)]


@composite(method=True)
def as_strided_scatter(input, src, size, stride, storage_offset=None, *, out=None):
    """A copy of input with src written into its as_strided(size, stride, offset) view
    (the offset counts from the copy's storage start, as torch). A composite of clone and
    an in-place copy into the view, so that its gradient follows the elements."""
    require_tensor("as_strided_scatter", "src", 2, src)
    result = input.clone()
    target = result.as_strided(size, stride, result.storage_offset() if storage_offset is None
                               else storage_offset)
    _check_src(src, target.shape)
    target.copy_(src)
    return into_out(out, result)


# ---- *_copy: the view, then a contiguous copy -------------------------------------------------

def _copied(view: Tensor) -> Tensor:
    return view.clone(memory_format=contiguous_format)


def _copy_op(name, take_view, doc, method=False):
    def fn(input, *args, out=None, **kwargs):
        require_tensor(name, "input", 1, input)
        return into_out(out, _copied(take_view(input, *args, **kwargs)))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    composite(name, method=method)(fn)
    return fn


alias_copy = _copy_op("alias_copy", lambda t: t, "A contiguous copy of input.")
as_strided_copy = _copy_op(
    "as_strided_copy",
    lambda t, size, stride, storage_offset=None: t.as_strided(size, stride, storage_offset),
    "A contiguous copy of input.as_strided(size, stride, storage_offset).")
diagonal_copy = _copy_op("diagonal_copy",
                         lambda t, offset=0, dim1=0, dim2=1: t.diagonal(offset, dim1, dim2),
                         "A contiguous copy of input.diagonal(offset, dim1, dim2).")
expand_copy = _copy_op("expand_copy", lambda t, size, *, implicit=False: t.expand(size),
                       "A contiguous copy of input.expand(size).")
narrow_copy = _copy_op("narrow_copy", lambda t, dim, start, length: t.narrow(dim, start, length),
                       "A contiguous copy of input.narrow(dim, start, length).", method=True)
permute_copy = _copy_op("permute_copy", lambda t, dims: t.permute(dims),
                        "A contiguous copy of input.permute(dims).")
select_copy = _copy_op("select_copy", lambda t, dim, index: t.select(dim, index),
                       "A contiguous copy of input.select(dim, index).")
slice_copy = _copy_op("slice_copy",
                      lambda t, dim=0, start=None, end=None, step=1:
                      _sliced(t, dim, start, end, step),
                      "A contiguous copy of input[..., start:end:step] along dim.")
squeeze_copy = _copy_op("squeeze_copy",
                        lambda t, dim=None: t.squeeze() if dim is None else t.squeeze(dim),
                        "A contiguous copy of input.squeeze(dim).")
t_copy = _copy_op("t_copy", lambda t: t.t(), "A contiguous copy of input.t().")
transpose_copy = _copy_op("transpose_copy", lambda t, dim0, dim1: t.transpose(dim0, dim1),
                          "A contiguous copy of input.transpose(dim0, dim1).")
unfold_copy = _copy_op("unfold_copy", lambda t, dimension, size, step:
                       t.unfold(dimension, size, step),
                       "A contiguous copy of input.unfold(dimension, size, step).")
unsqueeze_copy = _copy_op("unsqueeze_copy", lambda t, dim: t.unsqueeze(dim),
                          "A contiguous copy of input.unsqueeze(dim).")
view_copy = _copy_op("view_copy", lambda t, size: t.view(size),
                     "A contiguous copy of input.view(size) (or of input.view(dtype)).")


def _copies_op(name, take_views, doc):
    def fn(input, *args, out=None, **kwargs):
        require_tensor(name, "input", 1, input)
        results = [_copied(v) for v in take_views(input, *args, **kwargs)]
        if out is None:
            return tuple(results)
        if len(out) != len(results):
            raise RuntimeError(f"{name}: expected {len(results)} out tensors, got {len(out)}")
        for o, r in zip(out, results):
            into_out(o, r)
        return None
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    composite(name)(fn)
    return fn


unbind_copy = _copies_op("unbind_copy", lambda t, dim=0: t.unbind(dim),
                         "Contiguous copies of input.unbind(dim).")
split_with_sizes_copy = _copies_op(
    "split_with_sizes_copy", lambda t, split_sizes, dim=0: t.split_with_sizes(split_sizes, dim),
    "Contiguous copies of input.split_with_sizes(split_sizes, dim).")
split_copy = _copies_op("split_copy", lambda t, split_size, dim=0: t.split(split_size, dim),
                        "Contiguous copies of input.split(split_size, dim).")


# ---- the gradients of select and slice: the view's gradient written into zeros -------------

def _select_backward(grad_output, input_sizes, dim, index):
    grad_input = grad_output.new_zeros(input_sizes)
    views.select.functional(grad_input, dim, index).copy_(grad_output)
    return grad_input


def _slice_backward(grad_output, input_sizes, dim, start, end, step):
    grad_input = grad_output.new_zeros(input_sizes)
    views.slice_op.functional(grad_input, dim, start, end, step).copy_(grad_output)
    return grad_input


# PyTorch's SelectBackward0 and SliceBackward0 call these ops: a mode (and the compiler's
# capture) sees one op, written in others below the dispatcher's backend keys.
select_backward = define("select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, "
                         "SymInt index) -> Tensor")
select_backward.register("CompositeExplicitAutograd", _select_backward)
slice_backward = define("slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, "
                        "SymInt start, SymInt end, SymInt step) -> Tensor")
slice_backward.register("CompositeExplicitAutograd", _slice_backward)
