#!/usr/bin/env bash
# Decoding speed: `attend bench --no-train` and its PyTorch twin
# (bench/torch_decode.py, Debian's python3-torch) with the same flags,
# alternately for ROUNDS rounds (default 5). Both decode the same batch of random
# sentences for exactly --decode-steps tokens each (default --tgt-len), greedily
# and with a beam of --beam (default 5), never stopping at </s>. The twin's
# greedy decoding takes the argmax alone, and so does attend's "greedy"; its
# "greedy+score" (each token's log p too) is reported against the same twin,
# on the "+score" lines. Prints each
# side's median tokens/s over the rounds (each round's figure is the median of
# its runs), the range, the ratio of the medians, the speed-up within each
# round (its median and range: the machine drifts less within a round than
# across rounds), and the rate the matrix
# products alone would allow at the sgemm rate (attend bench's floor line),
# the most that any implementation doing them could reach here.
# At --threads 1 both sides run on the same vCPU (one_cpu in bench/lib.sh says
# why; CPU=N picks it, CPU= pins nothing).
# Usage, from the repository root, with the flags of config S or M (bench/lib.sh;
# bench/goals.sh runs both):
#   bench/compare_decode.sh --embed 32 --hidden 64 --batch 16 --src-len 20 --tgt-len 20 \
#     --vocab 1000 --attention additive --threads 1 --decode-runs 10
# With --int8 among the flags, each round runs three sides, one after another:
# attend with the flags minus --int8 (float32), attend with --int8 (int8
# weights with per-row scales, activations quantized dynamically) and the twin
# with --int8 (PyTorch's dynamic quantization, bench/torch_int8.py); the report
# gives attend int8 against attend float32 and against the twin, each with its
# medians, ranges and the speed-up within each round.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
rounds="${ROUNDS:-5}"
# tokens/s of the line that starts with $1 ("greedy" or "beam").
rate() { awk -v what="$1" '$1 == what {for (i = 1; i < NF; ++i) if ($(i + 1) == "tokens/s") print $i}' <<<"$2"; }
# The floor of $1 ("greedy" or "beam K=5") in tokens/s: its products alone at the sgemm rate.
floor_rate() {
  local ms tokens
  ms="$(sed -n "s/^floor .*$1 \([0-9.]*\) ms.*/\1/p" <<<"$2")"
  tokens="$(sed -n 's/^greedy .*(\([0-9]*\) sentences x \([0-9]*\) tokens)$/\1 \2/p' <<<"$2")"
  awk -v ms="$ms" -v t="$tokens" 'BEGIN {split(t, x, " "); printf "%.0f", x[1] * x[2] / (ms / 1e3)}'
}
# --- with --int8 --------------------------------------------------------------
# Each round's rates go to `rows`, one a line: ROUND KIND SIDE TOKENS/S, with KIND
# greedy, +score or beam (the twin's +score is its greedy: it keeps no scores),
# SIDE int8, float32, pytorch or floor (the float32 products alone at the sgemm rate).
rows=""
add_row() { rows+="$1 $2 $3 $4"$'\n'; }
# The tokens/s of KIND and SIDE, one a line, over the rounds (a side that did not print KIND has none).
values() { awk -v k="$1" -v s="$2" '$2 == k && $3 == s && NF == 4 {print $4}' <<<"$rows"; }
# Each round's rate of SIDE1 over SIDE2 for KIND, one a line.
round_ratios() {
  awk -v k="$1" -v x="$2" -v y="$3" '$2 == k && NF == 4 {v[$1, $3] = $4; if ($1 > n) n = $1}
    END {for (r = 1; r <= n; ++r) if (v[r, x] != "" && v[r, y] != "") printf "%.2f\n", v[r, x] / v[r, y]}' <<<"$rows"
}
# report_vs KIND int8 SIDE2 GOAL: attend int8's and SIDE2's medians and ranges, their ratio against GOAL, and the
# speed-up within each round, in the words of the float32 report below.
report_vs() {
  local m1 lo1 hi1 m2 lo2 hi2 rm rmin rmax per_round
  [[ -n "$(values "$1" "$2")" && -n "$(values "$1" "$3")" ]] || return 0  # a side printed no such line
  read -r m1 lo1 hi1 < <(values "$1" "$2" | summary)
  read -r m2 lo2 hi2 < <(values "$1" "$3" | summary)
  per_round="$(round_ratios "$1" "$2" "$3" | tr '\n' ' ')"
  read -r rm rmin rmax < <(round_ratios "$1" "$2" "$3" | summary)
  awk -v w="$1" -v s2="$3" -v m1="$m1" -v lo1="$lo1" -v hi1="$hi1" -v m2="$m2" -v lo2="$lo2" \
      -v hi2="$hi2" -v goal="$4" -v rm="$rm" -v rmin="$rmin" -v rmax="$rmax" -v rounds="${per_round% }" 'BEGIN {
    if (s2 == "float32") s2 = "attend float32"; else s2 = s2 " int8"
    printf "  %-9s attend int8 %.0f tokens/s (%.0f-%.0f), %s %.0f tokens/s (%.0f-%.0f): attend int8 is %.2fx as fast (%s)\n", w, m1, lo1, hi1, s2, m2, lo2, hi2, m1 / m2, goal
    printf "  %-9s within each round: median %.2fx (%.2f-%.2f); per round %s\n", "", rm, rmin, rmax, rounds
  }'
}
# The float32 products' floor against attend int8: int8 products are not bound by it.
report_floor() {
  local fm qm
  [[ -n "$(values "$1" floor)" ]] || return 0
  fm="$(values "$1" floor | median)" qm="$(values "$1" int8 | median)"
  awk -v fm="$fm" -v qm="$qm" 'BEGIN {
    printf "  %-9s the float32 products alone at the sgemm rate: %.0f tokens/s; attend int8 runs at %.2fx that\n", "", fm, qm / fm
  }'
}
# compare_int8 FLAGS...: the three sides in each round, then the report. same_kernels holds both
# attend runs to the twin's OpenBLAS kernels: the products left in float32 (the attention's bmm in
# the twin) still run in them, and OPENBLAS_CORETYPE chooses them for all three. It cannot hold the
# int8 products together: they run in attend's own kernels and in the twin's quantized engine, which
# no setting shares; the first round's outputs, printed whole, say which ran (the twin on '#' lines).
compare_int8() {
  local r a q t kind
  for ((r = 1; r <= rounds; ++r)); do
    a="$("${pin[@]}" "$attend_bin" bench --no-train "${float32_flags[@]}")"
    q="$("${pin[@]}" "$attend_bin" bench --no-train "$@")"
    t="$("${pin[@]}" "$python" bench/torch_decode.py "$@")"
    same_kernels "$a" "$t"
    same_kernels "$q" "$t"
    if ((r == 1)); then printf '%s\n\n%s\n\n%s\n\n' "$a" "$q" "$t"; fi
    add_row "$r" greedy int8 "$(rate greedy "$q")"
    add_row "$r" greedy float32 "$(rate greedy "$a")"
    add_row "$r" greedy pytorch "$(rate greedy "$t")"
    add_row "$r" greedy floor "$(floor_rate greedy "$a")"
    add_row "$r" +score int8 "$(rate greedy+score "$q")"
    add_row "$r" +score float32 "$(rate greedy+score "$a")"
    add_row "$r" +score pytorch "$(rate greedy "$t")"
    add_row "$r" +score floor "$(floor_rate greedy "$a")"
    if [[ -n "$(rate beam "$a")" ]]; then
      add_row "$r" beam int8 "$(rate beam "$q")"
      add_row "$r" beam float32 "$(rate beam "$a")"
      add_row "$r" beam pytorch "$(rate beam "$t")"
      add_row "$r" beam floor "$(floor_rate "beam K=[0-9]*" "$a")"
    fi
  done
  echo "int8 decoding over $rounds rounds of three sides, median (min-max) of each round's median:"
  echo "  all three ran ${pin[*]:+under }${pin[*]:-unpinned}"
  for kind in greedy beam +score; do
    [[ -n "$(values "$kind" int8)" ]] || continue
    if [[ $kind == +score ]]; then
      # with every token's log p (DecodeOptions::scores), against the twin's greedy as in the
      # float32 report; a reference, so one line each (goals.sh shows a run's last 12 lines)
      report_vs "$kind" int8 float32 reference | head -n 1
      report_vs "$kind" int8 pytorch reference | head -n 1
    else
      report_vs "$kind" int8 float32 "goal 2x"
      report_floor "$kind"
      report_vs "$kind" int8 pytorch "goal 3x"
    fi
  done
}
one_cpu "$@"
int8=0 float32_flags=()
for flag in "$@"; do
  if [[ $flag == --int8 ]]; then int8=1; else float32_flags+=("$flag"); fi
done
if ((int8)); then
  compare_int8 "$@"
  exit 0
fi
a_greedy=() t_greedy=() a_beam=() t_beam=() f_greedy=() f_beam=() r_greedy=() r_beam=() a_scored=() r_scored=()
for ((r = 1; r <= rounds; ++r)); do
  a="$("${pin[@]}" "$attend_bin" bench --no-train "$@")"
  t="$("${pin[@]}" "$python" bench/torch_decode.py "$@")"
  same_kernels "$a" "$t"
  if ((r == 1)); then printf '%s\n\n%s\n\n' "$a" "$t"; fi
  a_greedy+=("$(rate greedy "$a")") t_greedy+=("$(rate greedy "$t")")
  a_beam+=("$(rate beam "$a")") t_beam+=("$(rate beam "$t")")
  a_scored+=("$(rate greedy+score "$a")")  # attend's greedy with every token's log p, against the same twin
  f_greedy+=("$(floor_rate greedy "$a")")
  if [[ -n "${a_beam[-1]}" ]]; then f_beam+=("$(floor_rate "beam K=[0-9]*" "$a")"); fi
  r_greedy+=("$(ratio "${a_greedy[-1]}" "${t_greedy[-1]}")")
  r_scored+=("$(ratio "${a_scored[-1]}" "${t_greedy[-1]}")")
  if [[ -n "${a_beam[-1]}" ]]; then r_beam+=("$(ratio "${a_beam[-1]}" "${t_beam[-1]}")"); fi
done
report() {  # what, then attend's, pytorch's, the floor's and the rounds' speed-ups as four quoted lists
  local am amin amax tm tmin tmax fm fmin fmax rm rmin rmax
  read -r am amin amax < <(printf '%s\n' $2 | summary)
  read -r tm tmin tmax < <(printf '%s\n' $3 | summary)
  read -r fm fmin fmax < <(printf '%s\n' $4 | summary)
  read -r rm rmin rmax < <(printf '%s\n' $5 | summary)
  awk -v w="$1" -v am="$am" -v amin="$amin" -v amax="$amax" -v tm="$tm" -v tmin="$tmin" -v tmax="$tmax" -v fm="$fm" \
      -v rm="$rm" -v rmin="$rmin" -v rmax="$rmax" -v rounds="$5" 'BEGIN {
    printf "  %-9s attend %.0f tokens/s (%.0f-%.0f), pytorch %.0f tokens/s (%.0f-%.0f): attend is %.2fx as fast\n", w, am, amin, amax, tm, tmin, tmax, am / tm
    printf "  %-9s within each round (the machine drifts less within one): median %.2fx (%.2f-%.2f); per round %s\n", "", rm, rmin, rmax, rounds
    printf "  %-9s the products alone at the sgemm rate: %.0f tokens/s, so nothing doing them through this OpenBLAS is more than %.2fx as fast as pytorch\n", "", fm, fm / tm
  }'
}
echo "decoding over $rounds alternating rounds, median (min-max) of each round's median:"
echo "  both sides ran ${pin[*]:+under }${pin[*]:-unpinned}"
report greedy "${a_greedy[*]}" "${t_greedy[*]}" "${f_greedy[*]}" "${r_greedy[*]}"
# attend's greedy keeps no scores, as its twin takes the argmax alone; with
# every token's log p (DecodeOptions::scores), against the same twin:
report "+score" "${a_scored[*]}" "${t_greedy[*]}" "${f_greedy[*]}" "${r_scored[*]}"
if [[ -n "${a_beam[0]}" ]]; then report "beam" "${a_beam[*]}" "${t_beam[*]}" "${f_beam[*]}" "${r_beam[*]}"; fi
