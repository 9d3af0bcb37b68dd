#!/usr/bin/env bash
# A goals run: every comparison of docs/performance.md, one command after
# another, one thread unless said otherwise, and then its results file,
# RESULTS/DATE-CPU-COMMIT.md (default bench/results/; bench/results/README.md),
# with the command, the CPU, the commit and every comparison's whole output.
# Keep the machine otherwise idle: the comparisons alternate the two sides in
# rounds so that a slow spell hits both, but they cannot correct for other work.
# Each command's output also goes to LOGS (default bench-logs/) as NN-name.log,
# and its last lines (the summary) to the terminal.
# Usage, from the repository root, after `tools/run.sh demo` (or the release
# build) and with Debian's python3-torch and libdnnl-dev installed:
#   bench/goals.sh
#   LOGS=/tmp/goals RESULTS=/tmp/results bench/goals.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
require_program build/release/bench/bench_kernel_shapes bench_kernel_shapes
logs="${LOGS:-bench-logs}"
results="${RESULTS:-bench/results}"
mkdir -p "$logs"
: >"$logs/commands.tsv"
n=0
run() {  # run NAME [VAR=value...] COMMAND...: logs the whole output, shows the summary
  local name
  name="$(printf '%02d-%s' $((n + 1)) "$1")"
  shift
  n=$((n + 1))
  printf '%s\t%s\n' "$name" "$*" >>"$logs/commands.tsv"
  printf '\n==> %s (%s)\n' "$name" "$(date +%H:%M:%S)"
  env "$@" >"$logs/$name.log" 2>&1 || { echo "failed: see $logs/$name.log" >&2; return 1; }
  tail -n 12 "$logs/$name.log"
}
run kernel-shapes build/release/bench/bench_kernel_shapes
run s-greedy-beam bench/compare_decode.sh "${S[@]}" --threads 1 --decode-runs 20
# S training: attend times 140 steps, about as long as the twin's 20, so that a
# slow spell of the machine covers as much of both sides' timed windows. Both
# sides on one vCPU (lib.sh's one_cpu says why), taking 5 turns each in every
# round; then whole processes a side, pinned, and unpinned, so that the file
# shows what pinning and turns change.
run s-train ROUNDS=11 ATTEND_STEPS=140 TURNS=5 bench/compare_seq2seq.sh "${S[@]}" --threads 1 --steps 20
run s-train-processes ROUNDS=11 ATTEND_STEPS=140 bench/compare_seq2seq.sh "${S[@]}" --threads 1 --steps 20
run s-train-unpinned CPU= ROUNDS=11 ATTEND_STEPS=140 bench/compare_seq2seq.sh "${S[@]}" --threads 1 --steps 20
run m-greedy-beam ROUNDS=5 bench/compare_decode.sh "${M[@]}" --threads 1 --decode-runs 3
# int8 decoding (issue 44's goal 2): attend --int8 against attend's float32 and the twin's dynamic quantization.
run m-int8-greedy-beam ROUNDS=5 bench/compare_decode.sh "${M[@]}" --threads 1 --decode-runs 3 --int8
run m-train-project-all ROUNDS=5 TORCH_FLAGS=--project-all bench/compare_seq2seq.sh "${M[@]}" --threads 1 --steps 3 --warmup 5
run lstm-onednn bench/compare_lstm_onednn.sh
run translate-10k bench/time_translate.sh
run toy-memory bench/toy_memory.sh
run m-train-tutorial ROUNDS=3 bench/compare_seq2seq.sh "${M[@]}" --threads 1 --steps 3 --warmup 5
run s-train-2-threads ROUNDS=3 ATTEND_STEPS=140 bench/compare_seq2seq.sh "${S[@]}" --threads 2 --steps 20
run s-decode-2-threads ROUNDS=3 bench/compare_decode.sh "${S[@]}" --threads 2 --decode-runs 20
file="$(write_results "$results" "$logs" "$(command_line bench/goals.sh LOGS RESULTS)")"
printf '\nresults: %s\n' "$file"
