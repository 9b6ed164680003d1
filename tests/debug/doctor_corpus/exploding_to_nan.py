"""Bug: twelve linear layers initialised with std 1.0: the first gradients are ~1e17, the first
step throws the weights so far that the second forward overflows to NaN."""
import torch, torch.nn as nn
torch.manual_seed(0)
layers = []
for i in range(12):
    lin = nn.Linear(32, 32)
    nn.init.normal_(lin.weight, std=1.0)
    layers += [lin]
model = nn.Sequential(*layers)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(16, 32), torch.randn(16, 32)
for i in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
