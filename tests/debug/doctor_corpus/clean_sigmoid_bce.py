"""Clean: BCELoss given probabilities — a Sigmoid layer at the end of one model, and
torch.sigmoid of a linear layer's scores (squeezed) in another."""
import torch
import torch.nn as nn

torch.manual_seed(0)
first = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
second = nn.Linear(6, 1)
loss_fn = nn.BCELoss()
opt = torch.optim.Adam(list(first.parameters()) + list(second.parameters()), lr=1e-2)
X, y = torch.randn(64, 6), torch.randint(0, 2, (64, 1)).float()
for i in range(10):
    opt.zero_grad()
    loss = loss_fn(first(X), y) + loss_fn(torch.sigmoid(second(X)).squeeze(1), y.squeeze(1))
    loss.backward()
    opt.step()
print(loss.item())
