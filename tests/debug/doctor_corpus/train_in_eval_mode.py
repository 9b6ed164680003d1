"""Bug: model.eval() for validation, and no model.train() before the next epoch."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
model.train()
for epoch in range(3):
    for i in range(0, 64, 16):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i:i + 16]), y[i:i + 16])
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
