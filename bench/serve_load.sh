#!/usr/bin/env bash
# attend serve under load, against attend translate on the same sentences: N toy
# sentences (default 1000, from `attend data toy`) translated greedily
#   - by `attend translate` on the whole file (sentences/s, model loading included),
#     and on one sentence (the latency a command line gives one sentence);
#   - by `attend serve`, one sentence a request, from 1, 4 and 16 concurrent
#     clients (CLIENTS) of bench/serve_client.py: requests/s and p50/p90/p99 latency,
#     each request decoded alone (the default) and with --coalesce.
# All traffic stays on 127.0.0.1. The model is MODEL (a directory written by
# attend train) if set; otherwise one at config S's size (embed 32, hidden 64,
# additive attention; lib.sh) is trained on the toy language for STEPS steps
# (default 300). One OpenBLAS thread each (THREADS); the server keeps COPIES
# copies of the model (default 1: --copies), so that as many requests decode
# at once. Writes the run's results file,
# RESULTS/DATE-CPU-COMMIT-serve.md (default bench/results/), with every command
# and its whole output. Keep the machine otherwise idle.
# Usage, from the repository root:
#   bench/serve_load.sh
#   N=50 STEPS=5 CLIENTS="1 4" RESULTS=/tmp/results bench/serve_load.sh   # a quick check that it works
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
attend_bin="$(realpath "$attend_bin")"
n="${N:-1000}" threads="${THREADS:-1}" clients="${CLIENTS:-1 4 16}" copies="${COPIES:-1}"
results="${RESULTS:-bench/results}"
make_scratch
logs="$scratch/logs"
mkdir -p "$logs"
: >"$logs/commands.tsv"
server_pid=""
stop_server() { [[ -z $server_pid ]] || { kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" || true; }; }
trap 'stop_server; rm -rf "$scratch"' EXIT

"$attend_bin" data toy --n "$n" --seed 11 --out "$scratch/pairs.tsv"
cut -f1 "$scratch/pairs.tsv" >"$scratch/source.txt"
head -n 1 "$scratch/source.txt" >"$scratch/one.txt"
model="${MODEL:-}"
if [[ -z "$model" ]]; then
  model="$scratch/model"
  echo "training a config S toy model for ${STEPS:-300} steps ..."
  "$attend_bin" train --toy --embed "$(flag_value --embed "${S[@]}")" --hidden "$(flag_value --hidden "${S[@]}")" \
    --attention additive --max-steps "${STEPS:-300}" --bleu-sentences 0 --threads "$threads" --out "$model" >/dev/null
fi

step=0
run() {  # run NAME COMMAND...: its whole output to the log, listed in commands.tsv
  local name
  step=$((step + 1))
  name="$(printf '%02d-%s' "$step" "$1")"
  shift
  printf '%s\t%s\n' "$name" "$*" >>"$logs/commands.tsv"
  "$@" >"$logs/$name.log" 2>&1 || { cat "$logs/$name.log" >&2; echo "failed: $name" >&2; exit 1; }
  tail -n 3 "$logs/$name.log"
}
timed_translate() {  # FILE: the wall time of attend translate on it, and sentences/s
  local t0 t1 lines
  lines=$(wc -l <"$1")
  t0=$(date +%s.%N)
  "$attend_bin" translate --model "$model" --threads "$threads" --quiet "$1" >"$scratch/out.txt"
  t1=$(date +%s.%N)
  [[ $(wc -l <"$scratch/out.txt") -eq $lines ]] || { echo "expected $lines output lines" >&2; return 1; }
  awk -v a="$t0" -v b="$t1" -v n="$lines" 'BEGIN {printf "attend translate: %d sentences in %.3f s, %.1f sentences/s, model loading included\n", n, b - a, n / (b - a)}'
}
run translate-file timed_translate "$scratch/source.txt"
run translate-one timed_translate "$scratch/one.txt"

start_server() {  # FLAGS...: attend serve on a free port, its port in `port`
  "$attend_bin" serve --model "$model" --port 0 --workers 16 --threads "$threads" --copies "$copies" "$@" \
    >"$scratch/serve.out" 2>"$scratch/serve.err" &
  server_pid=$!
  port=""
  for _ in $(seq 600); do
    port="$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)/$|\1|p' "$scratch/serve.out")"
    [[ -z $port ]] || return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$scratch/serve.err" >&2; exit 1; }
    sleep 0.1
  done
  echo "attend serve did not start" >&2
  exit 1
}
# Each request alone (the default), then --coalesce (concurrent requests batched together).
for mode in alone coalesce; do
  flags=()
  [[ $mode == alone ]] || flags=(--coalesce)
  start_server "${flags[@]}"
  for c in $clients; do
    run "serve-$mode-$c-clients" python3 "$(dirname "$0")/serve_client.py" --port "$port" --clients "$c" "$scratch/source.txt"
  done
  stop_server
  server_pid=""
done

file="$(write_results "$results" "$logs" "$(command_line bench/serve_load.sh N STEPS MODEL CLIENTS THREADS COPIES RESULTS)" serve)"
printf '\nresults: %s\n' "$file"
