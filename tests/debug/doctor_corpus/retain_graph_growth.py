"""Bug: a running total of losses, backward with retain_graph=True each iteration: every
backward walks the graphs of all earlier iterations again."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
running = torch.zeros(())
opt.zero_grad()
for i in range(12):
    x = torch.randn(8, 4)
    loss = model(x).pow(2).mean()
    running = running + loss
    running.backward(retain_graph=True)
opt.step()
