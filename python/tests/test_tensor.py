"""Tensors and NumPy: creation, sharing memory, operators, ops, autograd basics."""
import gc

import numpy as np
import pytest

import attend


def test_tensor_copies_and_picks_the_dtype():
    assert attend.tensor([1, 2, 3]).dtype == attend.float32  # lists: float32, as in PyTorch
    assert attend.tensor(np.zeros(2)).dtype == attend.float64  # an array's float type carries over
    assert attend.tensor(np.zeros(2, np.float32)).dtype == attend.float32
    assert attend.tensor(np.arange(3)).dtype == attend.float32  # integers become float32
    assert attend.tensor([1.0], dtype=attend.float64).dtype == attend.float64
    assert attend.tensor([1.0], dtype="float64").dtype == attend.float64
    assert attend.tensor([1.0], dtype=np.float64).dtype == attend.float64
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = attend.tensor(a)
    a[0, 0] = 9.0
    assert t.numpy()[0, 0] == 1.0  # a copy
    assert t.shape == (2, 2) and t.ndim == 2 and t.numel() == 4 and len(t) == 2
    assert attend.tensor(a.T).numpy().tolist() == a.T.tolist()  # any layout is copied
    assert attend.tensor(3.5).shape == () and attend.tensor(3.5).item() == 3.5


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = attend.from_numpy(a)
    assert t.dtype == attend.float32 and t.shape == (2, 3)
    a[1, 2] = 42.0
    assert t.numpy()[1, 2] == 42.0
    t.fill_(1.5)
    assert (a == 1.5).all()
    assert t.numpy().__array_interface__["data"][0] == a.__array_interface__["data"][0]


def test_from_numpy_keeps_the_array_alive():
    a = np.arange(1000, dtype=np.float64)
    t = attend.from_numpy(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(1000))
    assert (t * 2.0).numpy()[999] == 1998.0


def test_numpy_is_a_view_that_keeps_the_memory_alive():
    t = attend.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = t.numpy()
    v[0, 1] = 7.0
    assert t.numpy()[0, 1] == 7.0
    del t
    gc.collect()
    attend.zeros((2, 2)).fill_(-1.0)  # a freed block would be handed out again here
    assert v.tolist() == [[1.0, 7.0], [3.0, 4.0]]
    assert np.asarray(attend.ones(3)).tolist() == [1.0, 1.0, 1.0]


def test_operators_match_numpy():
    a_np = np.array([[0.5, -1.0], [2.0, 0.25]])
    b_np = np.array([1.5, -0.5])
    a, b = attend.tensor(a_np), attend.tensor(b_np)
    cases = {
        "a + b": (a + b, a_np + b_np), "a - b": (a - b, a_np - b_np), "a * b": (a * b, a_np * b_np),
        "a / b": (a / b, a_np / b_np), "-a": (-a, -a_np), "a @ a": (a @ a, a_np @ a_np),
        "2 - a": (2 - a, 2 - a_np), "a * 3": (a * 3, a_np * 3), "1 / a": (1 / a, 1 / a_np),
        "a + 1": (a + 1, a_np + 1), "b_np + a": (b_np + a, b_np + a_np), "a / 4": (a / 4, a_np / 4),
    }
    for name, (got, want) in cases.items():
        assert isinstance(got, attend.Tensor), name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-15, err_msg=name)


def test_every_op_under_its_cpp_name():
    x_np = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]])
    x = attend.tensor(x_np)
    close = np.testing.assert_allclose
    close(attend.tanh(x).numpy(), np.tanh(x_np))
    close(x.tanh().numpy(), np.tanh(x_np))
    close(attend.sigmoid(x).numpy(), 1 / (1 + np.exp(-x_np)))
    close(attend.relu(x).numpy(), np.maximum(x_np, 0))
    close(attend.exp(x).numpy(), np.exp(x_np))
    close(attend.log(attend.exp(x)).numpy(), x_np)
    close(attend.neg(x).numpy(), -x_np)
    close(attend.add(x, 1.0).numpy(), x_np + 1)
    close(attend.sub(x, x).numpy(), 0 * x_np)
    close(attend.mul(2.0, x).numpy(), 2 * x_np)
    close(attend.div(x, 2.0).numpy(), x_np / 2)
    close(attend.matmul(x, attend.transpose(x, 0, 1)).numpy(), x_np @ x_np.T)
    w_np = np.arange(6.0).reshape(2, 3)
    close(attend.linear(x, attend.tensor(w_np), attend.tensor([1.0, 2.0], dtype="float64")).numpy(),
          x_np @ w_np.T + [1, 2])
    close(attend.linear(x, attend.tensor(w_np)).numpy(), x_np @ w_np.T)
    close(attend.reshape(x, (3, 2)).numpy(), x_np.reshape(3, 2))
    close(x.reshape([6]).numpy(), x_np.reshape(6))
    close(attend.concat([x, x], 0).numpy(), np.concatenate([x_np, x_np], 0))
    close(attend.stack([x, x], 1).numpy(), np.stack([x_np, x_np], 1))
    close(attend.slice(x, 1, 1, 3).numpy(), x_np[:, 1:3])
    close(attend.index_select(x, [1, 0, 1]).numpy(), x_np[[1, 0, 1]])
    close(attend.sum(x).numpy(), x_np.sum())
    close(x.sum(1, keepdim=True).numpy(), x_np.sum(1, keepdims=True))
    close(attend.mean(x, 0).numpy(), x_np.mean(0))
    e = np.exp(x_np - x_np.max(1, keepdims=True))
    close(attend.softmax(x, 1).numpy(), e / e.sum(1, keepdims=True))
    close(attend.log_softmax(x, -1).numpy(), np.log(e / e.sum(1, keepdims=True)))
    mask = attend.tensor([[1, 1, 0], [1, 0, 0]], dtype="float64")
    ms = attend.masked_softmax(x, mask, 1).numpy()
    assert ms[0, 2] == 0.0 and ms[1].tolist() == [1.0, 0.0, 0.0]
    assert attend.masked_fill(x, mask, -5.0).numpy()[1, 2] == -5.0
    lsm = np.log(e / e.sum(1, keepdims=True))
    close(attend.cross_entropy(x, [2, 0]).item(), -(lsm[0, 2] + lsm[1, 0]) / 2)
    close(attend.cross_entropy(x, [2, -100]).item(), -lsm[0, 2])
    close(attend.linear_cross_entropy(x, attend.tensor(np.eye(3)), None, [2, 0]).item(),
          attend.cross_entropy(x, [2, 0]).item(), rtol=1e-12)
    gen = attend.Generator(1)
    assert attend.dropout(x, 0.5, False, gen).same(x)
    kept = attend.dropout(attend.ones((100,), "float64"), 0.5, True, gen).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0}


def test_factories():
    assert attend.zeros((2, 3)).numpy().tolist() == [[0.0] * 3] * 2
    assert attend.ones(2, attend.float64).dtype == attend.float64
    assert attend.full((2,), 3.0).numpy().tolist() == [3.0, 3.0]
    assert attend.arange(4).numpy().tolist() == [0, 1, 2, 3]
    assert attend.scalar(2.0).shape == ()
    assert attend.zeros_like(attend.ones((2, 2))).shape == (2, 2)
    g1, g2 = attend.Generator(3), attend.Generator(3)
    assert attend.equal(attend.normal((3,), 0, 1, g1), attend.normal((3,), 0, 1, g2))
    assert attend.allclose(attend.uniform((3,), 0, 1, g1), attend.uniform((3,), 0, 1, g2))


def test_backward_grad_and_requires_grad():
    x = attend.tensor([1.0, -2.0, 3.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad is None
    y = (x * x).sum()
    assert not y.is_leaf and y.requires_grad
    y.backward()
    assert x.grad.numpy().tolist() == [2.0, -4.0, 6.0]
    (x * 3.0).sum().backward()  # accumulates
    assert x.grad.numpy().tolist() == [5.0, -1.0, 9.0]
    x.zero_grad()
    assert x.grad is None
    (x * x).backward(attend.tensor([1.0, 0.0, 2.0]))
    assert x.grad.numpy().tolist() == [2.0, 0.0, 12.0]
    w = attend.ones(2).requires_grad_()
    assert w.requires_grad
    w.requires_grad_(False)
    assert not w.requires_grad


def test_no_grad_context_manager():
    x = attend.tensor([1.0], requires_grad=True)
    assert attend.is_grad_enabled()
    with attend.no_grad():
        assert not attend.is_grad_enabled()
        y = x * 2.0
        with attend.enable_grad():
            assert (x * 2.0).requires_grad
    assert attend.is_grad_enabled() and not y.requires_grad
    with pytest.raises(ValueError):
        with attend.no_grad():
            raise ValueError("inside")
    assert attend.is_grad_enabled()  # restored on an exception too


def test_printing():
    t = attend.tensor([[1.0, 2.0]], dtype="float64", requires_grad=True)
    assert repr(t).startswith("tensor([[1.0000, 2.0000]]") and "float64" in repr(t)
    assert str(t) == repr(t)
    assert attend.float32.name == "float32" and attend.tensor([1.0]).dtype.name == "float32"


def test_to_dot_shows_the_recorded_ops():
    x = attend.tensor([1.0], requires_grad=True)
    dot = attend.to_dot(attend.tanh(x * 2.0), [(x, "x")])
    assert "tanh" in dot and "x" in dot

