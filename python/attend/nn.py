"""attend.nn: layers and models, and the Module base a model written in Python derives from.

The layers are attend's C++ classes themselves (layers/, models/seq2seq.hpp), so a training
loop written in Python runs the same code as one written in C++ and gives the same numbers:

    import attend
    from attend import nn, optim

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(20, 8, seed=1)
            self.lstm = nn.LSTM(8, 16, seed=2)
            self.out = nn.Linear(16, 5, seed=3)

        def forward(self, ids):
            output, _ = self.lstm(self.embed(ids))
            return self.out(output)

    model = Tagger()
    opt = optim.Adam(model.parameters(), lr=1e-2)

Every layer takes `seed`: an int (the layer draws its initial weights from a new
attend.Generator seeded with it) or an attend.Generator (shared by several layers, drawn
on in turn, as one C++ Generator passed to several constructors is).
"""
from ._attend import Tensor, no_grad
from ._attend import Error
from ._attend._nn import (  # noqa: F401  (re-exported)
    CModule,
    Linear,
    Embedding,
    LSTM,
    AdditiveAttention,
    DotAttention,
    Seq2Seq,
)

__all__ = ["Module", "CModule", "Linear", "Embedding", "LSTM", "AdditiveAttention", "DotAttention", "Seq2Seq"]

for _cls in (CModule, Linear, Embedding, LSTM, AdditiveAttention, DotAttention, Seq2Seq):
    _cls.__module__ = __name__  # help() and repr say attend.nn.Linear, where users find them


class Module:
    """The base of a model written in Python, as torch.nn.Module is.

    Attributes that are layers (attend's or other Modules), lists or tuples of them, or
    tensors that require grad are its parts: named_parameters() names them by attribute,
    dotted ("encoder.weight", "layers.1.bias"), in the order they were assigned.
    Calling the module calls forward().
    """

    def __init__(self):
        object.__setattr__(self, "training", True)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def _parts(self):
        for name, value in vars(self).items():
            if name.startswith("_") or name == "training":
                continue
            if isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, (Module, CModule, Tensor)):
                        yield f"{name}.{i}", item
            elif isinstance(value, (Module, CModule, Tensor)):
                yield name, value

    def children(self):
        """The sub-modules (attend layers and Modules), in assignment order."""
        return [part for _, part in self._parts() if isinstance(part, (Module, CModule))]

    def named_parameters(self):
        """[(dotted name, Tensor)] of every parameter, this module's and its sub-modules'."""
        out = []
        for name, part in self._parts():
            if isinstance(part, Tensor):
                if part.requires_grad:
                    out.append((name, part))
            else:
                out.extend((f"{name}.{sub}", t) for sub, t in part.named_parameters())
        return out

    def parameters(self):
        """Every parameter tensor (shared with the module: an optimizer updates them in place)."""
        return [t for _, t in self.named_parameters()]

    def num_parameters(self):
        """The number of parameter elements."""
        return sum(t.numel() for t in self.parameters())

    def state_dict(self):
        """{dotted name: Tensor}, shared with the module (not copies)."""
        return dict(self.named_parameters())

    def load_state_dict(self, state, strict=True):
        """Copies values in by name. With strict, every name must match both ways; the
        attend.Error lists every missing, unexpected and misshaped name at once."""
        own = self.state_dict()
        missing = [n for n in own if n not in state]
        unexpected = [n for n in state if n not in own]
        misshaped = [f"{n} {tuple(state[n].shape)} (expected {tuple(t.shape)})"
                     for n, t in own.items() if n in state and tuple(state[n].shape) != tuple(t.shape)]
        problems = []
        if strict and missing:
            problems.append("missing: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected: " + ", ".join(unexpected))
        if misshaped:
            problems.append("misshaped: " + ", ".join(misshaped))
        if problems:
            raise Error(f"{type(self).__name__}.load_state_dict: the state does not match: " + "; ".join(problems))
        with no_grad():
            for name, t in own.items():
                if name in state:
                    t.copy_(state[name])

    def zero_grad(self):
        """Drops every parameter's gradient."""
        for t in self.parameters():
            t.zero_grad()

    def train(self, mode=True):
        """Switches dropout on (off with mode=False) here and in every sub-module; returns self."""
        object.__setattr__(self, "training", bool(mode))
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        """train(False)"""
        return self.train(False)
