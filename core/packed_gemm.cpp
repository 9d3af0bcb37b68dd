// The packed product: y = x @ W^T + beta * y, W packed in panels of 16 columns.
// Letters as in packed_gemm.hpp: x (M, K), W (N, K), y (M, N); R rows of x and
// P panels (16 P columns of y) per block.
#include "core/packed_gemm.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/transpose.hpp"

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
  for (std::int64_t p = 0; p * kPanel < n; ++p)
    transpose_tiles<float, false>(w + p * kPanel * ldw, ldw, data_.data<float>() + p * k * kPanel, kPanel,
                                  std::min(kPanel, n - p * kPanel), k);
}

PackedMatrix PackedMatrix::from_transposed(const float* wt, std::int64_t n, std::int64_t k, std::int64_t ldwt) {
  PackedMatrix m(n, k);
  if (ldwt < n) fail("PackedMatrix: the row stride {} of W^T ({}, {}) is below its {} columns", ldwt, k, n, n);
  for (std::int64_t p = 0; p * kPanel < n; ++p) {
    float* out = m.data_.data<float>() + p * k * kPanel;
    const std::int64_t cols = std::min(kPanel, n - p * kPanel);
    for (std::int64_t kk = 0; kk < k; ++kk)  // panel row kk: W[16p .. 16p + 15, kk] = W^T[kk, 16p ..]
      std::copy(wt + kk * ldwt + p * kPanel, wt + kk * ldwt + p * kPanel + cols, out + kk * kPanel);
  }
  return m;
}

namespace {

// GCC's vector extension: V16 is one AVX-512 register of floats, V8 one AVX2
// register, V4 one SSE register. Each kernel below uses the width its target
// has natively (a vector wider than the target's registers is lowered through
// memory, ten times slower). A panel row of 16 floats is kSplit<V> vectors.
using V16 = float __attribute__((vector_size(64)));
using V8 = float __attribute__((vector_size(32)));
using V4 = float __attribute__((vector_size(16)));
template <class V>
constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(float));
template <class V>
constexpr int kSplit = static_cast<int>(PackedMatrix::kPanel) / kLanes<V>;

// Through a reference, not a return value: a function returning a vector has
// a different ABI with and without the wider registers.
template <class V>
[[gnu::always_inline]] inline void load(V& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}

// Where x[r, k] is: rows of x ldx apart, or (XT) x given as its transpose, x^T
// (K, M) with rows ldx apart, so that x[r, k] = x^T[k, r] (the R values a k
// needs then sit side by side).
template <bool XT>
[[gnu::always_inline]] inline float x_at(const float* x, std::int64_t ldx, int r, std::int64_t k) {
  return XT ? x[k * ldx + r] : x[r * ldx + k];
}

// y[0:R, 16 p0 : 16 (p0 + P)] = x[0:R] @ (panels p0 .. p0 + P - 1) + beta * y, where
// every one of the R * P * kSplit accumulators is a register: per k, P * kSplit
// loads of W and R broadcasts of x feed R * P * kSplit independent multiply-adds.
template <class V, int R, int P, bool XT>
[[gnu::always_inline]] inline void block(const float* x, std::int64_t ldx, const PackedMatrix& w, std::int64_t p0,
                                         float beta, float* y, std::int64_t ldy) {
  constexpr int S = kSplit<V>, L = kLanes<V>, Q = P * S;  // vectors per row of the block
  const std::int64_t K = w.k(), N = w.n();
  V acc[R][Q];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) acc[r][q] = V{};
  const float* panel[P];
  for (int p = 0; p < P; ++p) panel[p] = w.panel(p0 + p);
  // Unrolled 4 times: the loop's own compare-and-branch and pointer steps
  // otherwise share the issue slots with the multiply-adds (AVX2 at M decoding's
  // output projection: ~90 to ~96 GFLOP/s in A/B runs).
#pragma GCC unroll 4
  for (std::int64_t k = 0; k < K; ++k) {
    V b[Q];
    for (int q = 0; q < Q; ++q) load(b[q], panel[q / S] + k * PackedMatrix::kPanel + (q % S) * L);
    for (int r = 0; r < R; ++r) {
      const float x_rk = x_at<XT>(x, ldx, r, k);
      for (int q = 0; q < Q; ++q) acc[r][q] += x_rk * b[q];  // y[r, n] += x[r, k] W[n, k]
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
      const std::int64_t col = (p0 + p) * PackedMatrix::kPanel;
      const std::int64_t cols = std::min(PackedMatrix::kPanel, N - col);
      float* y_r = y + r * ldy + col;
      if (cols == PackedMatrix::kPanel) {
        for (int s = 0; s < S; ++s) {
          V v = acc[r][p * S + s];
          if (beta != 0.0f) {  // beta 0 never reads y (it may hold NaN)
            V y_old;
            load(y_old, y_r + s * L);
            v += beta * y_old;
          }
          std::memcpy(y_r + s * L, &v, sizeof v);
        }
      } else {  // the last panel, past the end of y's row
        float out[PackedMatrix::kPanel];
        for (int s = 0; s < S; ++s) std::memcpy(out + s * L, &acc[r][p * S + s], sizeof(V));
        for (std::int64_t j = 0; j < cols; ++j) y_r[j] = beta == 0.0f ? out[j] : out[j] + beta * y_r[j];
      }
    }
  }
}

// The same for rows = 1 .. R rows (the last rows of x).
template <class V, int R, int P, bool XT>
[[gnu::always_inline]] inline void block_rows(std::int64_t rows, const float* x, std::int64_t ldx,
                                              const PackedMatrix& w, std::int64_t p0, float beta, float* y,
                                              std::int64_t ldy) {
  if constexpr (R > 1) {
    if (rows < R) return block_rows<V, R - 1, P, XT>(rows, x, ldx, w, p0, beta, y, ldy);
  }
  block<V, R, P, XT>(x, ldx, w, p0, beta, y, ldy);
}

// Panels P at a time (then one at a time), and for each, R rows at a time: a
// panel (K x 16 floats) stays in L1 while every row block passes over it.
template <class V, int R, int P, bool XT>
[[gnu::always_inline]] inline void product(std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w,
                                           float beta, float* y, std::int64_t ldy) {
  const std::int64_t panels = (w.n() + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel;
  // row i of x: i rows down, or (XT) i columns across
  const auto rows_from = [&](std::int64_t i) { return XT ? x + i : x + i * ldx; };
  std::int64_t p0 = 0;
  for (; p0 + P <= panels; p0 += P)
    for (std::int64_t i = 0; i < M; i += R)
      block_rows<V, R, P, XT>(std::min<std::int64_t>(R, M - i), rows_from(i), ldx, w, p0, beta, y + i * ldy, ldy);
  for (; p0 < panels; ++p0)
    for (std::int64_t i = 0; i < M; i += R)
      block_rows<V, R, 1, XT>(std::min<std::int64_t>(R, M - i), rows_from(i), ldx, w, p0, beta, y + i * ldy, ldy);
}

// One kernel per instruction set, each compiled for its own (clang, in the fuzz
// preset, builds the baseline alone, as with ATTEND_SIMD_CLONES):
//   AVX-512   6 rows x 2 panels: 12 of its 32 registers accumulate
//   AVX2      6 rows x 1 panel: 12 of its 16 (4 rows, 8 registers, left the
//             loads and broadcasts too few multiply-adds to hide: ~5-10% slower)
//   baseline  2 rows x 1 panel:  8 of SSE's 16
// Each takes x as rows or (xt) as its transpose.
#if defined(__x86_64__) && !defined(__clang__)
#define ATTEND_PACKED_WIDE 1
__attribute__((target("arch=x86-64-v4"))) void run_avx512(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                           const PackedMatrix& w, float beta, float* y,
                                                           std::int64_t ldy) {
  if (xt) return product<V16, 6, 2, true>(M, x, ldx, w, beta, y, ldy);
  product<V16, 6, 2, false>(M, x, ldx, w, beta, y, ldy);
}
__attribute__((target("arch=x86-64-v3"))) void run_avx2(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                         const PackedMatrix& w, float beta, float* y,
                                                         std::int64_t ldy) {
  if (xt) return product<V8, 6, 1, true>(M, x, ldx, w, beta, y, ldy);
  product<V8, 6, 1, false>(M, x, ldx, w, beta, y, ldy);
}
#endif
void run_baseline(bool xt, std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta,
                  float* y, std::int64_t ldy) {
  if (xt) return product<V4, 2, 1, true>(M, x, ldx, w, beta, y, ldy);
  product<V4, 2, 1, false>(M, x, ldx, w, beta, y, ldy);
}

void run(detail::PackedKernel kernel, bool xt, std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w,
         float beta, float* y, std::int64_t ldy) {
  if (m == 0 || w.n() == 0) return;
  if (!detail::packed_kernel_runs(kernel)) fail("gemm_packed: this CPU cannot run the kernel asked for");
#if defined(ATTEND_PACKED_WIDE)
  if (kernel == detail::PackedKernel::Avx512) return run_avx512(xt, m, x, ldx, w, beta, y, ldy);
  if (kernel == detail::PackedKernel::Avx2) return run_avx2(xt, m, x, ldx, w, beta, y, ldy);
#endif
  run_baseline(xt, m, x, ldx, w, beta, y, ldy);
}

}  // namespace

namespace detail {

bool packed_kernel_runs(PackedKernel kernel) {
  switch (kernel) {
    case PackedKernel::Baseline: return true;
#if defined(ATTEND_PACKED_WIDE)
    case PackedKernel::Avx2: {
      static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
      return yes;
    }
    case PackedKernel::Avx512: {
      static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                              __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                              __builtin_cpu_supports("avx512cd");
      return yes;
    }
#endif
    default: return false;
  }
}

PackedKernel packed_kernel() {
  for (PackedKernel kernel : {PackedKernel::Avx512, PackedKernel::Avx2})
    if (packed_kernel_runs(kernel)) return kernel;
  return PackedKernel::Baseline;
}

void packed_product(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                    std::int64_t ldy, PackedKernel kernel) {
  run(kernel, false, m, x, ldx, w, beta, y, ldy);
}

void packed_product_xt(std::int64_t m, const float* xt, std::int64_t ldxt, const PackedMatrix& w, float beta,
                       float* y, std::int64_t ldy, PackedKernel kernel) {
  run(kernel, true, m, xt, ldxt, w, beta, y, ldy);
}

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
  // lines stay in L1 (48 KiB here): up to kColumnsUpTo. Past it each line comes
  // back from L2 or further for every block (at k = 1920: half the rate, a third
  // at a stride of 4 KiB), and a transposed copy of A, made once, is faster.
  constexpr std::int64_t kColumnsUpTo = 384;  // 24 KiB of lines
  if (k <= kColumnsUpTo) return packed_product_xt(m, a, lda, w, beta, c, ldc, kernel);
  Tensor rows = attend::empty({m, k}, Float32);
  transpose_tiles<float, false>(a, lda, rows.data<float>(), k, k, m);
  packed_product(m, rows.data<float>(), k, w, beta, c, ldc, kernel);
}

}  // namespace detail

}  // namespace attend::blas
