#!/usr/bin/python3
"""PyTorch twin of `attend bench`: the same Seq2Seq-with-attention model, written
the way a PyTorch user writes it (nn.Embedding, an nn.LSTM encoder, an
nn.LSTMCell decoder looped in Python with input feeding, attention, a tanh
attentional layer, the output projection, Adam and gradient clipping).

With --project-all, the faster way to write it: the target embeddings of all
steps are looked up at once before the loop, and the output projection runs
once over all time steps after it ((B*T, H) @ (H, V) instead of T products of
(B, H) @ (H, V)); the recurrence itself cannot be batched over time.

Run it with Debian's python3 (which has python3-torch 1.13), with the same flags
as `attend bench`:
    /usr/bin/python3 bench/torch_seq2seq.py --attention additive --embed 32 --hidden 64 \
        --batch 16 --src-len 20 --tgt-len 20 --vocab 1000 --steps 30 --threads 1
"""
import argparse
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from bench_turns import Turns
from torch_threads import set_threads


class Attention(nn.Module):
    def __init__(self, kind, query_size, key_size):
        super().__init__()
        self.kind = kind
        if kind == "additive":  # e_j = v^T tanh(W_k h_j + W_q s + b)
            self.W_k = nn.Linear(key_size, query_size, bias=False)
            self.W_q = nn.Linear(query_size, query_size)
            self.v = nn.Linear(query_size, 1, bias=False)
        elif kind == "dot":  # e_j = (W_K h_j) . (W_Q s) / sqrt(d)
            self.W_k = nn.Linear(key_size, query_size, bias=False)
            self.W_q = nn.Linear(query_size, query_size, bias=False)
        elif kind == "general":  # e_j = s^T W h_j
            self.W_k = nn.Linear(key_size, query_size, bias=False)

    def keys(self, enc):  # computed once per batch
        return self.W_k(enc)

    def forward(self, s, keys, values, mask):
        if self.kind == "additive":
            e = self.v(torch.tanh(keys + self.W_q(s).unsqueeze(1))).squeeze(2)
        elif self.kind == "dot":
            e = torch.bmm(keys, self.W_q(s).unsqueeze(2)).squeeze(2) / keys.size(2) ** 0.5
        else:
            e = torch.bmm(keys, s.unsqueeze(2)).squeeze(2)
        e = e.masked_fill(mask == 0, float("-inf"))
        alpha = torch.softmax(e, dim=1)
        context = torch.bmm(alpha.unsqueeze(1), values).squeeze(1)
        return context, alpha


class Seq2Seq(nn.Module):
    def __init__(self, args):
        super().__init__()
        E, H, V = args.embed, args.hidden, args.vocab
        self.attention_kind = args.attention
        self.src_embed = nn.Embedding(V, E, padding_idx=0)
        self.tgt_embed = nn.Embedding(V, E, padding_idx=0)
        self.encoder = nn.LSTM(E, H, num_layers=args.layers, batch_first=True, bidirectional=args.bidirectional)
        Hk = 2 * H if args.bidirectional else H
        self.bridge_h = nn.Linear(Hk, H)
        self.bridge_c = nn.Linear(Hk, H)
        self.cell = nn.LSTMCell(E + H, H)  # input feeding: [embedding; previous attentional vector]
        if args.attention != "none":
            self.attention = Attention(args.attention, H, Hk)
            self.W_c = nn.Linear(H + Hk, H)
        else:
            self.W_c = nn.Linear(H, H)
        self.out = nn.Linear(H, V)
        self.project_all = args.project_all

    def encode(self, src, mask):
        enc, (h, c) = self.encoder(self.src_embed(src))
        if self.encoder.bidirectional:
            h_last = torch.cat([h[-2], h[-1]], dim=1)
            c_last = torch.cat([c[-2], c[-1]], dim=1)
        else:
            h_last, c_last = h[-1], c[-1]
        return enc, torch.tanh(self.bridge_h(h_last)), torch.tanh(self.bridge_c(c_last))

    def step(self, y_prev, state, feed, enc, keys, mask, embedded=None):
        if embedded is None:
            embedded = self.tgt_embed(y_prev)
        s, c = self.cell(torch.cat([embedded, feed], dim=1), state)
        if self.attention_kind != "none":
            context, alpha = self.attention(s, keys, enc, mask)
            h_tilde = torch.tanh(self.W_c(torch.cat([s, context], dim=1)))
        else:
            alpha = None
            h_tilde = torch.tanh(self.W_c(s))
        return (s, c), h_tilde, alpha

    def forward(self, src, mask, tgt_in):
        enc, h, c = self.encode(src, mask)
        keys = self.attention.keys(enc) if self.attention_kind != "none" else None
        feed = torch.zeros(src.size(0), h.size(1))
        state = (h, c)
        outputs = []
        if self.project_all:
            embedded = self.tgt_embed(tgt_in)  # (B, T, E), all steps at once
            for t in range(tgt_in.size(1)):
                state, feed, _ = self.step(None, state, feed, enc, keys, mask, embedded[:, t])
                outputs.append(feed)
            return self.out(torch.stack(outputs, dim=1))  # (B, T, H) @ (H, V), one product
        for t in range(tgt_in.size(1)):
            state, feed, _ = self.step(tgt_in[:, t], state, feed, enc, keys, mask)
            outputs.append(self.out(feed))
        return torch.stack(outputs, dim=1)

    @torch.no_grad()
    def greedy(self, src, mask, max_len):
        enc, h, c = self.encode(src, mask)
        keys = self.attention.keys(enc) if self.attention_kind != "none" else None
        feed = torch.zeros(src.size(0), h.size(1))
        state = (h, c)
        y = torch.full((src.size(0),), 2, dtype=torch.long)  # <s>
        tokens = []
        for _ in range(max_len):
            state, feed, _ = self.step(y, state, feed, enc, keys, mask)
            y = self.out(feed).argmax(dim=1)
            tokens.append(y)
        return torch.stack(tokens, dim=1)


def flops_per_step(args):
    """Multiply-adds x 2 of the GEMMs in one training step (forward + backward = 3x forward)."""
    B, S, T, E, H, V = args.batch, args.src_len, args.tgt_len, args.embed, args.hidden, args.vocab
    D = 2 if args.bidirectional else 1
    Hk = D * H
    enc = 0
    in_size = E
    for _ in range(args.layers):
        enc += D * B * S * 4 * H * (in_size + H)
        in_size = Hk
    dec = B * T * 4 * H * (E + H + H)
    if args.attention != "none":
        dec += B * S * Hk * H  # keys, once
        dec += B * T * (H * H + 2 * S * Hk + (S * H if args.attention == "additive" else 0))
        dec += B * T * (H + Hk) * H
    else:
        dec += B * T * H * H
    dec += B * T * H * V
    return 3 * 2 * (enc + dec)


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
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--project-all", action="store_true",
                   help="embed all target steps before the loop and project all steps at once after it")
    p.add_argument("--turn-steps", type=int, default=0,
                   help="take turns with another process (bench/compare_seq2seq.sh, TURNS=N): steps a turn")
    p.add_argument("--turn-fifos", default="", help="IN,OUT: the FIFOs of --turn-steps")
    args = p.parse_args()
    if (args.turn_steps > 0) != bool(args.turn_fifos):
        p.error("--turn-steps and --turn-fifos go together")

    threads_line = set_threads(args.threads)
    torch.manual_seed(args.seed)
    model = Seq2Seq(args)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    B, S, T, V = args.batch, args.src_len, args.tgt_len, args.vocab
    src = torch.randint(4, V, (B, S))
    mask = torch.ones(B, S)
    tgt = torch.randint(4, V, (B, T + 1))
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]

    def train_step():
        opt.zero_grad()
        logits = model(src, mask, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1), ignore_index=0)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        return loss.item()

    turns = Turns(*args.turn_fifos.split(",", 1), args.turn_steps, args.warmup) if args.turn_steps else None
    times = []
    for i in range(args.warmup + args.steps):
        if turns and turns.before_step(i):
            train_step()  # untimed, after the other process's turn
        start = time.perf_counter()
        train_step()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
        if turns:
            turns.after_step(i, i + 1 == args.warmup + args.steps)
    decode_times = []
    for i in range(2 + max(3, args.steps // 4)):
        start = time.perf_counter()
        model.greedy(src, mask, T)
        if i >= 2:
            decode_times.append(time.perf_counter() - start)
    step_ms = statistics.median(times) * 1e3
    decode_ms = statistics.median(decode_times) * 1e3
    gflop = flops_per_step(args) / 1e9
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    variant = "project-all" if args.project_all else "per-step"
    print(f"pytorch {torch.__version__}  threads {args.threads}  attention {args.attention}  output projection {variant}")
    print(f"# {threads_line}")
    if turns:
        print(f"turns        the training steps ran in {turns.turns} turn{'' if turns.turns == 1 else 's'} "
              f"of {args.turn_steps} steps, "
              f"taking turns through {args.turn_fifos.replace(',', ' and ')}")
    print(f"train step   median {step_ms:9.2f} ms   {B * T / (step_ms / 1e3):10.0f} target tokens/s   "
          f"{gflop:.2f} GFLOP/step   {gflop / (step_ms / 1e3):.1f} GFLOP/s")
    print(f"greedy decode median {decode_ms:9.2f} ms   {B * T / (decode_ms / 1e3):10.0f} tokens/s")
    print(f"peak RSS     {rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
