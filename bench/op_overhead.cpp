// bench_op_overhead: what the bookkeeping of one small recorded op costs.
// A chain of 1000 adds of two 8-element float32 tensors that require grad,
//   y = x;  y = y + w  (1000 times);  y.backward(ones)
// timed as forward (computing and recording), backward (including freeing the
// graph), and the same forward under NoGradGuard, which records nothing.
// The arithmetic is 8 additions per op, so nearly all the time is bookkeeping:
// allocating the output, the graph node, and the backward's accumulation.
// Goal: forward + backward < 1 us per op.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "autograd/autograd.hpp"
#include "bench/timing.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {

constexpr int kChain = 1000;
constexpr int kWarmup = 20;
constexpr int kRuns = 301;

}  // namespace

int main() {
  Tensor x = zeros({8}).requires_grad_();
  Tensor w = ones({8}).requires_grad_();
  const Tensor dy = ones({8});
  std::vector<double> t_forward, t_backward, t_total, t_nograd;
  for (int run = 0; run < kWarmup + kRuns; ++run) {
    x.zero_grad();
    w.zero_grad();
    double t0 = bench::now_ns();
    Tensor y = x;
    for (int i = 0; i < kChain; ++i) y = add(y, w);
    double t1 = bench::now_ns();
    y.backward(dy);
    y = Tensor();  // frees the (released) graph
    double t2 = bench::now_ns();
    {
      NoGradGuard no_grad;
      Tensor z = x;
      for (int i = 0; i < kChain; ++i) z = add(z, w);
    }
    double t3 = bench::now_ns();
    if (run == 0 && (w.grad().at({0}) != kChain || x.grad().at({0}) != 1.0)) {
      std::fprintf(stderr, "bench_op_overhead: wrong gradients\n");
      return 1;
    }
    if (run < kWarmup) continue;
    t_forward.push_back((t1 - t0) / kChain);
    t_backward.push_back((t2 - t1) / kChain);
    t_total.push_back((t2 - t0) / kChain);
    t_nograd.push_back((t3 - t2) / kChain);
  }
  const double fwd = bench::median(t_forward), bwd = bench::median(t_backward);
  const double total = bench::median(t_total), nograd = bench::median(t_nograd);
  fmt::print("one recorded op: add of two float32 (8) tensors that require grad, chain of {} then one backward\n",
             kChain);
  fmt::print("median of {} runs after {} warm-up runs, per op\n\n", kRuns, kWarmup);
  fmt::print("{:<52} {:>10}\n", "part", "ns per op");
  fmt::print("{}\n", std::string(63, '-'));
  fmt::print("{:<52} {:>10.0f}\n", "forward, recorded", fwd);
  fmt::print("{:<52} {:>10.0f}\n", "backward (and freeing the graph)", bwd);
  fmt::print("{:<52} {:>10.0f}\n", "forward + backward", total);
  fmt::print("{:<52} {:>10.0f}\n", "forward under NoGradGuard (nothing recorded)", nograd);
  fmt::print("{}\ngoal: forward + backward < 1000 ns per op: {}\n", std::string(63, '-'),
             total < 1000 ? "met" : "NOT met");
  return 0;
}
