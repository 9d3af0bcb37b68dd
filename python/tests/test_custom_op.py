"""attend.CustomOp: an op written in Python, recorded on the tape as one node."""
import numpy as np
import pytest

import attend


def x_tanh_x(wrong=False, assign=False):
    # y = x * tanh(x)   dx += dy * (tanh(x) + x * (1 - tanh(x)^2))
    def forward(ctx, x):
        t = attend.tanh(x)
        ctx.save(x, t)
        return x * t

    def backward(ctx, g):
        x, t = ctx.saved_tensors
        if not g.needs(0):
            return
        grad = g.dy() * (t + x * (1.0 - t * t))
        if wrong:
            grad = grad * 1.5
        if assign:
            g.dx(0).copy_(grad)  # dx = ...: the mistake gradcheck must catch
        else:
            g.dx(0).add_(grad)

    return attend.CustomOp("x_tanh_x", forward, backward, ["x"])


def test_forward_and_backward_values():
    x_np = np.array([[0.3, -1.2], [2.0, 0.1]])
    x = attend.tensor(x_np, requires_grad=True)
    y = x_tanh_x()(x)
    np.testing.assert_allclose(y.numpy(), x_np * np.tanh(x_np), rtol=1e-15)
    y.sum().backward()
    t = np.tanh(x_np)
    np.testing.assert_allclose(x.grad.numpy(), t + x_np * (1 - t * t), rtol=1e-15)


def test_recorded_as_one_node_on_the_tape():
    x = attend.tensor([0.5], requires_grad=True)
    y = x_tanh_x()(x) * 2.0
    dot = attend.to_dot(y)
    assert "x_tanh_x" in dot and "tanh" not in dot.replace("x_tanh_x", "")  # its inside is not recorded
    assert not x_tanh_x()(attend.tensor([0.5])).requires_grad  # nothing to record


def test_gradient_accumulates_from_several_uses():
    x = attend.tensor([0.7], dtype="float64", requires_grad=True)
    op = x_tanh_x()
    (op(x) + op(x) + x).sum().backward()
    t = np.tanh(0.7)
    np.testing.assert_allclose(x.grad.numpy(), [2 * (t + 0.7 * (1 - t * t)) + 1], rtol=1e-15)


def test_gradcheck_passes_and_catches_a_wrong_or_assigning_backward():
    x = attend.tensor([[0.3, -1.2], [2.0, 0.1]], dtype="float64", requires_grad=True)
    assert attend.gradcheck(lambda x: x_tanh_x()(x), [x])
    wrong = attend.gradcheck(lambda x: attend.tanh(x_tanh_x(wrong=True)(x)), [x])
    assert not wrong and wrong.first_wrong_node.op == "x_tanh_x"
    assert wrong.first_wrong_node_summary().startswith("x_tanh_x: dL/dx wrong at")
    assigns = attend.gradcheck(lambda x: x_tanh_x(assign=True)(x), [x])
    assert not assigns and assigns.inputs[0].assigns_instead_of_adding
    assert [f.op for f in assigns.accumulation_faults] == ["x_tanh_x"] and assigns.accumulation_faults[0].assigns()


def test_several_outputs_and_an_input_without_gradient():
    def forward(ctx, x, mask):
        ctx.save(mask)
        return x * mask, x + 1.0

    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        assert not g.needs(1)
        g.dx(0).add_(g.dy(0) * mask + g.dy(1))

    op = attend.CustomOp("two_out", forward, backward)
    x = attend.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    mask = attend.tensor([1.0, 0.0], dtype="float64")
    a, b = op(x, mask)
    (a * 3.0 + b).sum().backward()
    assert x.grad.numpy().tolist() == [4.0, 1.0]
    assert attend.gradcheck(lambda x, m: op(x, m), [x, mask])


def test_mistakes_in_python_callables_raise():
    x = attend.tensor([1.0], requires_grad=True)
    with pytest.raises(attend.Error, match="must return a Tensor"):
        attend.CustomOp("bad", lambda ctx, x: 3.0, lambda ctx, g: None)(x)
    with pytest.raises(ZeroDivisionError):
        attend.CustomOp("raises", lambda ctx, x: 1 / 0, lambda ctx, g: None)(x)
    with pytest.raises(attend.Error, match="Tensor"):
        attend.CustomOp("op", lambda ctx, x: x, lambda ctx, g: None)(1.0)
    y = attend.CustomOp("bwd_raises", lambda ctx, x: x * 1.0, lambda ctx, g: [][1])(x)
    with pytest.raises(IndexError):
        y.sum().backward()
    y = attend.CustomOp("dy_out_of_range", lambda ctx, x: x * 1.0, lambda ctx, g: g.dy(3))(x)
    with pytest.raises(attend.Error, match="1 output"):
        y.sum().backward()
    mask = attend.ones(1)
    y = attend.CustomOp("dx_not_needed", lambda ctx, x, m: x * m, lambda ctx, g: g.dx(1))(x, mask)
    with pytest.raises(attend.Error, match="takes no gradient"):
        y.sum().backward()
    with pytest.raises(attend.Error, match="saved 0"):
        attend.CustomOp("no_saved", lambda ctx, x: (ctx.saved(0), x)[1], lambda ctx, g: None)(x)
