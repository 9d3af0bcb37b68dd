#!/usr/bin/env bash
# Measures every figure of the README's "Toward the hardware limit" section, one
# command after another, on one thread unless said otherwise (~10-15 minutes on an
# idle 2-vCPU machine; keep the machine otherwise idle). Each command's output goes
# to LOGS (default bench-logs/) as NN-name.log, and its last lines (the summary)
# to the terminal.
# Usage, from the repository root, after `tools/run.sh demo` (or the release build)
# and with Debian's python3-torch and libdnnl-dev installed:
#   bench/goals.sh
#   LOGS=/tmp/goals bench/goals.sh
set -euo pipefail
logs="${LOGS:-bench-logs}"
mkdir -p "$logs"
S=(--embed 32 --hidden 64 --batch 16 --src-len 20 --tgt-len 20 --vocab 1000 --attention additive)
M=(--embed 128 --hidden 256 --batch 64 --src-len 30 --tgt-len 30 --vocab 8000 --attention additive)
n=0
run() {  # run NAME [VAR=value...] COMMAND...: logs the whole output, shows the summary
  local name="$1"
  shift
  n=$((n + 1))
  local log
  log="$(printf '%s/%02d-%s.log' "$logs" "$n" "$name")"
  printf '\n==> %s (%s)\n' "$name" "$(date +%H:%M:%S)"
  env "$@" >"$log" 2>&1 || { echo "failed: see $log" >&2; return 1; }
  tail -n 12 "$log"
}
run kernel-shapes build/release/bench/bench_kernel_shapes
run s-greedy-beam bench/compare_decode.sh "${S[@]}" --threads 1 --decode-runs 20
# S training: attend times 140 steps, ~0.4 s like the twin's 20, both sides on one
# vCPU (compare_seq2seq.sh and one_cpu.sh say why), taking 5 turns each in every
# round; then whole processes a side, pinned, and unpinned as before 2026-12-07
run s-train ROUNDS=11 ATTEND_STEPS=140 TURNS=5 bench/compare_seq2seq.sh "${S[@]}" --threads 1 --steps 20
run s-train-processes ROUNDS=11 ATTEND_STEPS=140 bench/compare_seq2seq.sh "${S[@]}" --threads 1 --steps 20
run s-train-unpinned CPU= ROUNDS=11 ATTEND_STEPS=140 bench/compare_seq2seq.sh "${S[@]}" --threads 1 --steps 20
run m-greedy-beam ROUNDS=5 bench/compare_decode.sh "${M[@]}" --threads 1 --decode-runs 3
run m-train-project-all ROUNDS=5 TORCH_FLAGS=--project-all bench/compare_seq2seq.sh "${M[@]}" --threads 1 --steps 3 --warmup 5
run lstm-onednn bench/compare_lstm_onednn.sh
run translate-10k bench/time_translate.sh
run toy-memory bench/toy_memory.sh
run m-train-tutorial ROUNDS=3 bench/compare_seq2seq.sh "${M[@]}" --threads 1 --steps 3 --warmup 5
run s-train-2-threads ROUNDS=3 ATTEND_STEPS=140 bench/compare_seq2seq.sh "${S[@]}" --threads 2 --steps 20
run s-decode-2-threads ROUNDS=3 bench/compare_decode.sh "${S[@]}" --threads 2 --decode-runs 20
