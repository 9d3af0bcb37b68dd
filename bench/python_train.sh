#!/usr/bin/env bash
# attend.train from Python against `attend train`, with the same training flags,
# at the sizes of config S and M (bench/lib.sh; here as train flags on the toy
# language): the goal is that the Python door trains at the command's speed,
# within 2% (issue 43). Both run the same C++ (attend.train parses the command's
# flags and runs its code), so what differs is the door: interpreter, import,
# argument conversion, and the GIL released around the run.
# Each round runs both sides one after the other, in alternating order so that a
# slow spell of the machine hits both alike, each on the same vCPU (one_cpu in
# bench/lib.sh); it prints each side's median wall time of the run and range over
# the rounds, and the ratio of the medians. The Python side times the
# attend.train call (not the interpreter's start); the command's side the
# process, whose start costs milliseconds against runs of seconds.
# Usage, from the repository root, after building attend_cli and attend_python:
#   ROUNDS=7 STEPS=300 bench/python_train.sh S M
#   ROUNDS=1 STEPS=2 TOY_N=200 bench/python_train.sh S      (proves it works; measures nothing)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
pythonpath="${ATTEND_PYTHONPATH:-build/release/python}"
if [[ ! -f $pythonpath/attend/__init__.py ]]; then
  echo "python_train.sh: no attend package in $pythonpath (build the target attend_python, or set ATTEND_PYTHONPATH)" >&2
  exit 1
fi
rounds="${ROUNDS:-5}" steps="${STEPS:-200}"
[[ $# -gt 0 ]] || set -- S M
make_scratch
one_cpu --threads 1

# The train flags of each config: the model and batch sizes of bench/lib.sh's S and M.
flags_of() {
  case "$1" in
    S) echo --embed 32 --hidden 64 --batch 16 --attention additive ;;
    M) echo --embed 128 --hidden 256 --batch 64 --attention additive ;;
    *) echo "python_train.sh: unknown config '$1' (S or M)" >&2; exit 2 ;;
  esac
}

# seconds of one run of the command
run_cli() {
  local start end
  start="$(date +%s.%N)"
  "${pin[@]}" "$attend_bin" train "$@" --out "$scratch/cli" --overwrite >/dev/null
  end="$(date +%s.%N)"
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f\n", b - a}'
}

# seconds of one attend.train call with the same flags, as keyword arguments
run_python() {
  PYTHONPATH="$pythonpath" "${pin[@]}" "$python" - "$@" --out "$scratch/py" --overwrite <<'PY'
import contextlib, os, sys, time
import attend
args, kwargs, i = sys.argv[1:], {}, 0
while i < len(args):
    key = args[i][2:].replace("-", "_")
    if i + 1 < len(args) and not args[i + 1].startswith("--"):
        kwargs[key], i = args[i + 1], i + 2
    else:
        kwargs[key], i = True, i + 1
with open(os.devnull, "w") as null:
    saved = os.dup(1)
    os.dup2(null.fileno(), 1)  # the run's progress, as the command's goes to /dev/null
    start = time.perf_counter()
    attend.train(**kwargs)
    seconds = time.perf_counter() - start
    os.dup2(saved, 1)
print(f"{seconds:.3f}")
PY
}

for config in "$@"; do
  read -r -a model <<<"$(flags_of "$config")"
  args=(--toy --toy-n "${TOY_N:-20000}" --toy-max-len 20 --epochs 1 --max-steps "$steps" --bleu-sentences 0
        --threads 1 --seed 1 "${model[@]}")
  cli_times=() py_times=()
  for ((r = 0; r < rounds; ++r)); do
    if ((r % 2 == 0)); then
      cli_times+=("$(run_cli "${args[@]}")"); py_times+=("$(run_python "${args[@]}")")
    else
      py_times+=("$(run_python "${args[@]}")"); cli_times+=("$(run_cli "${args[@]}")")
    fi
  done
  read -r cli_med cli_min cli_max < <(printf '%s\n' "${cli_times[@]}" | summary)
  read -r py_med py_min py_max < <(printf '%s\n' "${py_times[@]}" | summary)
  echo "config $config: ${args[*]}"
  echo "  attend train   median ${cli_med} s  (range ${cli_min}-${cli_max}, ${rounds} rounds)"
  echo "  attend.train   median ${py_med} s  (range ${py_min}-${py_max}, ${rounds} rounds)"
  echo "  Python / command: $(ratio "$py_med" "$cli_med")"
done
