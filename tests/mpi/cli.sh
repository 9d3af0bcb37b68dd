#!/usr/bin/env bash
# `attend train` under mpirun, as a user runs it (CTest test mpi.cli):
#   1. two ranks train and write the model directory; --resume continues it;
#      output redirected from mpirun has no progress-bar control characters;
#   2. a rank that fails alone (its data file is empty) ends the whole job:
#      one message naming the rank, a non-zero exit, no hang;
#   3. ranks whose data differ stop together, with one message from rank 0;
#   4. SIGINT to one rank stops every rank after the same step, with a checkpoint
#      that --resume continues;
#   5. --subword: rank 0 alone trains the SentencePiece model, and every rank
#      trains on it (the data fingerprints of the ranks agree).
# Every mpirun runs under `timeout`: a hang fails the test instead of stalling it.
# Usage: tests/mpi/cli.sh ATTEND MPIEXEC   (CTest sets OMPI_ALLOW_RUN_AS_ROOT* etc.)
set -euo pipefail
attend="$1"
mpiexec="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() {
  printf 'tests/mpi/cli.sh: FAILED: %s\n' "$*" >&2
  exit 1
}
mpi() { timeout 120 "$mpiexec" --oversubscribe "$@"; }
# Runs a command that must fail; its output (stdout and stderr) goes to $out, its exit code to $rc.
expect_failure() {
  set +e
  out="$("$@" 2>&1)"
  rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "exit 0 from: $*"
  [[ $rc -ne 124 ]] || fail "timed out (a hang) in: $*"
}
count() { grep -c -- "$1" <<<"$out" || true; }

"$attend" data toy --n 120 --max-len 8 --out a.tsv
"$attend" data toy --n 120 --max-len 8 --seed 5 --out b.tsv
small=(--embed 8 --hidden 8 --batch 8 --bleu-sentences 4)

# 1. Train, then resume, under MPI; only rank 0 prints.
out="$(mpi -np 2 "$attend" train --data a.tsv "${small[@]}" --max-steps 5 --out m1 </dev/null 2>&1)" ||
  fail "training under mpirun -np 2: $out"
[[ $(count '^data-parallel: 2 processes') -eq 1 ]] || fail "expected one 'data-parallel' line: $out"
# The output is a pipe here, but mpirun gives the ranks a pseudo-terminal: plain lines, no redrawn bar.
[[ "$out" != *$'\r'* && "$out" != *$'\033'* ]] || fail "progress-bar control characters in redirected output: $out"
[[ $(count 'train loss ') -ge 1 ]] || fail "expected an epoch's summary line: $out"
[[ -f m1/checkpoint/trainer_state.json && -f m1/model.safetensors ]] || fail "no checkpoint in m1"
grep -q '"rank_generators"' m1/checkpoint/trainer_state.json || fail "the checkpoint lacks the ranks' generators"
out="$(mpi -np 2 "$attend" train --data a.tsv "${small[@]}" --max-steps 8 --out m1 --resume </dev/null 2>&1)" ||
  fail "resume under mpirun -np 2: $out"
[[ $(count '^resuming m1 at epoch 1, step 5') -eq 1 ]] || fail "expected one 'resuming' line: $out"

# 2. One rank's own failure (its data file is empty), while rank 0 goes on to
# wait for it: it says so and aborts the job.
: >empty.tsv
expect_failure mpi -np 1 "$attend" train --data a.tsv "${small[@]}" --max-steps 3 --out m2 : \
  -np 1 "$attend" train --data empty.tsv "${small[@]}" --max-steps 3 --out m2
[[ $(count '^attend: error: rank 1 of 2: ') -eq 1 ]] || fail "expected rank 1's message once: $out"

# 3. Different data on the ranks: found together, reported once, by rank 0.
expect_failure mpi -np 1 "$attend" train --data a.tsv "${small[@]}" --max-steps 3 --out m3 : \
  -np 1 "$attend" train --data b.tsv "${small[@]}" --max-steps 3 --out m3
[[ $(count "^attend: error: rank 1's training data") -eq 1 ]] || fail "expected one message from rank 0: $out"
[[ $(count '^attend: error:') -eq 1 ]] || fail "more than one error message: $out"

# 4. SIGINT to one rank, in the middle of a long run.
"$mpiexec" --oversubscribe -np 2 "$attend" train --data a.tsv "${small[@]}" --epochs 100000 --out m4 </dev/null >run4.txt 2>&1 &
launcher=$!
for _ in $(seq 600); do  # until the first epoch is logged (at most 60 s)
  [[ -f m4/train_log.csv ]] && break
  sleep 0.1
done
[[ -f m4/train_log.csv ]] || { kill "$launcher"; fail "the run never finished an epoch"; }
ranks=($(pgrep -P "$launcher" -f "$attend" || true))
[[ ${#ranks[@]} -eq 2 ]] || { kill "$launcher"; fail "expected 2 rank processes, found: ${ranks[*]}"; }
kill -INT "${ranks[1]}"
set +e
timeout 60 tail --pid="$launcher" -f /dev/null
wait "$launcher"
rc=$?
set -e
out="$(cat run4.txt)"
[[ $rc -ne 0 ]] || fail "exit 0 after SIGINT: $out"
[[ $(count '^interrupted: checkpoint saved in m4') -eq 1 ]] || fail "expected one 'interrupted' line: $out"
step="$(sed -n 's/^ *"global_step": \([0-9]*\).*/\1/p' m4/checkpoint/trainer_state.json)"
[[ -n "$step" && "$step" -gt 0 ]] || fail "no step in m4/checkpoint/trainer_state.json"
out="$(mpi -np 2 "$attend" train --data a.tsv "${small[@]}" --epochs 100000 --max-steps $((step + 2)) --out m4 --resume </dev/null 2>&1)" ||
  fail "resume after SIGINT: $out"
grep -q "\"global_step\": $((step + 2))" m4/checkpoint/trainer_state.json || fail "the resumed run did not reach step $((step + 2))"

# 5. Subwords: rank 0 trains the SentencePiece model and sends it to rank 1.
out="$(mpi -np 2 "$attend" train --data a.tsv "${small[@]}" --subword unigram --vocab-size 60 --max-steps 3 --out m5 </dev/null 2>&1)" ||
  fail "subword training under mpirun -np 2: $out"
[[ $(count '^data-parallel: 2 processes') -eq 1 ]] || fail "expected one 'data-parallel' line: $out"
ls m5/*.model >/dev/null 2>&1 || fail "no SentencePiece model in m5: $(ls m5)"
echo "tests/mpi/cli.sh: all passed"
