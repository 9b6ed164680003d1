"""Training-step workloads: an MLP with Adam, a small CNN with SGD + momentum, a tiny GPT
with AdamW.

The model code takes the library module `lib` and uses only what both libraries share
(`lib.nn` modules and functional calls), so one definition builds both models. The weights
come from one seeded torch build and are copied into each library's model, so both start
from identical parameters; the check compares the first step's loss and every gradient
with torch's, then the weights after the optimizer's step with the weights torch's optimizer
makes from the same start and the library's own gradients. Comparing the weights with
torch's weights instead would be fragile: Adam's first step moves each weight by about
lr * g / (|g| + eps), so a gradient near zero that differs from torch's by 1e-9 (well within
the gradients' tolerance) moves a weight by a tenth of lr.
"""
from __future__ import annotations

import hashlib
import os
from typing import Optional

import numpy as np

from . import nanogpt
from .harness import STATE_DIR_ENV, Case, Target, Workload, to_numpy
from .workloads import array


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


VOCAB, D_MODEL, HEADS, BLOCKS, SEQ, GPT_BATCH = 65, 128, 4, 2, 64, 16


def gpt(lib):
    """A pre-norm GPT: token + position embeddings, blocks of causal self-attention and a
    GELU MLP, a final LayerNorm and a linear head."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
            self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
            self.proj = nn.Linear(D_MODEL, D_MODEL)
            self.fc = nn.Linear(D_MODEL, 4 * D_MODEL)
            self.out = nn.Linear(4 * D_MODEL, D_MODEL)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (h.view(b, t, HEADS, c // HEADS).transpose(1, 2)
                       for h in self.qkv(self.ln1(x)).split(c, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, D_MODEL)
            self.pos = nn.Embedding(SEQ, D_MODEL)
            self.blocks = nn.Sequential(*[Block() for _ in range(BLOCKS)])
            self.ln = nn.LayerNorm(D_MODEL)
            self.head = nn.Linear(D_MODEL, VOCAB)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1], device=idx.device))
            return self.head(self.ln(self.blocks(x))).flatten(0, 1)
    return GPT()


def _state_file(build) -> Optional[str]:
    """Where `reference_state(build)` is kept while a WorkerPool runs (None otherwise): named
    by the builder and the values it closes over (word_language_model's "LSTM" or "GRU")."""
    directory = os.environ.get(STATE_DIR_ENV)
    if not directory:
        return None
    cells = [repr(c.cell_contents) for c in build.__closure__ or ()]
    key = "|".join([build.__module__, build.__qualname__, *cells])
    return os.path.join(directory, hashlib.sha1(key.encode()).hexdigest()[:16] + ".npz")


def reference_state(build) -> dict:
    """The weights of a seeded torch build, as NumPy arrays. Under a WorkerPool they are
    also saved, so that the worker timing glasstorch loads them instead of importing torch."""
    path = _state_file(build)
    if path and os.path.exists(path):
        with np.load(path) as saved:
            return dict(saved)
    import torch
    torch.manual_seed(0)
    state = {k: v.detach().numpy().copy() for k, v in build(torch).state_dict().items()}
    if path:
        np.savez(path, **state)
    return state


def copied_model(lib, build):
    model = build(lib)
    model.load_state_dict({k: lib.from_numpy(v.copy())
                           for k, v in reference_state(build).items()})
    return model


def expected_weights(make_optimizer, initial: list, grads: list) -> list:
    """The weights (NumPy) one step of torch's optimizer makes from weights `initial` (NumPy)
    with gradients `grads` (either library's tensors, or None)."""
    import torch
    params = [torch.from_numpy(w.copy()).requires_grad_() for w in initial]
    for p, g in zip(params, grads):
        p.grad = None if g is None else torch.from_numpy(to_numpy(g).copy())
    make_optimizer(torch, params).step()
    return [p.detach().numpy() for p in params]


def step_error(weights, expected: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """How far `weights` are from `expected`, relative to each weight's size plus its move
    (the scale of float32 rounding in an optimizer's update): 0 for torch, a few float32
    epsilons for a correct optimizer, about the relative size of a wrong term otherwise."""
    weights = to_numpy(weights)
    scale = np.abs(expected) + np.abs(expected - initial)
    return (weights - expected) / np.maximum(scale, np.finfo(scale.dtype).tiny)


def training_step(build, make_optimizer, x, y, device="cpu"):
    """The setup of one training step of `build`'s model on inputs `x`, targets `y`, with
    the optimizer `make_optimizer(lib, parameters)` makes."""
    def setup(lib):
        model = copied_model(lib, build).to(device)
        params = list(model.parameters())
        initial = [to_numpy(p).copy() for p in params]
        optimizer = make_optimizer(lib, params)
        inputs = lib.from_numpy(x.copy()).to(device)
        targets = lib.from_numpy(y.copy()).to(device)
        cross_entropy = lib.nn.functional.cross_entropy

        def call():
            optimizer.zero_grad()
            loss = cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
            return loss

        def observe(loss):
            grads = [p.grad for p in params]
            expected = expected_weights(make_optimizer, initial, grads)
            return (loss.detach(), *grads, *(step_error(p.detach(), e, w0)
                                              for p, e, w0 in zip(params, expected, initial)))
        return Case(call, observe)
    return setup


STEP_RTOL, STEP_ATOL = 1e-4, 1e-6
"""The steps' check: outputs are (loss, grads..., step errors...); rtol and atol for the loss
and gradients; for the step errors (compared with torch's zeros) atol is a relative error of
the weights, about 8 float32 epsilons."""


_rng = np.random.default_rng(7)
STEPS = {   # name: (model, optimizer, inputs, targets)
    "mlp": (mlp, lambda lib, p: lib.optim.Adam(p, lr=1e-3), array((128, 784), 3),
            _rng.integers(0, 10, 128)),
    "cnn": (cnn, lambda lib, p: lib.optim.SGD(p, lr=0.01, momentum=0.9),
            array((64, 1, 28, 28), 4), _rng.integers(0, 10, 64)),
    "gpt": (gpt, lambda lib, p: lib.optim.AdamW(p, lr=1e-3),
            _rng.integers(0, VOCAB, (GPT_BATCH, SEQ)), _rng.integers(0, VOCAB, GPT_BATCH * SEQ)),
    "nanogpt": (nanogpt.build, nanogpt.optimizer,
                _rng.integers(0, nanogpt.CONFIG.vocab_size,
                              (nanogpt.BATCH, nanogpt.CONFIG.block_size)),
                _rng.integers(0, nanogpt.CONFIG.vocab_size,
                              nanogpt.BATCH * nanogpt.CONFIG.block_size)),
}


def step_setup(name: str, device="cpu"):
    """The setup of training step `name` (a key of STEPS) with model and data on `device`."""
    return training_step(*STEPS[name], device)


WORKLOADS = [
    Workload("mlp", "MLP step: batch 128, 784-256-256-10, ReLU, cross_entropy, Adam",
             step_setup("mlp"), Target(1.1), rtol=STEP_RTOL, atol=STEP_ATOL),
    Workload("cnn", "CNN step: batch 64, 1x28x28, 2 conv + maxpool, linear, SGD momentum 0.9",
             step_setup("cnn"), Target(1.3), rtol=STEP_RTOL, atol=STEP_ATOL),
    Workload("gpt", f"tiny GPT step: {BLOCKS} blocks, d={D_MODEL}, {HEADS} heads, seq {SEQ}, "
             f"batch {GPT_BATCH}, vocab {VOCAB}, AdamW",
             step_setup("gpt"), Target(1.2), rtol=STEP_RTOL, atol=STEP_ATOL),
    Workload("nanogpt", "nanoGPT step (its model.py, small config): 2 layers, n_embd 64, "
             "4 heads, block 32, batch 8, tied head, AdamW with decay groups",
             step_setup("nanogpt"), Target(1.3), rtol=STEP_RTOL, atol=STEP_ATOL),
]
