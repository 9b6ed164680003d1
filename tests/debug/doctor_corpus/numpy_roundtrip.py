"""Bug: an activation computed in NumPy: the round trip cuts the graph below it."""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
first, second = nn.Linear(6, 12), nn.Linear(12, 1)
opt = torch.optim.Adam([*first.parameters(), *second.parameters()], lr=1e-3)
for step in range(5):
    x = torch.randn(16, 6)
    hidden = torch.from_numpy(np.tanh(first(x).detach().numpy()))
    loss = second(hidden).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
