// The packed product: y = x @ W^T + beta * y, W packed in panels of 16 columns.
// The kernels are in core/packed_kernel.hpp and core/packed_gemm_avx*.cpp; here
// is what runs around them: the rows' summaries folded, and the choice of kernel.
#include "core/packed_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/packed_kernel.hpp"

namespace attend::blas {

namespace kernels {

void run_baseline(bool xt, std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta,
                  float* y, std::int64_t ldy, const Lanes& epi) {
  run_kernel<V4, 2, 2, 1>(xt, M, x, ldx, w, beta, y, ldy, epi);
}

}  // namespace kernels

namespace {

using kernels::LaneSummary;
using kernels::Lanes;

LaneSummary empty_lanes() {
  LaneSummary s;
  std::fill_n(s.max, PackedMatrix::kPanel, -std::numeric_limits<float>::infinity());
  // Not -inf: e^(z - r) of a z of -inf is then ~0, not NaN (-inf - -inf).
  std::fill_n(s.ref, PackedMatrix::kPanel, std::numeric_limits<float>::lowest());
  std::fill_n(s.exp_sum, PackedMatrix::kPanel, 0.0f);
  std::fill_n(s.best_value, PackedMatrix::kPanel, -std::numeric_limits<float>::infinity());
  std::fill_n(s.best, PackedMatrix::kPanel, -1);
  return s;
}

// The lanes into one summary: M = max_j m_j, sum = sum_j s_j e^(r_j - M) (lanes
// whose r never moved, having seen no value above -inf, add nothing but NaN), and
// the best the first column among the lanes' best of the largest value.
RowSummary fold(const LaneSummary& lanes) {
  RowSummary out;
  for (std::int64_t j = 0; j < PackedMatrix::kPanel; ++j)
    if (lanes.max[j] > out.max) out.max = lanes.max[j];
  for (std::int64_t j = 0; j < PackedMatrix::kPanel; ++j)
    if (lanes.ref[j] > std::numeric_limits<float>::lowest())
      out.exp_sum += static_cast<double>(lanes.exp_sum[j]) *
                     std::exp(static_cast<double>(lanes.ref[j]) - static_cast<double>(out.max));
    else if (std::isnan(lanes.exp_sum[j]))
      out.exp_sum = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t j = 0; j < PackedMatrix::kPanel; ++j) {
    if (lanes.best[j] < 0) continue;
    if (lanes.best_value[j] > out.best_value || (lanes.best_value[j] == out.best_value && lanes.best[j] < out.best)) {
      out.best_value = lanes.best_value[j];
      out.best = lanes.best[j];
    }
  }
  return out;
}

void run(detail::PackedKernel kernel, bool xt, std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w,
         float beta, float* y, std::int64_t ldy, const Epilogue& epi) {
  detail::check_epilogue(beta, epi);
  if (epi.rows != nullptr) std::fill_n(epi.rows, m, RowSummary{});
  if (m == 0 || w.n() == 0) return;
  if (!detail::packed_kernel_runs(kernel)) fail("gemm_packed: this CPU cannot run the kernel asked for");
  if (epi.rows != nullptr && w.n() > std::numeric_limits<std::int32_t>::max())
    fail("gemm_packed: row summaries take at most 2^31 - 1 columns, got {}", w.n());
  // The rows' lanes, in a buffer each thread keeps: no fresh pages per call.
  thread_local std::vector<LaneSummary> lanes;
  if (epi.rows != nullptr) lanes.assign(static_cast<std::size_t>(m), empty_lanes());
  const Lanes kernel_epi{epi.bias, epi.rows == nullptr ? nullptr : lanes.data(), epi.skip, epi.store_y};
  [&] {
#if defined(ATTEND_PACKED_WIDE)
    if (kernel == detail::PackedKernel::Avx512) return kernels::run_avx512(xt, m, x, ldx, w, beta, y, ldy, kernel_epi);
    if (kernel == detail::PackedKernel::Avx2) return kernels::run_avx2(xt, m, x, ldx, w, beta, y, ldy, kernel_epi);
#endif
    kernels::run_baseline(xt, m, x, ldx, w, beta, y, ldy, kernel_epi);
  }();
  if (epi.rows != nullptr)
    for (std::int64_t i = 0; i < m; ++i) epi.rows[i] = fold(lanes[static_cast<std::size_t>(i)]);
}

}  // namespace

namespace detail {

void check_epilogue(float beta, const Epilogue& epi) {
  if (!epi.store_y && (epi.rows == nullptr || beta != 0.0f))
    fail("gemm_packed: without storing y the product needs row summaries and beta 0 (got beta {}{})", beta,
         epi.rows == nullptr ? ", no summaries" : "");
}

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
                    std::int64_t ldy, PackedKernel kernel, const Epilogue& epilogue) {
  run(kernel, false, m, x, ldx, w, beta, y, ldy, epilogue);
}

void packed_product_xt(std::int64_t m, const float* xt, std::int64_t ldxt, const PackedMatrix& w, float beta,
                       float* y, std::int64_t ldy, PackedKernel kernel, const Epilogue& epilogue) {
  run(kernel, true, m, xt, ldxt, w, beta, y, ldy, epilogue);
}

}  // namespace detail

}  // namespace attend::blas

