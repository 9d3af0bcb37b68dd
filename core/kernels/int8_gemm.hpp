#pragma once
// The int8 product: y = x @ W^T with W quantized to int8 once and x quantized
// per call, for decoding, whose products read W again at every step (M
// decoding's projection: 8,000 x 256 weights, 8 MB as float, 2 MB as int8, so
// that a step streams a quarter of the bytes and each instruction multiplies
// four times as many pairs). Run by blas::gemm_packed when handed
// PackedMatrix::from_int8 (core/kernels/packed_gemm.hpp), with the same epilogue.
//
// Letters as in packed_gemm.hpp: x (M, K), W (N, K), y (M, N).
//
// Quantization, symmetric, per row, round to nearest (ties to even):
//   W:  scale_n = max_k |W[n, k]| / 127,  q[n, k] = round(W[n, k] / scale_n) in [-127, 127]
//   x:  s_i     = max_k |x[i, k]| / 127,  qx[i, k] = round(x[i, k] / s_i)     in [-127, 127]
// (a row of zeros, or one whose maximum is below 127 times float's smallest
// subnormal: scale 0, values 0). Then, with dot = sum_k qx[i, k] q[n, k] in int32,
//   y[i, n] = (s_i * scale_n) * float(dot) + bias[n] + beta * y[i, n]
// in that order (the kernels are compiled without contraction into FMAs, so
// every path rounds the same), and the row summaries as the float kernel gives
// them (RowSummary: max, exp_sum by fast_math's exp, best but `skip`; store_y
// false leaves y alone). A row of x holding NaN or +-inf: s_i is NaN and the
// row of y is NaN (its summary: max -inf, exp_sum NaN, best -1).
//
// Error bound. x = s_i qx + ex with |ex| <= s_i / 2, W = scale_n q + ew with
// |ew| <= scale_n / 2, so x.W - s_i scale_n qx.q = sum_k (ex W + s_i qx ew):
//   |y_int8 - y_float| <= sum_k (|x_k| scale_n / 2 + |W_nk| s_i / 2 + s_i scale_n / 4)
// plus float rounding (the float product's own and the few roundings above);
// tests/core/kernels/test_int8_gemm.cpp holds every path to it.
//
// Layout (detail/int8_gemm_detail.hpp): W in panels of 16 rows, K rounded up to
// a multiple of 4 (K4) with zeros; in a panel, group g (k = 4g .. 4g + 3) is 64
// bytes, row j's four values at 4j .. 4j + 3: what one vpdpbusd multiplies by
// a broadcast of x's four bytes, lane j adding row j's dot product. Beside the
// panels: scales and rowsum_n = sum_k q[n, k], zero past N.
//
// The offset trick: vpdpbusd multiplies unsigned by signed bytes. x goes in as
// u = qx + 128 (1 .. 255), and sum_k u q = dot + 128 rowsum_n, so the kernel
// subtracts 128 rowsum_n. The sum of u q is at most 255 * 127 * K in size, hence
// K <= PackedMatrix::kInt8MaxK (66,311) for int32.
//
// Paths, picked at run time by CPU (every one gives the same int32 dots, hence
// the same y and summaries bit for bit):
//   VNNI      AVX-512 VNNI and BW: vpdpbusd on zmm, 6 rows x 4 panels
//   AVX2      u and q widened to int16, vpmaddwd (not vpmaddubsw: it saturates
//             the sum of two u8 x s8 products), 3 rows x 1 panel
//   portable  plain C++, 2 rows x 1 panel
// detail/int8_gemm_detail.hpp runs a named path (the tests hold them together).
// The int8 paths ask for no prefetches: PackedMatrix::set_streamed has no
// effect on an int8 W. x's quantized rows live in buffers each thread keeps.
#include <cstdint>
#include <vector>

#include "core/kernels/packed_gemm.hpp"

namespace attend::blas {

// W (n, k) quantized per row, as above: values (n, k) row-major, scales (n).
struct QuantizedRows {
  std::int64_t n = 0, k = 0;
  std::vector<std::int8_t> values;
  std::vector<float> scales;
};

// W (n, k), rows ldw apart. Error on negative sizes, ldw < k, a null w with
// n k > 0, or a value that is NaN or infinite.
QuantizedRows quantize_rows(const float* w, std::int64_t n, std::int64_t k, std::int64_t ldw);

}  // namespace attend::blas
