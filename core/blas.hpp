#pragma once
// The one door to OpenBLAS: row-major GEMM, C = alpha * op(A) @ op(B) + beta * C,
// where op(X) is X or X^T. Only core/blas.cpp includes cblas.h.
#include <cstdint>
#include <vector>

namespace attend::blas {

// A is (M, K) after op, B is (K, N) after op, C is (M, N); ld* are row strides.
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
          std::int64_t ldc);

// The time spent inside gemm, for `attend bench`: how much of a step is the
// matrix products and how much everything else. Off by default; when on, every
// call reads the clock twice (~50 ns). Calls from any thread are counted.
struct GemmStats {
  std::int64_t calls = 0;
  double seconds = 0;
  double flops = 0;  // 2 m n k per call
};
void set_gemm_timing(bool on);  // on: counts start from zero; off: they stay readable
GemmStats gemm_stats();

// The same counts split by shape (attend bench --gemm-shapes): which products
// take the time. `m n k` as in gemm, after op(); the most time first.
struct GemmShapeStats {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t calls = 0;
  double seconds = 0;
};
std::vector<GemmShapeStats> gemm_shape_stats();

// OpenBLAS's thread count.
void set_num_threads(int n);
int num_threads();

}  // namespace attend::blas
