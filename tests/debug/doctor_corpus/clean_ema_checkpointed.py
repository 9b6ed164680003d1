"""Clean: checkpointed residual blocks, an EMA copy updated in place under no_grad, label
smoothing, a DataLoader, and a checkpoint saved and loaded back."""
import copy, os, tempfile
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
        self.norm = nn.LayerNorm(16)
    def forward(self, x):
        return x + checkpoint(self.f, self.norm(x), use_reentrant=False)
model = nn.Sequential(Block(), Block(), nn.Linear(16, 4))
ema = copy.deepcopy(model)
for p in ema.parameters():
    p.requires_grad_(False)
ds = TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,)))
dl = DataLoader(ds, batch_size=32, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
crit = nn.CrossEntropyLoss(label_smoothing=0.1)
for epoch in range(3):
    model.train()
    for xb, yb in dl:
        opt.zero_grad()
        loss = crit(model(xb), yb)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.99).add_(pm, alpha=0.01)
    ema.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in dl:
            correct += (ema(xb).argmax(1) == yb).sum().item()
path = os.path.join(tempfile.mkdtemp(), "ck.pt")
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}, path)
ck = torch.load(path)
model.load_state_dict(ck["model"]); opt.load_state_dict(ck["opt"])
print(correct)
