"""attend against PyTorch, where torch is installed (Debian has no python3-torch)."""
import numpy as np
import pytest

import attend

torch = pytest.importorskip("torch", reason="PyTorch is not installed; these compare attend with it")


def test_gradients_match_torch():
    rng = np.random.default_rng(0)
    x_np, w_np = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    x, w = attend.tensor(x_np, requires_grad=True), attend.tensor(w_np, requires_grad=True)
    attend.log_softmax(attend.tanh(attend.linear(x, w)), 1).sum().backward()
    tx = torch.tensor(x_np, requires_grad=True)
    tw = torch.tensor(w_np, requires_grad=True)
    torch.log_softmax(torch.tanh(tx @ tw.T), 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_cross_entropy_matches_torch():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(4, 6))
    targets = [0, 5, -100, 2]
    ours = attend.cross_entropy(attend.tensor(logits), targets, label_smoothing=0.1).item()
    theirs = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(targets),
                                               ignore_index=-100, label_smoothing=0.1).item()
    assert ours == pytest.approx(theirs, rel=1e-12)
