"""A crash explained by its cause, from what the Watch saw when it happened: the op that
failed and its tensors, the module running, the backward calls before, the in-place
writes."""
from __future__ import annotations

import re

from glasstorch.core.tensor import Tensor

from .frames import is_user_file, traceback_site
from .graphs import made_at
from .report import Finding


def _tensors(failed) -> str:
    out = []
    for shape, dtype, device, pname in failed.tensors:
        who = f"parameter {pname}" if pname else "a tensor"
        out.append(f"{who} {list(shape)} {dtype} on {device}")
    return "; ".join(out)


def _running(failed, watch):
    """The innermost module running when the op failed, and its label."""
    if not failed or not failed.modules:
        return None, ""
    m = failed.modules[-1]
    kind = type(m).__name__
    name = watch.module_names().get(id(m), kind)
    return m, kind if name == kind else f"{kind} `{name}`"


def _shape(exc, failed, watch, site):
    m = re.search(r"shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)", str(exc))
    if not m:
        return None
    rows, got, want, out = map(int, m.groups())
    module, name = _running(failed, watch)
    if module is not None and type(module).__name__ == "Linear":
        return Finding("shape mismatch in a Linear layer",
                       f"{name} (in_features={module.in_features}, "
                       f"out_features={module.out_features}) received inputs with {got} "
                       f"features ({rows} rows)", site,
                       f"the tensor reaching it has {got} features in its last "
                       f"dimension, but the layer was built for {module.in_features}",
                       f"build it as nn.Linear({got}, {module.out_features}), or fix the "
                       "layer before it (a flatten after convolutions: recompute the "
                       "channels x height x width it produces)")
    return Finding("shape mismatch in a matrix product",
                   f"a ({rows} x {got}) matrix times a ({want} x {out}) matrix", site,
                   f"the inner sizes must agree: {got} != {want}",
                   "print the shapes before the product and transpose or reshape the "
                   "operand that is wrong")


def _layer_inputs(exc, watch, attr):
    """"Linear `fc`'s parameters are on meta; its input [4, 3] is on cpu", from the module
    running when `exc` came out of it; attr is "device" or "dtype"."""
    crash = watch.obs.crash_modules
    if crash is None or crash[0] is not exc or not crash[1]:
        return None
    module, args = crash[1][-1]

    def show(value):
        return str(value).replace("torch.", "")
    own = sorted({show(getattr(p, attr)) for p in module.parameters(recurse=False)})
    ins = [(list(a.shape), show(getattr(a, attr))) for a in args if isinstance(a, Tensor)]
    if not own or not ins:
        return None
    kind = type(module).__name__
    name = watch.module_names().get(id(module), kind)
    label = kind if name == kind else f"{kind} `{name}`"
    prep = "on" if attr == "device" else "in"
    inputs = "; ".join(f"its input {shape} is {prep} {v}" for shape, v in ins)
    found = _origin(exc, crash[1][0][1])
    return f"{label}'s parameters are {prep} {', '.join(own)}; {inputs}{found}"


def _origin(exc, args) -> str:
    """'; `X` was made at train.py:9' for the tensor given to the outermost module."""
    tensor = next((a for a in args if isinstance(a, Tensor)), None)
    found = made_at(exc.__traceback__, tensor) if tensor is not None else None
    if found is None or found[1] is None:
        return ""
    name, site = found
    return f"; `{name}` was made at {site}: {site.source}"


def _device(exc, failed, watch, site):
    if "same device" not in str(exc):
        return None
    detail = _layer_inputs(exc, watch, "device")
    if detail is None:
        detail = "one op got tensors on different devices: " + (
            _tensors(failed) if failed else str(exc).split(" (when")[0])
    return Finding("device mismatch", detail,
                   site, "the model's parameters and the batch (or a tensor created inside "
                   "forward) live on different devices",
                   "move the batch where the model is after loading it (x, y = x.to(device), "
                   "y.to(device)), and create tensors inside forward with device=x.device")


def _dtype(exc, failed, watch, site):
    text = str(exc)
    if "expected target dtype" in text or ("target" in text.lower() and "Long" in text):
        return Finding("dtype mismatch in the loss's target", text.split(".")[0], site,
                       "cross-entropy and NLL losses take class indices as int64 (Long) "
                       "targets; float targets must be class probabilities of the input's "
                       "shape", "pass class indices: target.long() (or "
                       "torch.tensor(labels, dtype=torch.long))")
    if "dtype" not in text and "scalar type" not in text or "indices" in text:
        return None
    dtypes = sorted({str(d) for _, d, _, _ in failed.tensors}) if failed else []
    origin = ""
    if "glasstorch.float64" in dtypes or "torch.float64" in dtypes:
        origin = ("the float64 tensor most likely comes from NumPy (float64 by default): "
                  "torch.from_numpy and torch.tensor(array) keep the array's dtype, while "
                  "parameters are float32")
    elif any("int" in d for d in dtypes):
        origin = ("the integer tensor comes from integer data (labels, pixel values "
                  "or torch.tensor of Python ints), while parameters are float32")
    else:
        origin = "the op's tensors were made with different dtypes"
    detail = _layer_inputs(exc, watch, "dtype") or (
        f"{failed.op if failed else 'an op'} got " + (_tensors(failed) if failed else text))
    return Finding("dtype mismatch", detail,
                   site, origin, "convert the input where it is made: x.float() (or "
                   "torch.tensor(array, dtype=torch.float32)); or the model: model.double()")


def _freed(exc, failed, watch, site):
    if "backward through the graph a second time" not in str(exc):
        return None
    calls = watch.obs.backwards
    current = calls[-1] if calls else None
    earlier = [c for c in calls[:-1] if not c.retain_graph]
    if current is not None and earlier and earlier[-1].site == current.site:
        return Finding("backward through a graph already freed",
                       f"this backward (call {len(calls)}) reaches the graph of an earlier "
                       f"iteration, which the backward at {earlier[-1].site} already freed",
                       current.site, "a tensor carried from one iteration to the next (an "
                       "RNN hidden state, a running total of losses) still points into the "
                       "previous iteration's graph",
                       "detach what is carried between iterations (h = h.detach()), or "
                       "accumulate numbers (total += loss.item()); retain_graph=True would "
                       "hide this and make every step slower")
    first = earlier[-1].site if earlier else None
    return Finding("backward through a graph already freed",
                   f"the first backward through this graph ran at {first}; this second one "
                   "needs the intermediate values it freed", current.site if current else site,
                   "backward() frees the graph's saved tensors unless retain_graph=True, so "
                   "a second backward through the same graph fails",
                   "add the losses and call backward once ((loss1 + loss2).backward()), or "
                   "pass retain_graph=True to the first backward if you really need two")


def _inplace(exc, failed, watch, site):
    text = str(exc)
    if "modified by an inplace operation" not in text:
        return None
    creator = re.search(r"output \d+ of (\w+)", text)
    shape = re.search(r"\[\w+\.\w+ \[([\d, ]*)\]\]", text)
    want = tuple(int(s) for s in shape.group(1).split(",") if s.strip()) if shape else None
    name = creator.group(1) if creator else None
    writes = [w for w in reversed(watch.obs.inplace) if want is None or w.shape == want]
    write = next((w for w in writes if name and (w.creator or "").startswith(name)),
                 writes[0] if writes else None)
    versions = re.search(r"is at version (\d+); expected version (\d+)", text)
    seen = f" (version {versions.group(2)} saved, {versions.group(1)} found)" if versions else ""
    calls = watch.obs.backwards
    if write is None and len(calls) >= 2 and calls[-1].retain_graph and \
            calls[-2].site == calls[-1].site:
        return Finding("retain_graph makes each step walk all earlier ones",
                       f"backward call {len(calls)} reached a graph of an earlier iteration, "
                       f"whose saved {name or 'tensor'} {list(want or [])} optimizer.step() "
                       f"has since changed{seen}", calls[-1].site,
                       "a tensor carried from one iteration to the next (a hidden state, a "
                       "running total) links each new graph to the earlier ones, and "
                       "retain_graph=True keeps them alive, so each backward walks them again",
                       "detach what is carried between iterations (h = h.detach()) and drop "
                       "retain_graph=True")
    if write is None:
        return Finding("in-place write to a tensor saved for backward",
                       f"the output of {name or 'an op'} {list(want or [])} was changed in "
                       f"place after backward saved it{seen}", site,
                       "backward needs the values an op saw, and an in-place op overwrote "
                       "them", "use the out-of-place form (x = x + 1, torch.relu(x), "
                       "nn.ReLU(inplace=False)) or write into x.clone()")
    name = re.sub(r"Backward\d*$", "", write.creator or "") or name
    return Finding("in-place write to a tensor saved for backward",
                   f"{write.op} wrote in place into the output of {name} "
                   f"{list(write.shape)}, which its consumer saved for backward{seen}",
                   write.site, f"the backward needs the values {name} produced, and this "
                   "in-place op overwrote them before backward ran",
                   "use the out-of-place form (x = x + 1 instead of x += 1, torch.relu(x) "
                   "instead of relu_, nn.ReLU(inplace=False)) or write into x.clone()")


def _no_grad_fn(exc, failed, watch, site):
    if "does not require grad and does not have a grad_fn" not in str(exc):
        return None
    obs = watch.obs
    cut = obs.cuts[0] if obs.cuts else None
    if obs.no_grad_calls:
        cause = ("the forward ran under torch.no_grad() (or inference_mode), so no graph "
                 "was recorded")
        where = next(iter(obs.no_grad_calls.values()))
    elif cut is not None:
        cause = f"{cut.how} at {cut.site} took the result out of the graph"
        where = cut.site
    else:
        cause = ("nothing the loss is computed from requires grad: the parameters are "
                 "frozen, or the loss was rebuilt from numbers (.item(), NumPy)")
        where = site
    return Finding("the loss has no graph", "backward() was called on a tensor with no "
                   "grad_fn", where, cause, "compute the loss from the model's output with "
                   "tensor operations, with grad enabled")


def _none_grad(exc, tb, watch, site):
    if not isinstance(exc, TypeError) or "NoneType" not in str(exc):
        return None
    frame = None
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            frame = tb.tb_frame
        tb = tb.tb_next
    if frame is None or ".grad" not in (site.source if site else ""):
        return None
    scopes = {**frame.f_globals, **frame.f_locals}
    nonleaf = [n for n, v in scopes.items() if isinstance(v, Tensor) and v.requires_grad
               and v.grad_fn is not None and re.search(rf"\b{re.escape(n)}\.grad\b",
                                                       site.source)]
    if not nonleaf:
        return None
    n = nonleaf[0]
    return Finding("a parameter never receives a gradient",
                   f"{n}.grad is None: {n} is not a leaf (it was made by "
                   f"{scopes[n].grad_fn.name()})", site,
                   f"{n} = torch.randn(..., requires_grad=True) * scale is the result of an "
                   "op, not a leaf, and backward fills .grad only on leaves",
                   f"make {n} a leaf: scale first, then set requires_grad "
                   f"({n} = (torch.randn(...) * scale).requires_grad_())")


def _memory(exc, failed, watch, site):
    if not (isinstance(exc, MemoryError) or "out of memory" in str(exc).lower()):
        return None
    return Finding("out of memory", str(exc).splitlines()[0][:200], site,
                   "the batch, the model or the activations kept for backward do not fit",
                   "reduce the batch size, use gradient checkpointing "
                   "(torch.utils.checkpoint), or see where memory goes with "
                   "torch.cuda.memory_summary() (docs: the memory guide)")


def _loss_input(exc, failed, watch, site):
    text = str(exc)
    m = re.search(r"Using a target size \((torch\.Size\(\[[\d, ]*\]\))\) that is different "
                  r"to the input size \((torch\.Size\(\[[\d, ]*\]\))\)", text)
    if m:
        return Finding("shape mismatch in the loss", f"the target has size {m.group(1)}, the "
                       f"input {m.group(2)}", site, "the loss compares prediction and target "
                       "element by element, so they must have the same shape",
                       "give both the same shape: pred.squeeze(1) or target.unsqueeze(1)")
    if "should be between 0 and 1" in text:
        return Finding("logits fed to a loss that expects probabilities",
                       f"{failed.op if failed else 'the loss'} got values outside [0, 1]", site,
                       "BCELoss takes probabilities, and its input is raw scores (logits)",
                       "use nn.BCEWithLogitsLoss on the raw scores (it applies the sigmoid "
                       "itself, stably)")
    m = re.search(r"Target (-?\d+) is out of bounds", text)
    if m:
        classes = failed.tensors[0][0][1] if failed and failed.tensors and \
            len(failed.tensors[0][0]) >= 2 else None
        counted = f"the model's output has {classes} classes (0 to {classes - 1})" \
            if classes else "the model's output has fewer classes"
        return Finding("class index out of range", f"a target is {m.group(1)}, but {counted}",
                       site, "the last layer outputs fewer scores than there are classes, or "
                       "the labels start at 1", "make the last layer output one score per "
                       "class (nn.Linear(..., num_classes)) and number the labels from 0")
    return None


def _layout(exc, failed, watch, site):
    text = str(exc)
    m = re.search(r"weight of size \[(\d+), (\d+)[\d, ]*\], expected input\[([\d, ]+)\] to "
                  r"have (\d+) channels, but got (\d+) channels", text)
    if m:
        module, label = _running(failed, watch)
        label = label or "a convolution"
        return Finding("shape mismatch in a convolution",
                       f"{label} takes {m.group(4)} input channels; its input "
                       f"[{m.group(3)}] has {m.group(5)} in dimension 1", site,
                       "the layer was built for another channel count, or the images are "
                       "laid out [N, H, W, C] where convolutions expect [N, C, H, W]",
                       f"build the layer with in_channels={m.group(5)}, or move the channels "
                       "first: x.permute(0, 3, 1, 2)")
    if re.search(r"Expected \d+D \(unbatched\) or \d+D \(batched\) input", text):
        return Finding("shape mismatch in a convolution", text.split(", but")[0] + ", got "
                       + text.rsplit("size: ", 1)[-1], site,
                       "the input lacks the batch or the channel dimension",
                       "add it: x.unsqueeze(0) for one sample, x.unsqueeze(1) for a batch of "
                       "one-channel images")
    if "view size is not compatible with input tensor's size and stride" in text:
        return Finding("a view of a non-contiguous tensor", "view() was asked to reshape a "
                       "tensor whose elements are not in row-major order", site,
                       "after transpose, permute or expand a tensor cannot be reinterpreted "
                       "without copying, which view never does",
                       "use .reshape(...) (copies when needed) or .contiguous().view(...)")
    if "can't optimize a non-leaf Tensor" in text:
        return Finding("a parameter never receives a gradient", "a tensor given to the "
                       "optimizer is not a leaf", site,
                       "it is the result of an op (torch.randn(..., requires_grad=True) * 0.01, "
                       "or .to() after requires_grad), and backward fills .grad only on leaves",
                       "make it a leaf: (torch.randn(...) * 0.01).requires_grad_(), or "
                       "nn.Parameter(...)")
    if "grad can be implicitly created only for scalar outputs" in text:
        calls = watch.obs.backwards
        shape = f" of shape {list(calls[-1].shape)}" if calls and calls[-1].shape else ""
        return Finding("backward of a non-scalar loss", f"backward() was called on a "
                       f"tensor{shape}", calls[-1].site if calls else site,
                       "backward() without an argument needs a single number; the loss still "
                       "has one value per element (reduction='none', or no .mean())",
                       "reduce it: loss.mean().backward() (or loss.sum())")
    if "indices" in text and "Long, Int" in text:
        return Finding("dtype mismatch", "an embedding got float indices", site,
                       "nn.Embedding looks rows up by integer index",
                       "pass int64 indices: idx.long()")
    if "index out of range in self" in text:
        module, label = _running(failed, watch)
        if module is not None and type(module).__name__ == "Embedding":
            return Finding("index out of range in an Embedding",
                           f"{label} has num_embeddings={module.num_embeddings}; "
                           "an index reached past it", site,
                           "the vocabulary (or category count) is larger than the table",
                           "build it with num_embeddings = the largest index + 1")
    m = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
                  r"at non-singleton dimension (\d+)", text)
    if m or "Sizes of tensors must match" in text:
        shapes = ", ".join(str(list(t[0])) for t in failed.tensors) if failed else ""
        return Finding("shape mismatch", f"{failed.op if failed else 'an op'} got shapes "
                       f"{shapes or text}", site, "the shapes neither agree nor broadcast "
                       "(sizes must be equal or 1 in each dimension, from the right)",
                       "print the shapes on this line and reshape, transpose or slice the "
                       "one that is wrong")
    return None


def explain(exc, tb, watch) -> Finding:
    """The crash as a finding: its cause when known, else the exception at the user line."""
    site = traceback_site(tb)
    failed = watch.obs.failed if watch.obs.failed and watch.obs.failed.exception is exc \
        else None
    for explainer in (_shape, _device, _dtype, _freed, _inplace, _no_grad_fn, _memory,
                      _loss_input, _layout):
        found = explainer(exc, failed, watch, site)
        if found is not None:
            return found
    found = _none_grad(exc, tb, watch, site)
    if found is not None:
        return found
    return Finding("the script crashed", f"{type(exc).__name__}: {exc}", site,
                   "the doctor has no diagnosis for this error beyond its message",
                   "see the traceback above")
