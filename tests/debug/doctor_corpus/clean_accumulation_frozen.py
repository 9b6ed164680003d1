"""Clean: gradient accumulation over 4 batches, a frozen embedding, detach() for an EMA copy."""
import copy
import torch
import torch.nn as nn

torch.manual_seed(1)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.embed.requires_grad_(False)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.embed(x)))

model = Net()
ema = copy.deepcopy(model)
opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
accum = 4
for i in range(24):
    x = torch.randn(16, 8)
    target = (x.sum(1, keepdim=True) * 0.5).detach()
    loss = ((model(x) - target) ** 2).mean() / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.9).add_(p.detach(), alpha=0.1)
