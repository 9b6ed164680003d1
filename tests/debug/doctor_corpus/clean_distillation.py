"""Clean: knowledge distillation: a teacher in eval mode under no_grad, soft targets from
its softmax (as targets, not as the loss input), activation checkpointing, label smoothing."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 5))
student = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 5))
teacher.eval()
opt = torch.optim.AdamW(student.parameters(), lr=1e-2, weight_decay=0.01)
T = 2.0
for step in range(10):
    x = torch.randn(32, 10)
    with torch.no_grad():
        soft = F.softmax(teacher(x) / T, dim=1)
    logits = checkpoint(student, x, use_reentrant=False)
    kd = F.kl_div(F.log_softmax(logits / T, dim=1), soft, reduction="batchmean") * T * T
    ce = F.cross_entropy(logits, soft.argmax(1), label_smoothing=0.1)
    soft_ce = F.cross_entropy(logits, soft)
    loss = kd + ce + 0.1 * soft_ce
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
