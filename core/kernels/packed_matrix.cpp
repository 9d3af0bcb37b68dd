// Packing: blas::PackedMatrix's panels from W or W^T, and gemm_by_packing, the
// products blas::gemm hands to the packed kernel (core/kernels/packed_gemm.cpp), packing
// op(B) at the call. Letters as in packed_gemm.hpp.
#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/kernels/detail/prefetch.hpp"
#include "core/kernels/detail/transpose.hpp"

namespace attend::blas {

PackedMatrix::PackedMatrix(std::int64_t n, std::int64_t k) : n_(n), k_(k) {
  if (n < 0 || k < 0) fail("PackedMatrix: sizes must be >= 0, got W ({}, {})", n, k);
  const std::int64_t panels = (n + kPanel - 1) / kPanel;
  data_ = attend::empty({panels * k * kPanel}, Float32);  // the packers fill every column below n
  if (n % kPanel != 0)  // the columns past n, in the last panel, are zeros
    std::fill_n(data_.data<float>() + (panels - 1) * k * kPanel, k * kPanel, 0.0f);
}

PackedMatrix::PackedMatrix(const float* w, std::int64_t n, std::int64_t k, std::int64_t ldw) : PackedMatrix(n, k) {
  if (ldw < k) fail("PackedMatrix: the row stride {} of W ({}, {}) is below its {} columns", ldw, n, k, k);
  // Panel p (k, 16) is the transpose of W's rows 16p .. 16p + 15 (fewer in the last).
  // While it is made, the next panel's rows are asked for: read in tiles, 16 rows
  // at a time, they come from memory in short runs the hardware does not foresee
  // (the LSTM layer's forward packs its 1 MB W_hh, out of cache, at every call;
  // bench_lstm times the layer).
  for (std::int64_t p = 0; p * kPanel < n; ++p) {
    for (std::int64_t r = (p + 1) * kPanel; r < std::min((p + 2) * kPanel, n); ++r) prefetch_run(w + r * ldw, k);
    transpose_tiles<float, false>(w + p * kPanel * ldw, ldw, data_.data<float>() + p * k * kPanel, kPanel,
                                  std::min(kPanel, n - p * kPanel), k);
  }
}

namespace {

// Panels from W^T's rows, row kk of W^T (n floats) at row_at(kk).
template <class RowAt>
void pack_transposed(float* data, std::int64_t n, std::int64_t k, RowAt row_at) {
  constexpr std::int64_t P = PackedMatrix::kPanel;
  for (std::int64_t p = 0; p * P < n; ++p) {
    float* out = data + p * k * P;
    const std::int64_t cols = std::min(P, n - p * P);
    // panel row kk: W[16p .. 16p + 15, kk] = W^T[kk, 16p ..]. A whole panel's row
    // by a copy of constant size, which the compiler makes one or two moves rather
    // than a call to memmove per 64 bytes (the LSTM layer's backward packs this way).
    if (cols == P)
      for (std::int64_t kk = 0; kk < k; ++kk) std::memcpy(out + kk * P, row_at(kk) + p * P, P * sizeof(float));
    else
      for (std::int64_t kk = 0; kk < k; ++kk) std::copy(row_at(kk) + p * P, row_at(kk) + p * P + cols, out + kk * P);
  }
}

}  // namespace

PackedMatrix PackedMatrix::from_transposed(const float* wt, std::int64_t n, std::int64_t k, std::int64_t ldwt) {
  PackedMatrix m(n, k);
  if (ldwt < n) fail("PackedMatrix: the row stride {} of W^T ({}, {}) is below its {} columns", ldwt, k, n, n);
  pack_transposed(m.data_.data<float>(), n, k, [&](std::int64_t kk) { return wt + kk * ldwt; });
  return m;
}

PackedMatrix PackedMatrix::from_transposed_rows(std::span<const float* const> rows, std::int64_t n) {
  const auto k = static_cast<std::int64_t>(rows.size());
  for (std::size_t kk = 0; kk < rows.size(); ++kk)
    if (rows[kk] == nullptr && n > 0) fail("PackedMatrix: row {} of W^T ({}, {}) is null", kk, k, n);
  PackedMatrix m(n, k);
  pack_transposed(m.data_.data<float>(), n, k, [&](std::int64_t kk) { return rows[static_cast<std::size_t>(kk)]; });
  return m;
}

namespace detail {

void gemm_by_packing(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                     PackedKernel kernel) {
  if (m < 0 || n < 0 || k < 0) fail("gemm_by_packing: sizes must be >= 0, got m {} n {} k {}", m, n, k);
  if (lda < (trans_a ? m : k))
    fail("gemm_by_packing: the row stride {} of A is below its {} columns", lda, trans_a ? m : k);
  if (ldc < n) fail("gemm_by_packing: the row stride {} of C is below its {} columns", ldc, n);
  // y = x @ W^T with x = op(A) and W = op(B)^T: op(B) (k, n) is W^T as it is,
  // B itself (n, k) when trans_b.
  const PackedMatrix w = trans_b ? PackedMatrix(b, n, k, ldb) : PackedMatrix::from_transposed(b, n, k, ldb);
  if (!trans_a) return packed_product(m, a, lda, w, beta, c, ldc, kernel);
  // op(A) = A^T, A (k, m). Read down its columns, a row block of R rows needs
  // one cache line of A per k; the next row blocks reuse those lines while the k
  // lines stay in L1 (24 KiB of them, within a usual 32-48 KiB L1 data cache): up
  // to kColumnsUpTo. Past it each line comes back from L2 or further for every
  // block, and a transposed copy of A, made once, is faster (bench_packed runs
  // both sides of the cut: the LSTM layer's dW products have k = 1,920).
  constexpr std::int64_t kColumnsUpTo = 384;  // 24 KiB of lines
  if (k <= kColumnsUpTo) return packed_product_xt(m, a, lda, w, beta, c, ldc, kernel);
  Tensor rows = attend::empty({m, k}, Float32);
  transpose_tiles<float, false>(a, lda, rows.data<float>(), k, k, m);
  packed_product(m, rows.data<float>(), k, w, beta, c, ldc, kernel);
}

}  // namespace detail

}  // namespace attend::blas
