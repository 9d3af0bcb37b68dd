#!/usr/bin/env bash
# Runs `attend bench` and its PyTorch twin (bench/torch_seq2seq.py, Debian's
# python3-torch) with the same flags, one after the other, and prints the ratio
# of their median training-step times. Usage, from the repository root:
#   bench/compare_seq2seq.sh --embed 32 --hidden 64 --batch 16 --src-len 20 --tgt-len 20 \
#       --vocab 1000 --attention additive --threads 1 --steps 20
set -euo pipefail
attend_bin="${ATTEND:-build/release/tools/attend}"
python="${TORCH_PYTHON:-/usr/bin/python3}"
a="$("$attend_bin" bench "$@")"
t="$("$python" bench/torch_seq2seq.py "$@")"
printf '%s\n\n%s\n\n' "$a" "$t"
step() { awk '/^train step/ {print $4}' <<<"$1"; }
rss() { awk '/^peak RSS/ {print $3}' <<<"$1"; }
awk -v a="$(step "$a")" -v t="$(step "$t")" -v ra="$(rss "$a")" -v rt="$(rss "$t")" 'BEGIN {
  printf "training step: attend %.2f ms, pytorch %.2f ms: attend is %.2fx as fast\n", a, t, t / a
  printf "peak RSS: attend %d MB, pytorch %d MB (%.2f of pytorch)\n", ra, rt, ra / rt
}'
