"""Bug: model.eval() called before the training loop: dropout never regularises."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 2))
model.eval()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(6):
    x, y = torch.randn(32, 10), torch.randint(0, 2, (32,))
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
