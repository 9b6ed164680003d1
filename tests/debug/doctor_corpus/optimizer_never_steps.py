"""Bug: the training loop computes gradients and never calls optimizer.step()."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(5):
    optimizer.zero_grad()
    loss = (model(torch.randn(16, 4)) - 1).pow(2).mean()
    loss.backward()
