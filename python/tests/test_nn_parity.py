"""Parity: a training loop written in Python against the same loop in C++
(python/tests/nn_parity.cpp, built as python_nn_parity): every loss, every learning rate
and the final weights' checksum must be bit-identical (printed with 17 significant digits)."""
import os
import pathlib
import subprocess

import pytest

import attend
from attend import nn, optim

PROGRAM = os.environ.get("ATTEND_NN_PARITY_PROGRAM") or str(
    pathlib.Path(attend.__file__).resolve().parent.parent / "python_nn_parity")


def cpp_lines(which):
    if not os.path.exists(PROGRAM):
        pytest.skip(f"the C++ side of the parity test is built with the module ({PROGRAM} is absent)")
    return subprocess.run([PROGRAM, which], check=True, capture_output=True, text=True).stdout.splitlines()


def checksum(model):
    total = 0.0  # a plain sequential sum in double, in named order, as the C++ side adds
    for _, p in model.named_parameters():
        for x in p.detach().to(attend.float64).numpy().ravel():
            total += float(x)
    return total


class Tagger(nn.Module):
    def __init__(self, gen):
        super().__init__()
        self.embed = nn.Embedding(10, 6, seed=gen)
        self.lstm = nn.LSTM(6, 8, seed=gen)
        self.out = nn.Linear(8, 5, seed=gen)

    def forward(self, ids):
        h, _ = self.lstm(self.embed(ids))
        return self.out(h).reshape([12, 5])


def python_tagger():
    model = Tagger(attend.Generator(7))
    opt = optim.Adam(model.parameters(), lr=0.02)
    schedule = optim.StepLR(opt, 2, 0.5)
    ids = [[1, 4, 2, 9, 3, 0], [5, 7, 8, 6, 2, 1]]
    tags = [0, 3, 1, 4, 2, 0, 2, 1, 3, 3, 0, 4]
    lines = []
    for step in range(6):
        opt.zero_grad()
        loss = attend.cross_entropy(model(ids), tags)
        loss.backward()
        optim.clip_grad_norm(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        lines.append("tagger %d %.17g %.17g" % (step, loss.item(), opt.lr))
    lines.append("tagger checksum %.17g" % checksum(model))
    return lines


def python_seq2seq():
    model = nn.Seq2Seq(9, 8, embed=6, hidden=7, attention="additive", seed=3)
    opt = optim.SGD(model.parameters(), 0.5, momentum=0.9)
    plateau = optim.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    source, target = [[4, 5, 6], [7, 8]], [[4, 5], [6, 7, 4]]
    lines = []
    for step in range(5):
        opt.zero_grad()
        loss = model.loss(source, target)
        loss.backward()
        opt.step()
        plateau.step(loss.item())
        lines.append("seq2seq %d %.17g %.17g" % (step, loss.item(), opt.lr))
    lines.append("seq2seq checksum %.17g" % checksum(model))
    return lines


def test_tagger_loop_is_bit_identical_to_cpp():
    python = python_tagger()
    assert python == cpp_lines("tagger")
    losses = [float(line.split()[2]) for line in python[:-1]]
    assert losses[-1] < losses[0]  # it trains


def test_seq2seq_loop_is_bit_identical_to_cpp():
    python = python_seq2seq()
    assert python == cpp_lines("seq2seq")
    losses = [float(line.split()[2]) for line in python[:-1]]
    assert losses[-1] < losses[0]


def test_a_different_seed_gives_different_numbers():
    # The comparison can fail: the same loop from another seed does not match the C++ lines.
    model = nn.Seq2Seq(9, 8, embed=6, hidden=7, attention="additive", seed=4)
    loss = model.loss([[4, 5, 6], [7, 8]], [[4, 5], [6, 7, 4]])
    assert "seq2seq 0 %.17g" % loss.item() not in " ".join(cpp_lines("seq2seq"))
