#!/usr/bin/python3
"""PyTorch twin of bench_lstm (bench/lstm.cpp): one nn.LSTM layer
(batch_first), forward + backward of sum(out * R), at B = 64, T = 30, I = 128,
H = 256, float32, at 1 and 2 threads; median of 20 runs after 5 warm-up runs.

Run it with Debian's python3 (which has python3-torch 1.13). Given the attend
program, it runs that too, alternating the two so that a busy spell on the
machine hits both alike, and prints the ratio:

    /usr/bin/python3 bench/torch_lstm.py --attend build/release/bench/bench_lstm

Both sides run their GEMMs on the same number of OpenBLAS threads
(bench/torch_threads.py says why PyTorch needs telling). Other OPENBLAS_*
variables in the environment are left as they are for both sides.
"""
import argparse
import re
import statistics
import subprocess
import time

import torch

from torch_threads import set_threads

B, T, I, H = 64, 30, 128, 256
WARMUP, RUNS = 5, 20


def measure_torch(threads):
    set_threads(threads)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(I, H, batch_first=True)
    x = torch.randn(B, T, I, requires_grad=True)
    r = torch.randn(B, T, H)
    times = []
    for run in range(WARMUP + RUNS):
        lstm.zero_grad(set_to_none=True)
        x.grad = None
        t0 = time.perf_counter()
        out, _ = lstm(x)
        (out * r).sum().backward()
        t1 = time.perf_counter()
        if run >= WARMUP:
            times.append(t1 - t0)
    return statistics.median(times) * 1e3


def measure_attend(program, threads):
    text = subprocess.run([program, str(threads)], check=True, capture_output=True, text=True).stdout
    m = re.search(r"forward_backward_ms=([0-9.]+) forward_ms=([0-9.]+) gemm_only_ms=([0-9.]+)", text)
    return tuple(float(v) for v in m.groups())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attend", help="path of bench_lstm, to run it alternately and print the ratio")
    parser.add_argument("--rounds", type=int, default=3, help="alternations per thread count (the best median counts)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(f"# LSTM 1 layer, B={B} T={T} I={I} H={H} float32, forward + backward of sum(out * R), "
          f"median of {RUNS} runs after {WARMUP} warm-up; best of {args.rounds} rounds; torch {torch.__version__}")
    for threads in args.threads:
        torch_ms, attend = [], []
        for _ in range(args.rounds):
            torch_ms.append(measure_torch(threads))
            if args.attend:
                attend.append(measure_attend(args.attend, threads))
        line = f"threads={threads}  torch.nn.LSTM {min(torch_ms):8.2f} ms"
        if attend:
            best = min(attend, key=lambda a: a[0])
            line += (f"  attend nn::LSTM {best[0]:8.2f} ms (forward {best[1]:.2f}, its GEMMs alone {best[2]:.2f})"
                     f"  attend/torch {best[0] / min(torch_ms):.3f}")
        print(line, flush=True)


if __name__ == "__main__":
    main()
