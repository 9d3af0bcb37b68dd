#pragma once
// Timing helpers shared by the benchmarks: a wall clock and the median, which
// ignores the odd slow run (another process, a page fault) that a mean would not.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "core/blas.hpp"

namespace attend::bench {

inline double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "# OpenBLAS kernels Cooperlake (why)": which kernels the products ran on.
inline void print_kernels() {
  fmt::print("# OpenBLAS kernels {}\n# float32 products run on {}\n", blas::kernels_in_use(), blas::float_products());
}

}  // namespace attend::bench
