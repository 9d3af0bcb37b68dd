#include "core/kernels/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <tuple>

#include "core/error.hpp"
#include "core/kernels/detail/int8_gemm_detail.hpp"
#include "core/kernels/detail/openblas_calls.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/packed_gemm.hpp"

namespace attend::blas {
namespace {
CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// OpenBLAS built with pthreads (Debian's default) and set to one thread runs a
// product on the caller's thread, and products from several threads run at once.
// On more threads it hands the product to its thread pool, which is not made for
// several callers at once, nor for its size changing under a running product
// (OpenBLAS's FAQ: a program that calls it from several threads should give it
// one); a sequential build is reentrant only if built with USE_LOCKING, which it
// does not tell. So every OpenBLAS call holds this lock: shared in the first case,
// exclusive otherwise, and set_num_threads takes it exclusively. attend
// experiment trains three models on three threads at once
// (tests/core/kernels/test_blas_threads.cpp).
std::shared_mutex openblas_mutex;

// The calls inside OpenBLAS now, and the most there were at once while it had
// more than one thread (detail/openblas_calls.hpp): what the lock is for, made
// visible to a test, as no tool sees inside OpenBLAS.
std::atomic<int> calls_inside{0};
std::atomic<int> most_calls_threaded{0};

bool one_thread_on_caller() { return openblas_get_parallel() == 1 && openblas_get_num_threads() == 1; }  // 1: pthreads

template <class F>
void counted(F&& call) {
  const int inside = calls_inside.fetch_add(1) + 1;
  if (!one_thread_on_caller()) {
    int most = most_calls_threaded.load();
    while (inside > most && !most_calls_threaded.compare_exchange_weak(most, inside)) {
    }
  }
  call();
  calls_inside.fetch_sub(1);
}

template <class F>
void call_openblas(F&& call) {
  {
    const std::shared_lock shared(openblas_mutex);
    if (one_thread_on_caller()) return counted(call);
  }
  const std::unique_lock exclusive(openblas_mutex);
  counted(call);
}

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

namespace {
std::atomic<bool> packed_routing{true};

bool avx512_kernels(const std::string& openblas_name) {
  for (const char* name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (openblas_name == name) return true;
  return false;
}

// Whether a float32 product goes to the packed kernel. It does where that kernel
// is AVX-512 and OpenBLAS's kernels are not: its vectors are then twice as wide,
// which pays for packing op(B) at every call (bench_packed times both), as
// OpenBLAS packs too. OpenBLAS's own AVX-512 kernels are as fast. With AVX2 on both sides
// the two run level on large products, but on the small ones the packed kernel
// wins (bench_packed times both at these shapes), so there it takes those of
// at most kAvx2SmallUpTo multiply-adds, when op(A) is A itself (A^T read down
// its columns or transposed first loses to OpenBLAS at AVX2 width). OpenBLAS
// also splits a product over threads, which the packed kernel does not, so with
// more than one thread OpenBLAS keeps the products it would split: those of more
// than kOpenBlasOneThreadUpTo multiply-adds. OpenBLAS (0.3.21) runs the smaller
// ones on one thread whatever its thread count: its threading starts above 64^3.
// The AVX-512 kernel on one thread still beats OpenBLAS's (non-AVX-512) kernels on
// two up to kAvx512OverThreadsUpTo multiply-adds, which covers every product of
// config S (the largest, 320 x 1000 x 64, is 2^24.3); above it, packing a large W
// (8 MB at M decoding) at every call costs more than the second thread gains, so
// M's large products stay on OpenBLAS. `attend bench --threads 2 --gemm-shapes N`
// at configs S and M shows which code runs each shape and at what rate; the
// results file of commit 7366ee1 in bench/results/ keeps the runs that set the cut.
constexpr double kOpenBlasOneThreadUpTo = 64.0 * 64.0 * 64.0;
constexpr double kAvx512OverThreadsUpTo = 32.0 * 1024.0 * 1024.0;  // 2^25: 320 x 1000 x 64 is 2^24.3
constexpr double kAvx2SmallUpTo = 64.0 * 256.0 * 512.0;  // M decoding's combine layer

enum class Routing { None, Avx512, Avx2Small };

Routing routing() {
  static const Routing r = [] {
    if (avx512_kernels(openblas_get_corename())) return Routing::None;
    switch (detail::packed_kernel()) {
      case detail::PackedKernel::Avx512: return Routing::Avx512;
      case detail::PackedKernel::Avx2: return Routing::Avx2Small;
      default: return Routing::None;
    }
  }();
  return r;
}

bool route_to_packed(float alpha, bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k) {
  const Routing r = routing();
  if (r == Routing::None || alpha != 1.0f || !packed_routing.load(std::memory_order_relaxed)) return false;
  const double mnk = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (r == Routing::Avx2Small && (trans_a || mnk > kAvx2SmallUpTo)) return false;
  if (mnk <= kOpenBlasOneThreadUpTo || num_threads() == 1) return true;
  return r == Routing::Avx512 && mnk <= kAvx512OverThreadsUpTo;
}
}  // namespace

bool set_packed_routing(bool on) { return packed_routing.exchange(on); }
bool packed_routing_active() { return route_to_packed(1.0f, false, 1 << 20, 1 << 20, 1 << 20); }
bool packed_routing_small() { return route_to_packed(1.0f, false, 32, 32, 32); }

std::string float_products() {
  if (!packed_routing.load()) return "OpenBLAS (set so), and attend's packed kernel for the weights it packs";
  switch (routing()) {
    case Routing::Avx512:
      return "attend's packed AVX-512 kernel (core/kernels/packed_gemm.hpp); with more than one OpenBLAS thread, "
             "those over 2^25 multiply-adds on OpenBLAS";
    case Routing::Avx2Small:
      return "OpenBLAS, and attend's packed AVX2 kernel (core/kernels/packed_gemm.hpp) for the weights it packs and for "
             "products of op(A) = A of at most 64 x 256 x 512 multiply-adds (64^3 with more than one OpenBLAS thread)";
    case Routing::None: break;
  }
  return detail::packed_kernel() == detail::PackedKernel::Avx512
             ? "OpenBLAS (its AVX-512 kernels), and attend's packed kernel for the weights it packs"
             : "OpenBLAS, and attend's packed kernel for the weights it packs";
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  if (route_to_packed(alpha, trans_a, m, n, k))
    return timed(
        trans_a, trans_b, m, n, k,
        [&] {
          detail::gemm_by_packing(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc, detail::packed_kernel());
        },
        true);
  timed(trans_a, trans_b, m, n, k, [&] {
    call_openblas([&] {
      cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
                  static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta,
                  c, static_cast<blasint>(ldc));
    });
  });
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
          std::int64_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  timed(trans_a, trans_b, m, n, k, [&] {
    call_openblas([&] {
      cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
                  static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta,
                  c, static_cast<blasint>(ldc));
    });
  });
}

void gemm_packed(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                 std::int64_t ldy, const Epilogue& epilogue) {
  if (m < 0) fail("gemm_packed: {} rows of x", m);
  if (ldx < w.k()) fail("gemm_packed: the row stride {} of x is below W's {} columns", ldx, w.k());
  if (ldy < w.n()) fail("gemm_packed: the row stride {} of y is below W's {} rows", ldy, w.n());
  detail::check_epilogue(beta, epilogue);
  if (m == 0 || w.n() == 0) {
    if (epilogue.rows != nullptr) std::fill_n(epilogue.rows, m, RowSummary{});
    return;
  }
  timed(false, true, m, w.n(), w.k(), [&] {
    if (w.int8()) return detail::int8_product(m, x, ldx, w, beta, y, ldy, detail::int8_kernel(), epilogue);
    detail::packed_product(m, x, ldx, w, beta, y, ldy, detail::packed_kernel(), epilogue);
  }, true);
}

void summarise_rows(std::int64_t m, const float* x, std::int64_t ldx, const float* w, std::int64_t n, std::int64_t k,
                    std::int64_t ldw, const float* bias, std::int64_t skip, RowSummary* rows, SummaryParts parts) {
  timed(false, true, m, n, k, [&] {
    detail::summarise_rows(m, x, ldx, w, n, k, ldw, bias, skip, rows, detail::packed_kernel(), parts);
  }, true);
}

void set_num_threads(int n) {
  if (n < 1) fail("blas::set_num_threads: need at least one thread, got {}", n);
  const std::unique_lock exclusive(openblas_mutex);
  openblas_set_num_threads(n);
}

int num_threads() { return openblas_get_num_threads(); }

int detail::most_openblas_calls_at_once() { return most_calls_threaded.load(); }
void detail::reset_openblas_calls_at_once() { most_calls_threaded = 0; }

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
  const bool wide = avx512_kernels(name);
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
