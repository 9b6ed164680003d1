"""From observations to findings: each detector reads the Watch and says what is wrong.

Detectors run in priority order and stay quiet on the look-alikes of their problem:
accumulation that zeroes every k steps, retain_graph for two losses of one step, infinities
asked for (masking), frozen parameters, detach() of targets and logged values.
"""
from __future__ import annotations

import linecache
import math
import re

from glasstorch.memory.errors import format_size

from .frames import Site
from .graphs import reaches
from .report import Finding

_EXPLODING = 1e3          # a gradient norm well-scaled data and weights do not reach
_VANISHING = 1e-6         # smallest/largest weight-gradient norm ratio at one step


def attribute_site(module, attr: str):
    """The line of `self.<attr> = ...` in the module's class (or a base), or None. Read
    from the methods' code, as a class run as __main__ has no module file to ask."""
    pattern = re.compile(rf"\bself\.{re.escape(attr)}\s*=")
    for cls in type(module).__mro__:
        init = vars(cls).get("__init__")
        code = getattr(init, "__code__", None)
        if code is None:
            continue
        lines = linecache.getlines(code.co_filename)
        for n in range(code.co_firstlineno, len(lines) + 1):
            if pattern.search(lines[n - 1]):
                return Site(code.co_filename, n)
    return None


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def nonfinite(watch) -> list:
    """NaN/Inf in the loss or the gradients: the loss diverging, else the first op that
    made NaN/Inf from finite inputs."""
    obs = watch.obs
    losses = [(i, b.loss) for i, b in enumerate(obs.backwards) if b.loss is not None]
    bad_loss = next((i for i, v in losses if not math.isfinite(v)), None)
    bad_grad = next((it for it, norms in obs.steps
                     if any(not math.isfinite(n) for n in norms.values())), None)
    bad = min(x for x in (bad_loss, bad_grad, math.inf) if x is not None)
    diverged = _diverging(obs, bad)
    if bad == math.inf and not diverged:
        return []
    candidates = [e for e in obs.nonfinite
                  if (e.iteration, e.in_backward) >= (bad - 1, True)] or obs.nonfinite
    event = candidates[0] if candidates and bad != math.inf else None
    exploding = bool(obs.steps) and max(obs.steps[0][1].values(), default=0) > _EXPLODING
    if exploding and (diverged or (event is not None and event.iteration >= 1)):
        return gradient_scale(watch)        # the gradients were too large from the start
    if diverged:
        (start, first), (peak, top) = diverged
        evidence = (f"the loss went from {_fmt(first)} at step {start + 1} to {_fmt(top)} "
                    f"at step {peak + 1}")
        if bad != math.inf:
            evidence += f", then became non-finite at step {bad + 1}"
            if event is not None:
                evidence += f" (first {event.what} from {event.op} at {event.site})"
        opt = obs.optimizers[0] if obs.optimizers else None
        lr = ""
        if opt is not None and "lr" in opt.param_groups[0]:
            lr = f" (lr={opt.param_groups[0]['lr']:g})"
        site = obs.optimizer_sites.get(id(opt)) if opt is not None else None
        return [Finding("the loss diverges", evidence, site,
                        f"the learning rate{lr} is too large: each step overshoots and the "
                        "loss grows by orders of magnitude until it overflows",
                        "lower the learning rate (try 10x smaller), or clip gradients with "
                        "torch.nn.utils.clip_grad_norm_")]
    if event is not None:
        phase = "backward pass" if event.in_backward else "forward pass"
        phase = f"in the {phase} of step {event.iteration + 1}"
        site = event.site
        if event.node is not None:
            phase += f", inside {event.node}"
            if event.forward_site is not None:      # the forward line, not loss.backward()
                phase += f" (the backward of this line; backward() ran at {event.site})"
                site = event.forward_site
        ranges = ", ".join(event.input_ranges) or "none"
        nan = event.what == "NaN" or any(math.isnan(v) for _, v in losses) or any(
            math.isnan(n) for _, norms in obs.steps for n in norms.values())
        return [Finding("NaN appeared" if nan else "Inf appeared", f"{event.op} produced {event.what} "
                        f"{phase}, from finite inputs with ranges {ranges}", site,
                        _nonfinite_cause(event.op, event.in_backward, event.node),
                        "keep each op's input inside its domain: an epsilon "
                        "(torch.sqrt(x + 1e-8), x / (y + 1e-8)), a clamp (x.clamp(min=1e-8) "
                        "before log), or the stable fused form (log_softmax, cross_entropy "
                        "on logits, BCEWithLogitsLoss)")]
    if obs.nonfinite_seen_in_input:
        op, site, it = obs.nonfinite_seen_in_input[0]
        return [Finding("NaN appeared", f"{op} received NaN or Inf inputs at step {it + 1}, "
                        "and no op made them", site,
                        "the data itself holds NaN or Inf (or a tensor made outside "
                        "the graph does)", "check the data: torch.isfinite(x).all() on each "
                        "batch, and clean or drop the bad rows")]
    return []


def _diverging(obs, bad):
    """((step, first loss), (step, peak loss)) of the first backward line whose finite losses
    grew by orders of magnitude (before the first non-finite one, at step `bad`), or None.
    Each line apart: a GAN's two losses, or a main loss and an auxiliary one, differ in
    scale."""
    by_site: dict = {}
    for i, b in enumerate(obs.backwards):
        if b.loss is not None and i < bad:
            by_site.setdefault(b.site, []).append((i, b.loss))
    for seq in by_site.values():
        values = [v for _, v in seq]
        if len(values) < 3 or values[0] <= 0:
            continue
        peak = max(range(len(values)), key=values.__getitem__)
        rise, last = values[peak] / values[0], values[-1] / values[0]
        if (bad != math.inf and rise > 100 and last > 10) or (rise > 1e6 and last > 1e3):
            return seq[0], seq[peak]
    return None


def _nonfinite_cause(op: str, in_backward: bool, node: str | None = None) -> str:
    name = op.split(".")[1] if "." in op else op
    if in_backward and node is not None:
        forward = re.sub(r"Backward\d*$", "", node).lower()
        return (f"the derivative of {forward} is infinite where the forward evaluated it "
                f"({name} in its backward): sqrt or a norm at 0, pow with an exponent below "
                "1 at 0, log or division at 0")
    if in_backward:
        return (f"a derivative is infinite where the forward was evaluated ({name} in the "
                "backward pass): sqrt or a norm at 0, pow with an exponent below 1 at 0, "
                "log or division at 0")
    causes = {"log": "log of zero or of a negative number",
              "div": "a division by zero (or 0/0)",
              "sqrt": "sqrt of a negative number",
              "pow": "a power that overflows float32 (or a negative base with a fractional "
                     "exponent)",
              "exp": "exp of a large number overflows float32 (above about 88)",
              "rsqrt": "rsqrt of zero or of a negative number"}
    return causes.get(name.rstrip("_"), f"{name} was given values outside its domain or "
                                         "that overflow float32")


def gradient_scale(watch) -> list:
    """Exploding gradients (norms beyond any data scale) and vanishing ones (the smallest
    layer's gradient a millionth of the largest)."""
    obs = watch.obs
    names = watch.parameter_names()
    params = {id(p): p for p in watch.optimizer_params()}
    for step, (it, norms) in enumerate(obs.steps):
        finite = {k: v for k, v in norms.items() if math.isfinite(v)}
        if finite and max(finite.values()) > _EXPLODING:
            worst = sorted(finite, key=finite.get, reverse=True)
            layers = ", ".join(f"{names.get(k, 'a parameter')} {_fmt(finite[k])}"
                               for k in worst[:2])
            best = min(finite, key=finite.get)
            return [Finding("gradients explode", f"at step {step + 1} the gradient norms "
                            f"reach {layers}; the smallest is {names.get(best, '?')} "
                            f"{_fmt(finite[best])}", obs.backwards[min(it, len(obs.backwards))
                                                                   - 1].site,
                            "the gradients are orders of magnitude too large: weights "
                            "initialised too large for the depth, a recurrence with a gain "
                            "above 1, or inputs and targets on a large scale",
                            "clip with torch.nn.utils.clip_grad_norm_(model.parameters(), "
                            "1.0) before optimizer.step(), use the default initialisation "
                            "(or nn.init.xavier_/kaiming_), normalise inputs and targets, add "
                            "normalisation layers")]
    if obs.steps:
        it, norms = obs.steps[0]
        weights = {k: v for k, v in norms.items()
                   if k in params and params[k].dim() >= 2 and v > 0 and math.isfinite(v)}
        if len(weights) >= 3:
            low, high = min(weights, key=weights.get), max(weights, key=weights.get)
            if weights[low] < _VANISHING * weights[high]:
                return [Finding("gradients vanish", f"at step 1 the gradient norm of "
                                f"{names.get(low, '?')} is {_fmt(weights[low])}, of "
                                f"{names.get(high, '?')} {_fmt(weights[high])} (ratio "
                                f"{_fmt(weights[low] / weights[high])})",
                                obs.backwards[max(it - 1, 0)].site if obs.backwards else None,
                                "each saturating activation (sigmoid, tanh) or small weight "
                                "on the way back shrinks the gradient, so the early layers "
                                "do not learn",
                                "use ReLU-family activations, the default initialisation, "
                                "normalisation layers or residual connections")]
    return []


def missing_gradients(watch) -> list:
    """Parameters the optimizer holds that never got a gradient, and why."""
    obs = watch.obs
    if not obs.steps or not (obs.got_grad or obs.backwards):
        return []
    if not obs.got_grad and any(b.reached_parameters for b in obs.backwards):
        return []                   # gradients made, then zeroed before the step: zeroing()
    names = watch.parameter_names()
    module_names = watch.module_names()
    owners = {}
    for root in obs.roots:
        for m in root.modules():
            for p in m._parameters.values():
                if p is not None:
                    owners.setdefault(id(p), m)
    loss_nodes = {id(r()) for _, r in obs.loss_nodes if r() is not None}
    cuts = [c for c in obs.cuts
            if c.leaf is not None or (c.node is not None and id(c.node) not in loss_nodes)]
    findings, explained = [], set()
    for p in watch.optimizer_params():
        if not p.requires_grad or id(p) in obs.got_grad:
            continue
        owner = owners.get(id(p))
        if owner is None and obs.roots:
            continue                # not the model's: optimizer_use() says whose it is
        if owner is not None and id(owner) in explained:
            continue
        pname = names.get(id(p), f"a parameter of shape {list(p.shape)}")
        mname = module_names.get(id(owner), "its module") if owner is not None else "?"
        evidence = (f"{pname} has no .grad at any of the {len(obs.steps)} optimizer steps, "
                    + (f"while {len(obs.got_grad)} other parameter tensors get one"
                       if obs.got_grad else "and neither has any other parameter"))
        cut = next((c for c in cuts if c.leaf == id(p)
                    or (c.node is not None and reaches(c.node, p))), None)
        if cut is not None:
            finding = Finding("a parameter never receives a gradient", evidence, cut.site,
                              f"{cut.how} here takes a tensor that depends on {pname} out "
                              "of the graph, so the loss does not depend on it for autograd",
                              f"remove the {cut.how} on the way to the loss (detach only "
                              "targets, logged values and deliberately frozen paths)")
        elif owner is not None and id(owner) in obs.cut_inside:
            finding = Finding("a parameter never receives a gradient", evidence,
                              obs.cut_inside[id(owner)],
                              f"{mname}'s output does not require grad: its forward cuts the "
                              "graph (.detach(), .data, .item() or a NumPy round trip)",
                              "compute the forward with tensor operations only, without "
                              "detaching")
        elif owner is not None and id(owner) in obs.no_grad_calls:
            finding = Finding("a parameter never receives a gradient", evidence,
                              obs.no_grad_calls[id(owner)],
                              f"{mname} runs under torch.no_grad() (or inference_mode), so "
                              "no graph is recorded for it", "move the training forward "
                              "out of the no_grad block")
        elif owner is not None and id(owner) not in obs.called:
            root = next((r for r in obs.roots if owner in list(r.modules())), None)
            attr = mname.rsplit(".", 1)[-1]
            site = attribute_site(root if root is not None else owner, attr)
            finding = Finding("a parameter never receives a gradient", evidence, site,
                              f"{mname} is defined but never called in forward",
                              f"call {mname} in forward, or delete it (or freeze it with "
                              "requires_grad_(False) if it is meant to be unused)")
        else:
            root_site = next(iter(obs.root_sites.values()), None)
            finding = Finding("a parameter never receives a gradient", evidence, root_site,
                              f"{pname} is used, but what it computes does not reach the "
                              "loss (a result computed and thrown away, or a copy made "
                              "outside the graph)", "make the loss depend on the result "
                              "that uses it, or remove it")
        explained.add(id(owner))
        findings.append(finding)
    return findings


def unregistered(watch) -> list:
    """Tensors that require grad and modules in plain containers: invisible to parameters()
    and so to the optimizer."""
    obs = watch.obs
    in_optimizer = {id(p) for p in watch.optimizer_params()}
    if not obs.optimizers:
        return []
    findings = []
    for module, attr, kind, objects in obs.unregistered:
        cls = type(module).__name__
        site = attribute_site(module, attr)
        if kind == "tensor":
            t = objects[0]
            if id(t) in in_optimizer:
                continue
            leaf = "" if t.grad_fn is None else f", and not a leaf (made by {t.grad_fn.name()})"
            findings.append(Finding(
                "a parameter is not registered",
                f"{cls}.{attr} is a tensor that requires grad (shape {list(t.shape)}) kept as "
                f"a plain attribute{leaf}", site,
                "nn.Module registers only nn.Parameter attributes, so it is not in "
                "model.parameters() and the optimizer never updates it",
                f"self.{attr} = nn.Parameter(...) (scale the initial values inside, before "
                "wrapping)"))
        else:
            params = [p for m in objects for p in m.parameters() if id(p) not in in_optimizer]
            if not params:
                continue
            container = "nn.ModuleDict" if kind == "dict" else "nn.ModuleList"
            findings.append(Finding(
                "a parameter is not registered",
                f"{cls}.{attr} is a plain {kind} of {len(objects)} modules; their "
                f"{len(params)} parameter tensors are not in model.parameters()", site,
                f"nn.Module does not look inside a plain {kind}, so the optimizer never "
                "updates these layers (and .to(), state_dict() skip them)",
                f"self.{attr} = {container}(...)"))
    return findings


def zeroing(watch) -> list:
    """Gradients carried over an optimizer step into the next backward."""
    obs = watch.obs
    stale = len(obs.stale_steps)
    if stale < 2:
        return []
    names = watch.parameter_names()
    growth = ""
    if len(obs.steps) >= 2:
        first, last = obs.steps[0][1], obs.steps[-1][1]
        common = [k for k in first if k in last and first[k] > 0]
        if common:
            k = max(common, key=lambda k: last[k] / first[k])
            growth = (f"; the gradient norm of {names.get(k, 'a parameter')} went from "
                      f"{_fmt(first[k])} at step 1 to {_fmt(last[k])} at step "
                      f"{len(obs.steps)}")
    total = stale + obs.fresh_steps
    if obs.fresh_steps == 0:
        return [Finding("gradients were never zeroed",
                        f"all {total} optimizer steps after the first applied again the "
                        f"gradients of the steps before{growth}", obs.stale_steps[0],
                        "backward() adds into .grad; without zero_grad() each step applies "
                        "the sum of all earlier gradients",
                        "call optimizer.zero_grad() before loss.backward() in every "
                        "iteration")]
    return [Finding("gradients are zeroed too rarely",
                    f"{stale} of {total} optimizer steps after the first applied again "
                    f"gradients an earlier step had already applied{growth}",
                    obs.stale_steps[0],
                    "zero_grad() runs less often than optimizer.step(), so some steps "
                    "apply gradients that were applied before",
                    "call optimizer.zero_grad() right after each optimizer.step(); to "
                    "accumulate over k batches, call step() and zero_grad() together "
                    "every k batches")]


def kept_graphs(watch) -> list:
    obs = watch.obs
    if obs.kept_graphs is None:
        return []
    what, alive, total, holder, site = obs.kept_graphs
    held = f"`{holder[0]}` ({holder[1]})" if holder else "something"
    evidence = (f"{alive} of the {total} {what} of earlier iterations still hold their "
                f"graphs, kept by {held}")
    if what == "losses":
        return [Finding("the loss is kept with its graph across iterations", evidence, site,
                        "a loss tensor keeps its whole autograd graph alive; keeping losses "
                        "(or adding them into a tensor total) makes memory grow every "
                        "iteration", "keep numbers, not tensors: losses.append(loss.item()) "
                        "or total += loss.item()")]
    return [Finding("outputs are kept with their graphs across iterations", evidence, site,
                    "a model output keeps the autograd graph (and the activations) that made "
                    "it; keeping outputs makes memory grow every iteration",
                    "keep detached copies: preds.append(out.detach()) (or .cpu(), "
                    ".argmax(1))")]


def retain_graph_growth(watch) -> list:
    """Backwards with retain_graph=True that walk more ops each iteration."""
    by_site: dict = {}
    for b in watch.obs.backwards:
        by_site.setdefault(b.site, []).append(b)
    for site, calls in by_site.items():
        if len(calls) >= 5 and all(c.retain_graph for c in calls):
            first, last = max(calls[0].ops, 1), calls[-1].ops
            if last >= 3 * first:
                return [Finding("retain_graph makes each step walk all earlier ones",
                                f"the backward here ran {calls[0].ops} ops the first time "
                                f"and {last} the {len(calls)}th time", site,
                                "a tensor carried from one iteration to the next (a hidden "
                                "state, a running total) links each new graph to the earlier "
                                "ones, and retain_graph=True keeps them all alive, so "
                                "backward N repeats N iterations of work",
                                "detach what is carried between iterations (h = h.detach()) "
                                "and drop retain_graph=True")]
    return []


def _label(module, names: dict) -> str:
    kind = type(module).__name__
    name = names.get(id(module), kind)
    return kind if name == kind else f"{kind} `{name}`"


def train_eval(watch) -> list:
    obs = watch.obs
    names = watch.module_names()
    if obs.train_at_eval:
        site, module = obs.train_at_eval[0]
        return [Finding("evaluation in training mode",
                        f"{_label(module, names)} ran in training mode under "
                        "torch.no_grad()", site,
                        "dropout stays random and batch norm uses (and updates) batch "
                        "statistics unless the model is in eval mode",
                        "call model.eval() before evaluating and model.train() before "
                        "training again")]
    after = [e for e in obs.eval_at_train if e[0] < len(obs.backwards)] or [
        e for e in obs.dropout_off_in_training if e[0] < len(obs.backwards)]
    if after:
        it, site, module = after[0]
        return [Finding("training in evaluation mode",
                        f"{_label(module, names)} ran in eval mode in training step "
                        f"{it + 1}, with grad enabled and a backward after it", site,
                        "model.eval() (for a validation pass, or before the loop) was not "
                        "undone, so dropout is off and batch norm stops using batch "
                        "statistics",
                        "call model.train() at the start of each training epoch")]
    return []


def warned(watch) -> list:
    """PyTorch's own warnings that name a bug: a loss broadcasting its target, a scheduler
    stepped before the optimizer."""
    findings = []
    for kind, text, site in watch.obs.warned:
        if kind == "broadcast":
            sizes = re.findall(r"torch\.Size\(\[[\d, ]*\]\)", text)
            target, inp = (sizes + ["?", "?"])[:2]
            findings.append(Finding(
                "silent broadcasting in a loss", f"the target has size {target}, the input "
                f"{inp}: the loss compares every input with every target", site,
                "a [N, 1] prediction against an [N] target broadcasts to [N, N], so the loss "
                "averages N*N wrong pairs instead of N right ones",
                "give both the same shape: pred.squeeze(1) or target.unsqueeze(1)"))
        elif kind == "scheduler":
            findings.append(Finding(
                "a scheduler stepped before the optimizer", "lr_scheduler.step() ran before "
                "any optimizer.step()", site, "the schedule's first value is skipped: the "
                "learning rate changes one step early",
                "call scheduler.step() after optimizer.step() (once per epoch or per batch, "
                "as the scheduler expects)"))
    return findings


def probabilities_as_logits(watch) -> list:
    obs = watch.obs
    if not obs.probabilities_as_logits:
        return []
    made, op, site = obs.probabilities_as_logits[0]
    sigmoid = made == "sigmoid"
    loss = "BCEWithLogitsLoss" if sigmoid else "cross_entropy (CrossEntropyLoss)"
    return [Finding("probabilities fed to a loss that expects logits",
                    f"the output of {made} went straight into the loss ({op})", site,
                    f"{loss} applies {made} itself, so applying it before squashes the "
                    "scores twice: gradients shrink and the loss cannot go below a floor",
                    f"pass the raw scores (logits) to the loss, and apply {made} only for "
                    "predictions")]


def logits_as_probabilities(watch) -> list:
    found = watch.obs.logits_as_probabilities
    if not found:
        return []
    made, op, span, site = found[0]
    return [Finding("logits fed to a loss that expects probabilities",
                    f"{op} was given the output of {made} (a linear layer's raw scores, "
                    f"range {span}) with no sigmoid between", site,
                    "BCELoss takes probabilities; raw scores that happen to lie in [0, 1] give "
                    "a wrong loss and wrong gradients without an error, until one leaves "
                    "[0, 1] and the loss fails",
                    "use nn.BCEWithLogitsLoss on the raw scores (stable), or apply "
                    "torch.sigmoid before BCELoss")]


def logits_as_log_probabilities(watch) -> list:
    found = watch.obs.logits_as_log_probabilities
    if not found:
        return []
    op, top, site = found[0]
    return [Finding("logits fed to a loss that expects log-probabilities",
                    f"the input of {op} reaches {_fmt(top)}, and log-probabilities are never "
                    "above 0", site, "NLLLoss takes log-probabilities; given raw scores it "
                    "rewards making the right score large without bound, so the loss goes "
                    "negative and the other classes are ignored",
                    "apply F.log_softmax(x, dim=1) before NLLLoss, or use cross_entropy on the "
                    "raw scores")]


def wrong_dimension(watch) -> list:
    found = watch.obs.wrong_dimension
    if not found:
        return []
    op, shape, loss, site = found[0]
    name = op.split(".")[1].lstrip("_")
    return [Finding("normalisation over the wrong dimension",
                    f"{name} over dim 0 of a {list(shape)} tensor fed {loss}", site,
                    f"dim 0 is the batch: {name} there makes each class's scores sum to one "
                    "across the samples instead of each sample's scores across the classes",
                    f"normalise over the classes: {name}(x, dim=1) (or dim=-1)")]


def data_starving(watch) -> list:
    """Most of the run spent waiting for batches."""
    obs = watch.obs
    if obs.batches < 3 or obs.data_seconds < 0.25 or obs.data_seconds < 0.5 * obs.seconds:
        return []
    share = obs.data_seconds / obs.seconds
    return [Finding("data loading starves compute",
                    f"{obs.data_seconds:.2f} s of the run's {obs.seconds:.2f} s ({share:.0%}) "
                    f"went into fetching {obs.batches} batches "
                    f"({1000 * obs.data_seconds / obs.batches:.1f} ms each)", obs.data_site,
                    "the batches are built one item at a time in the training process, and "
                    "the per-item work (decoding, transforms) costs more than the step",
                    "DataLoader(..., num_workers=4, persistent_workers=True), precompute or "
                    "cache the per-item work, or load larger chunks at once")]


def pinned_saves(watch) -> list:
    findings = []
    for site, shape, own, storage in watch.obs.pinned_saves[:1]:
        findings.append(Finding(
            "a small view pins a large storage", f"the tensor saved is {list(shape)} "
            f"({own} bytes), a view into a storage of {storage} bytes", site,
            "a view shares its base's storage, and torch.save writes the whole storage, so "
            "the file (and whatever loads it) carries the large tensor too",
            "save a copy with its own storage: torch.save(t.clone(), ...) (the same for "
            "small views kept in lists: keep t.clone())"))
    return findings


def pinned_lists(watch) -> list:
    """Small views kept in a list across iterations, each holding a large storage."""
    findings = []
    for name, (site, length, values, kept, calls) in list(watch.obs.pinned_lists.items())[:1]:
        findings.append(Finding(
            "small views kept in a list pin large storages",
            f"after {calls} model calls `{name}` held {length} tensors, views whose values "
            f"take {format_size(values)} but keep {format_size(kept)} of storage alive", site,
            "each appended tensor is a view (an index or slice) of a larger result, and a view "
            "keeps its base's whole storage, so memory grows by a whole output per iteration",
            f"append a copy with its own storage: {name}.append(t.clone()) (or t.detach()"
            ".clone() under autograd), or reduce to what you keep before appending"))
    return findings


def optimizer_use(watch) -> list:
    """An optimizer that never steps, or that holds none of the parameters trained."""
    obs = watch.obs
    if not obs.optimizers:
        return []
    opt = obs.optimizers[0]
    site = obs.optimizer_sites.get(id(opt))
    if not obs.backwards and len(obs.steps) >= 3:
        named = _named_not_called(watch)
        return [Finding("backward() is never called", f"{len(obs.steps)} optimizer steps and "
                        "no backward pass: no parameter ever gets a gradient",
                        named or site, "`loss.backward` without parentheses only names the "
                        "method" if named else "the loss is computed but backward() is "
                        "missing", "call it: loss.backward()")]
    if len(obs.backwards) < 3:
        return []
    if not obs.steps:
        return [Finding("the optimizer never steps", f"{len(obs.backwards)} backward passes "
                        "and no optimizer.step()", obs.backwards[0].site,
                        "the gradients are computed but never applied: the weights do not "
                        "change", "call optimizer.step() after loss.backward()")]
    held = {id(p) for p in watch.optimizer_params()}
    for root in obs.roots:
        trained = [p for p in root.parameters() if p.requires_grad]
        if trained and not any(id(p) in held for p in trained) \
                and any(p.grad is not None for p in trained):
            name = obs.root_names.get(id(root)) or type(root).__name__
            return [Finding("the optimizer does not hold the model's parameters",
                            f"`{name}` has {len(trained)} parameter tensors that receive "
                            f"gradients, none of them in the optimizer built here", site,
                            "the optimizer was built over other tensors (the parameters of a "
                            "model re-created after it, or of a copy), so it updates those",
                            f"build the optimizer from {name}.parameters() after {name} is "
                            "created for good")]
    used = any(id(p) in held for root in obs.roots for p in root.parameters())
    never = not any(n is not None and n != 0     # NaN gradients were not zeroed
                    for _, norms in obs.steps for n in norms.values()) \
        and any(b.reached_parameters for b in obs.backwards)   # else: no gradient made
    if used and len(obs.steps) >= 3 and never:
        return [Finding("gradients are zeroed before the step uses them",
                        f"at each of the {len(obs.steps)} optimizer steps every gradient was "
                        f"None or zero, after {len(obs.backwards)} backward passes",
                        _line_with(watch, r"\.zero_grad\(") or obs.backwards[0].site,
                        "zero_grad() runs between loss.backward() and optimizer.step(), so "
                        "each step finds no gradient", "order each iteration as "
                        "optimizer.zero_grad(), loss.backward(), optimizer.step()")]
    return []


def _named_not_called(watch):
    """A `.backward` that is never called (no parentheses) in the user's files."""
    return _line_with(watch, r"\.backward\s*($|#|;)")


def _line_with(watch, regex: str):
    """The first line matching `regex` in the files where the user's models and optimizers
    were called and built."""
    pattern = re.compile(regex)
    files = {site.filename for site in list(watch.obs.root_sites.values())
             + list(watch.obs.optimizer_sites.values()) if site is not None}
    for filename in sorted(files):
        for n, line in enumerate(linecache.getlines(filename), 1):
            if pattern.search(line):
                return Site(filename, n)
    return None


def empty_loads(watch) -> list:
    findings = []
    for site, module, missing, unexpected in watch.obs.empty_loads:
        seen = ", ".join(repr(k) for k in unexpected[:3]) or "none"
        findings.append(Finding(
            "a checkpoint load that loaded nothing", f"load_state_dict(strict=False) into "
            f"{type(module).__name__} matched none of its {len(missing)} keys (for example "
            f"{missing[0]!r}); the checkpoint's keys: {seen}", site,
            "the keys differ (a nested dict such as {'model': ...}, or a 'module.' prefix "
            "from DataParallel), and strict=False hides it: the model keeps its initial "
            "weights", "load the right dict (checkpoint['model']) or strip the prefix, and "
            "keep strict=True so a mismatch raises"))
    return findings


def piled_hooks(watch) -> list:
    """Hooks registered again every iteration: each call runs all of them."""
    steps = len(watch.obs.backwards)
    if steps < 4:
        return []
    for root in watch.obs.roots:
        for name, m in root.named_modules():
            count = len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
            tensors = [p for p in m.parameters(recurse=False) if p._hooks]
            tensor_hooks = max((len(p._hooks) for p in tensors), default=0)
            n = max(count, tensor_hooks)
            if n >= 4 and n >= steps // 2:
                site = _registration_site(watch)
                return [Finding("hooks that pile up", f"{type(m).__name__} "
                                f"{name or '(the model)'} holds {n} hooks after {steps} "
                                "iterations", site, "a hook registered inside the training "
                                "loop is added again every iteration and never removed, so "
                                "each forward or backward runs all of them",
                                "register hooks once, before the loop, or keep the handle "
                                "and call handle.remove()")]
    return []


def _registration_site(watch):
    pattern = re.compile(r"\.register_(forward_hook|forward_pre_hook|full_backward_hook|"
                         r"backward_hook|hook)\(")
    for site in watch.obs.root_sites.values():
        if site is None:
            continue
        for n, line in enumerate(linecache.getlines(site.filename), 1):
            if pattern.search(line):
                return Site(site.filename, n)
    return None


DETECTORS = (nonfinite, gradient_scale, missing_gradients, unregistered, zeroing,
             kept_graphs, retain_graph_growth, train_eval, warned, probabilities_as_logits,
             logits_as_probabilities, logits_as_log_probabilities, wrong_dimension, optimizer_use, empty_loads,
             piled_hooks, pinned_saves, pinned_lists, data_starving)


def diagnose(watch) -> list:
    """All findings of a finished (or crashed) run, in priority order."""
    findings = []
    for detector in DETECTORS:
        try:
            found = detector(watch)
        except Exception as e:            # one detector's bug must not hide the others
            watch.obs.internal_errors.append(f"{detector.__name__}: {type(e).__name__}: {e}")
            continue
        if detector is gradient_scale and findings:
            continue              # a diverging loss or a NaN explains large gradients
        findings.extend(found)
    if any(f.kind.startswith("retain_graph") for f in findings):   # the same cause, told once
        findings = [f for f in findings if "kept with" not in f.kind]
    return findings
