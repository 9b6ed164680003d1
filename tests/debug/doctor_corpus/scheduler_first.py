"""Bug: the scheduler is stepped before the optimizer."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
for epoch in range(4):
    scheduler.step()
    opt.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    opt.step()
