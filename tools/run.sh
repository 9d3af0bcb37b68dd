#!/usr/bin/env bash
# tools/run.sh: set-up, build and run in one command. On a fresh Debian 12
# machine, as root, it first installs the Debian packages that are missing.
#
#   tools/run.sh demo    build the release preset and run the main job (DEMO below)
#   tools/run.sh test    build and run every test: release preset, then sanitize preset,
#                        then each fuzz target for FUZZ_SECONDS (20) s,
#                        nproc at a time (preset fuzz)
#   tools/run.sh bench   build the release preset and run the benchmarks in bench/
#   tools/run.sh explain [ARGS...]
#                        the learner's door: install only what the attend program
#                        needs, build only it, run `attend explain ARGS...` (no training)
#
# Builds go to build/release, build/sanitize and build/fuzz (CMakePresets.json) and are
# incremental. Safe without a terminal (CI): it never reads stdin or prompts.
set -euo pipefail

# The main job: what `tools/run.sh demo` runs, from the repository root.
DEMO=(build/release/tools/attend experiment --out experiment)

# Everything the build and the tests need, as Debian 12 packages.
PACKAGES=(cmake g++ make libopenblas-dev doctest-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libsentencepiece-dev               # SentencePiece subwords (attend train --subword)
  libopenmpi-dev openmpi-bin         # Open MPI: data-parallel training and its tests under mpirun
  clang libfuzzer-14-dev libclang-rt-14-dev  # the fuzz targets
  libcpp-httplib-dev                 # attend serve's HTTP server
  pybind11-dev python3-dev python3-numpy python3-pytest python3-matplotlib  # the Python module, its tests and example
  chromium chromium-driver python3-selenium  # the explorer page's real-browser test
  python3-torch)                     # the PyTorch reference checks (tests/reference/, python/tests/test_torch.py)

# What the attend program alone needs (`tools/run.sh explain`): configuring the
# release preset requires these; MPI and the Python module are optional there.
EXPLAIN_PACKAGES=(cmake g++ make libopenblas-dev doctest-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libsentencepiece-dev libcpp-httplib-dev)

# The fuzz targets (build/fuzz/tests/fuzz/fuzz_NAME) as NAME:MAX_LEN, from their one
# list, tests/fuzz/targets.txt (NAME MAX_LEN a line; MAX_LEN is libFuzzer's -max_len).
fuzz_targets() { sed -n 's/^\([a-z_]*\) \([0-9]*\)$/\1:\2/p' tests/fuzz/targets.txt; }
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"

# The sanitizer run stops at the first error, with a stack trace. Leak checking
# works here; set ASAN_OPTIONS=detect_leaks=0 where it cannot (under ptrace).
SANITIZER_ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:print_stacktrace=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=1"
SANITIZER_UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

JOBS="$(nproc)"

say() { printf '\n==> %s\n' "$*"; }
die() {
  printf 'tools/run.sh: error: %s\n' "$*" >&2
  exit 1
}

# The names given that dpkg does not list as installed, one a line.
missing_packages() {
  local package status
  for package in "$@"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)"
    if [[ "$status" != installed ]]; then
      echo "$package"
    fi
  done
}

# Installs the missing packages of those given; apt-get runs only when something is missing.
install_packages() {
  if ! command -v dpkg-query >/dev/null; then
    say "not a Debian system (no dpkg-query): make sure the equivalents of these are installed: $*"
    return
  fi
  local missing
  mapfile -t missing < <(missing_packages "$@")
  if [[ ${#missing[@]} -eq 0 ]]; then
    return
  fi
  if [[ "$(id -u)" -ne 0 ]]; then
    die "these Debian packages are missing: ${missing[*]}
Run tools/run.sh as root to install them, or install them first:
  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}"
  fi
  say "installing the missing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update </dev/null
  apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
}

# Runs one workflow preset of CMakePresets.json: configure (cheap when nothing
# changed), build and, for release and sanitize, test; the presets hold the
# settings, so this is the whole sequence. Builds and tests use every CPU.
workflow() {
  local preset="$1"
  say "cmake --workflow --preset $preset"
  CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" CTEST_PARALLEL_LEVEL="$JOBS" cmake --workflow --preset "$preset" </dev/null
}

cmd_demo() {
  workflow release-build
  say "${DEMO[*]}"
  "${DEMO[@]}" </dev/null
}

cmd_test() {
  local start=$SECONDS
  workflow release
  export ASAN_OPTIONS="${ASAN_OPTIONS:-$SANITIZER_ASAN_OPTIONS}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-$SANITIZER_UBSAN_OPTIONS}"
  workflow sanitize
  workflow fuzz
  run_fuzzers
  say "all tests passed, release and sanitize builds, fuzzing ($((SECONDS - start)) s)"
}

# Runs one fuzz target (NAME:MAX_LEN) for FUZZ_SECONDS on a scratch copy of its
# committed corpus (the repository is never written); its log and any crash go to
# $scratch/NAME/. Exits non-zero when libFuzzer found a crash.
run_fuzzer() {
  local scratch="$1" name="${2%%:*}" max_len="${2##*:}"
  mkdir -p "$scratch/$name/corpus" "$scratch/$name/crashes"
  cp tests/fuzz/corpus/"$name"/* "$scratch/$name/corpus/"
  "build/fuzz/tests/fuzz/fuzz_$name" -max_total_time="$FUZZ_SECONDS" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -print_funcs=0 -artifact_prefix="$scratch/$name/crashes/" "$scratch/$name/corpus" \
    >"$scratch/$name/log" 2>&1 </dev/null
}

# Runs every fuzz target, JOBS at a time (each is one process on one core; one
# after another they left the other core idle), and fails if any finds a crash.
run_fuzzers() {
  local FUZZ_TARGETS
  mapfile -t FUZZ_TARGETS < <(fuzz_targets)
  [[ ${#FUZZ_TARGETS[@]} -gt 0 ]] || die "no fuzz targets in tests/fuzz/targets.txt"
  say "fuzz: ${#FUZZ_TARGETS[@]} targets, ${FUZZ_SECONDS} s each, $JOBS at a time"
  local scratch i j name crash failed=() pids=()
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/attend-fuzz.XXXXXX")"
  for ((i = 0; i < ${#FUZZ_TARGETS[@]}; i += JOBS)); do
    local batch=("${FUZZ_TARGETS[@]:i:JOBS}")
    pids=()
    for j in "${!batch[@]}"; do
      run_fuzzer "$scratch" "${batch[j]}" &
      pids+=($!)
    done
    for j in "${!batch[@]}"; do
      name="${batch[j]%%:*}"
      printf 'fuzz_%s ... ' "$name"
      if wait "${pids[j]}"; then
        echo "ok ($(sed -n 's/.*stat::number_of_executed_units: *//p' "$scratch/$name/log") runs)"
        continue
      fi
      echo "FOUND A CRASH"
      tail -n 40 "$scratch/$name/log"
      for crash in "$scratch/$name/crashes/"*; do
        [[ -e "$crash" ]] || continue
        echo "reproducer: $crash"
        echo "replay:     build/fuzz/tests/fuzz/fuzz_$name $crash"
        echo "regression: copy it to tests/fuzz/regressions/$name/ (tests/fuzz/test_fuzz_regressions.cpp replays it)"
      done
      failed+=("$name")
    done
  done
  if [[ ${#failed[@]} -gt 0 ]]; then
    die "fuzzing found crashes in: ${failed[*]} (logs and reproducers in $scratch)"
  fi
  rm -rf "$scratch"
}

# Configures the release preset and builds the attend program alone (not the
# tests, benchmarks or Python module), then runs `attend explain` with the
# arguments given: `tools/run.sh explain --lstm`.
cmd_explain() {
  say "cmake --preset release"
  cmake --preset release </dev/null
  say "cmake --build --preset release --target attend_cli"
  cmake --build --preset release --target attend_cli -j"$JOBS" </dev/null
  say "build/release/tools/attend explain $*"
  build/release/tools/attend explain "$@" </dev/null
}

# Every bench/<name>.cpp is built as build/release/bench/bench_<name>.
cmd_bench() {
  workflow release-build
  say "benchmarks on $(nproc) CPUs ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')), OpenBLAS $(dpkg-query -W -f='${Version}' libopenblas0 2>/dev/null || echo '?')"
  local source name
  for source in bench/*.cpp; do
    name="bench_$(basename "$source" .cpp)"
    say "$name"
    "build/release/bench/$name" </dev/null
  done
}

usage() {
  sed -n '2,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

main() {
  if [[ $# -lt 1 ]]; then usage; fi
  local command="$1"
  shift
  case "$command" in
    demo | test | bench) if [[ $# -ne 0 ]]; then usage; fi ;;
    explain) ;;  # the rest goes to `attend explain`
    *) usage ;;
  esac
  cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repository root
  # Not `install_packages && ...`: bash ignores set -e inside a function called so.
  if [[ "$command" == explain ]]; then
    install_packages "${EXPLAIN_PACKAGES[@]}"
  else
    install_packages "${PACKAGES[@]}"
  fi
  "cmd_$command" "$@"
}

main "$@"
