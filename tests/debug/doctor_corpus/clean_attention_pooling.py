"""Clean: attention pooling over time with softmax over dim 0 of a [T, B] score tensor (the
time axis, as meant), a DataLoader over in-memory tensors, a small slice saved as a clone."""
import io
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(8, 1)
        self.out = nn.Linear(8, 3)

    def forward(self, seq):                     # seq: [T, B, 8]
        weights = F.softmax(self.score(seq).squeeze(-1), dim=0)
        pooled = (weights.unsqueeze(-1) * seq).sum(0)
        return F.log_softmax(self.out(pooled), dim=1)

torch.manual_seed(0)
model = Pool()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
data = TensorDataset(torch.randn(64, 5, 8), torch.randint(0, 3, (64,)))
for seq, y in DataLoader(data, batch_size=16, shuffle=True):
    opt.zero_grad()
    loss = F.nll_loss(model(seq.transpose(0, 1)), y)
    loss.backward()
    opt.step()
big = torch.randn(1_000_000)
buffer = io.BytesIO()
torch.save(big[:10].clone(), buffer)
