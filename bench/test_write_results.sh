#!/usr/bin/env bash
# The test of bench/lib.sh's write_results (CTest, bench/CMakeLists.txt): on a
# canned CPU, commit, date and logs of a goals run, in a temporary directory it
# removes, it checks the results file's name and contents, that a second run
# never overwrites the first, and that logs without their command list are
# refused. It times nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
make_scratch
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$scratch/cpuinfo" <<'EOF'
processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 26
model		: 2
model name	: AMD EPYC 9R45 (Zen 5)
flags		: fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2 avx512f avx512dq avx512bw avx512vl

processor	: 1
cpu family	: 26
model name	: AMD EPYC 9R45 (Zen 5)
EOF
mkdir "$scratch/logs"
printf '01-s-train\tROUNDS=11 bench/compare_seq2seq.sh --embed 32 --threads 1\n02-lstm-onednn\tbench/compare_lstm_onednn.sh\n' \
  >"$scratch/logs/commands.tsv"
printf 'training step over 11 alternating rounds\n  attend 2.81 ms (2.70-3.02), pytorch 19.63 ms\n' >"$scratch/logs/01-s-train.log"
printf 'per round median 0.959x (0.954x-0.973x)\n' >"$scratch/logs/02-lstm-onednn.log"

export BENCH_CPUINFO="$scratch/cpuinfo" BENCH_DATE=2026-12-07 BENCH_COMMIT=f95e868 OPENBLAS_CORETYPE=Haswell
out="$scratch/results"
file="$(write_results "$out" "$scratch/logs" "LOGS=/tmp/goals bench/goals.sh")"
want="$out/2026-12-07-amd-epyc-9r45-zen-5-fam26-f95e868.md"
[[ $file == "$want" ]] || fail "the file is '$file', not '$want'"
[[ -f $want ]] || fail "$want was not written"
expect() { grep -qF -- "$1" "$want" || fail "$want lacks '$1'"; }
expect '- Command: `LOGS=/tmp/goals bench/goals.sh`'
expect '- Date: 2026-12-07'
expect '- Commit: f95e868'
expect '- CPU: AMD EPYC 9R45 (Zen 5), family 26, model 2; 2 vCPUs'
expect '- Flags that decide the kernels: sse4_2 avx fma avx2 avx512f avx512dq avx512bw avx512vl'
expect '- OPENBLAS_CORETYPE: Haswell'
expect 'ROUNDS=11 bench/compare_seq2seq.sh --embed 32 --threads 1'
expect '  attend 2.81 ms (2.70-3.02), pytorch 19.63 ms'
expect 'bench/compare_lstm_onednn.sh'
expect 'per round median 0.959x (0.954x-0.973x)'
# The comparisons keep the run's order.
[[ $(grep -n '^## ' "$want" | cut -d: -f2-) == $'## 01-s-train\n## 02-lstm-onednn' ]] || fail "sections out of order"

before="$(cksum <"$want")"
second="$(OPENBLAS_CORETYPE='' write_results "$out" "$scratch/logs" "bench/goals.sh")"
[[ $second == "${want%.md}-2.md" ]] || fail "a second run went to '$second', not '${want%.md}-2.md'"
[[ $(cksum <"$want") == "$before" ]] || fail "the second run changed the first's file"
grep -qF -- '- OPENBLAS_CORETYPE: not set' "$second" || fail "an empty OPENBLAS_CORETYPE is not 'not set'"
[[ -z $(find "$out" -name '*.tmp.*') ]] || fail "a temporary file was left behind"

# A named run (bench/serve_load.sh): DATE-CPU-COMMIT-NAME.md, titled after it.
named="$(write_results "$out" "$scratch/logs" "bench/serve_load.sh" serve)"
[[ $named == "$out/2026-12-07-amd-epyc-9r45-zen-5-fam26-f95e868-serve.md" ]] || fail "a named run went to '$named'"
[[ $(head -n 1 "$named") == "# serve run, 2026-12-07, commit f95e868" ]] || fail "a named run's title is '$(head -n 1 "$named")'"
grep -qF -- '- Command: `bench/serve_load.sh`' "$named" || fail "a named run lacks its command"
[[ $(head -n 1 "$want") == "# Goals run, 2026-12-07, commit f95e868" ]] || fail "a goals run's title is '$(head -n 1 "$want")'"

rm "$scratch/logs/commands.tsv"
if write_results "$out" "$scratch/logs" "bench/goals.sh" 2>/dev/null; then fail "logs without commands.tsv were accepted"; fi
[[ $(find "$out" -type f | wc -l) -eq 3 ]] || fail "a refused run wrote a file"
echo "write_results: ok"
