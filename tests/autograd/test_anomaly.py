"""Anomaly mode names the forward line behind a failing or NaN-producing backward."""
import warnings

import pytest

import glasstorch as gt


def test_nan_in_backward_names_the_function_and_the_forward_line():
    x = gt.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with gt.autograd.detect_anomaly():
            y = (x / x).sum()   # the forward line
            with pytest.raises(RuntimeError,
                               match=r"Function 'DivBackward0' returned nan values in its "
                                     r"\d+th output."):
                y.backward()
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("Anomaly Detection has been enabled") for m in messages)
    report = next(m for m in messages if m.startswith("Error detected in DivBackward0"))
    assert "y = (x / x).sum()   # the forward line" in report
    assert "<glasstorch" not in report and "/glasstorch/" not in report


def test_without_anomaly_mode_nan_flows_silently():
    x = gt.tensor([0.0, 1.0], requires_grad=True)
    (x / x).sum().backward()
    assert x.grad.isnan().any().item()


def test_check_nan_false_and_set_detect_anomaly():
    x = gt.tensor([0.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gt.autograd.detect_anomaly(check_nan=False):
            (x / x).sum().backward()
    with gt.autograd.set_detect_anomaly(True):
        y = x.sigmoid()
        y.mul_(2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="Good luck!"):
                y.sum().backward()
    from glasstorch.autograd.anomaly_mode import is_anomaly_enabled
    assert not is_anomaly_enabled()
