"""Bug: an RMSE loss whose square root meets exactly 0: its derivative is infinite and the
gradients turn NaN in the backward pass."""
import torch

torch.manual_seed(0)
w = torch.zeros(2, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
X, y = torch.zeros(10, 2), torch.zeros(10)
for i in range(3):
    loss = torch.sqrt(((X @ w - y) ** 2).mean())
    opt.zero_grad()
    loss.backward()
    opt.step()
