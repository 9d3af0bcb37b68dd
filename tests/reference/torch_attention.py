"""Reference values for layers/attention/*: additive and dot-product attention written
in plain torch (masked_fill(-inf) + softmax, einsum for the context: a different
road from attend's fused masked softmax), with fixed seeds.

    /usr/bin/python3 tests/reference/torch_attention.py     # (re)writes tests/data/attention_*.safetensors

One file per kind, each holding the same case twice, under "float64/..." and
"float32/..." (the float32 case is the float64 inputs rounded to float32 and run
in float32 arithmetic):
    query (B, Hq), encoder_states (B, S, Hk), mask (B, S), the parameters under
    attend's names (W_k, W_q, b, v / W / W_Q, W_K), R_context (B, Hk), R_weights (B, S),
    context, weights, and grad.<name> for the query, the encoder states and every
    parameter, for loss = sum(context * R_context) + sum(weights * R_weights).
The mask has a partly padded row, a row with one real token and a full row.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")

B, S, HK = 3, 5, 4
MASK = [[1, 1, 1, 0, 0],  # partly padded
        [1, 0, 0, 0, 0],  # one real token
        [1, 1, 1, 1, 1]]  # no padding


def softmax_and_context(e, h, mask):
    alpha = torch.softmax(e.masked_fill(mask == 0, float("-inf")), dim=1)  # (B, S)
    context = torch.einsum("bs,bsh->bh", alpha, h)  # (B, Hk)
    return context, alpha


def additive(p, s, h, mask):
    # e_j = v . tanh(W_k h_j + W_q s + b)
    pre = h @ p["W_k"].T + (s @ p["W_q"].T + p["b"])[:, None, :]  # (B, S, A)
    e = torch.tanh(pre) @ p["v"]  # (B, S)
    return softmax_and_context(e, h, mask)


def dot(scale):
    def score(p, s, h, mask):
        keys = h @ p["W_K"].T if "W_K" in p else (h @ p["W"].T if "W" in p else h)  # (B, S, d)
        q = s @ p["W_Q"].T if "W_Q" in p else s  # (B, d)
        e = torch.einsum("bsd,bd->bs", keys, q) * scale
        return softmax_and_context(e, h, mask)
    return score


# name -> (query size, {parameter: shape}, formula)
A_ADD, D_PROJ = 6, 6
KINDS = {
    "additive": (3, {"W_k": (A_ADD, HK), "W_q": (A_ADD, 3), "b": (A_ADD,), "v": (A_ADD,)}, additive),
    "dot_scaled": (3, {"W_Q": (D_PROJ, 3), "W_K": (D_PROJ, HK)}, dot(1 / math.sqrt(D_PROJ))),
    "dot_plain": (HK, {}, dot(1.0)),
    "dot_general": (3, {"W": (3, HK)}, dot(1.0)),
}


def run(formula, inputs, dtype):
    leaves = {k: v.to(dtype).clone().requires_grad_(k not in ("mask", "R_context", "R_weights"))
              for k, v in inputs.items()}
    params = {k: v for k, v in leaves.items() if k not in ("query", "encoder_states", "mask", "R_context", "R_weights")}
    context, weights = formula(params, leaves["query"], leaves["encoder_states"], leaves["mask"])
    loss = (context * leaves["R_context"]).sum() + (weights * leaves["R_weights"]).sum()
    loss.backward()
    out = {k: v.detach() for k, v in leaves.items()}
    out["context"], out["weights"] = context.detach(), weights.detach()
    for k, v in leaves.items():
        if v.requires_grad:
            out["grad." + k] = v.grad
    return out


def main():
    for seed, (name, (hq, shapes, formula)) in enumerate(KINDS.items()):
        gen = torch.Generator().manual_seed(1000 + seed)
        randn = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64)  # noqa: E731
        inputs = {"query": randn(B, hq), "encoder_states": randn(B, S, HK),
                  "mask": torch.tensor(MASK, dtype=torch.float64),
                  "R_context": randn(B, HK), "R_weights": randn(B, S)}
        for p, shape in shapes.items():
            inputs[p] = randn(*shape) * 0.5
        tensors = {}
        for dtype, prefix in ((torch.float64, "float64/"), (torch.float32, "float32/")):
            for k, v in run(formula, inputs, dtype).items():
                tensors[prefix + k] = v
        path = os.path.join(DATA, f"attention_{name}.safetensors")
        safetensors_io.save(path, tensors, {"written_by": "tests/reference/torch_attention.py",
                                            "torch": torch.__version__})
        print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
