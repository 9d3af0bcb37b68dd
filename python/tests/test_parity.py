"""Parity: the same computation through Python and through C++ gives the same bits.

tests/parity.cpp (the program python_parity) prints its results; this file does
the same computation through attend and compares every number exactly.
"""
import os
import subprocess

import pytest

import attend


def x_tanh_x_op():
    # y = x * tanh(x)   dx += dy * (tanh(x) + x * (1 - tanh(x)^2))
    def forward(ctx, x):
        t = attend.tanh(x)
        ctx.save(x, t)
        return x * t

    def backward(ctx, g):
        x, t = ctx.saved_tensors
        if g.needs(0):
            g.dx(0).add_(g.dy() * (t + x * (1.0 - t * t)))

    return attend.CustomOp("x_tanh_x", forward, backward, ["x"])


def network(dtype, tag):
    gen = attend.Generator(7)
    x = attend.normal((4, 3), 0.0, 1.0, gen, dtype).requires_grad_()
    w = attend.normal((5, 3), 0.0, 0.5, gen, dtype).requires_grad_()
    b = attend.uniform((5,), -0.1, 0.1, gen, dtype).requires_grad_()
    h = attend.tanh(attend.linear(x, w, b)) * 2.0 + 0.5
    a = attend.softmax(h @ attend.transpose(h, 0, 1), 1)
    z = x_tanh_x_op()(attend.sigmoid(a @ h - 1.0)) / 3.0
    loss = attend.cross_entropy(z, [0, 4, 2, 1]) + attend.mean(attend.exp(attend.log_softmax(z, 0)))
    loss.backward()
    return {f"{tag}.loss": loss, f"{tag}.dx": x.grad, f"{tag}.dw": w.grad, f"{tag}.db": b.grad}


def cpp_results():
    program = os.environ.get("ATTEND_PARITY_PROGRAM")
    if not program:
        pytest.skip("ATTEND_PARITY_PROGRAM is not set (ctest -R python.pytest sets it to the python_parity program)")
    out = subprocess.run([program], check=True, capture_output=True, text=True).stdout
    results = {}
    for line in out.splitlines():
        name, *values = line.split()
        results[name] = [float(v) for v in values]
    return results


@pytest.mark.parametrize("dtype,tag", [(attend.float32, "f32"), (attend.float64, "f64")])
def test_python_and_cpp_give_the_same_bits(dtype, tag):
    expected = cpp_results()
    got = network(dtype, tag)
    assert set(got) <= set(expected), f"the C++ program printed {sorted(expected)}"
    for name, tensor in got.items():
        values = [float(v) for v in tensor.numpy().ravel()]
        assert [v.hex() for v in values] == [v.hex() for v in expected[name]], name

