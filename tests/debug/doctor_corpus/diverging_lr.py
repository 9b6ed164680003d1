"""Bug: a learning rate far too large for a linear regression."""
import torch

torch.manual_seed(0)
X = torch.randn(128, 3) * 3
true_w = torch.tensor([[2.0], [-1.0], [0.5]])
Y = X @ true_w + 0.1 * torch.randn(128, 1)
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
loss_fn = torch.nn.MSELoss()
for epoch in range(60):
    optimizer.zero_grad()
    loss = loss_fn(model(X), Y)
    loss.backward()
    optimizer.step()
