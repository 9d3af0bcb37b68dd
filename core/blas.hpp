#pragma once
// The one door to OpenBLAS: row-major GEMM, C = alpha * op(A) @ op(B) + beta * C,
// where op(X) is X or X^T. Only core/blas.cpp includes cblas.h.
#include <cstdint>

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
void set_gemm_timing(bool on);  // turning it on starts the counts from zero
GemmStats gemm_stats();

// OpenBLAS's thread count.
void set_num_threads(int n);
int num_threads();

}  // namespace attend::blas
