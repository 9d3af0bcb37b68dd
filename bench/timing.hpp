#pragma once
// Timing helpers shared by the benchmarks: a wall clock and the median, which
// ignores the odd slow run (another process, a page fault) that a mean would not.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/kernels/blas.hpp"

namespace attend::bench {

inline double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A whole-number argument in [lo, hi], or nullopt (the caller prints its usage):
// "abc", "3x", "" and out-of-range values are refused, not read as 0.
inline std::optional<int> parse_count(const char* text, int lo, int hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < lo || value > hi) return std::nullopt;
  return static_cast<int>(value);
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
