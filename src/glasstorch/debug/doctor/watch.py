"""What the doctor watches while a training run goes: the observations, not yet verdicts.

One `Watch` per run gathers them through public extension points, all removed afterwards:
- a dispatch mode (mode.py, below autograd, so it sees forward and backward ops): NaN/Inf
  made from finite inputs, in-place writes, the op a crash came from, ops per backward;
- global module forward hooks: which module runs (its stack at a crash), the train/eval
  state of dropout and batch norm, module outputs cut from the graph, unregistered tensors;
- global optimizer step hooks: gradient norms per parameter at each step, and whether a
  step finds the gradients it applied last time, unzeroed;
- wrappers, for the run, around `autograd.backward` (so `loss.backward()`), `Tensor.detach`,
  `.data` and `.item`, `Optimizer.__init__`, `Module.load_state_dict`, `torch.save` and the
  DataLoader's `__next__`, and a filter for PyTorch's own warnings that name a bug.
"""
from __future__ import annotations

import collections
import functools
import re
import sys
import time
import warnings
import weakref

import numpy as np

from glasstorch import autograd
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.autograd.graph import _sequence as _node_sequence
from glasstorch.core.tensor import Tensor
from glasstorch.nn import Module, Parameter
from glasstorch.nn.modules import module as _module_hooks
from glasstorch.optim import optimizer as _optimizer
from glasstorch.utils.data import dataloader as _dataloader

from .frames import Site, called_from_user, running_node, user_frame, user_site
from .graphs import assignment_site, holder, pinning_lists, tensors_in, variable_name
from .mode import WatchMode, recall
from .observations import BackwardCall, Cut, FailedOp, InplaceWrite, NonFinite, Observations
from .values import all_finite, as_array, grad_norm, value_range

_MAX_FORWARD_SITES = 200_000            # node numbers remembered (the recent graphs')
_WARNINGS = {                              # PyTorch's own warnings that name a bug
    "Using a target size": "broadcast",
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`": "scheduler",
}


def _quiet(method):
    """Instrumentation never breaks the user's run: an error in it is recorded (and shown
    after the report), not raised into the user's code."""
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            self.obs.internal_errors.append(f"{method.__name__}: {type(e).__name__}: {e}")
            return None
    return guarded


def _is_noise_layer(m) -> bool:
    return type(m).__name__.startswith(("Dropout", "BatchNorm", "AlphaDropout",
                                        "FeatureAlphaDropout", "InstanceNorm"))



class Watch:
    """Installs the instrumentation on enter and removes all of it on exit."""

    def __init__(self):
        self.obs = Observations()
        self.in_backward = False
        self.backward_ops = 0
        self._applied: dict = {}          # id(param) -> weakref to the grad last applied
        self.zeroed: set = set()          # data_ptr of gradients zeroed in place since
        self._stack: list = []            # the modules running, outermost first
        self._args: list = []             # and their inputs
        self._scanned: set = set()
        self._cut_sites: collections.Counter = collections.Counter()
        self._undo: list = []
        self.probabilities: dict = {}     # recent softmax/sigmoid outputs (see _remember)
        self.batch_normalised: dict = {}  # recent softmax/log_softmax outputs over dim 0
        self.raw_scores: dict = {}        # recent matrix-product outputs (linear layers)
        self.forward_sites: dict = {}     # node sequence number -> the user line recording it

    # ---- installing -------------------------------------------------------------------

    def __enter__(self):
        self._patch(autograd, "backward", self._wrap_backward(autograd.backward))
        self._patch_attr(Tensor, "detach", self._wrap_cut(Tensor.detach, "detach()"))
        self._patch_attr(Tensor, "item", self._wrap_cut(Tensor.item, "item()"))
        data = Tensor.__dict__["data"]
        self._patch_attr(Tensor, "data", property(self._wrap_cut(data.fget, ".data"),
                                                  data.fset))
        self._patch_attr(Module, "load_state_dict",
                         self._wrap_load_state_dict(Module.load_state_dict))
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        for message in _WARNINGS:
            warnings.filterwarnings("always", message=re.escape(message))
        self._show_warning = warnings.showwarning
        warnings.showwarning = self._on_warning
        self._undo.append(lambda: self._warnings.__exit__(None, None, None))
        self._patch_attr(_optimizer.Optimizer, "__init__",
                         self._wrap_optimizer_init(_optimizer.Optimizer.__init__))
        hooks = [_module_hooks.register_module_forward_pre_hook(self._pre_forward),
                 _module_hooks.register_module_forward_hook(self._post_forward,
                                                            always_call=True),
                 _optimizer.register_optimizer_step_pre_hook(self._pre_step),
                 _optimizer.register_optimizer_step_post_hook(self._post_step)]
        self._undo.extend(h.remove for h in hooks)
        self._patch_attr(_dataloader._BaseDataLoaderIter, "__next__",
                         self._wrap_next(_dataloader._BaseDataLoaderIter.__next__))
        glasstorch = sys.modules["glasstorch"]       # torch.save is glasstorch.save
        self._patch(glasstorch, "save", self._wrap_save(glasstorch.save))
        self._mode = WatchMode(self)
        self._mode.__enter__()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.obs.seconds = time.perf_counter() - self._start
        self._mode.__exit__(None, None, None)
        while self._undo:
            self._undo.pop()()
        return False

    def _patch(self, owner, name, value):
        old = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, old))

    def _patch_attr(self, cls, name, value):
        old = cls.__dict__[name]
        setattr(cls, name, value)
        self._undo.append(lambda: setattr(cls, name, old))

    # ---- backward ---------------------------------------------------------------------

    def _wrap_backward(self, backward):
        watch = self

        def doctored_backward(tensors, grad_tensors=None, retain_graph=None,
                              create_graph=False, inputs=None):
            call = watch._before_backward(tensors, retain_graph or create_graph)
            watch.in_backward, watch.backward_ops = True, 0
            try:
                result = backward(tensors, grad_tensors, retain_graph, create_graph, inputs)
                if call is not None:
                    call.reached_parameters = any(p.grad is not None
                                                  for p in watch.optimizer_params())
                return result
            finally:
                watch.in_backward = False
                if call is not None:
                    call.ops = watch.backward_ops
                watch.obs.iteration += 1
        return doctored_backward

    @_quiet
    def _before_backward(self, tensors, retain) -> BackwardCall:
        obs = self.obs
        call = BackwardCall(user_site(3), bool(retain))
        loss = tensors if isinstance(tensors, Tensor) else None
        if loss is not None:
            call.shape = tuple(loss.shape)
        if loss is not None and loss.numel() == 1 and loss.dtype.is_floating_point:
            a = as_array(loss)
            call.loss = None if a is None else float(a.reshape(()))
            if loss.grad_fn is not None:
                self._watch_kept_graphs(loss)
        obs.backwards.append(call)
        return call

    def _watch_kept_graphs(self, loss):
        """Losses (and model outputs) of earlier iterations whose graphs are still alive:
        the user keeps them."""
        obs = self.obs
        obs.loss_nodes.append((obs.iteration, weakref.ref(loss.grad_fn)))
        if obs.kept_graphs is None:
            self._check_kept(obs.loss_nodes, "losses")
        if obs.kept_graphs is None:
            self._check_kept(obs.output_nodes, "outputs")

    def _check_kept(self, nodes, what):
        now = self.obs.iteration
        old = [ref for it, ref in nodes if it < now - 1]
        if len(old) < 6:
            return
        alive = [r() for r in old if r() is not None]
        if len(alive) >= 0.75 * len(old):
            frame = user_frame(3)
            found = holder(frame, {id(n) for n in alive})
            site = assignment_site(frame, found[0]) if found else None
            if site is None and frame is not None:
                site = Site(frame.f_code.co_filename, frame.f_lineno)
            self.obs.kept_graphs = (what, len(alive), len(old), found, site)

    # ---- optimizer ----------------------------------------------------------------------

    def _wrap_optimizer_init(self, init):
        watch = self

        def doctored_init(opt, *args, **kwargs):
            init(opt, *args, **kwargs)
            watch._record_optimizer(opt)
        return doctored_init

    @_quiet
    def _record_optimizer(self, opt):
        if not any(o is opt for o in self.obs.optimizers):
            self.obs.optimizers.append(opt)
            self.obs.optimizer_sites[id(opt)] = user_site(3)

    def optimizer_params(self):
        """Every parameter the run's optimizers hold."""
        for opt in self.obs.optimizers:
            for group in opt.param_groups:
                yield from group["params"]

    @_quiet
    def _pre_step(self, opt, args, kwargs):
        norms, stale, compared = {}, False, False
        for group in opt.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                self.obs.got_grad.add(id(p))
                norms[id(p)] = grad_norm(g)
                applied = self._applied.get(id(p))
                if applied is not None:
                    compared = True
                    stale |= applied() is g and g.data_ptr() not in self.zeroed
        self.obs.steps.append((self.obs.iteration, norms))
        if stale:
            self.obs.stale_steps.append(self.obs.backwards[-1].site if self.obs.backwards
                                        else user_site(2))
        elif compared:
            self.obs.fresh_steps += 1

    @_quiet
    def _post_step(self, opt, args, kwargs):
        """Remember each gradient this step applied: if the next step finds the same tensor,
        not zeroed in between, it applies these values a second time."""
        for group in opt.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._applied[id(p)] = weakref.ref(p.grad)
                    self.zeroed.discard(p.grad.data_ptr())

    # ---- modules ----------------------------------------------------------------------

    @_quiet
    def _pre_forward(self, module, args):
        obs = self.obs
        if not self._stack:
            if not any(r is module for r in obs.roots):
                obs.roots.append(module)
                obs.root_names[id(module)] = variable_name(user_frame(3), module)
            obs.root_sites[id(module)] = user_site(3)
            obs.root_calls += 1
            if obs.root_calls >= 16 and obs.root_calls & (obs.root_calls - 1) == 0:
                self._scan_pinning_lists(user_frame(3))     # at the 16th, 32nd, ... call
        self._stack.append(module)
        self._args.append(args)
        obs.called.add(id(module))
        if id(module) not in self._scanned:
            self._scanned.add(id(module))
            self._scan_unregistered(module)
        if _is_noise_layer(module):
            self._check_mode(module)

    @_quiet
    def _post_forward(self, module, args, output):
        exc = sys.exc_info()[1] if output is None else None
        if exc is not None and (self.obs.crash_modules is None
                                or self.obs.crash_modules[0] is not exc):
            self.obs.crash_modules = (exc, list(zip(self._stack, self._args)))
        if self._stack and self._stack[-1] is module:
            self._stack.pop()
            self._args.pop()
        if not self._stack and isinstance(output, Tensor) and output.grad_fn is not None:
            self.obs.output_nodes.append((self.obs.iteration, weakref.ref(output.grad_fn)))
        if not any(p.requires_grad for p in module._parameters.values() if p is not None):
            return
        if not is_grad_enabled():
            self.obs.no_grad_calls.setdefault(id(module), self._root_site())
        elif isinstance(output, Tensor) and not output.requires_grad:
            self.obs.cut_inside.setdefault(id(module), self._root_site())

    def _scan_pinning_lists(self, frame):
        """Small views appended to a list across iterations, each pinning a large storage
        (`preds.append(out[:, 0])`): memory grows by the whole output per batch."""
        for name, length, values, kept in pinning_lists(frame):
            site = assignment_site(frame, name) or user_site(4)
            self.obs.pinned_lists[name] = (site, length, values, kept, self.obs.root_calls)

    def _root_site(self):
        root = self._stack[0] if self._stack else None
        return self.obs.root_sites.get(id(root)) if root is not None else user_site(4)

    def _check_mode(self, module):
        obs = self.obs
        root = self._stack[0]
        if module.training:
            obs.was_training.add(id(module))
            if not is_grad_enabled() and len(obs.train_at_eval) < 4:
                obs.train_at_eval.append((obs.root_sites.get(id(root)), module))
        elif is_grad_enabled() and id(module) in obs.was_training:
            obs.eval_at_train.append((obs.iteration, obs.root_sites.get(id(root)), module))
        elif is_grad_enabled() and type(module).__name__.startswith("Dropout") \
                and len(obs.dropout_off_in_training) < 4 \
                and any(p.requires_grad for p in root.parameters()):
            obs.dropout_off_in_training.append((obs.iteration, obs.root_sites.get(id(root)),
                                                module))

    def _scan_unregistered(self, module):
        """Tensors that require grad and modules kept as plain attributes or in plain
        containers: nn.Module does not see them, so neither do parameters() nor the
        optimizer."""
        registered = None
        for name, value in vars(module).items():
            if name.startswith("_"):
                continue
            if isinstance(value, Tensor) and not isinstance(value, Parameter) \
                    and value.requires_grad:
                self.obs.unregistered.append((module, name, "tensor", [value]))
            elif isinstance(value, (list, tuple, dict)):
                items = list(value.values()) if isinstance(value, dict) else list(value)
                mods = [v for v in items if isinstance(v, Module)]
                if not mods:
                    continue
                if registered is None:
                    registered = {id(m) for m in module.modules()}
                hidden = [m for m in mods if id(m) not in registered
                          and any(p.requires_grad for p in m.parameters())]
                if hidden:
                    self.obs.unregistered.append((module, name, type(value).__name__, hidden))

    # ---- the user's graph cuts ---------------------------------------------------------

    def _wrap_cut(self, method, how):
        watch = self

        def doctored(self, *args, **kwargs):
            if self._requires_grad and (self.grad_fn is not None or watch._stack) \
                    and called_from_user(2):     # a leaf cut only inside a module's forward
                watch._on_cut(self, how)
            return method(self, *args, **kwargs)
        doctored.__name__, doctored.__doc__ = method.__name__, method.__doc__
        return doctored

    @_quiet
    def _on_cut(self, tensor, how):
        site = user_site(3)
        self._cut_sites[site] += 1
        if self._cut_sites[site] <= 2 and is_grad_enabled():
            node = tensor.grad_fn
            self.obs.cuts.append(Cut(how, site, node, id(tensor) if node is None else None))

    # ---- PyTorch's warnings, checkpoints -----------------------------------------------

    def _on_warning(self, message, category, filename, lineno, file=None, line=None):
        text = str(message)
        kind = next((k for m, k in _WARNINGS.items() if text.startswith(m)), None)
        if kind is None:
            return self._show_warning(message, category, filename, lineno, file, line)
        site = user_site(2)
        if not any(w[0] == kind and w[2] == site for w in self.obs.warned):
            self.obs.warned.append((kind, text, site))
            self._show_warning(message, category, filename, lineno, file, line)

    def _wrap_next(self, next_batch):
        watch = self

        def doctored_next(iterator):
            start = time.perf_counter()
            try:
                return next_batch(iterator)
            finally:
                watch._record_batch(time.perf_counter() - start)
        return doctored_next

    @_quiet
    def _record_batch(self, seconds):
        self.obs.data_seconds += seconds
        self.obs.batches += 1
        if self.obs.data_site is None:
            self.obs.data_site = user_site(3)

    def _wrap_save(self, save):
        watch = self

        def doctored_save(obj, f, *args, **kwargs):
            watch._record_save(obj)
            return save(obj, f, *args, **kwargs)
        doctored_save.__doc__ = save.__doc__
        return doctored_save

    @_quiet
    def _record_save(self, obj):
        """A small view saved: torch.save writes its whole storage."""
        for t in tensors_in(obj):
            storage, own = t.untyped_storage().nbytes(), t.numel() * t.element_size()
            if storage >= 1 << 20 and storage >= 4 * own:
                self.obs.pinned_saves.append((user_site(3), tuple(t.shape), own, storage))
                return

    def _wrap_load_state_dict(self, load):
        watch = self

        def doctored_load_state_dict(module, state_dict, strict=True, assign=False):
            result = load(module, state_dict, strict, assign)
            watch._record_load(module, result)
            return result
        doctored_load_state_dict.__doc__ = load.__doc__
        return doctored_load_state_dict

    @_quiet
    def _record_load(self, module, result):
        """A load that matched none of the module's keys."""
        expected = module.state_dict()
        if expected and len(result.missing_keys) == len(expected):
            self.obs.empty_loads.append((user_site(3), module, list(result.missing_keys),
                                         list(result.unexpected_keys)))

    # ---- from the mode ----------------------------------------------------------------

    @_quiet
    def on_wrong_dimension(self, made, loss):
        if not self.obs.wrong_dimension:
            op, shape = made
            self.obs.wrong_dimension.append((op, shape, str(loss), user_site(4)))

    @_quiet
    def check_log_probabilities(self, func, scores):
        """NLL takes log-probabilities, all <= 0: a positive input is raw scores."""
        if self.obs.logits_as_log_probabilities:
            return
        a = as_array(scores)
        if a is not None and a.size and float(a.max()) > 1e-4:
            self.obs.logits_as_log_probabilities.append((str(func), float(a.max()),
                                                         user_site(4)))

    @_quiet
    def check_logits_input(self, func, scores):
        """A loss that applies softmax or sigmoid itself, given their output."""
        made = recall(self.probabilities, scores)
        if made is not None and not self.obs.probabilities_as_logits:
            self.obs.probabilities_as_logits.append((made, str(func), user_site(5)))

    @_quiet
    def check_probabilities_input(self, func, scores):
        """A loss that takes probabilities, given a linear layer's output (or a view of it)
        with no sigmoid between: in [0, 1] by chance, it computes a wrong loss silently."""
        made = recall(self.raw_scores, scores)
        if made is None and scores._base is not None:
            made = recall(self.raw_scores, scores._base)
        if made is not None and not self.obs.logits_as_probabilities:
            self.obs.logits_as_probabilities.append((made, str(func), value_range(scores),
                                                     user_site(5)))

    @_quiet
    def on_inplace(self, func, tensor):
        if self.in_backward or tensor.grad_fn is None:    # optimizers write leaves
            return
        self.obs.inplace.append(InplaceWrite(str(func), user_site(4), tensor.grad_fn.name(),
                                             tuple(tensor.shape)))

    @_quiet
    def on_failed_op(self, func, args, kwargs, exc):
        if self.obs.failed is not None and self.obs.failed.exception is exc:
            return
        names = self.parameter_names()
        values = list(args) + list(kwargs.values())
        flat = [v for a in values for v in (a if isinstance(a, (list, tuple)) else (a,))]
        tensors = [(tuple(a.shape), a.dtype, a.device, names.get(id(a)))
                   for a in flat if isinstance(a, Tensor)]
        self.obs.failed = FailedOp(str(func), tensors, list(self._stack), exc)

    def on_recorded_op(self):
        """A forward op whose result autograd is about to record: remember the user's line
        under the sequence number its node will take (autograd numbers nodes from one
        per-thread counter; taking a number here only leaves a gap), so a NaN made later in
        that node's backward can name the forward line."""
        sites = self.forward_sites
        if len(sites) > _MAX_FORWARD_SITES:
            for key in list(sites)[:len(sites) // 2]:
                del sites[key]
        sites[next(_node_sequence.counter) + 1] = user_site(2)

    @_quiet
    def on_nonfinite(self, func, out, args, kwargs):
        values = list(args) + list(kwargs.values())
        flat = [v for a in values for v in (a if isinstance(a, (list, tuple)) else (a,))]
        if any(isinstance(v, float) and not np.isfinite(v) for v in flat):
            return                            # an infinity asked for: masking, fills
        tensors = [v for v in flat if isinstance(v, Tensor)]
        if any(t.dtype.is_floating_point and not all_finite(t) for t in tensors):
            if not self.obs.nonfinite_seen_in_input:
                self.obs.nonfinite_seen_in_input.append((str(func), user_site(4),
                                                         self.obs.iteration))
            return
        a = as_array(out)
        what = "NaN" if np.isnan(a).any() else ("inf" if (a == np.inf).any() else "-inf")
        ranges = [value_range(t) for t in tensors if t.dtype.is_floating_point]
        event = NonFinite(str(func), what, user_site(4), self.obs.iteration, self.in_backward,
                          ranges)
        node = running_node() if self.in_backward else None
        if node is not None:
            event.node = node.name()
            event.forward_site = self.forward_sites.get(node._sequence_nr)
        self.obs.nonfinite.append(event)

    # ---- names ------------------------------------------------------------------------

    def parameter_names(self) -> dict:
        """id(parameter) -> qualified name, from the root modules the user called."""
        names = {}
        for root, prefix in self._prefixes():
            for name, p in root.named_parameters():
                names.setdefault(id(p), prefix + name)
        return names

    def module_names(self) -> dict:
        names = {}
        for root, prefix in self._prefixes():
            for name, m in root.named_modules():
                names.setdefault(id(m), (prefix + name).rstrip(".") or type(m).__name__)
        return names

    def _prefixes(self):
        """Each root module with the prefix its names get: none for a single model, the
        user's variable name when several are called (`encoder.weight`, `head.weight`)."""
        roots = [r for r in self.obs.roots if next(r.parameters(), None) is not None]
        if len(roots) <= 1:
            return [(r, "") for r in roots]
        return [(r, f"{self.obs.root_names.get(id(r)) or type(r).__name__}.") for r in roots]
