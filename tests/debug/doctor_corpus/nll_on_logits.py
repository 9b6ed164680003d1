"""Bug: NLLLoss given raw scores instead of log-probabilities."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
criterion = nn.NLLLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(6):
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
