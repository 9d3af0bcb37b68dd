"""Reference values for layers/linear, layers/embedding, autograd/optim/* and
autograd/lr_schedule, computed by torch 1.13 with fixed seeds.

    /usr/bin/python3 tests/reference/torch_layers_optim.py   # (re)writes tests/data/layers_optim.safetensors

The file holds every case twice, under "float64/..." and "float32/..." (the
float32 case is the float64 inputs rounded to float32, run in float32 arithmetic
by torch). Index tensors are stored as float values (safetensors files in attend
hold F32/F64 only). Per dtype prefix:

  linear.{weight (3, 4), bias (3), x (2, 3, 4), r (2, 3, 3)}   nn.Linear(4, 3)
  linear.{y, dx, dweight, dbias}                               y = linear(x), loss = sum(y * r)
  embedding.{weight (6, 3), indices (2, 4), padding_idx, r (2, 4, 3)}
  embedding.{y, dweight}                                       loss = sum(y * r)
      nn.Embedding(6, 3, padding_idx=2); its zeroed padding row is then set to
      non-zero values, to show that the forward reads it and the backward skips it.
  optim.param.<i> (i = 0, 1, 2)                                the starting values
  optim.grad.<step>.<i> (step = 1, 2, 3)                       fixed gradients; parameter 2
      has none at step 1 (absent: PyTorch skips it, its Adam step count lags by one)
  <opt>.step<step>.param.<i>                                   the parameters after each step
  <opt>.state.<i>.<buffer>                                     the buffers after step 3, and
                                                               the step count (float64) if it has one
      opt: adam   Adam(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
           adadelta Adadelta(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.05)
           sgd    SGD(lr=0.1, momentum=0.9, weight_decay=0.01)
           nesterov SGD(lr=0.1, momentum=0.5, nesterov=True)
  clip.grad.<i>, clip.max_norm, clip.norm, clip.clipped.<i>    clip_grad_norm_(params, max_norm)
Under "schedule/" (dtype-free, float64):
  step_lr.lr (7,)          StepLR(SGD(lr=0.2), step_size=2, gamma=0.3), lr after each of 7 epochs
  plateau.metric (15,), plateau.lr (15,)
                           ReduceLROnPlateau(SGD(lr=1.0), factor=0.5, patience=1, cooldown=1,
                           min_lr=0.05), lr after each epoch's metric
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "layers_optim.safetensors")

OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "adadelta": lambda p: torch.optim.Adadelta(p, lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.05),
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    "nesterov": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5, nesterov=True),
}
PARAM_SHAPES = [(2, 3), (4,), (1,)]
STEPS = 3


def make_inputs():
    """Everything random, drawn once in float64."""
    torch.manual_seed(1234)
    lin = torch.nn.Linear(4, 3).double()
    emb = torch.nn.Embedding(6, 3, padding_idx=2).double()
    with torch.no_grad():
        emb.weight[2] = torch.tensor([0.25, -0.5, 0.75], dtype=torch.float64)
    inputs = {
        "linear.weight": lin.weight.detach().clone(),
        "linear.bias": lin.bias.detach().clone(),
        "linear.x": torch.randn(2, 3, 4, dtype=torch.float64),
        "linear.r": torch.randn(2, 3, 3, dtype=torch.float64),
        "embedding.weight": emb.weight.detach().clone(),
        "embedding.indices": torch.tensor([[1, 2, 5, 1], [2, 2, 3, 1]], dtype=torch.float64),
        "embedding.padding_idx": torch.tensor(2.0, dtype=torch.float64),
        "embedding.r": torch.randn(2, 4, 3, dtype=torch.float64),
    }
    for i, shape in enumerate(PARAM_SHAPES):
        inputs[f"optim.param.{i}"] = torch.randn(*shape, dtype=torch.float64)
    for step in range(1, STEPS + 1):
        for i, shape in enumerate(PARAM_SHAPES):
            if step == 1 and i == 2:
                continue
            inputs[f"optim.grad.{step}.{i}"] = torch.randn(*shape, dtype=torch.float64)
    for i, shape in enumerate(PARAM_SHAPES):
        inputs[f"clip.grad.{i}"] = torch.randn(*shape, dtype=torch.float64) * 2
    inputs["clip.max_norm"] = torch.tensor(1.5, dtype=torch.float64)
    return inputs


def run(inputs, dtype):
    t = {k: v.to(dtype) for k, v in inputs.items()}
    out = dict(t)

    lin = torch.nn.Linear(4, 3).to(dtype)
    with torch.no_grad():
        lin.weight.copy_(t["linear.weight"])
        lin.bias.copy_(t["linear.bias"])
    x = t["linear.x"].clone().requires_grad_()
    y = lin(x)
    (y * t["linear.r"]).sum().backward()
    out.update({"linear.y": y.detach(), "linear.dx": x.grad, "linear.dweight": lin.weight.grad,
                "linear.dbias": lin.bias.grad})

    emb = torch.nn.Embedding(6, 3, padding_idx=2).to(dtype)
    with torch.no_grad():
        emb.weight.copy_(t["embedding.weight"])
    y = emb(t["embedding.indices"].long())
    (y * t["embedding.r"]).sum().backward()
    out.update({"embedding.y": y.detach(), "embedding.dweight": emb.weight.grad})

    for name, make in OPTIMIZERS.items():
        params = [t[f"optim.param.{i}"].clone().requires_grad_() for i in range(len(PARAM_SHAPES))]
        opt = make(params)
        for step in range(1, STEPS + 1):
            for i, p in enumerate(params):
                key = f"optim.grad.{step}.{i}"
                p.grad = t[key].clone() if key in t else None
            opt.step()
            for i, p in enumerate(params):
                out[f"{name}.step{step}.param.{i}"] = p.detach().clone()
        for i, p in enumerate(params):
            for buffer, value in opt.state[p].items():
                if buffer == "step":  # a float32 tensor (Adam) or an int (Adadelta)
                    out[f"{name}.state.{i}.step"] = torch.tensor(float(value), dtype=torch.float64)
                else:
                    out[f"{name}.state.{i}.{buffer}"] = value.clone()

    params = [torch.zeros(s, dtype=dtype, requires_grad=True) for s in PARAM_SHAPES]
    for i, p in enumerate(params):
        p.grad = t[f"clip.grad.{i}"].clone()
    norm = torch.nn.utils.clip_grad_norm_(params, float(t["clip.max_norm"]))
    out["clip.norm"] = norm.detach().to(dtype)
    for i, p in enumerate(params):
        out[f"clip.clipped.{i}"] = p.grad.clone()
    return out


def schedules():
    out = {}
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.3)
    lrs = []
    for _ in range(7):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    out["step_lr.lr"] = torch.tensor(lrs, dtype=torch.float64)

    opt = torch.optim.SGD([p], lr=1.0)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.05)
    metrics = [3.0, 2.5, 2.6, 2.5, 2.4999, 2.2, 2.2, 2.3, 2.2, 2.1, 2.0, 2.05, 2.0, 2.0, 2.0]
    lrs = []
    for m in metrics:
        plateau.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    out["plateau.metric"] = torch.tensor(metrics, dtype=torch.float64)
    out["plateau.lr"] = torch.tensor(lrs, dtype=torch.float64)
    return out


def main():
    inputs = make_inputs()
    tensors = {}
    for dtype, prefix in ((torch.float64, "float64/"), (torch.float32, "float32/")):
        for k, v in run(inputs, dtype).items():
            tensors[prefix + k] = v
    for k, v in schedules().items():
        tensors["schedule/" + k] = v
    safetensors_io.save(OUT, tensors, {"written_by": "torch_layers_optim.py", "torch": torch.__version__})
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes, {len(tensors)} tensors)")


if __name__ == "__main__":
    main()
