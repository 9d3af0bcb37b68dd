#pragma once
// The oracle of a row's summary (blas::RowSummary, core/kernels/packed_gemm.hpp)
// and its comparison, shared by the float and the int8 kernels' epilogue tests.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/kernels/packed_gemm.hpp"

namespace attend::testing {

// The summary of one row z (n), by one pass each.
inline blas::RowSummary summary_of(const float* z, std::int64_t n, std::int64_t skip) {
  blas::RowSummary s;
  for (std::int64_t j = 0; j < n; ++j)
    if (z[j] > s.max) s.max = z[j];  // NaN passed over
  for (std::int64_t j = 0; j < n; ++j)
    s.exp_sum += std::exp(static_cast<double>(z[j]) - static_cast<double>(s.max));
  for (std::int64_t j = 0; j < n; ++j)
    if (j != skip && z[j] > s.best_value) {
      s.best_value = z[j];
      s.best = j;
    }
  return s;
}

// A kernel's summary of a row against the oracle's summary of the row the
// kernel wrote: the same maximum and best column exactly, the sum to float's precision.
inline void check_summary(const blas::RowSummary& got, const blas::RowSummary& want) {
  CHECK(got.max == want.max);
  CHECK(got.best == want.best);
  CHECK(got.best_value == want.best_value);
  if (want.max == -std::numeric_limits<float>::infinity()) return;  // the sum means nothing (RowSummary)
  if (std::isnan(want.exp_sum)) {
    CHECK(std::isnan(got.exp_sum));
  } else {
    CHECK(got.exp_sum == doctest::Approx(want.exp_sum).epsilon(1e-5));
  }
}

}  // namespace attend::testing
