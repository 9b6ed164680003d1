"""Clean: a tiny causal transformer: -inf masking before softmax, two losses with retain_graph,
in-place ops on fresh tensors, a checkpoint saved and loaded."""
import io
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2)
V, D, T = 11, 16, 8

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.norm = nn.LayerNorm(D)
        self.register_buffer("mask", torch.triu(torch.ones(T, T), diagonal=1).bool())

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        att = q @ k.transpose(-2, -1) / math.sqrt(D)
        att = att.masked_fill(self.mask, float("-inf"))
        h = F.softmax(att, dim=-1) @ v
        return x + self.proj(h)

class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.out = nn.Linear(D, V)

    def forward(self, idx):
        x = self.tok(idx)
        for b in self.blocks:
            x = b(x)
        return self.out(x)

model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(10):
    idx = torch.randint(0, V, (4, T))
    logits = model(idx)
    loss_a = F.cross_entropy(logits.reshape(-1, V), idx.reshape(-1))
    loss_b = logits.pow(2).mean() * 1e-3
    opt.zero_grad()
    loss_a.backward(retain_graph=True)
    loss_b.backward()
    opt.step()
    scores = torch.zeros(4)
    scores.add_(1.0)
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
model.load_state_dict(torch.load(buf))
