#!/usr/bin/python3
"""The PyTorch twin of bench/gradbench_lstm.cpp: GradBench's `lstm` objective and
its gradient, written with torch ops in the eval's time-major loop (as GradBench's
PyTorch tool writes it: one character a step, every weight a vector), float64, one
thread. It reads the inputs `bench_gradbench_lstm --write-inputs FILE` wrote, so both
sides see the same numbers, and prints the loss (to compare with attend's) and the
median and range of --rounds timed runs of objective + gradient.

    /usr/bin/python3 bench/torch_gradbench_lstm.py --inputs FILE [--rounds 11]
"""
import argparse
import json
import statistics
import sys
import time

import torch

import torch_threads


def objective(main, extra, state, sequence):
    layers, bits = main.shape[0] // 2, extra.shape[1]
    h = [state[2 * k] for k in range(layers)]
    c = [state[2 * k + 1] for k in range(layers)]
    w_in, w_out, b_out = extra[0], extra[1], extra[2]
    total = 0.0
    for t in range(sequence.shape[0] - 1):
        x = sequence[t] * w_in
        for k in range(layers):
            w, b = main[2 * k].view(4, bits), main[2 * k + 1].view(4, bits)
            f = torch.sigmoid(x * w[0] + b[0])
            i = torch.sigmoid(h[k] * w[1] + b[1])
            o = torch.sigmoid(x * w[2] + b[2])
            g = torch.tanh(h[k] * w[3] + b[3])
            c[k] = c[k] * f + i * g
            h[k] = o * torch.tanh(c[k])
            x = h[k]
        y = x * w_out + b_out
        lse = torch.log(torch.sum(torch.exp(y)) + 2)
        total = total + torch.sum(sequence[t + 1] * (y - lse))
    return -total / ((sequence.shape[0] - 1) * bits)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    if not 1 <= args.rounds <= 1000:
        parser.error("--rounds is 1..1000")
    torch_threads.set_threads(1)
    with open(args.inputs) as f:
        data = json.load(f)
    as_tensor = lambda name: torch.tensor(data[name], dtype=torch.float64)
    state, sequence = as_tensor("state"), as_tensor("sequence")
    times, loss = [], None
    for _ in range(args.rounds):
        main_p = as_tensor("main_params").requires_grad_()
        extra_p = as_tensor("extra_params").requires_grad_()
        t0 = time.perf_counter()
        value = objective(main_p, extra_p, state, sequence)
        value.backward()
        times.append((time.perf_counter() - t0) * 1e3)
        loss = value.item()
    print(f"loss         torch {loss:.15g}")
    print(f"  torch      {statistics.median(times):8.2f} ms ({min(times):.2f}-{max(times):.2f}), "
          f"median of {args.rounds} runs, torch {torch.__version__}")


if __name__ == "__main__":
    sys.exit(main())
