"""The machinery tour (`python -m glasstorch.demo`) keeps running and shows each layer."""
from glasstorch import demo


def test_demo_runs_and_shows_each_layer(capsys):
    demo.main()
    out = capsys.readouterr().out
    for marker in ("stride=(4, 1)", "Use .reshape(...) instead", "int32 + 1.5              -> "
                   "torch.float32", "DispatchKeySet(CPU, ADInplaceOrView, AutocastCPU)",
                   "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)",
                   "SumBackward0", "AccumulateGrad", "aten::add_.Tensor", "ADInplaceOrView", "(64,)",
                   "allocated 4,000,000 bytes", "after del: 0 bytes"):
        assert marker in out, marker
