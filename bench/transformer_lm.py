"""pytorch/examples' word_language_model with its Transformer model (`--model Transformer`):
token embedding scaled by sqrt(d), sinusoidal positions, a causal nn.TransformerEncoder,
a linear decoder and log_softmax, trained with NLL loss, gradient clipping and plain SGD.

The example's defaults (200-wide embedding and feed-forward, 2 heads, 2 layers, sequence 35,
batch 20) with recurrent.py's vocabulary of 1000 and no dropout (its noise differs between
libraries), so the check compares the loss, every gradient and every weight after the step.
"""
from __future__ import annotations

import math

import numpy as np

from .harness import Target, Workload
from .recurrent import BATCH, BPTT, VOCAB, clipped_sgd_step
from .training import copied_model

EMSIZE, NHEAD, NHID, NLAYERS = 200, 2, 200, 2


def transformer_model(lib):
    nn = lib.nn

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, max_len=5000):
            super().__init__()
            position = lib.arange(0, max_len, dtype=lib.float).unsqueeze(1)
            div_term = lib.exp(lib.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe = lib.zeros(max_len, d_model)
            pe[:, 0::2] = lib.sin(position * div_term)
            pe[:, 1::2] = lib.cos(position * div_term)
            self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

        def forward(self, x):
            return x + self.pe[:x.size(0), :]

    class TransformerModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos_encoder = PositionalEncoding(EMSIZE)
            layer = nn.TransformerEncoderLayer(EMSIZE, NHEAD, NHID, dropout=0.0)
            self.transformer_encoder = nn.TransformerEncoder(layer, NLAYERS,
                                                             enable_nested_tensor=False)
            self.encoder = nn.Embedding(VOCAB, EMSIZE)
            self.decoder = nn.Linear(EMSIZE, VOCAB)

        def forward(self, src, mask):
            src = self.pos_encoder(self.encoder(src) * math.sqrt(EMSIZE))
            output = self.decoder(self.transformer_encoder(src, mask))
            return nn.functional.log_softmax(output, dim=-1)
    return TransformerModel()


def _transformer_step(lib):
    rng = np.random.default_rng(13)
    data = rng.integers(0, VOCAB, (BPTT, BATCH))
    targets = rng.integers(0, VOCAB, BPTT * BATCH)
    model = copied_model(lib, transformer_model)
    inputs, labels = lib.from_numpy(data), lib.from_numpy(targets)
    mask = lib.nn.Transformer.generate_square_subsequent_mask(BPTT)
    return clipped_sgd_step(lib, model, lambda: lib.nn.functional.nll_loss(
        model(inputs, mask).view(-1, VOCAB), labels))


WORKLOADS = [
    Workload("transformer_lm", f"word_language_model step, Transformer: {NLAYERS} layers, "
             f"d {EMSIZE}, {NHEAD} heads, ff {NHID}, seq {BPTT}, batch {BATCH}, vocab {VOCAB}, "
             "causal mask, SGD + clipping", _transformer_step, Target(2.0), rtol=1e-4, atol=1e-5),
]
