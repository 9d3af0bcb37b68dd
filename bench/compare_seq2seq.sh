#!/usr/bin/env bash
# Runs `attend bench --no-decode` and its PyTorch twin (bench/torch_seq2seq.py,
# Debian's python3-torch) with the same flags, alternately for ROUNDS rounds
# (default 5) so that a busy or slow spell of the machine hits both alike, and
# prints each side's median training-step time over the rounds, their range,
# the ratio of the medians, the ratio in each round (PyTorch's time over
# attend's in the same round) and attend's share of the sgemm rate it measured
# in the same run, with the floor that rate puts under the step (its matrix
# products alone at the sgemm rate) and the largest speed-up over PyTorch that
# floor allows. Either side's step time can vary from one process to the next
# on a shared machine, hence the rounds.
# ATTEND_STEPS=N times N steps on attend's side instead of --steps (the twin
# keeps --steps), so that both sides' timed windows can span about the same
# wall-clock time: attend's step is several times shorter than the twin's, and
# a slow spell of the machine that covers all of attend's short window but
# only part of the twin's moves attend's median and not the twin's, and a
# round's ratio with it. Each side's timed window is printed.
# At --threads 1 both sides run on the same vCPU (one_cpu in bench/lib.sh says
# why; CPU=N picks it, CPU= pins nothing).
# TURNS=N runs each round's two processes side by side, taking turns: each
# process's timed steps are cut into N turns (ceil(steps / N) steps each; the
# first turn also runs the warm-up) and only one process runs at a time, this
# script passing the turn between them through FIFOs (bench/turns/bench_turns.hpp).
# A round's two medians then come from interleaved stretches of the same
# seconds, so a slow spell of a few seconds falls on both sides. Without TURNS,
# a round is attend's whole process and then the twin's.
# TORCH_FLAGS="--project-all" compares with the twin that embeds all target
# steps at once and runs the output projection once over all time steps.
# Usage, from the repository root, with the flags of config S or M (bench/lib.sh;
# bench/goals.sh runs every form below):
#   ROUNDS=11 ATTEND_STEPS=140 TURNS=5 bench/compare_seq2seq.sh $S --threads 1 --steps 20
#   ROUNDS=5 TORCH_FLAGS=--project-all bench/compare_seq2seq.sh $M --threads 1 --steps 3 --warmup 5
# (at M, the first steps still take fresh pages while the storage cache fills:
# with --warmup 5 the timed steps are steady, see the page-fault line)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
rounds="${ROUNDS:-5}"
read -r -a torch_flags <<<"${TORCH_FLAGS:-}"
attend_args=("$@") twin_steps=20  # 20: both sides' default --steps
for ((i = 0; i < ${#attend_args[@]}; ++i)); do
  if [[ ${attend_args[i]} == --steps ]]; then
    twin_steps="${attend_args[i + 1]}"
    [[ -n "${ATTEND_STEPS:-}" ]] && attend_args[i + 1]="$ATTEND_STEPS"
  fi
done
[[ -n "${ATTEND_STEPS:-}" && " ${attend_args[*]} " != *" --steps "* ]] && attend_args+=(--steps "$ATTEND_STEPS")
attend_steps="${ATTEND_STEPS:-$twin_steps}"
step() { awk '/^train step/ {print $4}' <<<"$1"; }
rss() { awk '/^peak RSS/ {print $3}' <<<"$1"; }
sgemm_share() { sed -n 's/^peak share   train step .* GFLOP\/s: [0-9.]*% of peak, \([0-9.]*\)% of sgemm$/\1/p' <<<"$1"; }
peak_share() { sed -n 's/^peak share   train step .* GFLOP\/s: \([0-9.]*\)% of peak, [0-9.]*% of sgemm$/\1/p' <<<"$1"; }
# The floor of $1 ("train step", "greedy", "beam K=5") in ms: its products at the sgemm rate.
floor_ms() { sed -n "s/^floor .*$1 \([0-9.]*\) ms.*/\1/p" <<<"$2"; }
one_cpu "$@"
turns="${TURNS:-0}"
[[ $turns =~ ^[0-9]+$ ]] || { echo "compare_seq2seq.sh: TURNS must be a whole number, not '$turns'" >&2; exit 2; }
# reply FD PID: the byte a process writes at the end of its turn ('t', 'e' after
# its last step), or x if it died first
reply() {
  local c
  until read -r -t 1 -n 1 -u "$1" c; do kill -0 "$2" 2>/dev/null || { echo x; return; }; done
  echo "$c"
}
# One round with TURNS: sets a and t to the two processes' outputs.
turn_round() {
  local d ao ai to ti pa pt c a_on=1 t_on=1
  d="$(mktemp -d)"
  mkfifo "$d/a_in" "$d/a_out" "$d/t_in" "$d/t_out"
  # Opened read-write, so that no open here waits for the other end.
  exec {ao}<>"$d/a_out" {ai}<>"$d/a_in" {to}<>"$d/t_out" {ti}<>"$d/t_in"
  "${pin[@]}" "$attend_bin" bench --no-decode "${attend_args[@]}" --turn-steps $(((attend_steps + turns - 1) / turns)) \
    --turn-fifos "$d/a_in,$d/a_out" >"$d/a.txt" 2>&1 {ao}<&- {ai}>&- {to}<&- {ti}>&- &
  pa=$!
  "${pin[@]}" "$python" bench/torch_seq2seq.py "$@" "${torch_flags[@]}" --turn-steps $(((twin_steps + turns - 1) / turns)) \
    --turn-fifos "$d/t_in,$d/t_out" >"$d/t.txt" 2>&1 {ao}<&- {ai}>&- {to}<&- {ti}>&- &
  pt=$!
  # Both ready (model and data made) before the first turn, so that neither's
  # start-up runs beside the other's timed steps.
  [[ "$(reply "$ao" "$pa")" == r && "$(reply "$to" "$pt")" == r ]] || t_on=0 a_on=0
  while ((a_on || t_on)); do
    if ((a_on)); then
      printf g >&"$ai"
      c="$(reply "$ao" "$pa")"
      # After its last turn a process runs on alone (attend times sgemm) until it exits.
      [[ $c == t ]] || { a_on=0; exec {ai}>&-; wait "$pa" || break; }
    fi
    if ((t_on)); then
      printf g >&"$ti"
      c="$(reply "$to" "$pt")"
      [[ $c == t ]] || { t_on=0; exec {ti}>&-; wait "$pt" || break; }
    fi
  done
  exec {ao}<&- {to}<&-
  { exec {ai}>&- {ti}>&-; } 2>/dev/null || true
  if ! wait "$pa" || ! wait "$pt" || ((a_on || t_on)); then
    kill "$pa" "$pt" 2>/dev/null || true
    echo "compare_seq2seq.sh: a process of the round failed:" >&2
    cat "$d/a.txt" "$d/t.txt" >&2
    rm -rf "$d"
    return 1
  fi
  a="$(cat "$d/a.txt")" t="$(cat "$d/t.txt")"
  rm -rf "$d"
}
a_steps=() t_steps=() ratios=() shares=() peaks=() floors=() a_rss=0 t_rss=0
for ((r = 1; r <= rounds; ++r)); do
  if ((turns > 0)); then
    turn_round "$@"
  else
    a="$("${pin[@]}" "$attend_bin" bench --no-decode "${attend_args[@]}")"
    t="$("${pin[@]}" "$python" bench/torch_seq2seq.py "$@" "${torch_flags[@]}")"
  fi
  same_kernels "$a" "$t"
  if ((r == 1)); then printf '%s\n\n%s\n\n' "$a" "$t"; fi
  a_steps+=("$(step "$a")") t_steps+=("$(step "$t")") shares+=("$(sgemm_share "$a")") peaks+=("$(peak_share "$a")") floors+=("$(floor_ms "train step" "$a")")
  ratios+=("$(ratio "${t_steps[-1]}" "${a_steps[-1]}")")
  a_rss=$(awk -v x="$a_rss" -v y="$(rss "$a")" 'BEGIN {print (y > x ? y : x)}')
  t_rss=$(awk -v x="$t_rss" -v y="$(rss "$t")" 'BEGIN {print (y > x ? y : x)}')
done
read -r am amin amax < <(printf '%s\n' "${a_steps[@]}" | summary)
read -r tm tmin tmax < <(printf '%s\n' "${t_steps[@]}" | summary)
read -r rm rmin rmax < <(printf '%s\n' "${ratios[@]}" | summary)
read -r sm smin smax < <(printf '%s\n' "${shares[@]}" | summary)
read -r pm pmin pmax < <(printf '%s\n' "${peaks[@]}" | summary)
read -r fm fmin fmax < <(printf '%s\n' "${floors[@]}" | summary)
awk -v am="$am" -v pin="${pin[*]}" -v amin="$amin" -v amax="$amax" -v tm="$tm" -v tmin="$tmin" -v tmax="$tmax" -v n="$rounds" \
    -v ra="$a_rss" -v rt="$t_rss" -v rmin="$rmin" -v rmax="$rmax" -v sm="$sm" -v smin="$smin" -v smax="$smax" \
    -v pm="$pm" -v pmin="$pmin" -v pmax="$pmax" \
    -v fm="$fm" -v fmin="$fmin" -v fmax="$fmax" -v as="$attend_steps" -v ts="$twin_steps" \
    -v twin="pytorch${TORCH_FLAGS:+ ($TORCH_FLAGS)}" 'BEGIN {
  printf "training step over %d alternating rounds, median (min-max) of each round'"'"'s median:\n", n
  printf "  attend %.2f ms (%.2f-%.2f), %s %.2f ms (%.2f-%.2f): attend is %.2fx as fast\n", am, amin, amax, twin, tm, tmin, tmax, tm / am
  printf "  speed-up within each round: %.2fx to %.2fx\n", rmin, rmax
  printf "  both sides ran %s\n", pin == "" ? "unpinned" : "under " pin
  printf "  timed window of a round: attend %d steps (~%.0f ms), %s %d steps (~%.0f ms)\n", as, as * am, twin, ts, ts * tm
  printf "  attend at %.0f%% (%.0f-%.0f%%) of the core'"'"'s FMA peak and %.0f%% (%.0f-%.0f%%) of the sgemm rate, both measured in its run\n", pm, pmin, pmax, sm, smin, smax
  printf "  the products alone at that rate: %.2f ms (%.2f-%.2f), so nothing doing them through this OpenBLAS is more than %.2fx as fast as %s\n", fm, fmin, fmax, tm / fm, twin
  printf "peak RSS: attend %d MB, pytorch %d MB (%.2f of pytorch)\n", ra, rt, ra / rt
}'
echo "per round (pytorch / attend): ${ratios[*]}"
