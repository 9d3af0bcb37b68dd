#!/usr/bin/env bash
# Training throughput of `attend train` at the configs S and M (bench/lib.sh)
# in three set-ups on one machine, to tell whether data-parallel processes beat
# BLAS threads at the same global batch:
#   1 process  x 1 BLAS thread      attend train --threads 1
#   1 process  x 2 BLAS threads     attend train --threads 2
#   2 processes x 1 BLAS thread     mpirun -np 2 attend train --threads 1 (data-parallel)
# The global batch is the same in all three (N does not change it).
#
# The data are random sentences of fixed length, like `attend bench`'s: S has 20
# source words and 19 target words (+ </s> = 20 target tokens), vocabulary 1000;
# M 30 and 29, vocabulary 8000. Each set-up trains twice, for STEPS1 and STEPS2
# steps of one epoch; tokens/s = batch * target tokens * (STEPS2 - STEPS1) /
# (t2 - t1), so start-up, data loading and the end-of-run validation cancel.
# The set-ups alternate for ROUNDS rounds (default 3), so that a busy spell of the
# machine hits all alike; the script prints each set-up's median tokens/s and the
# speed-ups over 1 x 1 (the goals, docs/performance.md: 1x2 and 2x1 at least
# 1.85x at M). Run it on a quiet machine: it measures nothing useful while
# other jobs share the cores. Writes the run to RESULTS/DATE-CPU-COMMIT-mpi.md
# (default bench/results/).
# Usage, from the repository root, after `tools/run.sh bench` (or a release build):
#   bench/compare_mpi.sh            # S and M
#   bench/compare_mpi.sh S          # one config
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
attend="$attend_bin"
mpiexec="${MPIEXEC:-mpirun}"
rounds="${ROUNDS:-3}"
configs=("${@:-S M}")
read -r -a configs <<<"${configs[*]}"
# Open MPI refuses root without these (a container's usual user).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
results_dir="${RESULTS:-bench/results}"
make_scratch
work="$scratch"
logs="$work/logs"
mkdir -p "$logs"
: >"$logs/commands.tsv"

# name: embed hidden batch src_words tgt_words vocab steps1 steps2, from S and
# M of bench/lib.sh: the target side has tgt-len - 1 words, </s> being the last token.
config_spec() {  # config_spec FLAGS... STEPS1 STEPS2
  local steps2="${*: -1}" steps1="${*: -2:1}" flags=("${@:1:$#-2}")
  echo "$(flag_value --embed "${flags[@]}") $(flag_value --hidden "${flags[@]}") $(flag_value --batch "${flags[@]}")" \
    "$(flag_value --src-len "${flags[@]}") $(($(flag_value --tgt-len "${flags[@]}") - 1))" \
    "$(flag_value --vocab "${flags[@]}") $steps1 $steps2"
}
declare -A spec=(
  [S]="$(config_spec "${S[@]}" 20 220)"
  [M]="$(config_spec "${M[@]}" 2 12)"
)

# Random pairs of exactly src and tgt words from a vocabulary of v words.
make_data() {
  local pairs="$1" src="$2" tgt="$3" v="$4" out="$5"
  awk -v n="$pairs" -v s="$src" -v t="$tgt" -v v="$v" 'BEGIN {
    srand(7)
    for (i = 0; i < n; ++i) {
      line = ""
      for (j = 0; j < s; ++j) line = line (j ? " " : "") "w" int(rand() * v)
      line = line "\t"
      for (j = 0; j < t; ++j) line = line (j ? " " : "") "w" int(rand() * v)
      print line
    }
  }' >"$out"
}

# Seconds of one run of `attend train` for this many steps.
run_seconds() {
  local setup="$1" steps="$2" data="$3" embed="$4" hidden="$5" batch="$6"
  local cmd=("$attend" train --data "$data" --valid-fraction 0 --max-len 100 --bleu-sentences 0 --epochs 1
    --embed "$embed" --hidden "$hidden" --batch "$batch" --attention additive --max-steps "$steps"
    --out "$work/model-$setup")
  case "$setup" in
    1x1) cmd+=(--threads 1) ;;
    1x2) cmd+=(--threads 2) ;;
    2x1) cmd=("$mpiexec" -np 2 --bind-to core "${cmd[@]}" --threads 1) ;;
  esac
  rm -rf "$work/model-$setup"
  local t0 t1
  t0="$(date +%s.%N)"
  "${cmd[@]}" </dev/null >"$work/log-$setup.txt" 2>&1 || {
    cat "$work/log-$setup.txt" >&2
    return 1
  }
  t1="$(date +%s.%N)"
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}

for config in "${configs[@]}"; do
  [[ -n "${spec[$config]:-}" ]] || { echo "unknown config $config (S or M)" >&2; exit 2; }
  read -r embed hidden batch src tgt vocab steps1 steps2 <<<"${spec[$config]}"
  data="$work/$config.tsv"
  make_data $((batch * steps2 + batch)) "$src" "$tgt" "$vocab" "$data"
  tokens_per_step=$((batch * (tgt + 1)))
  declare -A results=()
  for ((r = 1; r <= rounds; ++r)); do
    for setup in 1x1 1x2 2x1; do
      a="$(run_seconds "$setup" "$steps1" "$data" "$embed" "$hidden" "$batch")"
      b="$(run_seconds "$setup" "$steps2" "$data" "$embed" "$hidden" "$batch")"
      tps="$(awk -v a="$a" -v b="$b" -v k=$((steps2 - steps1)) -v t="$tokens_per_step" 'BEGIN {print t * k / (b - a)}')"
      results[$setup]+="$tps "
    done
  done
  {
    printf '%s (embed %s, hidden %s, batch %s, %s+%s tokens, vocab %s), median of %s rounds, target tokens/s:\n' \
      "$config" "$embed" "$hidden" "$batch" "$src" "$((tgt + 1))" "$vocab" "$rounds"
    base="$(tr ' ' '\n' <<<"${results[1x1]}" | grep . | median)"
    for setup in 1x1 1x2 2x1; do
      m="$(tr ' ' '\n' <<<"${results[$setup]}" | grep . | median)"
      awk -v s="$setup" -v m="$m" -v b="$base" -v all="${results[$setup]}" 'BEGIN {
        printf "  %s  %10.0f tokens/s  %.2fx of 1x1   (rounds: %s)\n", s, m, m / b, all }'
    done
  } | tee "$logs/$config.log"
  printf '%s\t%s\n' "$config" "attend train at $config: 1 process x 1 thread, 1 x 2 threads, mpirun -np 2 x 1 thread, $rounds alternating rounds" >>"$logs/commands.tsv"
  unset results
done
file="$(write_results "$results_dir" "$logs" "$(command_line bench/compare_mpi.sh ROUNDS RESULTS) ${configs[*]}" mpi)"
printf '\nresults: %s\n' "$file"
