#!/bin/sh
# CTest's reference.torch_explain: runs `attend explain --json` for every kind
# of step (additive, dot, general with padding, an LSTM over 3 steps, two seeds)
# and hands the files to the PyTorch twin, tests/reference/torch_explain.py.
# Exit 77 (the test's SKIP_RETURN_CODE) where Debian's python3-torch is missing.
#   run_torch_explain.sh ATTEND WORK_DIR
set -eu
attend=$1
work=$2
python=${ATTEND_TORCH_PYTHON:-/usr/bin/python3}  # Debian's python3-torch lives there
here=$(dirname "$0")
if [ ! -x "$python" ] || ! "$python" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $python has no torch (apt-get install python3-torch)"
  exit 77
fi
mkdir -p "$work"
n=0
for seed in 1 2; do
  for args in "--attention additive" "--attention dot" "--attention general --padded" "--attention additive --padded" \
              "--lstm"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$attend" explain $args --seed "$seed" --json "$work/step_$n.json" >/dev/null
  done
done
exec "$python" "$here/torch_explain.py" "$work"/step_*.json
