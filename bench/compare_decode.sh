#!/usr/bin/env bash
# Decoding speed: `attend bench --no-train` and its PyTorch twin
# (bench/torch_decode.py, Debian's python3-torch) with the same flags,
# alternately for ROUNDS rounds (default 5). Both decode the same batch of random
# sentences for exactly --decode-steps tokens each (default --tgt-len), greedily
# and with a beam of --beam (default 5), never stopping at </s>. Prints each
# side's median tokens/s over the rounds (each round's figure is the median of
# its runs), the range, and the ratio of the medians.
# Usage, from the repository root (S: ~1 minute, M: ~3 minutes on an idle machine):
#   S="--embed 32 --hidden 64 --batch 16 --src-len 20 --tgt-len 20 --vocab 1000 --attention additive"
#   M="--embed 128 --hidden 256 --batch 64 --src-len 30 --tgt-len 30 --vocab 8000 --attention additive"
#   bench/compare_decode.sh $S --threads 1 --decode-runs 10
#   ROUNDS=3 bench/compare_decode.sh $M --threads 1 --decode-runs 3
set -euo pipefail
attend_bin="${ATTEND:-build/release/tools/attend}"
python="${TORCH_PYTHON:-/usr/bin/python3}"
rounds="${ROUNDS:-5}"
# tokens/s of the line that starts with $1 ("greedy" or "beam").
rate() { awk -v what="$1" '$1 == what {for (i = 1; i < NF; ++i) if ($(i + 1) == "tokens/s") print $i}' <<<"$2"; }
a_greedy=() t_greedy=() a_beam=() t_beam=()
for ((r = 1; r <= rounds; ++r)); do
  a="$("$attend_bin" bench --no-train "$@")"
  t="$("$python" bench/torch_decode.py "$@")"
  if ((r == 1)); then printf '%s\n\n%s\n\n' "$a" "$t"; fi
  a_greedy+=("$(rate greedy "$a")") t_greedy+=("$(rate greedy "$t")")
  a_beam+=("$(rate beam "$a")") t_beam+=("$(rate beam "$t")")
done
# The median, min and max of a list of numbers, one a line.
summary() { sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR]}'; }
report() {  # what, then attend's and pytorch's figures as two quoted lists
  local am amin amax tm tmin tmax
  read -r am amin amax < <(printf '%s\n' $2 | summary)
  read -r tm tmin tmax < <(printf '%s\n' $3 | summary)
  awk -v w="$1" -v am="$am" -v amin="$amin" -v amax="$amax" -v tm="$tm" -v tmin="$tmin" -v tmax="$tmax" 'BEGIN {
    printf "  %-9s attend %.0f tokens/s (%.0f-%.0f), pytorch %.0f tokens/s (%.0f-%.0f): attend is %.2fx as fast\n", w, am, amin, amax, tm, tmin, tmax, am / tm
  }'
}
echo "decoding over $rounds alternating rounds, median (min-max) of each round's median:"
report greedy "${a_greedy[*]}" "${t_greedy[*]}"
if [[ -n "${a_beam[0]}" ]]; then report "beam" "${a_beam[*]}" "${t_beam[*]}"; fi
