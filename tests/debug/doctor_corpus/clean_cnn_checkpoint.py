"""Clean: a small CNN with batch norm, model.eval()/model.train() around validation, ReLU(inplace),
a scheduler stepped after the optimizer, and a checkpoint round trip through a file."""
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 3, (16,))
for epoch in range(3):
    model.train()
    for i in range(0, 16, 8):
        opt.zero_grad()
        loss = F.cross_entropy(model(x[i:i + 8]), y[i:i + 8])
        loss.backward()
        opt.step()
    sched.step()
    model.eval()
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x), y).item()
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
state = torch.load(path)
model.load_state_dict(state["model"])
opt.load_state_dict(state["opt"])
