"""Clean: a GRU regression carrying its hidden state across batches, detached each time."""
import torch
import torch.nn as nn

torch.manual_seed(0)
class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(2, 12, batch_first=True)
        self.out = nn.Linear(12, 1)

    def forward(self, x, h):
        y, h = self.gru(x, h)
        return self.out(y), h

model = Seq()
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
h = None
for i in range(8):
    x = torch.randn(3, 5, 2)
    y = x.sum(-1, keepdim=True).cumsum(1)
    pred, h = model(x, h)
    h = h.detach()
    loss = nn.functional.smooth_l1_loss(pred, y)
    opt.zero_grad(set_to_none=False)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
