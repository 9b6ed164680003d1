"""Bug: BCELoss on a linear layer's raw scores, no sigmoid: they happen to lie in [0, 1] at this
seed, so nothing fails, but the loss and its gradients are wrong."""
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
loss_fn = nn.BCELoss()
opt = torch.optim.Adam(model.parameters())
X, y = torch.randn(64, 6), torch.randint(0, 2, (64, 1)).float()
for i in range(5):
    opt.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    opt.step()
