"""attend.nn and attend.optim from Python: names, shapes, state, and clear errors."""
import numpy as np
import pytest

import attend
from attend import nn, optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(3, 4, seed=1)
        self.blocks = [nn.Linear(4, 4, seed=2), nn.Linear(4, 2, bias=False, seed=3)]
        self.scale = attend.tensor([1.5], requires_grad=True)
        self.not_a_parameter = attend.tensor([2.0])

    def forward(self, x):
        h = attend.tanh(self.first(x))
        for block in self.blocks:
            h = block(h)
        return h * self.scale


def test_module_names_parameters_in_assignment_order():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["first.weight", "first.bias", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "scale"]
    assert net.num_parameters() == 12 + 4 + 16 + 4 + 8 + 1
    assert set(net.state_dict()) == set(names)
    y = net(attend.ones([5, 3]))
    assert tuple(y.shape) == (5, 2)


def test_parameters_are_shared_and_an_optimizer_updates_them_in_place():
    net = Net()
    before = net.first.weight.numpy().copy()
    opt = optim.SGD(net.parameters(), lr=0.1)
    net(attend.ones([2, 3])).sum().backward()
    assert net.first.weight.grad is not None
    opt.step()
    assert not np.array_equal(before, net.first.weight.numpy())
    opt.zero_grad()
    assert net.first.weight.grad is None


def test_load_state_dict_copies_values_and_lists_every_mismatch():
    a, b = Net(), Net()
    with attend.no_grad():
        a.first.weight.fill_(0.25)
    b.load_state_dict(a.state_dict())
    assert np.all(b.first.weight.numpy() == 0.25)
    state = dict(a.state_dict())
    del state["scale"]
    state["extra"] = attend.ones([1])
    state["first.bias"] = attend.ones([7])
    with pytest.raises(attend.Error) as e:
        b.load_state_dict(state)
    assert "missing: scale" in str(e.value) and "unexpected: extra" in str(e.value)
    assert "first.bias (7,) (expected (4,))" in str(e.value)


def test_c_layers_have_torch_names_and_shapes():
    lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True, seed=0)
    names = [n for n, _ in lstm.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert "weight_ih_l1_reverse" in names
    out, (h, c) = lstm(attend.ones([2, 4, 3]), lengths=[4, 2])
    assert tuple(out.shape) == (2, 4, 10) and tuple(h.shape) == (4, 2, 5) and tuple(c.shape) == (4, 2, 5)
    assert np.all(out.numpy()[1, 2:] == 0)  # padded steps output exactly 0
    emb = nn.Embedding(6, 3, padding_idx=0, seed=0)
    assert np.all(emb([[0, 1]]).numpy()[0, 0] == 0)
    attn = nn.AdditiveAttention(5, 10, seed=0)
    context, weights = attn(attend.ones([2, 5]), out, attend.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]))
    assert tuple(context.shape) == (2, 10)
    np.testing.assert_allclose(weights.numpy().sum(axis=1), 1, rtol=1e-6)
    assert np.all(weights.numpy()[1, 2:] == 0)
    dot = nn.DotAttention(5, 10, score="general", seed=0)
    assert [n for n, _ in dot.named_parameters()] == ["W"]


def test_layers_in_float64_and_the_same_seed_gives_the_same_weights():
    a = nn.Linear(3, 2, seed=5, dtype=attend.float64)
    b = nn.Linear(3, 2, seed=5, dtype="float64")
    assert a.weight.dtype == attend.float64
    assert np.array_equal(a.weight.numpy(), b.weight.numpy())
    gen = attend.Generator(5)
    c, d = nn.Linear(3, 2, seed=gen), nn.Linear(3, 2, seed=gen)  # a shared generator draws on
    assert not np.array_equal(c.weight.numpy(), d.weight.numpy())


def test_schedules_change_the_optimizer_lr():
    opt = optim.Adam(nn.Linear(2, 2).parameters(), lr=0.1)
    step = optim.StepLR(opt, step_size=1, gamma=0.5)
    step.step()
    assert opt.lr == 0.05
    plateau = optim.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    plateau.step(1.0)
    assert plateau.step(2.0) and opt.lr == 0.025
    assert "lr" in opt.state_dict()


@pytest.mark.parametrize("make", [
    lambda: nn.Linear(0, 3),
    lambda: nn.Linear(3, 2, seed="one"),
    lambda: nn.LSTM(3, 4, num_layers=0),
    lambda: nn.DotAttention(3, 4, score="cosine"),
    lambda: nn.Seq2Seq(5, 5, attention="sideways"),
    lambda: nn.Seq2Seq(0, 5),
    lambda: nn.Embedding(4, 2, padding_idx=9),
    lambda: optim.Adam([], lr=-1.0),
    lambda: optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1, nesterov=True),
])
def test_bad_arguments_raise_attend_error(make):
    with pytest.raises((attend.Error, TypeError)):
        make()


def test_bad_calls_raise_never_crash():
    lin = nn.Linear(3, 2)
    with pytest.raises(attend.Error):
        lin(attend.ones([2, 4]))
    with pytest.raises(TypeError):
        lin(None)
    emb = nn.Embedding(4, 2)
    with pytest.raises(attend.Error):
        emb([[5]])
    lstm = nn.LSTM(3, 4)
    with pytest.raises(attend.Error):
        lstm(attend.ones([2, 3, 3]), lengths=[0, 3])
    model = nn.Seq2Seq(6, 6, embed=4, hidden=4)
    with pytest.raises(attend.Error):
        model.loss([[4, 5]], [[4], [5]])
    with pytest.raises(attend.Error):
        model.loss([[]], [[4]])
    with pytest.raises(attend.Error):
        model.loss([[40]], [[4]])


def test_seq2seq_scheduled_sampling_draws_from_the_given_generator():
    model = nn.Seq2Seq(9, 8, embed=4, hidden=4, seed=1)
    source, target = [[4, 5, 6], [7, 8]], [[4, 5, 6, 7], [6, 7, 4]]
    with pytest.raises(attend.Error, match="generator"):
        model.loss(source, target, teacher_forcing=0.5)
    a = model.loss(source, target, teacher_forcing=0.5, sampling=attend.Generator(3)).item()
    b = model.loss(source, target, teacher_forcing=0.5, sampling=attend.Generator(3)).item()
    assert a == b
