"""minGPT's sorting demo (Karpathy's minGPT, `projects`' demo notebook): the `gpt-nano` model
(3 layers, 3 heads, n_embd 48) learns to sort 6 digits of 0-2 with its Trainer's step (AdamW
with decay on the Linear weights only, betas (0.9, 0.95), gradient clipping at 1.0).

minGPT writes its attention and its GELU out of small ops (a masked_fill on a stored causal
mask, softmax, a tanh GELU of five pointwise ops), so the step is a long chain of small
calls: what the issue's "minGPT, the sorting demo" row measures. Written here from that
structure, for either library; no dropout (its noise differs between libraries), and the
prompt's targets are -100 where minGPT writes -1 with ignore_index=-1 (the same loss).
"""
from __future__ import annotations

import math

import numpy as np

from .harness import Case, Target, Workload
from .training import STEP_ATOL, STEP_RTOL, copied_model, expected_weights, step_error

LENGTH, DIGITS, BATCH = 6, 3, 64
BLOCK, N_LAYER, N_HEAD, N_EMBD = 2 * LENGTH - 1, 3, 3, 48


def build(lib):
    nn, F = lib.nn, lib.nn.functional

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi)
                                             * (x + 0.044715 * lib.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD)
            self.c_proj = nn.Linear(N_EMBD, N_EMBD)
            self.register_buffer("bias", lib.tril(lib.ones(BLOCK, BLOCK))
                                 .view(1, 1, BLOCK, BLOCK))

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(N_EMBD, dim=2)
            k = k.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
            q = q.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
            v = v.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(N_EMBD)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(N_EMBD)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(N_EMBD, 4 * N_EMBD),
                                          c_proj=nn.Linear(4 * N_EMBD, N_EMBD),
                                          act=NewGELU()))

        def forward(self, x):
            m = self.mlp
            x = x + self.attn(self.ln_1(x))
            return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(DIGITS, N_EMBD), wpe=nn.Embedding(BLOCK, N_EMBD),
                h=nn.ModuleList([Block() for _ in range(N_LAYER)]), ln_f=nn.LayerNorm(N_EMBD)))
            self.lm_head = nn.Linear(N_EMBD, DIGITS, bias=False)
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * N_LAYER))

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def forward(self, idx, targets):
            t = idx.size(1)
            pos = lib.arange(0, t, dtype=lib.long, device=idx.device).unsqueeze(0)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    return GPT()


def decays(model) -> list:
    """minGPT's configure_optimizers splits by module: the Linear layers' weights decay;
    biases, LayerNorm and Embedding weights do not. One flag per parameter, in order."""
    linear = {id(m.weight) for m in model.modules() if isinstance(m, type(model.lm_head))}
    return [id(p) in linear for p in model.parameters()]


def optimizer(lib, params, flags):
    params = list(params)
    groups = [{"params": [p for p, d in zip(params, flags) if d], "weight_decay": 0.1},
              {"params": [p for p, d in zip(params, flags) if not d], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=5e-4, betas=(0.9, 0.95))


def sort_batch(rng) -> tuple:
    """A batch of SortDataset's examples: the digits then their sorted order, shifted by one;
    the prompt's positions are not predicted."""
    digits = rng.integers(0, DIGITS, (BATCH, LENGTH))
    whole = np.concatenate([digits, np.sort(digits, axis=1)], axis=1)
    x, y = whole[:, :-1].copy(), whole[:, 1:].copy()
    y[:, :LENGTH - 1] = -100
    return x, y


def _step(lib):
    x, y = sort_batch(np.random.default_rng(14))
    model = copied_model(lib, build)
    params = list(model.parameters())
    initial = [p.detach().numpy().copy() for p in params]
    flags = decays(model)
    opt = optimizer(lib, params, flags)
    inputs, targets = lib.from_numpy(x), lib.from_numpy(y)

    def call():
        loss = model(inputs, targets)
        model.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    def observe(loss):
        grads = [p.grad for p in params]
        expected = expected_weights(lambda lib, p: optimizer(lib, p, flags), initial, grads)
        return (loss.detach(), *grads, *(step_error(p.detach(), e, w0)
                                          for p, e, w0 in zip(params, expected, initial)))
    return Case(call, observe)


WORKLOADS = [
    Workload("mingpt", f"minGPT sorting demo step: gpt-nano ({N_LAYER} layers, {N_HEAD} heads, "
             f"n_embd {N_EMBD}), block {BLOCK}, batch {BATCH}, AdamW, clipping 1.0",
             _step, Target(1.3), rtol=STEP_RTOL, atol=STEP_ATOL),
]
