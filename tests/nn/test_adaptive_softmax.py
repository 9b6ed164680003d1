"""AdaptiveLogSoftmaxWithLoss against PyTorch with the same weights: output, loss, gradients,
log_prob, predict, and the errors."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def _twin(**kwargs):
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], **kwargs)
    ours = gt.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], **kwargs)
    ours.load_state_dict({k: gt.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("head_bias", [False, True])
def test_matches_pytorch(head_bias):
    ours, theirs = _twin(head_bias=head_bias, div_value=2.0)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 8)).astype(np.float32)
    y = np.array([0, 3, 5, 12, 19, 9])
    xo, xt = gt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_o, out_t = ours(xo, gt.tensor(y)), theirs(xt, torch.tensor(y))
    np.testing.assert_allclose(out_o.output.detach().numpy(), out_t.output.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_o.loss.item(), out_t.loss.item(), rtol=1e-5)
    out_o.loss.backward()
    out_t.loss.backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=n)
    np.testing.assert_allclose(ours.log_prob(gt.tensor(x)).detach().numpy(),
                               theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    assert ours.predict(gt.tensor(x)).tolist() == theirs.predict(torch.tensor(x)).tolist()
    single = ours(gt.tensor(x[0]), gt.tensor(y[0]))
    assert single.output.dim() == 0


def test_errors_match_pytorch():
    for lib in (gt, torch):
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 4])
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10])
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
            m(lib.ones(2, 8), lib.tensor([1, 25]))
        with pytest.raises(RuntimeError, match="same size in the batch dimension"):
            m(lib.ones(3, 8), lib.tensor([1, 2]))
