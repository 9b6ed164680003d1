"""Clean: cross_entropy on logits (softmax only for predictions), NLL on log_softmax,
BCEWithLogits on raw scores,
shapes that match in the loss, one hook registered before the loop and removed, and a
deliberate partial load with strict=False (a new head on a pretrained body)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
body = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
head = nn.Linear(16, 3)
gate = nn.Linear(16, 1)
params = [*body.parameters(), *head.parameters(), *gate.parameters()]
opt = torch.optim.Adam(params, lr=1e-2)
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
norms = []
handle = body.register_forward_hook(lambda m, i, o: norms.append(o.norm().item()))
for step in range(6):
    x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
    flag = (x[:, :1] > 0).float()
    h = body(x)
    logits = head(h)
    loss = F.cross_entropy(logits, y) + F.binary_cross_entropy_with_logits(gate(h), flag)
    loss = loss + F.mse_loss(gate(h).squeeze(1), flag.squeeze(1))
    loss = loss + F.nll_loss(F.log_softmax(logits, dim=1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    predictions = torch.softmax(logits.detach(), dim=1).argmax(1)
handle.remove()
new_model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 5))
state = body.state_dict()          # "0.weight", "0.bias": the body only
new_model.load_state_dict(state, strict=False)
