// bench_packed: y = x @ W^T on attend's packed kernel (core/kernels/packed_gemm.hpp)
// against OpenBLAS doing the same product, at the shapes attend runs it at, one
// thread. OpenBLAS is timed both ways decoding could call it: with W as it is
// (transposed operand) and with a transposed copy of W made beforehand (plain
// operand, as the float64 path does). Every packed kernel this CPU runs is
// timed, the widest of which is the one attend uses.
//
// Then the products blas::gemm hands to the packed kernel (blas.hpp), which
// packs op(B) at every call, and transposes A first for op(A) = A^T: C = A @ B^T
// (NT), A @ B (NN) and A^T @ B (TN), against OpenBLAS doing the same.
//
// Usage: bench_packed   (about 40 seconds)
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "bench/timing.hpp"
#include "core/kernels/blas.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/packed_gemm.hpp"

using namespace attend;
using blas::detail::PackedKernel;

namespace {

struct Shape3 {
  std::int64_t m, n, k;
  const char* where;
};

// The median GFLOP/s of `product` over runs of about 0.1 s each.
template <class F>
double rate(const Shape3& s, F&& product) {
  const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
  const int reps = std::max(3, static_cast<int>(1e8 / flops));
  product();  // warm-up
  std::vector<double> runs;
  for (int round = 0; round < 7; ++round) {
    const double t0 = bench::now_ns();
    for (int r = 0; r < reps; ++r) product();
    runs.push_back(flops * reps / (bench::now_ns() - t0));  // flops per ns = GFLOP/s
  }
  return bench::median(runs);
}

// C (m, n) = op(A) @ op(B) for the three kinds of product, each by OpenBLAS and
// by packing at the call (detail::gemm_by_packing, the widest kernel).
void repacked(const std::vector<Shape3>& shapes) {
  fmt::print("\n# C (m, n) = op(A) @ op(B), float32, 1 thread, GFLOP/s: OpenBLAS, and the packed kernel\n"
             "# packing op(B) (and transposing A for TN) at every call\n");
  fmt::print("{:>5} {:>5} {:>5}  {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  {}\n", "m", "n", "k", "OpenBLAS NT",
             "packed NT", "OpenBLAS NN", "packed NN", "OpenBLAS TN", "packed TN", "where attend runs it");
  const blas::detail::PackedKernel widest = blas::detail::packed_kernel();
  for (const Shape3& s : shapes) {
    // A is (m, k), or (k, m) for TN; B is (n, k) for NT, (k, n) otherwise.
    std::vector<float> a(static_cast<std::size_t>(s.m * s.k), 0.5f), b(static_cast<std::size_t>(s.n * s.k), 0.25f),
        c(static_cast<std::size_t>(s.m * s.n));
    std::string cells;
    for (const auto& [ta, tb] : {std::pair{false, true}, std::pair{false, false}, std::pair{true, false}}) {
      const std::int64_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
      const double openblas = rate(s, [&] {
        blas::gemm(ta, tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
      });
      const double packed = rate(s, [&] {
        blas::detail::gemm_by_packing(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n,
                                      widest);
      });
      cells += fmt::format(" {:>11.1f} {:>11.1f}", openblas, packed);
    }
    fmt::print("{:>5} {:>5} {:>5} {}  {}\n", s.m, s.n, s.k, cells, s.where);
  }
}

}  // namespace

int main() {
  bench::print_kernels();
  blas::set_num_threads(1);
  blas::set_packed_routing(false);  // "OpenBLAS" below is OpenBLAS
  const std::vector<Shape3> shapes = {
      {16, 1000, 64, "S decoding: output projection"},  {80, 1000, 64, "S beam K=5: output projection"},
      {64, 8000, 256, "M decoding: output projection"}, {16, 256, 96, "S decoder cell: x @ W_ih^T"},
      {64, 1024, 256, "M LSTM step: h @ W_hh^T"},        {1920, 1024, 128, "LSTM layer: x @ W_ih^T, all steps"},
      {1024, 256, 1920, "LSTM layer: dW_hh = da^T @ h"},
  };
  std::vector<PackedKernel> kernels;
  std::string names;
  for (const auto& [kernel, name] : {std::pair{PackedKernel::Avx512, "AVX-512"}, std::pair{PackedKernel::Avx2, "AVX2"},
                                     std::pair{PackedKernel::Baseline, "baseline"}})
    if (blas::detail::packed_kernel_runs(kernel)) {
      kernels.push_back(kernel);
      names += fmt::format("  {:>9}", name);
    }
  fmt::print("# y (m, n) = x (m, k) @ W^T, float32, 1 thread, GFLOP/s (median of 7 runs of ~0.1 s)\n");
  fmt::print("{:>5} {:>5} {:>5}  {:>11} {:>11} {}  {}\n", "m", "n", "k", "OpenBLAS NT", "OpenBLAS NN", names,
             "where attend runs it");
  for (const Shape3& s : shapes) {
    std::vector<float> x(static_cast<std::size_t>(s.m * s.k), 0.5f), w(static_cast<std::size_t>(s.n * s.k), 0.25f),
        w_t(w.size(), 0.25f), y(static_cast<std::size_t>(s.m * s.n));
    const blas::PackedMatrix packed(w.data(), s.n, s.k, s.k);
    const double nt = rate(s, [&] {
      blas::gemm(false, true, s.m, s.n, s.k, 1.0f, x.data(), s.k, w.data(), s.k, 0.0f, y.data(), s.n);
    });
    const double nn = rate(s, [&] {
      blas::gemm(false, false, s.m, s.n, s.k, 1.0f, x.data(), s.k, w_t.data(), s.n, 0.0f, y.data(), s.n);
    });
    std::string packed_rates;
    for (PackedKernel kernel : kernels)
      packed_rates += fmt::format("  {:>9.1f}", rate(s, [&] {
                                    blas::detail::packed_product(s.m, x.data(), s.k, packed, 0.0f, y.data(), s.n,
                                                                 kernel);
                                  }));
    fmt::print("{:>5} {:>5} {:>5}  {:>11.1f} {:>11.1f} {}  {}\n", s.m, s.n, s.k, nt, nn, packed_rates, s.where);
  }
  repacked({
      {320, 1000, 64, "S training: output projection (NT), dx (NN, k = V)"},
      {1000, 64, 320, "S training: output projection's dW (TN)"},
      {16, 64, 128, "S training: attention and combine layer, per step"},
      {256, 96, 16, "S training: the decoder cell's dW per step (TN, k = B)"},
      {64, 256, 512, "M decoding: the combine layer"},
      {64, 256, 256, "M decoding: attention's W_q s"},
      {1920, 256, 256, "M: attention's keys, W_k h for all steps"},
      {1024, 256, 1920, "LSTM layer: dW_hh = da^T @ h (TN, lda = 4H = 1024)"},
      {1000, 256, 1920, "the same at lda = 1000"},
  });
  return 0;
}
