"""attend: a small neural-network framework written from scratch in C++20, from Python.

    import attend
    x = attend.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = attend.tanh(x @ x).sum()
    y.backward()
    x.grad.numpy()

Tensors share memory with NumPy (attend.from_numpy, Tensor.numpy), every op of the
C++ library is here under its C++ name, attend.CustomOp records an op written in
Python, and attend.gradcheck checks gradients (attend.testing for pytest).
Every error attend reports is an attend.Error carrying the C++ library's message.
See docs/python.md.
"""
from ._attend import *  # noqa: F401,F403  (the extension: tensors, ops, autograd, gradcheck)
from ._attend import Error, Tensor, float32, float64  # noqa: F401  (named for editors and linters)
from . import testing  # noqa: F401
from . import nn, optim  # noqa: F401  (layers, models, optimizers: python/attend/nn.py, optim.py)
from .highlevel import train, Translator, Translation, TrainResult, explain, bleu, BleuScore, quantize  # noqa: F401

__version__ = "0.1.0"
