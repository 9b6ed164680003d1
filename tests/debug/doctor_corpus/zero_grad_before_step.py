"""Bug: zero_grad() between backward() and step(): every step sees no gradient."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    loss = (model(torch.randn(16, 5)) - 1).pow(2).mean()
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
