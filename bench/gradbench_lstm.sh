#!/usr/bin/env bash
# The tape's cost on an unbatched recurrence: GradBench's `lstm` eval
# (bench/gradbench_lstm.cpp) in attend, by attend's autograd and by hand, and
# in PyTorch (bench/torch_gradbench_lstm.py), on the same inputs, objective plus
# gradient, float64, one thread. Rounds alternate the two processes (the
# order swapped each round); each side runs RUNS times a round and reports its
# median. Goals (docs/performance.md): attend's tape within 3x of the
# hand-written derivative, and at most 0.1x PyTorch's time.
# Writes the run to RESULTS/DATE-CPU-COMMIT-gradbench-lstm.md (default bench/results/).
# Usage, from the repository root, on an otherwise idle machine:
#   bench/gradbench_lstm.sh                      # l = 2, c = 1024, 5 rounds of 5 runs
#   LAYERS=4 CHARS=4096 bench/gradbench_lstm.sh
#   CHARS=64 ROUNDS=1 RUNS=1 RESULTS=/tmp/results bench/gradbench_lstm.sh   # a quick check that it works
set -euo pipefail
source "$(dirname "$0")/lib.sh"
program="$(dirname "$attend_bin")/../bench/bench_gradbench_lstm"
require_program "$program" bench_gradbench_lstm
layers="${LAYERS:-2}" chars="${CHARS:-1024}" rounds="${ROUNDS:-5}" runs="${RUNS:-5}" results="${RESULTS:-bench/results}"
make_scratch
logs="$scratch/logs"
mkdir -p "$logs"
: >"$logs/commands.tsv"
inputs="$scratch/inputs.json"
"$program" --layers "$layers" --chars "$chars" --rounds 1 --write-inputs "$inputs" >/dev/null

attend_side() { "$program" --layers "$layers" --chars "$chars" --rounds "$runs" >"$scratch/attend.txt"; }
torch_side() { "$python" "$(dirname "$0")/torch_gradbench_lstm.py" --inputs "$inputs" --rounds "$runs" >"$scratch/torch.txt"; }
ms() { awk -v key="$2" '$1 == key {print (key == "by" ? $3 : $2); exit}' "$1"; }
tape=() hand=() torch=() vs_hand=() vs_torch=()
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then attend_side; torch_side; else torch_side; attend_side; fi
  a="$(ms "$scratch/attend.txt" tape)" h="$(ms "$scratch/attend.txt" by)" t="$(ms "$scratch/torch.txt" torch)"
  [[ -n $a && -n $h && -n $t ]] || { cat "$scratch/attend.txt" "$scratch/torch.txt" >&2; exit 1; }
  tape+=("$a") hand+=("$h") torch+=("$t")
  vs_hand+=("$(ratio "$a" "$h")") vs_torch+=("$(ratio "$a" "$t")")
done
# The two sides computed the same loss (to 12 digits).
ours="$(awk '$1 == "loss" {print $3}' "$scratch/attend.txt")" theirs="$(awk '$1 == "loss" {print $3}' "$scratch/torch.txt")"
awk -v a="$ours" -v b="$theirs" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= 1e-12 * (b < 0 ? -b : b))}' ||
  { echo "attend's loss $ours and PyTorch's $theirs differ" >&2; exit 1; }
{
  echo "gradbench lstm, l=$layers c=$chars, float64, one thread; $rounds alternating rounds of $runs runs a side"
  head -2 "$scratch/attend.txt" | tail -1
  for side in tape hand torch; do
    declare -n list="$side"
    read -r m lo hi < <(printf '%s\n' "${list[@]}" | summary)
    printf '  %-8s %9.2f ms (%s-%s), the median of the rounds'"'"' medians\n' "$side" "$m" "$lo" "$hi"
  done
  read -r m lo hi < <(printf '%s\n' "${vs_hand[@]}" | summary)
  echo "  tape / by hand: ${m}x ($lo-$hi) within the rounds; goal <= 3x"
  read -r m lo hi < <(printf '%s\n' "${vs_torch[@]}" | summary)
  echo "  tape / PyTorch: ${m}x ($lo-$hi) within the rounds; goal <= 0.1x"
} | tee "$logs/01-gradbench-lstm.log"
printf '01-gradbench-lstm\t%s\n' "bench_gradbench_lstm --layers $layers --chars $chars --rounds $runs, and bench/torch_gradbench_lstm.py --rounds $runs, alternating" >>"$logs/commands.tsv"
file="$(write_results "$results" "$logs" "$(command_line bench/gradbench_lstm.sh LAYERS CHARS ROUNDS RUNS RESULTS)" gradbench-lstm)"
printf '\nresults: %s\n' "$file"
