"""nanoGPT's model (Karpathy's `model.py`: GPT with pre-norm blocks of causal self-attention
and a GELU MLP, LayerNorm with an optional bias, the language-model head tied to the token
embedding) at its small configuration, and its optimizer setup (AdamW, weight decay on the
matrices only). Written here from that structure, for either library.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class GPTConfig:
    block_size: int = 32
    vocab_size: int = 65          # shakespeare_char's alphabet
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0
    bias: bool = True


BATCH = 8
CONFIG = GPTConfig()


def build(lib, config: GPTConfig = CONFIG):
    nn, F = lib.nn, lib.nn.functional

    class LayerNorm(nn.Module):
        """LayerNorm whose bias can be switched off (PyTorch's could not, once)."""

        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(ndim))
            self.bias = nn.Parameter(lib.zeros(ndim)) if bias else None

        def forward(self, x):
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(config.n_embd, dim=2)
            heads = config.n_head
            k = k.view(b, t, heads, c // heads).transpose(1, 2)
            q = q.view(b, t, heads, c // heads).transpose(1, 2)
            v = v.view(b, t, heads, c // heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=config.dropout, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(b, t, c)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention()
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block() for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight      # weight tying
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx):
            b, t = idx.size()
            pos = lib.arange(0, t, dtype=lib.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return logits.view(-1, logits.size(-1))    # the step's cross_entropy flattens
    return GPT()


def optimizer(lib, parameters, weight_decay=0.1, learning_rate=1e-3, betas=(0.9, 0.99)):
    """nanoGPT's configure_optimizers: decay every parameter of 2 or more dimensions."""
    params = list(parameters)
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=learning_rate, betas=betas)
