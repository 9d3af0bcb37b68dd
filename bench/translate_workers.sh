#!/usr/bin/env bash
# attend translate of one file on 1 and on W workers (--workers W --threads 1:
# the batches decoded W at once, each by its own copy of the model), in
# alternating rounds: the median and range of each side's sentences/s and of
# the speed-up within each round. The goal (docs/performance.md): on 2 workers
# at least 1.9x one. N toy sentences (default 4000, `attend data toy`), greedy,
# --batch 64. The model is MODEL if set; otherwise a toy model at config M's
# sizes (embed 128, hidden 256, additive attention; lib.sh) trained for STEPS
# steps (default 100), so that it ends its sentences like a trained model.
# Writes the run to RESULTS/DATE-CPU-COMMIT-workers.md (default bench/results/).
# Keep the machine otherwise idle: the W workers need W idle cores.
# Usage, from the repository root:
#   bench/translate_workers.sh
#   N=200 STEPS=5 ROUNDS=1 RESULTS=/tmp/results bench/translate_workers.sh   # a quick check that it works
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
attend_bin="$(realpath "$attend_bin")"
n="${N:-4000}" rounds="${ROUNDS:-5}" workers="${WORKERS:-2}" results="${RESULTS:-bench/results}"
make_scratch
logs="$scratch/logs"
mkdir -p "$logs"
: >"$logs/commands.tsv"
"$attend_bin" data toy --n "$n" --seed 11 --out "$scratch/pairs.tsv"
cut -f1 "$scratch/pairs.tsv" >"$scratch/source.txt"
model="${MODEL:-}"
if [[ -z "$model" ]]; then
  model="$scratch/model"
  echo "training a config M toy model for ${STEPS:-100} steps ..."
  "$attend_bin" train --toy --embed "$(flag_value --embed "${M[@]}")" --hidden "$(flag_value --hidden "${M[@]}")" \
    --attention additive --max-steps "${STEPS:-100}" --bleu-sentences 0 --out "$model" >/dev/null
fi

seconds() {  # WORKERS: the wall time of attend translate on the file, model loading included
  local t0 t1
  t0=$(date +%s.%N)
  "$attend_bin" translate --model "$model" --workers "$1" --threads 1 --quiet "$scratch/source.txt" >"$scratch/out-$1.txt"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
one=() many=() speedups=()
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then
    a="$(seconds 1)" b="$(seconds "$workers")"
  else
    b="$(seconds "$workers")" a="$(seconds 1)"
  fi
  cmp -s "$scratch/out-1.txt" "$scratch/out-$workers.txt" || { echo "the $workers workers printed another translation" >&2; exit 1; }
  one+=("$a") many+=("$b") speedups+=("$(ratio "$a" "$b")")
done
report() {
  local m lo hi
  echo "translate $n sentences, greedy, --batch 64, --threads 1, model $model, $rounds alternating rounds"
  for side in one many; do
    declare -n list="$side"
    read -r m lo hi < <(printf '%s\n' "${list[@]}" | summary)
    awk -v w="$([[ $side == one ]] && echo 1 || echo "$workers")" -v n="$n" -v m="$m" -v lo="$lo" -v hi="$hi" 'BEGIN {
      printf "  --workers %d: %.3f s (%.3f-%.3f), %.0f sentences/s (%.0f-%.0f), model loading included\n", w, m, lo, hi, n / m, n / hi, n / lo
    }'
  done
  read -r m lo hi < <(printf '%s\n' "${speedups[@]}" | summary)
  echo "  speed-up of $workers workers within each round: median ${m}x ($lo-$hi); per round: ${speedups[*]}"
}
report | tee "$logs/01-workers.log"
printf '01-workers\t%s\n' "attend translate --workers 1 and --workers $workers, alternating" >>"$logs/commands.tsv"
file="$(write_results "$results" "$logs" "$(command_line bench/translate_workers.sh N STEPS MODEL ROUNDS WORKERS RESULTS)" workers)"
printf '\nresults: %s\n' "$file"
