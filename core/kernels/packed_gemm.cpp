// The packed product: y = x @ W^T + beta * y, W packed in panels of 16 columns.
// The kernels are in core/kernels/detail/packed_kernel.hpp and core/kernels/packed_gemm_avx*.cpp; here
// is what runs around them: the rows' summaries folded, and the choice of kernel.
// Also the row summaries without y (summarise_rows, core/kernels/detail/summary_kernel.hpp).
#include "core/kernels/packed_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/detail/packed_kernel.hpp"
#include "core/kernels/detail/summary_kernel.hpp"

namespace attend::blas {

namespace kernels {

void run_baseline(bool xt, std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta,
                  float* y, std::int64_t ldy, const Lanes& epi) {
  run_kernel<V4, 2, 2, 1>(xt, M, x, ldx, w, beta, y, ldy, epi);
}

void summarise_baseline(std::int64_t N, const float* w, std::int64_t ldw, const PackedMatrix& xp, const float* bias,
                        std::int64_t skip, bool sums, ColumnLanes* lanes) {
  run_summary<V4, 2, 1, 2>(N, w, ldw, xp, bias, skip, sums, lanes);
}

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

}  // namespace kernels

namespace {

using kernels::fold;
using kernels::LaneSummary;
using kernels::Lanes;

// Lane l of a panel's column lanes as its row's summary: as fold() with one lane.
RowSummary fold_lane(const kernels::ColumnLanes& lanes, std::int64_t l) {
  RowSummary out;
  out.max = lanes.max[l];
  const double sum = lanes.exp_sum[l] + static_cast<double>(lanes.partial[l]);
  if (lanes.ref[l] > std::numeric_limits<float>::lowest())
    out.exp_sum = sum * std::exp(static_cast<double>(lanes.ref[l]) - static_cast<double>(out.max));
  else if (std::isnan(sum))
    out.exp_sum = std::numeric_limits<double>::quiet_NaN();
  if (lanes.best[l] >= 0) {
    out.best_value = lanes.best_value[l];
    out.best = lanes.best[l];
  }
  return out;
}

void run(detail::PackedKernel kernel, bool xt, std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w,
         float beta, float* y, std::int64_t ldy, const Epilogue& epi) {
  detail::check_epilogue(beta, epi);
  if (epi.rows != nullptr) std::fill_n(epi.rows, m, RowSummary{});
  if (w.int8()) fail("gemm_packed: W is int8: the float kernels take a float W (detail::int8_product runs an int8 one)");
  if (m == 0 || w.n() == 0) return;
  if (!detail::packed_kernel_runs(kernel)) fail("gemm_packed: this CPU cannot run the kernel asked for");
  if (epi.rows != nullptr && w.n() > std::numeric_limits<std::int32_t>::max())
    fail("gemm_packed: row summaries take at most 2^31 - 1 columns, got {}", w.n());
  // The rows' lanes, in a buffer each thread keeps: no fresh pages per call.
  thread_local std::vector<LaneSummary> lanes;
  if (epi.rows != nullptr) lanes.assign(static_cast<std::size_t>(m), kernels::empty_lanes());
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

void summarise_rows(std::int64_t m, const float* x, std::int64_t ldx, const float* w, std::int64_t n, std::int64_t k,
                    std::int64_t ldw, const float* bias, std::int64_t skip, RowSummary* rows, PackedKernel kernel,
                    SummaryParts parts) {
  if (m < 0 || n < 0 || k < 0) fail("summarise_rows: sizes must be >= 0, got m {} n {} k {}", m, n, k);
  if (ldx < k) fail("summarise_rows: the row stride {} of x is below its {} columns", ldx, k);
  if (ldw < k) fail("summarise_rows: the row stride {} of W is below its {} columns", ldw, k);
  if (n > std::numeric_limits<std::int32_t>::max())
    fail("summarise_rows: row summaries take at most 2^31 - 1 columns, got {}", n);
  if (m > 0 && rows == nullptr) fail("summarise_rows: no summaries to write {} rows into", m);
  const bool sums = parts == SummaryParts::All;
  RowSummary empty;
  if (!sums) empty.exp_sum = std::numeric_limits<double>::quiet_NaN();
  std::fill_n(rows, m, empty);
  if (m == 0 || n == 0) return;
  if (!packed_kernel_runs(kernel)) fail("summarise_rows: this CPU cannot run the kernel asked for");
  const PackedMatrix xp(x, m, k, ldx);  // x as the kernel's panels: 16 rows of y per panel
  // The panels' lanes, in a buffer each thread keeps: no fresh pages per call.
  thread_local std::vector<kernels::ColumnLanes> lanes;
  const std::int64_t panels = (m + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel;
  lanes.assign(static_cast<std::size_t>(panels), kernels::empty_column_lanes());
  [&] {
#if defined(ATTEND_PACKED_WIDE)
    if (kernel == PackedKernel::Avx512) return kernels::summarise_avx512(n, w, ldw, xp, bias, skip, sums, lanes.data());
    if (kernel == PackedKernel::Avx2) return kernels::summarise_avx2(n, w, ldw, xp, bias, skip, sums, lanes.data());
#endif
    kernels::summarise_baseline(n, w, ldw, xp, bias, skip, sums, lanes.data());
  }();
  for (std::int64_t i = 0; i < m; ++i) {
    rows[i] = fold_lane(lanes[static_cast<std::size_t>(i / PackedMatrix::kPanel)], i % PackedMatrix::kPanel);
    if (!sums) rows[i].exp_sum = empty.exp_sum;  // NaN: not asked for
  }
}

}  // namespace detail

}  // namespace attend::blas

