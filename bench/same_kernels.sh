# Sourced by bench/compare_decode.sh and bench/compare_seq2seq.sh.
# Both sides load the same OpenBLAS; its kernels (OPENBLAS_CORETYPE, when set,
# chooses them for both) must be the same, or the ratio compares kernels.
same_kernels() {
  local mine theirs
  mine="$(sed -n 's/^OpenBLAS kernels \([A-Za-z0-9]*\) .*/\1/p' <<<"$1")"
  theirs="$(sed -n 's/.*OpenBLAS threads [0-9]*, kernels \([A-Za-z0-9]*\) .*/\1/p' <<<"$2")"
  if [[ -z "$mine" || "$mine" != "$theirs" ]]; then
    echo "$(basename "$0"): attend runs OpenBLAS kernels '$mine', the twin '$theirs': not comparable" >&2
    exit 1
  fi
}
