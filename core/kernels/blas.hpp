#pragma once
// The one door to OpenBLAS: row-major GEMM, C = alpha * op(A) @ op(B) + beta * C,
// where op(X) is X or X^T. Only core/kernels/blas.cpp includes cblas.h.
#include <cstdint>
#include <string>
#include <vector>

namespace attend::blas {

// A is (M, K) after op, B is (K, N) after op, C is (M, N); ld* are row strides.
// float32 products with alpha 1 run on attend's packed kernel instead
// (core/kernels/packed_gemm.hpp) where it is the faster. OpenBLAS's kernels must not be
// AVX-512. Then: where the kernel's AVX-512 build runs, every such product when
// OpenBLAS has one thread, and those of at most 2^25 multiply-adds when it has
// more; where its AVX2 build is the widest, the small ones (at most 64 x 256 x
// 512 multiply-adds) with op(A) = A, and with more than one OpenBLAS thread only
// those OpenBLAS would not split over its threads (at most 64^3).
// Everything else runs OpenBLAS.
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
          std::int64_t ldc);

// Off: float32 products run OpenBLAS too (tests' oracle, and A/B benchmarks).
// On by default; returns the previous setting. Whether it takes effect here and
// now for every size: packed_routing_active(); for small products with op(A) = A
// (32^3 multiply-adds): packed_routing_small(). What runs float32 products, in
// words: float_products().
bool set_packed_routing(bool on);
bool packed_routing_active();
bool packed_routing_small();
std::string float_products();

// The time spent inside gemm and gemm_packed (core/kernels/packed_gemm.hpp), for
// `attend bench`: how much of a step is the matrix products and how much
// everything else. Off by default; when on, every call reads the clock twice.
// Calls from any thread are counted.
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
  bool packed = false;  // gemm_packed (core/kernels/packed_gemm.hpp), not OpenBLAS
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t calls = 0;
  double seconds = 0;
};
std::vector<GemmShapeStats> gemm_shape_stats();

// OpenBLAS's thread count.
void set_num_threads(int n);
int num_threads();

// OpenBLAS's kernels. A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels
// once, when it is loaded: by CPU, or as OPENBLAS_CORETYPE says. The choice
// can halve or double every product (AVX2 kernels against AVX-512 ones on a CPU
// that has both; bench_matmul with and without the variable shows it), so attend --version and
// attend bench say which kernels run and why. attend never overrides the
// variable: it is the user's (or the machine's) choice, and is reported as such.
struct CpuVectors {
  bool avx512 = false;  // F, CD, BW, DQ and VL, enabled by the OS: what OpenBLAS's SkylakeX kernels use
};
CpuVectors cpu_vectors();

// "Haswell (OPENBLAS_CORETYPE=Haswell; this CPU also runs OpenBLAS's AVX-512
// kernels, ...)": `name` and `config` as OpenBLAS reports them
// (openblas_get_corename, openblas_get_config), `coretype` the variable or
// nullptr when unset. The rule alone, without the machine, for tests.
std::string describe_kernels(const std::string& name, const std::string& config, const char* coretype,
                             const CpuVectors& cpu);
// The same for this process: OpenBLAS's kernels, then its build configuration.
std::string kernels_in_use();

}  // namespace attend::blas
