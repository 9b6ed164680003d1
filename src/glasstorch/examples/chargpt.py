"""Train a tiny character-level GPT on Python's own source code:
`python -m glasstorch.examples.chargpt`.

The text is a few modules of the Python standard library (always there, no download). The
model is a decoder-only transformer (token and position embeddings, causal self-attention
blocks with pre-LayerNorm, a tied-free output head) trained with AdamW, a cosine learning
rate with linear warm-up and gradient clipping. The run ends with a sample of generated
text; `--resume` continues from the checkpoint. Written as one would with PyTorch.
"""
from __future__ import annotations

import math
import os

import glasstorch as torch
import glasstorch.nn.functional as F
from glasstorch import nn

from ._training import Progress, example_parser, load_checkpoint, save_checkpoint

SOURCES = ("textwrap.py", "string.py", "heapq.py", "bisect.py", "fnmatch.py", "shlex.py",
           "colorsys.py", "glob.py", "keyword.py", "numbers.py")


def load_text() -> str:
    folder = os.path.dirname(os.__file__)
    parts = []
    for name in SOURCES:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                parts.append(f.read())
    return "\n".join(parts)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, dropout: float):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
                   for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, dropout: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * d_model, d_model), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, block_size: int, d_model=128, n_head=4, n_layer=2,
                 dropout=0.1):
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(d_model, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(torch.arange(t, device=idx.device)))
        return self.head(self.ln_f(self.blocks(x)))

    @torch.no_grad()
    def generate(self, idx, steps: int, temperature: float = 0.8):
        for _ in range(steps):
            logits = self(idx[:, -self.block_size:])[:, -1] / temperature
            idx = torch.cat([idx, torch.multinomial(F.softmax(logits, dim=-1), 1)], dim=1)
        return idx


def warmup_cosine(warmup: int, total: int):
    """The learning-rate factor: linear warm-up, then cosine decay to a tenth."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))
    return factor


def main(argv=None) -> float:
    parser = example_parser("chargpt", __doc__)
    parser.add_argument("--steps", type=int, default=250,
                        help="total optimizer steps to have taken, counting those in a "
                             "resumed checkpoint")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per step")
    parser.add_argument("--block-size", type=int, default=64,
                        help="context length in characters")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW's peak learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and batches")
    parser.add_argument("--sample-length", type=int, default=300,
                        help="characters generated at the end")
    parser.add_argument("--checkpoint", default="chargpt-checkpoint.pt",
                        help="file written when training ends")
    parser.add_argument("--resume", action="store_true",
                        help="continue from --checkpoint up to --steps in all")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    args = parser.parse_args(argv)
    device = torch.device(args.device)

    torch.manual_seed(args.seed)
    text = load_text()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.int64)
    split = int(0.9 * len(data))
    train, valid = data[:split], data[split:]

    def batch(source):
        starts = torch.randint(0, len(source) - args.block_size - 1, (args.batch_size,))
        rows = starts.unsqueeze(1) + torch.arange(args.block_size + 1)
        chunk = source[rows].to(device)
        return chunk[:, :-1], chunk[:, 1:]

    model = GPT(len(chars), args.block_size).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1,
                                  betas=(0.9, 0.95))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer,
                                                 warmup_cosine(args.steps // 10, args.steps))
    first = 0
    if args.resume:
        first = load_checkpoint(args.checkpoint, model, optimizer, schedule,
                                map_location=device)["step"]
        print(f"resumed from {args.checkpoint} at step {first}")
        if first >= args.steps:
            print(f"the checkpoint has already taken {first} steps and --steps {args.steps} "
                  f"is the total: nothing to train (pass --steps {first + 100}, say, to "
                  f"train 100 more)")

    last = max(args.steps, first)
    progress = Progress(total=last, desc="char GPT", initial=first)
    for step in range(first, args.steps):
        x, y = batch(train)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        progress.step(loss.item(), x.numel())
    seconds = progress.close()
    save_checkpoint(args.checkpoint, model, optimizer, schedule, step=last)

    model.eval()
    with torch.no_grad():
        x, y = batch(valid)
        valid_loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
    prompt = torch.tensor([[index[c] for c in "def "]], device=device)
    sample = "".join(chars[i] for i in model.generate(prompt, args.sample_length)[0].tolist())
    print(f"trained {last - first} steps in {seconds:.1f} s; checkpoint: {args.checkpoint}")
    print(f"validation loss: {valid_loss:.3f} nats/char ({len(chars)} distinct characters)")
    print("sample:\n" + sample)
    return valid_loss


if __name__ == "__main__":
    main()
