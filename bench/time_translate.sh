#!/usr/bin/env bash
# Sentences per second of `attend translate` on a file of 10,000 toy sentences
# (3-60 words, from `attend data toy`), greedy and with a beam of 5, ROUNDS times
# each (default 3), alternating; prints the median and range of each.
# The model is MODEL (a directory written by attend train) if set; otherwise a
# small one is trained first: the default toy model (embed 64, hidden 128,
# bidirectional, additive attention) for STEPS steps (default 300), long enough that it ends its sentences with </s> like a
# trained model. Scratch files go to a temporary directory, removed at the end.
# Usage, from the repository root (a few minutes on an idle machine):
#   bench/time_translate.sh
#   MODEL=toy-model N=10000 ROUNDS=3 THREADS=1 bench/time_translate.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
attend_bin="$(realpath "$attend_bin")"
rounds="${ROUNDS:-3}" n="${N:-10000}" threads="${THREADS:-1}"
make_scratch
"$attend_bin" data toy --n "$n" --seed 11 --out "$scratch/pairs.tsv"
cut -f1 "$scratch/pairs.tsv" >"$scratch/source.txt"
model="${MODEL:-}"
if [[ -z "$model" ]]; then
  model="$scratch/model"
  echo "training a small toy model for ${STEPS:-300} steps ..."
  "$attend_bin" train --toy --max-steps "${STEPS:-300}" --bleu-sentences 0 --threads "$threads" --out "$model" >/dev/null
fi
words=$(wc -w <"$scratch/source.txt")
echo "translating $n sentences ($words source words) with $model, $threads thread(s), $rounds rounds"
seconds() {  # the wall time of `attend translate --beam $1`, in seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$attend_bin" translate --model "$model" --beam "$1" --threads "$threads" "$scratch/source.txt" >"$scratch/out.txt"
  t1=$(date +%s.%N)
  if [[ $(wc -l <"$scratch/out.txt") -ne $n ]]; then
    echo "time_translate: expected $n output lines" >&2
    exit 1
  fi
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
greedy=() beam=()
for ((r = 1; r <= rounds; ++r)); do
  greedy+=("$(seconds 1)") beam+=("$(seconds 5)")
done
for what in greedy beam; do
  declare -n list="$what"
  read -r m lo hi < <(printf '%s\n' "${list[@]}" | summary)
  awk -v w="$what" -v n="$n" -v m="$m" -v lo="$lo" -v hi="$hi" 'BEGIN {
    printf "%-7s %s: %.1f s (%.1f-%.1f), %.0f sentences/s (%.0f-%.0f), model loading included\n", w, (w == "beam" ? "K=5" : "K=1"), m, lo, hi, n / m, n / hi, n / lo
  }'
done
