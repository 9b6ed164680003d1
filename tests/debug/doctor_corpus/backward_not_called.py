"""Bug: `loss.backward` without parentheses: no gradient is ever computed."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    opt.zero_grad()
    loss = (model(torch.randn(4, 3)) - 1).pow(2).mean()
    loss.backward
    opt.step()
