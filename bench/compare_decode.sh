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
one_cpu "$@"
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
