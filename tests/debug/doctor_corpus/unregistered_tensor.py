"""Bug: a learnable scale kept as a plain tensor, not an nn.Parameter."""
import torch
import torch.nn as nn

class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = torch.ones(3, requires_grad=True)

    def forward(self, x):
        return self.lin(x) * self.scale

model = Scaled()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    opt.zero_grad()
    x = torch.randn(6, 3)
    loss = (model(x) - 2 * x).pow(2).mean()
    loss.backward()
    opt.step()
