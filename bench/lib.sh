# shellcheck shell=bash disable=SC2034  # sourced: what it sets is for the scripts
# Shared helpers of the bench/*.sh scripts, sourced by each of them:
#   source "$(dirname "$0")/lib.sh"
# It sets the paths of the programs compared (ATTEND, TORCH_PYTHON override
# them), the configs S and M, and the functions below. It runs nothing itself.

attend_bin="${ATTEND:-build/release/tools/attend}"
python="${TORCH_PYTHON:-/usr/bin/python3}"

# The model sizes the comparisons use, as `attend bench` flags. S is a small
# model whose step is many small products (batch 16) and the attention's
# elementwise work; M a mid-sized one whose step is mostly large products and
# whose output projection (vocabulary 8000) dominates decoding; L a larger one,
# whose products are large enough to run near the core's peak.
S=(--embed 32 --hidden 64 --batch 16 --src-len 20 --tgt-len 20 --vocab 1000 --attention additive)
M=(--embed 128 --hidden 256 --batch 64 --src-len 30 --tgt-len 30 --vocab 8000 --attention additive)
L=(--embed 256 --hidden 512 --batch 64 --src-len 50 --tgt-len 50 --vocab 16000 --attention additive)

# flag_value NAME FLAGS...: the value that follows NAME in FLAGS (empty if none).
flag_value() {
  local name="$1" i
  shift
  local args=("$@")
  for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
    if [[ ${args[i]} == "$name" ]]; then echo "${args[i + 1]}"; return 0; fi
  done
  return 0
}

# summary: the median, min and max of numbers read one a line, on one line.
summary() { sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR]}'; }

# median: the median of numbers read one a line.
median() { summary | awk '{print $1}'; }

# ratio A B: A / B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# command_line SCRIPT VAR...: the command that reran this run: SCRIPT behind the
# settings among VAR... that are set, as `N=200 ROUNDS=1 bench/NAME.sh`.
command_line() {
  local command="$1" v
  shift
  for v in "$@"; do
    [[ -z ${!v:-} ]] || command="$v=${!v} $command"
  done
  echo "$command"
}

# one_cpu FLAGS...: sets the array `pin` to the prefix that runs one side of a
# comparison on one vCPU, the same for both sides: `taskset -c N` when FLAGS
# ask for --threads 1 (or say nothing of threads), nothing with more threads.
# N is $CPU, or by default the first vCPU this script may run on; CPU= (empty)
# pins nothing.
# Why: a shared machine's vCPUs can have slow spells (seconds long, each vCPU
# apart from the others). Unpinned, a round's two processes can land on
# different vCPUs, one in a slow spell and one not, and the round's ratio then
# measures the spell. Pinned, both sides meet the same vCPU's spells.
# bench/goals.sh runs the S training comparison both ways, so that a results
# file shows the difference.
one_cpu() {
  local threads
  threads="$(flag_value --threads "$@")"
  pin=()
  local cpu="${CPU-}"
  if [[ -z ${CPU+set} ]]; then
    cpu="$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//')"
    cpu="${cpu%%[-,]*}"
  fi
  if [[ ${threads:-1} == 1 && -n $cpu ]]; then
    pin=(taskset -c "$cpu")
  fi
  return 0
}

# same_kernels ATTEND_OUTPUT TWIN_OUTPUT: stops the script unless both sides
# ran the same OpenBLAS kernels. Both load the same OpenBLAS, and
# OPENBLAS_CORETYPE, when set, chooses its kernels for both; if they differed,
# the ratio would compare kernels rather than the implementations.
same_kernels() {
  local mine theirs
  mine="$(sed -n 's/^OpenBLAS kernels \([A-Za-z0-9]*\) .*/\1/p' <<<"$1")"
  theirs="$(sed -n 's/.*OpenBLAS threads [0-9]*, kernels \([A-Za-z0-9]*\) .*/\1/p' <<<"$2")"
  if [[ -z "$mine" || "$mine" != "$theirs" ]]; then
    echo "$(basename "$0"): attend runs OpenBLAS kernels '$mine', the twin '$theirs': not comparable" >&2
    exit 1
  fi
}

# require_program PATH TARGET [HINT]: stops the script, saying how to build it,
# unless PATH is an executable program (the CMake target TARGET of the release
# preset); HINT, if given, is printed first (a package to install, say).
require_program() {
  [[ -x $1 ]] && return 0
  echo "$(basename "$0"): $1 is missing:${3:+ $3, then}" >&2
  echo "  cmake --preset release && cmake --build --preset release --target $2" >&2
  exit 1
}

# make_scratch: sets `scratch` to a new temporary directory, removed when the
# script exits.
make_scratch() {
  scratch="$(mktemp -d)"
  # shellcheck disable=SC2064  # the path is fixed now, on purpose
  trap "rm -rf '$scratch'" EXIT
}

# --- results files (bench/results/README.md) --------------------------------

# The CPU as /proc/cpuinfo tells it (BENCH_CPUINFO names another file, for tests).
cpuinfo_field() { awk -F': *' -v f="$1" '$1 ~ "^" f "[ \t]*$" {print $2; exit}' "${BENCH_CPUINFO:-/proc/cpuinfo}"; }

# cpu_slug: the model name's slug, then -fam and the CPU family in decimal
# (amd-epyc-fam26): the part of a results file's name that says which machine.
cpu_slug() {
  local model family
  model="$(cpuinfo_field 'model name' | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')"
  family="$(cpuinfo_field 'cpu family')"
  echo "${model:-unknown-cpu}-fam${family:-unknown}"
}

# The instruction-set flags that decide which kernels run (attend's and
# OpenBLAS's), in this order.
cpu_flags() {
  local have f found=()
  have=" $(cpuinfo_field flags) "
  for f in sse4_2 avx fma avx2 avx512f avx512dq avx512bw avx512vl avx512_bf16 avx512_vnni; do
    [[ $have == *" $f "* ]] && found+=("$f")
  done
  echo "${found[*]:-none of sse4_2 avx fma avx2 avx512*}"
}

# results_commit: the short hash of HEAD, with -dirty when the tree has changes
# (BENCH_COMMIT overrides it, for tests).
results_commit() {
  if [[ -n ${BENCH_COMMIT:-} ]]; then echo "$BENCH_COMMIT"; return 0; fi
  local c
  c="$(git rev-parse --short=7 HEAD 2>/dev/null)" || { echo unknown; return 0; }
  git diff --quiet HEAD 2>/dev/null || c+="-dirty"
  echo "$c"
}

# write_results DIR LOGS COMMAND [NAME]: writes the run whose logs are in LOGS to
# DIR/DATE-CPU-COMMIT.md (DIR/DATE-CPU-COMMIT-NAME.md, titled "NAME run", with a
# NAME: a run of one benchmark, not the goals), and prints the file's path. LOGS/commands.tsv lists
# the run's comparisons, one a line: NAME, a tab, the command; each one's whole
# output is LOGS/NAME.log. COMMAND is the command line of the whole run. An
# existing file is never overwritten: the name takes -2, -3, ... instead.
# BENCH_DATE overrides the date (YYYY-MM-DD), for tests.
write_results() {
  local dir="$1" logs="$2" command="$3" name="${4:-}"
  [[ -f $logs/commands.tsv ]] || { echo "write_results: no $logs/commands.tsv" >&2; return 1; }
  mkdir -p "$dir" || return 1
  local date commit base file n=1
  date="${BENCH_DATE:-$(date -u +%F)}"
  commit="$(results_commit)"
  base="$dir/$date-$(cpu_slug)-$commit${name:+-$name}"
  file="$base.md"
  while [[ -e $file ]]; do n=$((n + 1)); file="$base-$n.md"; done
  local tmp="$file.tmp.$$"
  {
    printf '# %s run, %s, commit %s\n\n' "${name:-Goals}" "$date" "$commit"
    printf -- '- Command: `%s` (from the repository root)\n' "$command"
    printf -- '- Date: %s, finished %s UTC\n' "$date" "$(date -u +%H:%M)"
    printf -- '- Commit: %s\n' "$commit"
    printf -- '- CPU: %s, family %s, model %s; %s vCPUs\n' "$(cpuinfo_field 'model name')" \
      "$(cpuinfo_field 'cpu family')" "$(cpuinfo_field model)" "$(grep -c '^processor' "${BENCH_CPUINFO:-/proc/cpuinfo}")"
    printf -- '- Flags that decide the kernels: %s\n' "$(cpu_flags)"
    printf -- '- OPENBLAS_CORETYPE: %s\n' "${OPENBLAS_CORETYPE:-not set}"
    printf '\nEach comparison below gives its command and its whole output (the raw numbers).\n'
    local name cmd
    while IFS=$'\t' read -r name cmd; do
      [[ -n $name ]] || continue
      printf '\n## %s\n\n```sh\n%s\n```\n\n```\n' "$name" "$cmd"
      cat "$logs/$name.log" 2>/dev/null || printf '(no output: %s/%s.log is missing)\n' "$logs" "$name"
      printf '```\n'
    done <"$logs/commands.tsv"
  } >"$tmp" && mv -n "$tmp" "$file" || { rm -f "$tmp"; return 1; }
  [[ ! -e $tmp ]] || { rm -f "$tmp"; echo "write_results: $file appeared meanwhile" >&2; return 1; }
  echo "$file"
}
