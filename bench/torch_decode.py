#!/usr/bin/python3
"""PyTorch twin of `attend bench --no-train`: greedy decoding and beam search
with the Seq2Seq model of bench/torch_seq2seq.py (random weights), over exactly
--decode-steps output tokens per sentence, never choosing </s>, for a batch of
--batch random source sentences; tokens/s counts batch x decode-steps.

Beam search is the batched kind a PyTorch user writes: every sentence gets K
rows (the encoder's states, keys and mask repeated K times), each step runs the
decoder on all B*K rows at once, adds each row's score to its log-softmax,
keeps the best K of each sentence's K*V continuations with topk, and reorders
the decoder states by parent row. As in attend, only the first beam is live
at the start, and the keys are computed once, before the rows are repeated.

Run it with Debian's python3 (python3-torch 1.13) and the same flags as
`attend bench`:
    /usr/bin/python3 bench/torch_decode.py --embed 32 --hidden 64 --batch 16 --src-len 20 \
        --tgt-len 20 --vocab 1000 --attention additive --threads 1 --beam 5
bench/compare_decode.sh alternates the two.

With --int8, the model is quantized dynamically after it is built, as a PyTorch
user does it (bench/torch_int8.py: quantize_dynamic on its nn.LSTM encoder,
nn.LSTMCell decoder and every nn.Linear, the output projection included, to
qint8, on the fastest quantized engine for x86, or --qengine), and decodes
exactly as without it: the twin of `attend bench --no-train --int8`. It says
which engine ran and what was quantized on lines starting with '#'.
"""
import argparse
import resource
import statistics
import time

import torch

from torch_seq2seq import Seq2Seq
from torch_int8 import pick_engine, quantize
from torch_threads import set_threads

EOS = 3  # </s>: never chosen, as with attend's DecodeOptions::stop_at_eos = false


@torch.no_grad()
def greedy(model, src, mask, steps):
    enc, h, c = model.encode(src, mask)
    keys = model.attention.keys(enc) if model.attention_kind != "none" else None
    feed = torch.zeros(src.size(0), h.size(1))
    state = (h, c)
    y = torch.full((src.size(0),), 2, dtype=torch.long)  # <s>
    tokens = []
    for _ in range(steps):
        state, feed, _ = model.step(y, state, feed, enc, keys, mask)
        logits = model.out(feed)
        logits[:, EOS] = float("-inf")
        y = logits.argmax(dim=1)
        tokens.append(y)
    return torch.stack(tokens, dim=1)


@torch.no_grad()
def beam_search(model, src, mask, steps, K):
    B = src.size(0)
    enc, h, c = model.encode(src, mask)
    keys = model.attention.keys(enc) if model.attention_kind != "none" else None
    expand = torch.arange(B).repeat_interleave(K)  # row b*K + k is beam k of sentence b
    enc, mask, h, c = enc[expand], mask[expand], h[expand], c[expand]
    if keys is not None:
        keys = keys[expand]
    state = (h, c)
    feed = torch.zeros(B * K, h.size(1))
    y = torch.full((B * K,), 2, dtype=torch.long)  # <s>
    scores = torch.full((B, K), float("-inf"))
    scores[:, 0] = 0  # one live beam at first
    tokens = torch.empty(B * K, 0, dtype=torch.long)
    first_row = (torch.arange(B) * K).unsqueeze(1)
    for _ in range(steps):
        state, feed, _ = model.step(y, state, feed, enc, keys, mask)
        logp = torch.log_softmax(model.out(feed), dim=1)  # (B*K, V)
        logp[:, EOS] = float("-inf")
        V = logp.size(1)
        total = (scores.reshape(-1, 1) + logp).reshape(B, K * V)
        scores, best = total.topk(K, dim=1)  # (B, K)
        rows = (first_row + torch.div(best, V, rounding_mode="floor")).reshape(-1)
        token = (best % V).reshape(-1)
        state = (state[0][rows], state[1][rows])
        feed = feed[rows]
        tokens = torch.cat([tokens[rows], token.unsqueeze(1)], dim=1)
        y = token
    # every hypothesis has the same length, so the length penalty does not change the order
    pick = first_row.squeeze(1) + scores.argmax(dim=1)
    return tokens[pick]


def time_runs(fn, runs):
    times = []
    for i in range(1 + runs):
        start = time.perf_counter()
        fn()
        if i >= 1:
            times.append(time.perf_counter() - start)
    return times


def line(what, times, tokens, extra):
    ms = sorted(t * 1e3 for t in times)
    med = statistics.median(ms)
    return f"{what:<13}median {med:9.2f} ms ({ms[0]:.2f}-{ms[-1]:.2f})   {tokens / (med / 1e3):10.0f} tokens/s{extra}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attention", default="additive", choices=["none", "additive", "dot", "general"])
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--bidirectional", action="store_true")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--src-len", type=int, default=20)
    p.add_argument("--tgt-len", type=int, default=20)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--steps", type=int, default=20, help="only sets the default --decode-runs, as in attend bench")
    p.add_argument("--decode-steps", type=int, default=0, help="output tokens per sentence (0: --tgt-len)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--decode-runs", type=int, default=0, help="timed runs of each kind (0: max(3, steps / 4))")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--int8", action="store_true", help="quantize dynamically to int8 (bench/torch_int8.py)")
    p.add_argument("--qengine", default="", help="with --int8: the quantized engine (default: the fastest on x86)")
    args = p.parse_args()
    if args.qengine and not args.int8:
        p.error("--qengine goes with --int8")
    args.project_all = False

    threads_line = set_threads(args.threads)
    torch.manual_seed(args.seed)
    model = Seq2Seq(args).eval()
    notes = []
    if args.int8:
        model, notes = quantize(model, pick_engine(args.qengine))
    B, S, V = args.batch, args.src_len, args.vocab
    steps = args.decode_steps or args.tgt_len
    runs = args.decode_runs or max(3, args.steps // 4)
    src = torch.randint(4, V, (B, S))
    mask = torch.ones(B, S)
    extra = f"   ({B} sentences x {steps} tokens)"
    int8 = f"  int8 {torch.backends.quantized.engine}" if args.int8 else ""
    print(f"pytorch {torch.__version__}  threads {args.threads}  attention {args.attention}{int8}")
    print(f"# {threads_line}")
    for note in notes:
        print(f"# {note}")
    out = greedy(model, src, mask, steps)
    assert out.shape == (B, steps)
    print(line("greedy", time_runs(lambda: greedy(model, src, mask, steps), runs), B * steps, extra), flush=True)
    if args.beam > 1:
        out = beam_search(model, src, mask, steps, args.beam)
        assert out.shape == (B, steps)
        times = time_runs(lambda: beam_search(model, src, mask, steps, args.beam), runs)
        print(line(f"beam K={args.beam}", times, B * steps, extra))
    print(f"peak RSS     {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
