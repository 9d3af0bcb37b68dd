#!/usr/bin/env bash
# attend's LSTM layer against oneDNN's LSTM primitive (forward and backward,
# B=64 T=30 I=128 H=256, one thread): bench_lstm_onednn alternates the two in one
# process for ROUNDS rounds (default 7), after checking that both compute the
# same outputs and gradients, and prints each side's median and range. It is
# built with the release preset when oneDNN (libdnnl-dev) is installed.
# oneDNN JIT-compiles for the widest vectors the CPU has (its "ISA" line; the
# variable ONEDNN_MAX_CPU_ISA=AVX2 caps it). attend's layer (lstm_sequence) runs
# every float32 product, the weight gradients' included, on its own packed kernel
# (blas::gemm_packed), at the CPU's widest vectors too, with the kernels its
# "kernels" line names.
# Usage, from the repository root (about a minute on an idle machine):
#   bench/compare_lstm_onednn.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
program="${BENCH_LSTM_ONEDNN:-build/release/bench/bench_lstm_onednn}"
require_program "$program" bench_lstm_onednn "apt-get install libdnnl-dev"
OMP_NUM_THREADS=1 "$program" "${ROUNDS:-7}"
