#!/usr/bin/env bash
# Where a training step's time goes: `perf record` of `attend bench` at config
# S, M or L (bench/lib.sh; default M), one thread, and the samples grouped by
# what the code does (the matrix products on OpenBLAS and on attend's packed
# kernel, their packing, the attention's rows, the LSTM gates, memory fills and
# copies, the optimizer, the autograd tape, the rest), then the 30 hottest
# symbols. The bench's own lines (step time, share of the FMA peak) come first.
# Needs perf (Debian's linux-perf) and permission to sample this process.
# Writes the run to RESULTS/DATE-CPU-COMMIT-profile.md (default bench/results/).
# Usage, from the repository root, on an otherwise idle machine:
#   bench/profile.sh            # config M, 30 timed steps
#   CONFIG=L STEPS=10 bench/profile.sh
#   CONFIG=S STEPS=5 RESULTS=/tmp/results bench/profile.sh   # a quick check that it works
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
command -v perf >/dev/null || { echo "profile.sh: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
config="${CONFIG:-M}" steps="${STEPS:-30}" results="${RESULTS:-bench/results}"
case "$config" in
  S) flags=("${S[@]}") ;;
  M) flags=("${M[@]}") ;;
  L) flags=("${L[@]}") ;;
  *) echo "profile.sh: CONFIG is S, M or L, not '$config'" >&2; exit 1 ;;
esac
make_scratch
logs="$scratch/logs"
mkdir -p "$logs"
: >"$logs/commands.tsv"
bench=("$attend_bin" bench "${flags[@]}" --threads 1 --steps "$steps" --no-decode)
perf record -q -F 999 -o "$scratch/perf.data" "${bench[@]}" >"$logs/01-bench.log"
# Only the training steps: `attend bench` also times sgemm before and after them
# and probes the FMA peak at the end. The steps run from the first sample in
# the LSTM's gates to the last in the optimizer's update.
window="$(perf script -i "$scratch/perf.data" -F time,ip,sym 2>/dev/null |
  awk '/lstm_kernels|optim::/ {t = $1; sub(/:$/, "", t); if (s == "") s = t; e = t} END {if (s != "") print s "," e}')"
[[ -n $window ]] || { echo "profile.sh: no sample fell in a training step (too few --steps?)" >&2; exit 1; }
perf report -q -i "$scratch/perf.data" --time "$window" --no-children --sort symbol --stdio 2>/dev/null |
  awk '$1 ~ /%$/ {p = $1; sub(/%/, "", p); $1 = ""; sub(/^ +/, ""); print p "\t" $0}' >"$scratch/symbols.tsv"

# kind SYMBOL: what the code of a symbol does, by its name.
group() {
  awk -F'\t' '
    function kind(s) {
      if (s ~ /sgemm_kernel|dgemm_kernel/) return "matrix products on OpenBLAS (its kernel)"
      if (s ~ /[sd]gemm_(it|in|ot|on)copy|gemm_beta/) return "OpenBLAS packing its operands"
      if (s ~ /blas::kernels::run_/) return "matrix products on attend'"'"'s packed kernel"
      if (s ~ /PackedMatrix|pack_|transpose_tiles/) return "attend packing and transposing operands"
      if (s ~ /attention|context_|scores_row|softmax/) return "the attention'"'"'s rows (scores, softmax, context)"
      if (s ~ /fast_math::/) return "elementwise loops (fast_math)"
      if (s ~ /lstm_kernels|lstm_/) return "the LSTM gates"
      if (s ~ /mem(set|move|cpy)|clear_page/) return "memory fills and copies"
      if (s ~ /optim::/) return "the optimizer"
      if (s ~ /FnNode|Node|engine|backward|shared_ptr|operator new|malloc|free/) return "the autograd tape and allocation"
      if (s ~ /^\[k\]/) return "the kernel (page faults, scheduling)"
      return "the rest"
    }
    {share[kind($2)] += $1}
    END {for (k in share) printf "%6.2f%%  %s\n", share[k], k}' "$scratch/symbols.tsv" | sort -rn
}
{
  echo "attend bench ${flags[*]} --threads 1 --steps $steps --no-decode, under perf record -F 999"
  cat "$logs/01-bench.log"
  echo
  echo "samples of the training steps ($(wc -l <"$scratch/symbols.tsv") symbols), by what the code does:"
  group
  echo
  echo "the 30 hottest symbols:"
  head -30 "$scratch/symbols.tsv" | awk -F'\t' '{s = $2; sub(/ +- +-$/, "", s); printf "%6.2f%%  %s\n", $1, substr(s, 1, 110)}'
} | tee "$logs/01-profile.log"
rm -f "$logs/01-bench.log"
printf '01-profile\t%s\n' "perf record -F 999 $attend_bin bench ${flags[*]} --threads 1 --steps $steps --no-decode" >>"$logs/commands.tsv"
file="$(write_results "$results" "$logs" "$(command_line bench/profile.sh CONFIG STEPS RESULTS)" profile)"
printf '\nresults: %s\n' "$file"
