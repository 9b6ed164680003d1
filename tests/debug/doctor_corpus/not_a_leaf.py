"""Bug: weights scaled after requires_grad=True are not leaves: their .grad stays None."""
import torch

torch.manual_seed(0)
X = torch.randn(50, 3)
Y = X @ torch.tensor([[1.0], [2.0], [3.0]])
w = torch.randn(3, 1, requires_grad=True) * 0.01
b = torch.zeros(1, requires_grad=True)
lr = 0.1
for epoch in range(10):
    loss = ((X @ w + b - Y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
