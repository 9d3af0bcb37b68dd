# Sourced by bench/compare_seq2seq.sh and bench/compare_decode.sh:
#   one_cpu FLAGS...
# sets the array `pin` to the prefix that runs one side of a comparison on one
# vCPU, the same for both sides: `taskset -c N` when FLAGS ask for --threads 1
# (or say nothing of threads), nothing with more threads. N is $CPU, or by
# default the first vCPU this script may run on; CPU= (empty) pins nothing.
# Why: this machine's two vCPUs have slow spells (~1.4x slower, seconds long)
# apart from each other. Unpinned, a round's two processes can land on
# different vCPUs, one in a slow spell and one not; on 2026-12-07, 11 rounds of
# S training gave 5.00x-12.12x unpinned against 7.02x-8.28x pinned, minutes
# apart. Pinned, both sides meet the same vCPU's spells.
one_cpu() {
  local threads=1 i args=("$@")
  for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
    [[ ${args[i]} == --threads ]] && threads="${args[i + 1]}"
  done
  pin=()
  local cpu="${CPU-}"
  if [[ -z ${CPU+set} ]]; then
    cpu="$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//')"
    cpu="${cpu%%[-,]*}"
  fi
  if [[ $threads == 1 && -n $cpu ]]; then
    pin=(taskset -c "$cpu")
  fi
  return 0
}
