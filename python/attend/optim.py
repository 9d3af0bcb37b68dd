"""attend.optim: SGD, Adam and Adadelta with PyTorch's exact update rules, clip_grad_norm,
and the learning-rate schedules StepLR and ReduceLROnPlateau (autograd/optim/).

    opt = attend.optim.Adam(model.parameters(), lr=1e-3)
    for source, target in batches:
        opt.zero_grad()
        loss = model.loss(source, target)
        loss.backward()
        attend.optim.clip_grad_norm(model.parameters(), 5.0)
        opt.step()

An optimizer holds the parameter tensors themselves and updates them in place; a schedule
changes the lr of its optimizer (call its step() once per epoch).
"""
from ._attend._optim import (  # noqa: F401  (re-exported)
    Optimizer,
    SGD,
    Adam,
    Adadelta,
    clip_grad_norm,
    StepLR,
    ReduceLROnPlateau,
)

__all__ = ["Optimizer", "SGD", "Adam", "Adadelta", "clip_grad_norm", "StepLR", "ReduceLROnPlateau"]

for _obj in (Optimizer, SGD, Adam, Adadelta, clip_grad_norm, StepLR, ReduceLROnPlateau):
    _obj.__module__ = __name__  # help() and repr say attend.optim.Adam, where users find them
