#!/usr/bin/python3
"""Per-op overhead from Python: a small op, forward and backward, attend against PyTorch.

The op is bench/op_overhead.cpp's: a chain of `--chain` adds of two 8-element
float32 tensors that require grad, y = x; y = y + w (chain times); y.backward(ones),
so that nearly all the time is bookkeeping (the Python call, the output, the graph
node, the backward's accumulation), not arithmetic. Each round times one chain in
attend, then one in PyTorch (alternating, so both meet the same machine state),
and the report gives each side's median and range in microseconds per op
(forward + backward), and the ratio of the medians.

Goal (issue 43): attend's per-op overhead from Python is at most PyTorch's.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_overhead.py
    ... --rounds 5 --chain 10        (a tiny run that only shows it works)

Without torch (Debian has no python3-torch) it measures attend alone and says so.
One thread on both sides (torch_threads.set_threads), as in the other comparisons.
"""
import argparse
import os
import statistics
import sys
import time

import attend


def attend_chain(chain):
    x = attend.zeros((8,)).requires_grad_()
    w = attend.ones((8,)).requires_grad_()
    dy = attend.ones((8,))

    def run():
        x.zero_grad()
        w.zero_grad()
        t0 = time.perf_counter_ns()
        y = x
        for _ in range(chain):
            y = y + w
        y.backward(dy)
        return time.perf_counter_ns() - t0

    return run


def torch_chain(torch, chain):
    x = torch.zeros(8, requires_grad=True)
    w = torch.ones(8, requires_grad=True)
    dy = torch.ones(8)

    def run():
        x.grad = None
        w.grad = None
        t0 = time.perf_counter_ns()
        y = x
        for _ in range(chain):
            y = y + w
        y.backward(dy)
        return time.perf_counter_ns() - t0

    return run


def load_torch():
    try:
        import torch
    except ImportError:
        return None, "torch not installed: attend only"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_threads import set_threads
    return torch, set_threads(1)


def line(name, per_op_us):
    return (f"{name:8s} median {statistics.median(per_op_us):8.3f} us/op   "
            f"range {min(per_op_us):8.3f} .. {max(per_op_us):8.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=101, help="timed rounds per side (default 101)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed rounds first (default 10)")
    parser.add_argument("--chain", type=int, default=1000, help="ops per round (default 1000)")
    args = parser.parse_args()
    if args.rounds < 1 or args.chain < 1 or args.warmup < 0:
        parser.error("--rounds and --chain must be at least 1, --warmup at least 0")

    torch, torch_note = load_torch()
    sides = [("attend", attend_chain(args.chain))]
    if torch is not None:
        sides.append(("pytorch", torch_chain(torch, args.chain)))
    times = {name: [] for name, _ in sides}
    for round_ in range(args.warmup + args.rounds):
        for name, run in sides:  # alternating: attend, pytorch, attend, ...
            ns = run()
            if round_ >= args.warmup:
                times[name].append(ns / args.chain / 1000.0)

    print(f"# bench/python_overhead.py --rounds {args.rounds} --warmup {args.warmup} --chain {args.chain}")
    print(f"# {torch_note}")
    print("# op: y = y + w on 8 float32 elements, forward + backward, per op")
    for name, _ in sides:
        print(line(name, times[name]))
    if torch is not None:
        ratio = statistics.median(times["attend"]) / statistics.median(times["pytorch"])
        print(f"attend / pytorch (medians): {ratio:.2f}")
    print("# raw us/op, one round a column")
    for name, _ in sides:
        print(name, " ".join(f"{v:.3f}" for v in times[name]))


if __name__ == "__main__":
    main()
