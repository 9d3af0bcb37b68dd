#!/usr/bin/env bash
# Runs `attend bench` and its PyTorch twin (bench/torch_seq2seq.py, Debian's
# python3-torch) with the same flags, alternately for ROUNDS rounds (default 5)
# so that a busy or slow spell of the machine hits both alike, and prints each
# side's median training-step time over the rounds, their range, and the ratio
# of the medians. PyTorch's step time varies from one process to the next here
# (19 to 30 ms at config S, with the same flags), hence the rounds.
# Usage, from the repository root:
#   bench/compare_seq2seq.sh --embed 32 --hidden 64 --batch 16 --src-len 20 --tgt-len 20 \
#       --vocab 1000 --attention additive --threads 1 --steps 20
set -euo pipefail
attend_bin="${ATTEND:-build/release/tools/attend}"
python="${TORCH_PYTHON:-/usr/bin/python3}"
rounds="${ROUNDS:-5}"
step() { awk '/^train step/ {print $4}' <<<"$1"; }
rss() { awk '/^peak RSS/ {print $3}' <<<"$1"; }
a_steps=() t_steps=() a_rss=0 t_rss=0
for ((r = 1; r <= rounds; ++r)); do
  a="$("$attend_bin" bench "$@")"
  t="$("$python" bench/torch_seq2seq.py "$@")"
  if ((r == 1)); then printf '%s\n\n%s\n\n' "$a" "$t"; fi
  a_steps+=("$(step "$a")") t_steps+=("$(step "$t")")
  a_rss=$(awk -v x="$a_rss" -v y="$(rss "$a")" 'BEGIN {print (y > x ? y : x)}')
  t_rss=$(awk -v x="$t_rss" -v y="$(rss "$t")" 'BEGIN {print (y > x ? y : x)}')
done
# The median, min and max of a list of numbers, one a line.
summary() { sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR]}'; }
read -r am amin amax < <(printf '%s\n' "${a_steps[@]}" | summary)
read -r tm tmin tmax < <(printf '%s\n' "${t_steps[@]}" | summary)
awk -v am="$am" -v amin="$amin" -v amax="$amax" -v tm="$tm" -v tmin="$tmin" -v tmax="$tmax" -v n="$rounds" \
    -v ra="$a_rss" -v rt="$t_rss" 'BEGIN {
  printf "training step over %d alternating rounds, median (min-max) of each round'"'"'s median:\n", n
  printf "  attend %.2f ms (%.2f-%.2f), pytorch %.2f ms (%.2f-%.2f): attend is %.2fx as fast\n", am, amin, amax, tm, tmin, tmax, tm / am
  printf "peak RSS: attend %d MB, pytorch %d MB (%.2f of pytorch)\n", ra, rt, ra / rt
}'
