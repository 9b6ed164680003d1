"""AdaptiveLogSoftmaxWithLoss: a softmax over many classes, cheap for the frequent ones.

The classes are split at `cutoffs` into a shortlist (the most frequent, scored by the head
directly) and clusters of rarer ones. The head scores the shortlist plus one entry per
cluster; a cluster's classes are scored by its own small two-layer projection (narrower by
`div_value` per cluster), and a class's log-probability is its cluster's head entry plus its
log-probability within the cluster.
"""
from __future__ import annotations

from collections import namedtuple

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input, target) -> (output: each target's log-probability, loss: their mean
    negative)."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection, output in self.tail:
            projection.reset_parameters()
            output.reset_parameters()

    def _check(self, input, target) -> bool:
        """Whether the call is batched; raises PyTorch's errors for bad shapes."""
        if target.dim() == 1:
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input.size()}")
            return True
        if target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input.size()}")
            return False
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input_, target_):
        batched = self._check(input_, target_)
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        n = target.size(0)
        within = input.new_zeros(n)            # log-probability inside the target's cluster
        head_column = target.new_empty(n)      # the head entry each row's target scores by
        covered = 0
        bounds = [0] + self.cutoffs
        for i, (low, high) in enumerate(zip(bounds[:-1], bounds[1:])):
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            covered += rows.numel()
            if i == 0:
                head_column.index_copy_(0, rows, target[mask])
                continue
            head_column.index_fill_(0, rows, self.shortlist_size + i - 1)
            scores = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            picked = scores.gather(1, (target[mask] - low).unsqueeze(1)).squeeze(1)
            within = within.index_copy(0, rows, picked)
        if covered != n:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head = F.log_softmax(self.head(input), dim=1)
        output = within + head.gather(1, head_column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        """Every class's log-probability: shortlist from the head, clusters through it."""
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i, cluster in enumerate(self.tail):
            cluster_prob = F.log_softmax(cluster(input), dim=1)
            parts.append(cluster_prob + head[:, self.shortlist_size + i].unsqueeze(1))
        from ...ops.registry import functions
        return functions["cat"](parts, 1)

    def log_prob(self, input):
        """(batch, n_classes) log-probabilities of every class (input 2-D, or 1-D)."""
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row (same as log_prob(input).argmax(dim=1))."""
        return self.log_prob(input).argmax(dim=-1)
