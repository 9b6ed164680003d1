"""Bug: log_softmax over dim 0 (the batch) before NLLLoss."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Linear(10, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
    log_probs = F.log_softmax(model(x), dim=0)
    loss = F.nll_loss(log_probs, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
