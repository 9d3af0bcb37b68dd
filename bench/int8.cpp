// bench_int8: the int8 product (core/kernels/int8_gemm.hpp) beside the float
// packed product it replaces in decoding, one thread, at decoding's output
// projections: y = x @ W^T + bias, stored, and greedy decoding's form (the row
// summaries alone, store_y false). Every int8 path this CPU runs is timed (the
// first is the one gemm_packed takes), and the float kernel gemm_packed takes.
// GOP/s counts 2 m n k per product, int8 or float.
// Usage: bench_int8   (about 10 seconds)
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "bench/timing.hpp"
#include "core/kernels/detail/int8_gemm_detail.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/int8_gemm.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/random.hpp"

using namespace attend;
using blas::detail::Int8Kernel;

namespace {

struct Shape3 {
  std::int64_t m, n, k;
  const char* where;
};

// The median GOP/s of `product` over 5 runs of about 0.1 s each.
template <class F>
double rate(const Shape3& s, F&& product) {
  const double ops = 2.0 * static_cast<double>(s.m * s.n * s.k);
  const int reps = std::max(3, static_cast<int>(1e8 / ops));
  product();  // warm-up
  std::vector<double> runs;
  for (int round = 0; round < 5; ++round) {
    const double t0 = bench::now_ns();
    for (int r = 0; r < reps; ++r) product();
    runs.push_back(ops * reps / (bench::now_ns() - t0));
  }
  return bench::median(runs);
}

std::vector<float> random_values(std::int64_t n, Generator& gen) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(gen.uniform(-1, 1));
  return v;
}

}  // namespace

int main(int argc, char**) {
  if (argc > 1) {
    fmt::print(stderr, "usage: bench_int8   (no arguments)\n");
    return 2;
  }
  const std::vector<Shape3> shapes = {
      {64, 8000, 256, "M decoding: output projection"},
      {16, 1000, 64, "S decoding: output projection"},
  };
  std::vector<Int8Kernel> paths;
  std::string names;
  for (Int8Kernel path : {Int8Kernel::Vnni, Int8Kernel::Avx2, Int8Kernel::Portable})
    if (blas::detail::int8_kernel_runs(path)) {
      paths.push_back(path);
      names += fmt::format(" {:>14}", fmt::format("int8 {}", blas::detail::int8_kernel_name(path)));
    }
  const blas::detail::PackedKernel widest = blas::detail::packed_kernel();
  fmt::print("# y (m, n) = x (m, k) @ W^T + bias, 1 thread, GOP/s (median of 5 runs of ~0.1 s)\n");
  fmt::print("{:>5} {:>5} {:>5} {:>8}  {:>10}{}  {}\n", "m", "n", "k", "y", "float", names, "where attend runs it");
  Generator gen(1);
  for (const Shape3& s : shapes) {
    const std::vector<float> x = random_values(s.m * s.k, gen), w = random_values(s.n * s.k, gen),
                             bias = random_values(s.n, gen);
    std::vector<float> y(static_cast<std::size_t>(s.m * s.n));
    std::vector<blas::RowSummary> rows(static_cast<std::size_t>(s.m));
    const blas::PackedMatrix as_float(w.data(), s.n, s.k, s.k);
    const blas::QuantizedRows q = blas::quantize_rows(w.data(), s.n, s.k, s.k);
    const blas::PackedMatrix as_int8 = blas::PackedMatrix::from_int8(q.values.data(), q.scales.data(), s.n, s.k);
    for (bool store : {true, false}) {
      const blas::Epilogue epi{bias.data(), rows.data(), -1, store};
      std::string cells = fmt::format(" {:>10.1f}", rate(s, [&] {
        blas::detail::packed_product(s.m, x.data(), s.k, as_float, 0.0f, y.data(), s.n, widest, epi);
      }));
      for (Int8Kernel path : paths)
        cells += fmt::format(" {:>14.1f}", rate(s, [&] {
          blas::detail::int8_product(s.m, x.data(), s.k, as_int8, 0.0f, y.data(), s.n, path, epi);
        }));
      fmt::print("{:>5} {:>5} {:>5} {:>8} {}  {}\n", s.m, s.n, s.k, store ? "stored" : "summary", cells, s.where);
    }
  }
  return 0;
}
