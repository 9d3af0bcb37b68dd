// bench_matmul: a 512 x 512 x 512 float32 matrix product through attend::matmul
// against a bare attend::blas::gemm call, at 1 and 2 OpenBLAS threads.
//
// attend::blas::gemm is the thin wrapper around cblas_sgemm (only core/kernels/blas.cpp
// may include cblas.h, so it is the closest thing to the bare BLAS call we may
// write). attend::matmul adds the shape checks and allocating the output; when
// an input requires grad it also records the op. Goal: matmul / gemm <= 1.05.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "autograd/autograd.hpp"
#include "bench/timing.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {

constexpr std::int64_t kN = 512;
constexpr int kWarmup = 5;
constexpr int kRuns = 101;
constexpr double kFlops = 2.0 * kN * kN * kN;  // one multiply and one add per term

struct Row {
  const char* what;
  double ns;
};

double gflops(double ns) { return kFlops / ns; }  // flop per ns = GFLOP/s

// Median times of gemm, matmul and recorded matmul, measured in alternation so
// that a slow spell on the machine hits all three alike.
std::vector<Row> measure(const Tensor& a, const Tensor& b, const Tensor& a_grad) {
  Tensor c = empty({kN, kN});
  std::vector<double> t_gemm, t_matmul, t_recorded;
  for (int run = 0; run < kWarmup + kRuns; ++run) {
    double t0 = bench::now_ns();
    blas::gemm(false, false, kN, kN, kN, 1.0f, a.data<float>(), kN, b.data<float>(), kN, 0.0f, c.data<float>(), kN);
    double t1 = bench::now_ns();
    Tensor y = matmul(a, b);
    double t2 = bench::now_ns();
    Tensor y_recorded = matmul(a_grad, b);  // builds a graph node, dropped unused
    double t3 = bench::now_ns();
    if (run == 0 && (max_abs_diff(y, c) != 0.0 || max_abs_diff(y_recorded, c) != 0.0)) {
      std::fprintf(stderr, "bench_matmul: attend::matmul and blas::gemm disagree\n");
      std::exit(1);
    }
    if (run < kWarmup) continue;
    t_gemm.push_back(t1 - t0);
    t_matmul.push_back(t2 - t1);
    t_recorded.push_back(t3 - t2);
  }
  return {{"attend::blas::gemm (bare cblas_sgemm)", bench::median(t_gemm)},
          {"attend::matmul", bench::median(t_matmul)},
          {"attend::matmul, input requires grad", bench::median(t_recorded)}};
}

}  // namespace

int main() {
  // The wrapper's cost over the bare OpenBLAS call: both sides on OpenBLAS, not
  // on the packed kernel blas::gemm would otherwise pick for float32 (blas.hpp).
  blas::set_packed_routing(false);
  bench::print_kernels();  // which kernels the products below run on
  Generator gen(0);
  Tensor a = normal({kN, kN}, 0, 1, gen);
  Tensor b = normal({kN, kN}, 0, 1, gen);
  Tensor a_grad = a.clone().requires_grad_();

  fmt::print("float32 matmul, (512, 512) @ (512, 512); median of {} runs after {} warm-up runs\n", kRuns, kWarmup);
  fmt::print("baseline: attend::blas::gemm, the one-line wrapper of cblas_sgemm (only core/kernels/blas.cpp includes cblas.h)\n\n");
  fmt::print("{:>7}  {:<40} {:>10} {:>10} {:>12}\n", "threads", "call", "ms", "GFLOP/s", "vs gemm");
  fmt::print("{}\n", std::string(83, '-'));
  bool goal_met = true;
  for (int threads : {1, 2}) {
    blas::set_num_threads(threads);
    const std::vector<Row> rows = measure(a, b, a_grad);
    const double base = rows[0].ns;
    for (const Row& r : rows)
      fmt::print("{:>7}  {:<40} {:>10.3f} {:>10.1f} {:>12.3f}\n", threads, r.what, r.ns * 1e-6, gflops(r.ns),
                 r.ns / base);
    goal_met = goal_met && rows[1].ns / base <= 1.05;
  }
  fmt::print("{}\ngoal: attend::matmul / gemm <= 1.05 at 1 and 2 threads: {}\n", std::string(83, '-'),
             goal_met ? "met" : "NOT met");
  return 0;
}
