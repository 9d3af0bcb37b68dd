// bench_lstm: one LSTM layer, forward + backward of sum(out * R), at B = 64,
// T = 30, I = 128, H = 256, float32, unidirectional, at 1 and 2 OpenBLAS threads.
// Its PyTorch twin is bench/torch_lstm.py (nn.LSTM(batch_first=True), the same
// shapes and loss), which also runs this program and prints the ratio:
//
//   /usr/bin/python3 bench/torch_lstm.py --attend build/release/bench/bench_lstm
//
// Goal: attend at least as fast as torch.nn.LSTM at 1 thread.
//
// Usage: bench_lstm [threads ...]   (default: 1 2). Prints one line per thread count:
//   attend threads=1 forward_backward_ms=... forward_ms=... gemm_only_ms=...
// gemm_only is the same sequence of products the fused op makes (all of them on
// the packed kernel, core/kernels/packed_gemm.hpp), without the gate math, the transpose
// of da or anything else: the floor for this algorithm with these kernels.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <fmt/core.h>

#include "autograd/autograd.hpp"
#include "bench/timing.hpp"
#include "core/kernels/blas.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/core.hpp"
#include "layers/lstm/lstm.hpp"

using namespace attend;

namespace {

constexpr std::int64_t B = 64, T = 30, I = 128, H = 256, G = 4 * H;
constexpr int kWarmup = 5;
constexpr int kRuns = 20;

struct Times {
  double forward_backward, forward, gemm_only;  // median ns
};

// The products of one forward + backward of lstm_sequence, alone, as it runs
// them for float32: all on the packed kernel (core/kernels/packed_gemm.hpp).
void gemms_only(const std::vector<float>& x, const std::vector<float>& w_ih, const std::vector<float>& w_hh,
                std::vector<float>& gates, std::vector<float>& h_prev, std::vector<float>& dgates,
                const std::vector<float>& dgates_t, std::vector<float>& dh, std::vector<float>& dx, std::vector<float>& dw_ih, std::vector<float>& dw_hh) {
  blas::gemm_packed(B * T, x.data(), I, blas::PackedMatrix(w_ih.data(), G, I, I), 0.0f, gates.data(), G);
  const blas::PackedMatrix w_hh_packed(w_hh.data(), G, H, H);
  for (std::int64_t t = 0; t < T; ++t)
    blas::gemm_packed(B, h_prev.data() + t * H, T * H, w_hh_packed, 1.0f, gates.data() + t * G, T * G);
  const blas::PackedMatrix w_hh_t_packed = blas::PackedMatrix::from_transposed(w_hh.data(), H, G, H);
  for (std::int64_t t = T - 1; t >= 0; --t)
    blas::gemm_packed(B, dgates.data() + t * G, T * G, w_hh_t_packed, 1.0f, dh.data(), H);
  blas::gemm_packed(B * T, dgates.data(), G, blas::PackedMatrix::from_transposed(w_ih.data(), I, G, I), 1.0f, dx.data(),
                    I);
  // the weight gradients from da^T (4H, B*T), which lstm_sequence transposes first (not counted here)
  blas::gemm_packed(G, dgates_t.data(), B * T, blas::PackedMatrix::from_transposed(x.data(), I, B * T, I), 1.0f,
                    dw_ih.data(), I);
  blas::gemm_packed(G, dgates_t.data(), B * T, blas::PackedMatrix::from_transposed(h_prev.data(), H, B * T, H), 1.0f,
                    dw_hh.data(), H);
}

Times measure(nn::LSTM& lstm, const Tensor& x, const Tensor& r) {
  std::vector<float> xs(B * T * I, 0.1f), w_ih(G * I, 0.01f), w_hh(G * H, 0.01f), gates(B * T * G),
      h_prev(B * T * H, 0.1f), dgates(B * T * G, 0.01f), dgates_t(B * T * G, 0.01f), dh(B * H), dx(B * T * I), dw_ih(G * I), dw_hh(G * H);
  std::vector<double> t_fb, t_f, t_g;
  for (int run = 0; run < kWarmup + kRuns; ++run) {
    lstm.zero_grad();
    Tensor(x).zero_grad();
    const double t0 = bench::now_ns();
    nn::LSTMOutput out = lstm.forward(x);
    const double t1 = bench::now_ns();
    backward({out.output}, {r});  // the gradient of sum(out * R)
    const double t2 = bench::now_ns();
    gemms_only(xs, w_ih, w_hh, gates, h_prev, dgates, dgates_t, dh, dx, dw_ih, dw_hh);
    const double t3 = bench::now_ns();
    if (run < kWarmup) continue;
    t_fb.push_back(t2 - t0);
    t_f.push_back(t1 - t0);
    t_g.push_back(t3 - t2);
  }
  return {bench::median(t_fb), bench::median(t_f), bench::median(t_g)};
}

}  // namespace

int main(int argc, char** argv) {
  bench::print_kernels();  // which kernels the products below run on
  std::vector<int> threads;
  for (int k = 1; k < argc; ++k) {
    const std::optional<int> n = bench::parse_count(argv[k], 1, 256);
    if (!n) {
      fmt::print(stderr, "bench_lstm: '{}' is not a thread count in 1..256\nusage: bench_lstm [threads ...]\n", argv[k]);
      return 2;
    }
    threads.push_back(*n);
  }
  if (threads.empty()) threads = {1, 2};
  Generator gen(0);
  nn::LSTM lstm(I, H, gen);
  Tensor x = normal({B, T, I}, 0, 1, gen).requires_grad_();
  Tensor r = normal({B, T, H}, 0, 1, gen);
  fmt::print("# attend nn::LSTM, 1 layer, B={} T={} I={} H={} float32, forward + backward of sum(out * R); "
             "median of {} runs after {} warm-up\n",
             B, T, I, H, kRuns, kWarmup);
  for (int n : threads) {
    blas::set_num_threads(n);
    const Times t = measure(lstm, x, r);
    fmt::print("attend threads={} forward_backward_ms={:.2f} forward_ms={:.2f} gemm_only_ms={:.2f}\n", n,
               t.forward_backward * 1e-6, t.forward * 1e-6, t.gemm_only * 1e-6);
  }
  return 0;
}
