"""attend.gradcheck and attend.testing.assert_gradients for test writers."""
import os
import signal

import pytest

import attend
import attend.testing


def inputs():
    gen = attend.Generator(5)
    x = attend.normal((3, 4), 0.0, 1.0, gen, attend.float64).requires_grad_()
    w = attend.normal((2, 4), 0.0, 1.0, gen, attend.float64).requires_grad_()
    return x, w


def test_a_correct_function_passes():
    x, w = inputs()
    report = attend.gradcheck(lambda x, w: attend.softmax(attend.linear(x, w), 1), [x, w])
    assert report and report.passed and report.mode == "every element"
    assert [r.name for r in report.inputs] == ["input 0", "input 1"]
    assert [r.checked for r in report.inputs] == [12, 8]
    assert report.max_abs_error() < 1e-6
    assert repr(report) == "<GradcheckReport passed>"
    assert attend.testing.assert_gradients(lambda x, w: attend.linear(x, w), [x, w], names=["x", "W"]).passed


def test_options_and_directions():
    x, w = inputs()
    report = attend.gradcheck(lambda x: attend.tanh(x), x, directions=3, seed=4, eps=1e-5)
    assert report.passed and report.mode == "3 random directions per input" and report.eps == 1e-5
    assert report.inputs[0].checked == 3 and report.inputs[0].worst.index == ()


def doubled_tanh_grad():
    # A wrong backward: dx += dy * 2 * (1 - y*y)
    def forward(ctx, x):
        y = attend.tanh(x)
        ctx.save(y)
        return y

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        g.dx(0).add_(g.dy() * (1.0 - y * y) * 2.0)

    return attend.CustomOp("bad_tanh", forward, backward, ["x"])


def test_a_wrong_op_is_named_with_its_failing_elements():
    x, w = inputs()
    bad = doubled_tanh_grad()
    report = attend.gradcheck(lambda x, w: attend.linear(bad(x), w), [x, w], names=["x", "W"], max_reported=2)
    assert not report and not report.passed
    r = report.inputs[0]
    assert r.name == "x" and not r.passed and r.failed == 12 and len(r.failures) == 2
    assert r.failures[0].index == (0, 0) and abs(r.failures[0].analytic - 2 * r.failures[0].numeric) < 1e-6
    assert report.inputs[1].passed
    assert [n.op for n in report.nodes] == ["bad_tanh", "linear"]
    assert report.first_wrong_node.op == "bad_tanh" and report.nodes[1].passed
    assert report.first_wrong_node_summary().startswith("bad_tanh: dL/dx wrong at [")
    text = str(report)
    assert "gradcheck FAILED" in text and "bad_tanh" in text


def test_per_node_off_and_gradcheck_nodes():
    x, _ = inputs()
    bad = doubled_tanh_grad()
    assert attend.gradcheck(lambda x: bad(x), [x], per_node=False).nodes == []
    nodes = attend.gradcheck_nodes(lambda x: attend.tanh(bad(x)), [x])
    assert nodes.inputs == [] and [n.passed for n in nodes.nodes] == [False, True]


def test_assert_gradients_fails_with_the_report():
    x, _ = inputs()
    with pytest.raises(AssertionError, match="(?s)gradient check failed.*bad_tanh"):
        attend.testing.assert_gradients(lambda x: doubled_tanh_grad()(x), [x])


def test_float32_and_bad_arguments_are_refused():
    x32 = attend.ones((2,)).requires_grad_()
    with pytest.raises(attend.Error, match="float64"):
        attend.gradcheck(lambda x: x * 2.0, [x32])
    x, _ = inputs()
    with pytest.raises(attend.Error, match="Tensor"):
        attend.gradcheck(lambda x: 3.0, [x])
    with pytest.raises(attend.Error, match="not a Tensor"):
        attend.gradcheck(lambda x: x, [x, 1.0])
    with pytest.raises(attend.Error, match="requires grad"):
        attend.gradcheck(lambda x: x * 2.0, [attend.ones(2, attend.float64)])
    with pytest.raises(TypeError):
        attend.gradcheck(lambda x: x, [x], tolerance=1)


def test_an_exception_in_fn_leaves_the_inputs_as_they_were():
    x, _ = inputs()
    before = x.numpy().copy()
    x.grad = attend.full((3, 4), 0.25, attend.float64)
    calls = []

    def fn(x):
        calls.append(1)
        if len(calls) == 4:  # in the middle of the finite differences, x perturbed
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
        return attend.tanh(x)

    with pytest.raises(KeyboardInterrupt):
        attend.gradcheck(fn, [x])
    assert (x.numpy() == before).all()
    assert (x.grad.numpy() == 0.25).all()
