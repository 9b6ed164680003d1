"""Recurrent training steps: pytorch/examples' word_language_model (a 2-layer LSTM, GRU or
tanh RNN language model, SGD with gradient clipping) and time_sequence_prediction (two
LSTMCells stepped in a Python loop, float64; also with GRUCells and RNNCells).

As in training.py, one model definition builds both libraries' models and the weights of a
seeded torch build are copied into each; the check compares the loss, every gradient and
every weight after the step. There is no dropout (its noise differs between libraries).
"""
from __future__ import annotations

import numpy as np

from .harness import Case, Target, Workload
from .training import copied_model

VOCAB, EMBED, HIDDEN, LAYERS, BPTT, BATCH = 1000, 32, 64, 2, 35, 20
CELL_HIDDEN, CELL_BATCH, CELL_STEPS = 51, 97, 50


def language_model(kind: str):
    """word_language_model's RNNModel: embedding, a 2-layer `kind` ("LSTM", "GRU" or "RNN",
    the tanh RNN), decoder."""
    def build(lib):
        nn = lib.nn

        class RNNModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Embedding(VOCAB, EMBED)
                self.rnn = getattr(nn, kind)(EMBED, HIDDEN, LAYERS)
                self.decoder = nn.Linear(HIDDEN, VOCAB)

            def forward(self, input, hidden):
                output, hidden = self.rnn(self.encoder(input), hidden)
                return self.decoder(output).view(-1, VOCAB), hidden
        return RNNModel()
    return build


def _lm_step(kind: str):
    rng = np.random.default_rng(11)
    data = rng.integers(0, VOCAB, (BPTT, BATCH))
    targets = rng.integers(0, VOCAB, BPTT * BATCH)

    def setup(lib):
        model = copied_model(lib, language_model(kind))
        inputs, labels = lib.from_numpy(data.copy()), lib.from_numpy(targets.copy())
        state = lib.zeros(LAYERS, BATCH, HIDDEN)
        hidden = (state, state.clone()) if kind == "LSTM" else state
        return clipped_sgd_step(lib, model, lambda: lib.nn.functional.cross_entropy(
            model(inputs, hidden)[0], labels))
    return setup


def clipped_sgd_step(lib, model, loss_of) -> Case:
    """word_language_model's training step: the loss `loss_of()` computes, its backward,
    gradients clipped to norm 0.25, plain SGD at lr 20; observed: loss, gradients, weights."""
    params = list(model.parameters())

    def call():
        model.zero_grad()
        loss = loss_of()
        loss.backward()
        lib.nn.utils.clip_grad_norm_(params, 0.25)
        with lib.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-20.0)
        return loss

    def observe(loss):
        return (loss.detach(), *(p.grad for p in params), *(p.detach() for p in params))
    return Case(call, observe)


def sequence_model(kind: str):
    """time_sequence_prediction's Sequence: two cells of `kind` ("LSTMCell", "GRUCell",
    "RNNCell") and a linear read-out per step."""
    def build(lib):
        nn = lib.nn

        class Sequence(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell1 = getattr(nn, kind)(1, CELL_HIDDEN)
                self.cell2 = getattr(nn, kind)(CELL_HIDDEN, CELL_HIDDEN)
                self.linear = nn.Linear(CELL_HIDDEN, 1)

            def forward(self, input):
                n = input.size(0)
                h = c = h2 = c2 = lib.zeros(n, CELL_HIDDEN, dtype=lib.double)
                outputs = []
                for x in input.split(1, dim=1):
                    if kind == "LSTMCell":
                        h, c = self.cell1(x, (h, c))
                        h2, c2 = self.cell2(h, (h2, c2))
                    else:
                        h = self.cell1(x, h)
                        h2 = self.cell2(h, h2)
                    outputs.append(self.linear(h2))
                return lib.cat(outputs, dim=1)
        return Sequence()
    return build


def _cell_step(kind: str):
    def setup(lib):
        rng = np.random.default_rng(12)
        wave = np.sin(rng.integers(-4, 4, (CELL_BATCH, 1)) + np.arange(CELL_STEPS + 1) / 20.0)
        model = copied_model(lib, sequence_model(kind)).double()
        inputs, targets = lib.from_numpy(wave[:, :-1].copy()), lib.from_numpy(wave[:, 1:].copy())
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
        params = list(model.parameters())

        def call():
            optimizer.zero_grad()
            loss = lib.nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            return loss

        def observe(loss):
            return (loss.detach(), *(p.grad for p in params), *(p.detach() for p in params))
        return Case(call, observe)

    return setup

WORKLOADS = [
    Workload("lstm", f"word_language_model step: {LAYERS}-layer LSTM, embedding {EMBED}, "
             f"hidden {HIDDEN}, seq {BPTT}, batch {BATCH}, vocab {VOCAB}, SGD + clipping",
             _lm_step("LSTM"), Target(2.0), rtol=1e-4, atol=1e-5),
    Workload("gru", f"word_language_model step with a {LAYERS}-layer GRU (shapes as lstm)",
             _lm_step("GRU"), Target(2.0), rtol=1e-4, atol=1e-5),
    Workload("rnn", f"word_language_model step with a {LAYERS}-layer tanh RNN (shapes as "
             "lstm)", _lm_step("RNN"), Target(2.0), rtol=1e-4, atol=1e-5),
    Workload("lstmcell", f"time_sequence_prediction step: 2 LSTMCells ({CELL_HIDDEN}) looped "
             f"over {CELL_STEPS} steps, batch {CELL_BATCH}, float64, MSE, SGD",
             _cell_step("LSTMCell"), Target(2.0), rtol=1e-7, atol=1e-9),
    Workload("grucell", "the lstmcell step with 2 GRUCells", _cell_step("GRUCell"),
             Target(2.0), rtol=1e-7, atol=1e-9),
    Workload("rnncell", "the lstmcell step with 2 tanh RNNCells", _cell_step("RNNCell"),
             Target(2.0), rtol=1e-7, atol=1e-9),
]
