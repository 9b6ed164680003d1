"""Bug: every sample is prepared in the main process with slow per-item work."""
import time
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

class SlowImages(Dataset):
    def __len__(self):
        return 128

    def __getitem__(self, i):
        time.sleep(0.004)                      # decoding and augmenting an image
        g = torch.Generator().manual_seed(i)
        return torch.randn(16, generator=g), i % 2

torch.manual_seed(0)
model = nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(SlowImages(), batch_size=32):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
