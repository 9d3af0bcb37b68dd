#!/usr/bin/env bash
# Peak resident memory of the default toy training run (`attend train --toy`,
# its default model and data: 60,000 pairs, embed 64, hidden 128, batch 64),
# after STEPS steps (default 300), end-of-run
# validation and BLEU included, read by GNU time (%M, kB). Also prints the run
# after STEPS/3 steps: steady-state training should not grow, so the two peaks
# should be about equal.
# Usage, from the repository root:
#   bench/toy_memory.sh
#   STEPS=600 bench/toy_memory.sh --threads 1    (extra flags go to attend train)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_program "$attend_bin" attend_cli
steps="${STEPS:-300}"
make_scratch
for s in $((steps / 3)) "$steps"; do
  /usr/bin/time -f %M -o "$scratch/rss" "$attend_bin" train --toy --max-steps "$s" --out "$scratch/m$s" "$@" >/dev/null
  awk -v s="$s" '{printf "attend train --toy --max-steps %d: peak RSS %.0f MB\n", s, $1 / 1024}' "$scratch/rss"
done
