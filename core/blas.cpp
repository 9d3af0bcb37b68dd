#include "core/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "core/error.hpp"
#include "core/packed_gemm.hpp"

namespace attend::blas {
namespace {
CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// An empty product still has to apply beta to C.
template <class T>
bool empty_product(std::int64_t m, std::int64_t n, std::int64_t k, T beta, T* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return true;
  if (k != 0) return false;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  return true;
}
std::atomic<bool> timing{false};
std::atomic<std::int64_t> timed_calls{0};
std::atomic<double> timed_seconds{0}, timed_flops{0};

// Per shape: (trans_a, trans_b, m, n, k) -> calls and seconds. Locked, as
// calls may come from several threads; only touched while timing is on.
using ShapeKey = std::tuple<bool, bool, std::int64_t, std::int64_t, std::int64_t, bool>;  // ..., packed
std::mutex shapes_mutex;
std::map<ShapeKey, GemmShapeStats> shapes;

// Runs one product, timed when timing is on.
template <class F>
void timed(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, F&& product, bool packed = false) {
  if (!timing.load(std::memory_order_relaxed)) return product();
  const auto t0 = std::chrono::steady_clock::now();
  product();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    const std::lock_guard lock(shapes_mutex);
    GemmShapeStats& shape = shapes[ShapeKey{trans_a, trans_b, m, n, k, packed}];
    shape.calls += 1;
    shape.seconds += s;
  }
  timed_calls.fetch_add(1, std::memory_order_relaxed);
  timed_seconds.fetch_add(s, std::memory_order_relaxed);
  timed_flops.fetch_add(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                        std::memory_order_relaxed);
}
}  // namespace

void set_gemm_timing(bool on) {
  timing = on;
  if (!on) return;  // the counts stay readable until timing starts again
  timed_calls = 0;
  timed_seconds = 0;
  timed_flops = 0;
  const std::lock_guard lock(shapes_mutex);
  shapes.clear();
}

GemmStats gemm_stats() { return {timed_calls.load(), timed_seconds.load(), timed_flops.load()}; }

std::vector<GemmShapeStats> gemm_shape_stats() {
  std::vector<GemmShapeStats> out;
  {
    const std::lock_guard lock(shapes_mutex);
    for (const auto& [key, stats] : shapes) {
      GemmShapeStats shape = stats;
      std::tie(shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k, shape.packed) = key;
      out.push_back(shape);
    }
  }
  std::sort(out.begin(), out.end(), [](const GemmShapeStats& a, const GemmShapeStats& b) { return a.seconds > b.seconds; });
  return out;
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  timed(trans_a, trans_b, m, n, k, [&] {
    cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta,
                c, static_cast<blasint>(ldc));
  });
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
          std::int64_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  timed(trans_a, trans_b, m, n, k, [&] {
    cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta,
                c, static_cast<blasint>(ldc));
  });
}

void gemm_packed(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                 std::int64_t ldy) {
  if (m < 0) fail("gemm_packed: {} rows of x", m);
  if (ldx < w.k()) fail("gemm_packed: the row stride {} of x is below W's {} columns", ldx, w.k());
  if (ldy < w.n()) fail("gemm_packed: the row stride {} of y is below W's {} rows", ldy, w.n());
  if (m == 0 || w.n() == 0) return;
  timed(false, true, m, w.n(), w.k(), [&] { detail::packed_product(m, x, ldx, w, beta, y, ldy, detail::packed_kernel()); }, true);
}

void set_num_threads(int n) {
  if (n < 1) fail("blas::set_num_threads: need at least one thread, got {}", n);
  openblas_set_num_threads(n);
}

int num_threads() { return openblas_get_num_threads(); }

CpuVectors cpu_vectors() {
  CpuVectors cpu;
#if defined(__x86_64__)
  // libgcc's checks include the OS's: AVX-512 counts only when XCR0 enables the ZMM state.
  __builtin_cpu_init();
  cpu.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
#endif
  return cpu;
}

std::string describe_kernels(const std::string& name, const std::string& config, const char* coretype,
                             const CpuVectors& cpu) {
  std::string text = name + " (";
  text += coretype != nullptr ? "OPENBLAS_CORETYPE=" + std::string(coretype) : "OpenBLAS's own choice";
  bool wide = false;
  for (const char* avx512_kernels : {"SkylakeX", "Cooperlake", "SapphireRapids"}) wide = wide || name == avx512_kernels;
  // Only a DYNAMIC_ARCH build holds other kernels to choose from.
  if (cpu.avx512 && !wide && config.find("DYNAMIC_ARCH") != std::string::npos)
    text += coretype != nullptr ? "; this CPU also runs OpenBLAS's AVX-512 kernels, up to twice as fast: "
                                  "unset OPENBLAS_CORETYPE to let OpenBLAS choose, or set it to SkylakeX"
                                : "; this CPU also runs OpenBLAS's AVX-512 kernels: OPENBLAS_CORETYPE=SkylakeX";
  return text + ")";
}

std::string kernels_in_use() {
  return describe_kernels(openblas_get_corename(), openblas_get_config(), std::getenv("OPENBLAS_CORETYPE"),
                          cpu_vectors()) +
         ": " + openblas_get_config();
}

}  // namespace attend::blas
