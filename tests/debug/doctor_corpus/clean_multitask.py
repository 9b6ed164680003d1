"""Clean: two task heads in an nn.ModuleDict and learned loss weights (an nn.Parameter used
outside forward, registered on the model)."""
import torch
import torch.nn as nn
torch.manual_seed(0)
class MT(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(6, 12)
        self.heads = nn.ModuleDict({"a": nn.Linear(12, 1), "b": nn.Linear(12, 3)})
        self.log_vars = nn.Parameter(torch.zeros(2))
    def forward(self, x):
        h = torch.relu(self.shared(x))
        return {k: m(h) for k, m in self.heads.items()}
model = MT()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(8):
    x = torch.randn(16, 6)
    out = model(x)
    la = nn.functional.mse_loss(out["a"].squeeze(-1), x[:, 0])
    lb = nn.functional.cross_entropy(out["b"], (x[:, 1] > 0).long())
    loss = torch.exp(-model.log_vars[0]) * la + model.log_vars[0] + torch.exp(-model.log_vars[1]) * lb + model.log_vars[1]
    opt.zero_grad(); loss.backward(); opt.step()
