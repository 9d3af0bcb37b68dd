// The int8 weight: blas::quantize_rows, and PackedMatrix::from_int8, which
// packs q into the int8 kernels' panels (layout: core/kernels/int8_gemm.hpp).
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/kernels/detail/int8_gemm_detail.hpp"
#include "core/kernels/int8_gemm.hpp"

namespace attend::blas {

namespace detail {

// round(v / scale) in [-127, 127]; scale > 0. Ties to even, as the hardware
// rounds by default: std::nearbyint in the default rounding mode.
std::int8_t quantize_value(float v, float scale) {
  const float q = std::nearbyint(v / scale);
  return static_cast<std::int8_t>(std::clamp(q, -127.0f, 127.0f));
}

// max_k |v_k| / 127, or 0 where that rounds to 0 (a row of zeros, or of values
// so small that the row is kept as zeros). Finite values only.
float row_scale(const float* v, std::int64_t k) {
  float amax = 0.0f;
  for (std::int64_t kk = 0; kk < k; ++kk) amax = std::max(amax, std::fabs(v[kk]));
  return amax / 127.0f;
}

}  // namespace detail

QuantizedRows quantize_rows(const float* w, std::int64_t n, std::int64_t k, std::int64_t ldw) {
  if (n < 0 || k < 0) fail("quantize_rows: sizes must be >= 0, got W ({}, {})", n, k);
  if (ldw < k) fail("quantize_rows: the row stride {} of W ({}, {}) is below its {} columns", ldw, n, k, k);
  if (w == nullptr && n > 0 && k > 0) fail("quantize_rows: W ({}, {}) is null", n, k);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t kk = 0; kk < k; ++kk)
      if (!std::isfinite(w[r * ldw + kk]))
        fail("quantize_rows: W[{}, {}] is {}: only finite weights quantize", r, kk, w[r * ldw + kk]);
  QuantizedRows out{n, k, std::vector<std::int8_t>(static_cast<std::size_t>(n * k), 0),
                    std::vector<float>(static_cast<std::size_t>(n), 0.0f)};
  for (std::int64_t r = 0; r < n; ++r) {
    const float* row = w + r * ldw;
    const float scale = detail::row_scale(row, k);
    out.scales[static_cast<std::size_t>(r)] = scale;
    if (scale == 0.0f) continue;  // values 0
    for (std::int64_t kk = 0; kk < k; ++kk)
      out.values[static_cast<std::size_t>(r * k + kk)] = detail::quantize_value(row[kk], scale);
  }
  return out;
}

PackedMatrix PackedMatrix::from_int8(const std::int8_t* q, const float* scales, std::int64_t n, std::int64_t k) {
  if (n < 0 || k < 0) fail("PackedMatrix::from_int8: sizes must be >= 0, got W ({}, {})", n, k);
  if (k > kInt8MaxK)
    fail("PackedMatrix::from_int8: W ({}, {}) has more than {} columns: the int8 kernel's int32 sums could overflow",
         n, k, kInt8MaxK);
  if (n > 0 && scales == nullptr) fail("PackedMatrix::from_int8: the scales of W ({}, {}) are null", n, k);
  if (n > 0 && k > 0 && q == nullptr) fail("PackedMatrix::from_int8: the values of W ({}, {}) are null", n, k);
  for (std::int64_t r = 0; r < n; ++r)
    if (!std::isfinite(scales[r]) || scales[r] < 0.0f)
      fail("PackedMatrix::from_int8: the scale of row {} is {}: scales must be finite and >= 0", r, scales[r]);
  for (std::int64_t i = 0; i < n * k; ++i)
    if (q[i] == -128) fail("PackedMatrix::from_int8: W[{}, {}] is -128: values must be in [-127, 127]", i / k, i % k);
  constexpr std::int64_t P = kPanel;
  auto panels = std::make_shared<Int8Panels>();
  const std::int64_t count = (n + P - 1) / P;
  panels->k4 = (k + 3) / 4 * 4;
  panels->values.assign(static_cast<std::size_t>(count * P * panels->k4), 0);
  panels->scales.assign(static_cast<std::size_t>(count * P), 0.0f);
  panels->row_sums.assign(static_cast<std::size_t>(count * P), 0);
  for (std::int64_t r = 0; r < n; ++r) {
    // row r is row j of panel p; its k-th value at group k / 4, byte 4 j + k % 4
    std::int8_t* panel = panels->values.data() + r / P * P * panels->k4;
    const std::int64_t j = r % P;
    std::int32_t sum = 0;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      panel[kk / 4 * 4 * P + 4 * j + kk % 4] = q[r * k + kk];
      sum += q[r * k + kk];
    }
    panels->scales[static_cast<std::size_t>(r)] = scales[r];
    panels->row_sums[static_cast<std::size_t>(r)] = sum;
  }
  PackedMatrix m;
  m.n_ = n;
  m.k_ = k;
  m.int8_ = std::move(panels);
  return m;
}

const Int8Panels& PackedMatrix::int8_panels() const {
  if (int8_ == nullptr) fail("PackedMatrix: W ({}, {}) is float, not int8", n_, k_);
  return *int8_;
}

void PackedMatrix::float_panel_of_int8() {
  fail("PackedMatrix: an int8 W has no float panels (gemm_packed runs the int8 kernel for it)");
}

}  // namespace attend::blas
