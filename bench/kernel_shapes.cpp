// bench_kernel_shapes: the AVX-512 kernels' block shapes against each other, in
// one process, in alternating rounds, at the shapes attend runs them at; and
// this core's peak rate of 512-bit multiply-adds, the ceiling of both.
//   the packed product (core/kernels/detail/packed_kernel.hpp): 6 rows x 4 panels,
//     attend's, against 8 x 2 and 8 x 3;
//   the row summaries (core/kernels/detail/summary_kernel.hpp, greedy decoding's output
//     projection): 6 columns x 4 panels, attend's, against 4 x 4, 5 x 4 and 8 x 2.
// Each shape is timed in 9 rounds; in a round every block shape runs once (41
// products, or 5 for the largest), and its median counts; printed: the median of
// the rounds and their range, GFLOP/s. A goals run (bench/goals.sh) keeps its
// output in the run's results file; docs/kernels.md says why attend's shapes.
// It instantiates the kernels' templates itself, which only core/kernels/packed_gemm*.cpp
// do otherwise: the block shapes it compares are not all compiled into attend.
// Needs g++ on x86-64 and a CPU with AVX-512; elsewhere it says so and exits 0.
// Usage: bench_kernel_shapes   (about 40 seconds)
#include <fmt/core.h>

#include "core/kernels/detail/packed_kernel.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/detail/summary_kernel.hpp"

#if defined(ATTEND_PACKED_WIDE)
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench/timing.hpp"

using namespace attend;
using namespace attend::blas;
using blas::kernels::ColumnLanes;
using blas::kernels::Lanes;
using blas::kernels::V16;

namespace {

#define ATTEND_V4 __attribute__((target("arch=x86-64-v4"), noinline))
// The packed product with R rows by P panels, x as rows or (xt) as its
// transpose: y = x @ W^T + beta y.
using Product = void (*)(bool xt, std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w,
                         float beta, float* y, std::int64_t ldy);
template <int R, int P>
ATTEND_V4 void product(bool xt, std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta,
                       float* y, std::int64_t ldy) {
  kernels::run_kernel<V16, R, 6, P>(xt, m, x, ldx, w, beta, y, ldy, Lanes{});
}

// The row summaries of y = x @ W^T + bias over W's n rows, x packed (xp), with
// R columns by P panels.
using Summary = void (*)(std::int64_t n, const float* w, std::int64_t ldw, const PackedMatrix& xp, const float* bias,
                         ColumnLanes* lanes);
template <int R, int P>
ATTEND_V4 void summary(std::int64_t n, const float* w, std::int64_t ldw, const PackedMatrix& xp, const float* bias,
                       ColumnLanes* lanes) {
  kernels::run_summary<V16, R, P, 8>(n, w, ldw, xp, bias, -1, true, lanes);
}

// 16 independent chains of 512-bit multiply-adds (this file is built with
// FMA contraction), each started from its own value: equal starts let the
// compiler merge the chains into one.
ATTEND_V4 float fma_chains(std::int64_t reps, float seed) {
  V16 acc[16];
  for (int i = 0; i < 16; ++i)
    for (int l = 0; l < 16; ++l) acc[i][l] = seed + static_cast<float>(i * 16 + l);
  for (std::int64_t r = 0; r < reps; ++r)
    for (int i = 0; i < 16; ++i) acc[i] = acc[i] * 0.999f + 1e-3f;
  float sum = 0;
  for (int i = 0; i < 16; ++i)
    for (int l = 0; l < 16; ++l) sum += acc[i][l];
  return sum;
}
#undef ATTEND_V4

struct Case {
  std::int64_t m, n, k;
  bool streamed = false, xt = false;
  float beta = 0;
  const char* where = "";
};

// Every round times each candidate once (the median of `reps` calls) in turn;
// returns, per candidate, the rounds' GFLOP/s.
template <class Call>
std::vector<std::vector<double>> alternate(double flops, std::size_t candidates, Call&& call, bool evict) {
  constexpr int kRounds = 9;
  const int reps = flops > 1e9 ? 5 : 41;
  std::vector<float> other(evict ? 8 << 20 : 0);  // 32 MiB touched before each call when W is streamed
  std::vector<std::vector<double>> rates(candidates);
  for (std::size_t c = 0; c < candidates; ++c) call(c);  // warm-up
  for (int round = 0; round < kRounds; ++round)
    for (std::size_t c = 0; c < candidates; ++c) {
      std::vector<double> ns;
      for (int r = 0; r < reps; ++r) {
        if (evict)
          for (std::size_t i = 0; i < other.size(); i += 16) other[i] += 1.0f;
        const double t0 = bench::now_ns();
        call(c);
        ns.push_back(bench::now_ns() - t0);
      }
      rates[c].push_back(flops / bench::median(ns));  // flops per ns = GFLOP/s
    }
  return rates;
}

std::string cell(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  return fmt::format("{:.1f} ({:.1f}-{:.1f})", bench::median(rates), rates.front(), rates.back());
}

void products() {
  const std::vector<Case> cases = {
      {64, 1024, 640, true, false, 0, "M decoding: the decoder cell, W streamed"},
      {64, 256, 1024, false, true, 0, "LSTM layer backward: x transposed"},
      {320, 256, 32, false, false, 0, "S encoder: x @ W_ih^T, all steps"},
      {16, 256, 64, false, false, 0, "S decoder cell, per step"},
      {1920, 128, 1024, false, false, 0, "LSTM layer backward: dx"},
      {64, 1024, 256, false, false, 1, "LSTM layer forward: h @ W_hh^T, beta 1"},
      {320, 1000, 64, false, false, 0, "S training: output projection"},
      {320, 8000, 256, true, false, 0, "M beam K=5: output projection, W streamed"},
  };
  const Product candidates[] = {product<6, 4>, product<8, 2>, product<8, 3>};
  fmt::print("\n# the packed product y (m, n) = x (m, k) @ W^T, GFLOP/s: median (range) of 9 alternating rounds\n");
  fmt::print("{:>5} {:>5} {:>5}  {:<22} {:<22} {:<22} {}\n", "m", "n", "k", "6 x 4 (attend's)", "8 x 2", "8 x 3",
             "where attend runs it");
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  for (const Case& s : cases) {
    std::vector<float> x(static_cast<std::size_t>(s.m * s.k)), w(static_cast<std::size_t>(s.n * s.k)),
        y(static_cast<std::size_t>(s.m * s.n), 0.5f);
    for (float& v : x) v = normal(gen);
    for (float& v : w) v = normal(gen);
    PackedMatrix packed(w.data(), s.n, s.k, s.k);
    packed.set_streamed(s.streamed);
    const auto rates = alternate(2.0 * static_cast<double>(s.m * s.n * s.k), std::size(candidates), [&](std::size_t c) {
      candidates[c](s.xt, s.m, x.data(), s.xt ? s.m : s.k, packed, s.beta, y.data(), s.n);
    }, s.streamed);
    fmt::print("{:>5} {:>5} {:>5}  {:<22} {:<22} {:<22} {}\n", s.m, s.n, s.k, cell(rates[0]), cell(rates[1]),
               cell(rates[2]), s.where);
  }
}

void summaries() {
  const std::vector<Case> cases = {
      {64, 8000, 256, true, false, 0, "M greedy: output projection, W streamed"},
      {16, 1000, 64, false, false, 0, "S greedy: output projection"},
  };
  const Summary candidates[] = {summary<6, 4>, summary<4, 4>, summary<5, 4>, summary<8, 2>};
  fmt::print("\n# the row summaries of y (m, n) = x (m, k) @ W^T + b (max, sum of exponentials, best), GFLOP/s\n");
  fmt::print("{:>5} {:>5} {:>5}  {:<22} {:<22} {:<22} {:<22} {}\n", "m", "n", "k", "6 x 4 (attend's)", "4 x 4",
             "5 x 4", "8 x 2", "where attend runs it");
  std::mt19937 gen(2);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  for (const Case& s : cases) {
    std::vector<float> x(static_cast<std::size_t>(s.m * s.k)), w(static_cast<std::size_t>(s.n * s.k)),
        bias(static_cast<std::size_t>(s.n));
    for (float& v : x) v = normal(gen);
    for (float& v : w) v = normal(gen);
    for (float& v : bias) v = normal(gen);
    const PackedMatrix xp(x.data(), s.m, s.k, s.k);
    const ColumnLanes empty = kernels::empty_column_lanes();  // each call starts from these, as summarise_rows's
    std::vector<ColumnLanes> lanes(static_cast<std::size_t>((s.m + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel));
    const auto rates = alternate(2.0 * static_cast<double>(s.m * s.n * s.k), std::size(candidates), [&](std::size_t c) {
      std::fill(lanes.begin(), lanes.end(), empty);
      candidates[c](s.n, w.data(), s.k, xp, bias.data(), lanes.data());
    }, s.streamed);
    fmt::print("{:>5} {:>5} {:>5}  {:<22} {:<22} {:<22} {:<22} {}\n", s.m, s.n, s.k, cell(rates[0]), cell(rates[1]),
               cell(rates[2]), cell(rates[3]), s.where);
  }
}

void peak() {
  constexpr std::int64_t kReps = 1 << 20;  // 16 chains x 16 lanes x 2 flops each: 537 MFLOP a call
  std::vector<double> rates;
  float sink = 0;
  for (int round = 0; round < 9; ++round) {
    const double t0 = bench::now_ns();
    sink += fma_chains(kReps, static_cast<float>(round));
    rates.push_back(2.0 * 16 * 16 * static_cast<double>(kReps) / (bench::now_ns() - t0));
  }
  fmt::print("# this core's peak: 16 independent chains of 512-bit multiply-adds, {} GFLOP/s "
             "(median (range) of 9 runs; checksum {:.3g})\n",
             cell(rates), sink);
}

}  // namespace

#endif

int main(int argc, char**) {
  if (argc > 1) {
    fmt::print(stderr, "usage: bench_kernel_shapes   (no arguments)\n");
    return 2;
  }
#if defined(ATTEND_PACKED_WIDE)
  if (blas::detail::packed_kernel_runs(blas::detail::PackedKernel::Avx512)) {
    peak();
    products();
    summaries();
    return 0;
  }
#endif
  fmt::print("bench_kernel_shapes: no AVX-512 kernel here (it needs g++ on x86-64 and a CPU with AVX-512); "
             "nothing to compare\n");
  return 0;
}
