// The int8 product (core/kernels/int8_gemm.hpp): x quantized per row, the
// path's choice, the rows' summaries folded; and the portable path. The VNNI
// and AVX2 paths are in int8_gemm_vnni.cpp and int8_gemm_avx2.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/kernels/detail/int8_kernel.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/int8_gemm.hpp"

namespace attend::blas {

namespace kernels {

namespace {

// The portable path: plain loops over a block's rows and the 16 rows of each
// panel, k in the panel's groups of 4.
struct PortableDots {
  template <int R, int P>
  static void dots(const std::uint8_t* u, const Int8Panels& w, std::int64_t p0, Dots<R, P>& dot) {
    constexpr std::int64_t kPanel = PackedMatrix::kPanel;
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) {
        std::int32_t* acc = dot[r] + p * kPanel;
        std::fill_n(acc, kPanel, 0);
        const std::int8_t* panel = w.panel(p0 + p);
        const std::uint8_t* u_r = u + r * w.k4;
        for (std::int64_t g = 0; g < w.k4 / 4; ++g) {
          const std::int32_t u0 = u_r[4 * g], u1 = u_r[4 * g + 1], u2 = u_r[4 * g + 2], u3 = u_r[4 * g + 3];
          const std::int8_t* q = panel + g * 4 * kPanel;  // row j's 4 values at 4j
          for (std::int64_t j = 0; j < kPanel; ++j)
            acc[j] += u0 * q[4 * j] + u1 * q[4 * j + 1] + u2 * q[4 * j + 2] + u3 * q[4 * j + 3];
        }
      }
  }
};

}  // namespace

void int8_portable(std::int64_t M, const std::uint8_t* u, const float* s, const Int8Panels& w, std::int64_t N,
                   float beta, float* y, std::int64_t ldy, const Lanes& epi) {
  int8_run<PortableDots, V4, 2, 1>(M, u, s, w, N, beta, y, ldy, epi);
}

}  // namespace kernels

namespace detail {

namespace {

// x (m, K) as u = round(x / s_i) + 128, rows k4 apart (128 past K: q is 0
// there), and s (m); a row with NaN or inf gets s_i NaN and u 128. In buffers
// each thread keeps: no fresh pages per call.
struct QuantizedX {
  const std::uint8_t* u;
  const float* s;
};

QuantizedX quantize_x(std::int64_t m, const float* x, std::int64_t ldx, std::int64_t k, std::int64_t k4,
                      Int8Kernel kernel) {
  thread_local std::vector<std::uint8_t> u;
  thread_local std::vector<float> s;
  u.resize(static_cast<std::size_t>(m * k4));
  s.resize(static_cast<std::size_t>(m));
  quantize_rows_of_x(m, x, ldx, k, k4, kernel, u.data(), s.data());
  return {u.data(), s.data()};
}

}  // namespace

bool int8_kernel_runs(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::Portable: return true;
#if defined(ATTEND_PACKED_WIDE)
    case Int8Kernel::Avx2: {
      static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
      return yes;
    }
    case Int8Kernel::Vnni: {
      static const bool yes = packed_kernel_runs(PackedKernel::Avx512) && __builtin_cpu_supports("avx512vnni");
      return yes;
    }
#endif
    default: return false;
  }
}

Int8Kernel int8_kernel() {
  for (Int8Kernel kernel : {Int8Kernel::Vnni, Int8Kernel::Avx2})
    if (int8_kernel_runs(kernel)) return kernel;
  return Int8Kernel::Portable;
}

const char* int8_kernel_name(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::Vnni: return "AVX-512 VNNI";
    case Int8Kernel::Avx2: return "AVX2";
    default: return "portable";
  }
}

void int8_product(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                  std::int64_t ldy, Int8Kernel kernel, const Epilogue& epi) {
  if (!w.int8()) fail("int8_product: W ({}, {}) is float, not int8", w.n(), w.k());
  if (m < 0) fail("gemm_packed: {} rows of x", m);
  if (ldx < w.k()) fail("gemm_packed: the row stride {} of x is below W's {} columns", ldx, w.k());
  if (ldy < w.n()) fail("gemm_packed: the row stride {} of y is below W's {} rows", ldy, w.n());
  check_epilogue(beta, epi);
  if (epi.rows != nullptr) std::fill_n(epi.rows, m, RowSummary{});
  if (m == 0 || w.n() == 0) return;
  if (!int8_kernel_runs(kernel)) fail("gemm_packed: this CPU cannot run the int8 path {}", int8_kernel_name(kernel));
  if (epi.rows != nullptr && w.n() > std::numeric_limits<std::int32_t>::max())
    fail("gemm_packed: row summaries take at most 2^31 - 1 columns, got {}", w.n());
  const Int8Panels& panels = w.int8_panels();
  const QuantizedX q = quantize_x(m, x, ldx, w.k(), panels.k4, kernel);
  thread_local std::vector<kernels::LaneSummary> lanes;
  if (epi.rows != nullptr) lanes.assign(static_cast<std::size_t>(m), kernels::empty_lanes());
  const kernels::Lanes kernel_epi{epi.bias, epi.rows == nullptr ? nullptr : lanes.data(), epi.skip, epi.store_y};
  [&] {
#if defined(ATTEND_PACKED_WIDE)
    if (kernel == Int8Kernel::Vnni) return kernels::int8_vnni(m, q.u, q.s, panels, w.n(), beta, y, ldy, kernel_epi);
    if (kernel == Int8Kernel::Avx2) return kernels::int8_avx2(m, q.u, q.s, panels, w.n(), beta, y, ldy, kernel_epi);
#endif
    kernels::int8_portable(m, q.u, q.s, panels, w.n(), beta, y, ldy, kernel_epi);
  }();
  if (epi.rows != nullptr)
    for (std::int64_t i = 0; i < m; ++i) epi.rows[i] = kernels::fold(lanes[static_cast<std::size_t>(i)]);
}

}  // namespace detail

}  // namespace attend::blas
