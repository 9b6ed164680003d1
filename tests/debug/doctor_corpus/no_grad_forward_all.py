"""Bug: the forward runs once under torch.no_grad(), and requires_grad_() on the loss hides
that no graph reaches the model: no parameter ever gets a gradient."""
import torch, torch.nn as nn
model = nn.Linear(5, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
X, Y = torch.randn(40, 5), torch.randn(40, 1)
with torch.no_grad():
    preds = model(X)
for i in range(5):
    loss = ((preds - Y) ** 2).mean().requires_grad_()
    opt.zero_grad(); loss.backward(); opt.step()
