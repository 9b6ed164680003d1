"""Bug: a distance computed as the square root of a squared sum, inside a module: identical
pairs give distance 0, where the root's derivative is infinite, and the gradients turn NaN."""
import torch
import torch.nn as nn


class PairDistance(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, a, b):
        d = self.proj(a) - self.proj(b)
        return (d ** 2).sum(-1).pow(0.5)


torch.manual_seed(0)
model = PairDistance()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
a = torch.randn(8, 4)
b = a.clone()
b[4:] += torch.randn(4, 4)          # the first four pairs are identical
for step in range(3):
    loss = (model(a, b) - 1.0).abs().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
