// The packed product: y = x @ W^T + beta * y, W packed in panels of 16 columns.
// Letters as in packed_gemm.hpp: x (M, K), W (N, K), y (M, N); R rows of x and
// P panels (16 P columns of y) per block.
#include "core/packed_gemm.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/fast_math.hpp"  // ATTEND_SIMD_CLONES

namespace attend::blas {

PackedMatrix::PackedMatrix(const float* w, std::int64_t n, std::int64_t k, std::int64_t ldw) {
  if (n < 0 || k < 0) fail("PackedMatrix: sizes must be >= 0, got W ({}, {})", n, k);
  if (ldw < k) fail("PackedMatrix: the row stride {} of W ({}, {}) is below its {} columns", ldw, n, k, k);
  n_ = n;
  k_ = k;
  const std::int64_t panels = (n + kPanel - 1) / kPanel;
  data_.assign(static_cast<std::size_t>(panels * k * kPanel), 0.0f);
  for (std::int64_t p = 0; p < panels; ++p) {
    float* out = data_.data() + p * k * kPanel;
    for (std::int64_t j = 0; j < kPanel && p * kPanel + j < n; ++j) {
      const float* w_row = w + (p * kPanel + j) * ldw;  // W[16p + j, :]
      for (std::int64_t kk = 0; kk < k; ++kk) out[kk * kPanel + j] = w_row[kk];
    }
  }
}

namespace {

// 16 floats: one register with AVX-512, two with AVX2, four with SSE. GCC's
// vector extension, so that each clone below uses its own width.
using V16 = float __attribute__((vector_size(64)));

// Through a reference, not a return value: a function returning a 64-byte
// vector has a different ABI with and without AVX-512.
[[gnu::always_inline]] inline void load(V16& v, const float* p) { std::memcpy(&v, p, sizeof v); }

// y[0:R, 16 p0 : 16 (p0 + P)] = x[0:R] @ (panels p0 .. p0 + P - 1) + beta * y, where
// every one of the R * P accumulators is a register: per k, P loads of W and R
// broadcasts of x feed R * P independent multiply-adds.
template <int R, int P>
[[gnu::always_inline]] inline void block(const float* x, std::int64_t ldx, const PackedMatrix& w, std::int64_t p0,
                                         float beta, float* y, std::int64_t ldy) {
  const std::int64_t K = w.k(), N = w.n();
  V16 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = V16{};
  const float* panel[P];
  for (int p = 0; p < P; ++p) panel[p] = w.panel(p0 + p);
  for (std::int64_t k = 0; k < K; ++k) {
    V16 b[P];
    for (int p = 0; p < P; ++p) load(b[p], panel[p] + k * PackedMatrix::kPanel);
    for (int r = 0; r < R; ++r) {
      const float x_rk = x[r * ldx + k];
      for (int p = 0; p < P; ++p) acc[r][p] += x_rk * b[p];  // y[r, n] += x[r, k] W[n, k]
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
      const std::int64_t col = (p0 + p) * PackedMatrix::kPanel;
      const std::int64_t cols = std::min(PackedMatrix::kPanel, N - col);
      float* y_r = y + r * ldy + col;
      if (cols == PackedMatrix::kPanel) {
        V16 out = acc[r][p];
        if (beta != 0.0f) {
          V16 y_old;
          load(y_old, y_r);
          out += beta * y_old;
        }
        std::memcpy(y_r, &out, sizeof out);
      } else {
        float out[PackedMatrix::kPanel];
        std::memcpy(out, &acc[r][p], sizeof out);
        for (std::int64_t j = 0; j < cols; ++j) y_r[j] = beta == 0.0f ? out[j] : out[j] + beta * y_r[j];
      }
    }
  }
}

// The same for rows = 1 .. R rows (the last rows of x).
template <int R, int P>
[[gnu::always_inline]] inline void block_rows(std::int64_t rows, const float* x, std::int64_t ldx,
                                              const PackedMatrix& w, std::int64_t p0, float beta, float* y,
                                              std::int64_t ldy) {
  if constexpr (R > 1) {
    if (rows < R) return block_rows<R - 1, P>(rows, x, ldx, w, p0, beta, y, ldy);
  }
  block<R, P>(x, ldx, w, p0, beta, y, ldy);
}

// Panels P at a time (then one at a time), and for each, R rows at a time: a
// panel (K x 16 floats) stays in L1 while every row block passes over it.
template <int R, int P>
[[gnu::always_inline]] inline void product(std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w,
                                           float beta, float* y, std::int64_t ldy) {
  const std::int64_t panels = (w.n() + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel;
  std::int64_t p0 = 0;
  for (; p0 + P <= panels; p0 += P)
    for (std::int64_t i = 0; i < M; i += R)
      block_rows<R, P>(std::min<std::int64_t>(R, M - i), x + i * ldx, ldx, w, p0, beta, y + i * ldy, ldy);
  for (; p0 < panels; ++p0)
    for (std::int64_t i = 0; i < M; i += R)
      block_rows<R, 1>(std::min<std::int64_t>(R, M - i), x + i * ldx, ldx, w, p0, beta, y + i * ldy, ldy);
}

bool has_avx512() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512cd");
  return yes;
#else
  return false;
#endif
}

// With AVX-512 (the x86-64-v4 clone runs then) 6 x 2 = 12 one-register
// accumulators; otherwise 4 x 1, which AVX2 holds in 8 of its 16 registers.
ATTEND_SIMD_CLONES void run(std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta,
                            float* y, std::int64_t ldy) {
  if (has_avx512())
    product<6, 2>(M, x, ldx, w, beta, y, ldy);
  else
    product<4, 1>(M, x, ldx, w, beta, y, ldy);
}

}  // namespace

namespace detail {
void packed_product(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                    std::int64_t ldy) {
  if (m == 0 || w.n() == 0) return;
  run(m, x, ldx, w, beta, y, ldy);
}
}  // namespace detail

}  // namespace attend::blas
