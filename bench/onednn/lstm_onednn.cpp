// bench_lstm_onednn: attend's nn::LSTM against oneDNN's LSTM primitive, one
// layer, forward (training) and backward, the same shapes as bench_lstm
// (B = 64, T = 30, I = 128, H = 256, float32, unidirectional, no initial state),
// both on ONE thread, in one process, in alternating rounds.
//
// Built only when CMake finds oneDNN (Debian's libdnnl-dev); oneDNN is used here
// and nowhere else, never linked into the library. Run it with
//   bench/compare_lstm_onednn.sh          (or build/release/bench/bench_lstm_onednn [rounds])
//
// Equal work, checked: oneDNN gets attend's weights (reordered into its own
// layouts once, before timing), the same input and the same upstream gradient R
// of sum(out * R); the program compares the outputs, the final state and every
// gradient (dx, dW_ih, dW_hh, dbias) and exits 1 if they differ by more than
// float32 rounding can explain, before it times anything.
//
// One thread, checked: Debian's oneDNN 2.6 runs on OpenMP (DNNL_CPU_RUNTIME =
// OMP), so the program sets omp_set_num_threads(1) (and OMP_NUM_THREADS=1 before
// anything starts), OpenBLAS to 1 thread, and prints each side's CPU time over
// its wall time: 1.00 means one busy thread, more means more threads were
// working (less: the machine was busy and took the CPU away at times).
//
// What is timed, per run: attend's lstm.forward(x) (recording the graph) and
// backward(out, R); oneDNN's forward_training execution (which writes the
// workspace) and its backward execution. Not timed, on either side: zeroing the
// gradients, and oneDNN's weight reorders (a training loop would reorder the
// updated weights every step; leaving that out favours oneDNN). The reorders'
// time is printed separately.
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "autograd/autograd.hpp"
#include "bench/timing.hpp"
#include "core/kernels/blas.hpp"
#include "core/core.hpp"
#include "layers/lstm/lstm.hpp"

using namespace attend;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {

// B batch, T steps, I input size, H hidden size, G = 4H gate rows (i, f, g, o in
// both libraries).
constexpr std::int64_t B = 64, T = 30, I = 128, H = 256, G = 4 * H;
constexpr int kWarmup = 3;
constexpr int kRuns = 20;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void copy_in(dnnl::memory& m, const float* src) {
  std::memcpy(m.get_data_handle(), src, m.get_desc().get_size());
}

struct RoundTimes {
  double forward, backward;  // median ns of the round
  double cpu_over_wall;      // CPU time / wall time over the round's timed runs
  double faults;             // minor page faults per timed run (fresh pages touched)
};

// oneDNN's side: descriptors, primitives and buffers, made once.
struct OneDNN {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::lstm_forward::primitive_desc fwd_pd;
  dnnl::lstm_backward::primitive_desc bwd_pd;
  dnnl::lstm_forward fwd;
  dnnl::lstm_backward bwd;
  // user layouts: x, out, R as (B, T, C) = ntc; weights as attend's (4H, C) = ldgoi
  dnnl::memory src_layer, dst_layer, dst_iter, dst_iter_c, diff_dst_layer, diff_dst_iter, diff_dst_iter_c,
      diff_src_layer, bias, diff_bias, workspace;
  dnnl::memory user_w_layer, user_w_iter, user_dw_layer, user_dw_iter;  // ldgoi
  dnnl::memory fwd_w_layer, fwd_w_iter, bwd_w_layer, bwd_w_iter, dw_layer, dw_iter;  // oneDNN's choice
  double reorder_ns = 0;

  explicit OneDNN(const nn::LSTMWeights& w) {
    const dnnl::memory::dim b = B, t = T, i = I, h = H;
    const dnnl::memory::desc x_md({t, b, i}, dt::f32, tag::ntc), y_md({t, b, h}, dt::f32, tag::ntc);
    const dnnl::memory::desc state_md({1, 1, b, h}, dt::f32, tag::ldnc), none;
    const dnnl::memory::desc bias_md({1, 1, 4, h}, dt::f32, tag::ldgo);
    const dnnl::memory::desc wl_any({1, 1, i, 4, h}, dt::f32, tag::any), wi_any({1, 1, h, 4, h}, dt::f32, tag::any);
    const dnnl::memory::desc wl_user({1, 1, i, 4, h}, dt::f32, tag::ldgoi), wi_user({1, 1, h, 4, h}, dt::f32, tag::ldgoi);
    dnnl::lstm_forward::desc fwd_d(dnnl::prop_kind::forward_training, dnnl::rnn_direction::unidirectional_left2right,
                                   x_md, none, none, wl_any, wi_any, bias_md, y_md, state_md, state_md);
    fwd_pd = dnnl::lstm_forward::primitive_desc(fwd_d, eng);
    dnnl::lstm_backward::desc bwd_d(dnnl::prop_kind::backward, dnnl::rnn_direction::unidirectional_left2right, x_md,
                                    none, none, wl_any, wi_any, bias_md, y_md, state_md, state_md, x_md, none, none,
                                    wl_any, wi_any, bias_md, y_md, state_md, state_md);
    bwd_pd = dnnl::lstm_backward::primitive_desc(bwd_d, eng, fwd_pd);
    fwd = dnnl::lstm_forward(fwd_pd);
    bwd = dnnl::lstm_backward(bwd_pd);

    src_layer = dnnl::memory(x_md, eng);
    dst_layer = dnnl::memory(fwd_pd.dst_layer_desc(), eng);
    dst_iter = dnnl::memory(fwd_pd.dst_iter_desc(), eng);
    dst_iter_c = dnnl::memory(fwd_pd.dst_iter_c_desc(), eng);
    workspace = dnnl::memory(fwd_pd.workspace_desc(), eng);
    bias = dnnl::memory(bias_md, eng);
    diff_dst_layer = dnnl::memory(bwd_pd.diff_dst_layer_desc(), eng);
    diff_dst_iter = dnnl::memory(bwd_pd.diff_dst_iter_desc(), eng);
    diff_dst_iter_c = dnnl::memory(bwd_pd.diff_dst_iter_c_desc(), eng);
    diff_src_layer = dnnl::memory(bwd_pd.diff_src_layer_desc(), eng);
    diff_bias = dnnl::memory(bwd_pd.diff_bias_desc(), eng);
    user_w_layer = dnnl::memory(wl_user, eng);
    user_w_iter = dnnl::memory(wi_user, eng);
    user_dw_layer = dnnl::memory(wl_user, eng);
    user_dw_iter = dnnl::memory(wi_user, eng);
    fwd_w_layer = dnnl::memory(fwd_pd.weights_layer_desc(), eng);
    fwd_w_iter = dnnl::memory(fwd_pd.weights_iter_desc(), eng);
    bwd_w_layer = dnnl::memory(bwd_pd.weights_layer_desc(), eng);
    bwd_w_iter = dnnl::memory(bwd_pd.weights_iter_desc(), eng);
    dw_layer = dnnl::memory(bwd_pd.diff_weights_layer_desc(), eng);
    dw_iter = dnnl::memory(bwd_pd.diff_weights_iter_desc(), eng);

    // oneDNN has one bias per gate row: attend's bias_ih + bias_hh.
    std::vector<float> b_sum(G);
    for (std::int64_t k = 0; k < G; ++k) b_sum[k] = w.bias_ih.data<float>()[k] + w.bias_hh.data<float>()[k];
    copy_in(bias, b_sum.data());
    copy_in(user_w_layer, w.weight_ih.data<float>());
    copy_in(user_w_iter, w.weight_hh.data<float>());
    const double t0 = bench::now_ns();
    reorder(user_w_layer, fwd_w_layer);
    reorder(user_w_iter, fwd_w_iter);
    reorder(user_w_layer, bwd_w_layer);
    reorder(user_w_iter, bwd_w_iter);
    strm.wait();
    reorder_ns = bench::now_ns() - t0;
    std::memset(diff_dst_iter.get_data_handle(), 0, diff_dst_iter.get_desc().get_size());
    std::memset(diff_dst_iter_c.get_data_handle(), 0, diff_dst_iter_c.get_desc().get_size());
  }

  void reorder(dnnl::memory& from, dnnl::memory& to) { dnnl::reorder(from, to).execute(strm, from, to); }

  void forward() {
    fwd.execute(strm, {{DNNL_ARG_SRC_LAYER, src_layer},
                       {DNNL_ARG_WEIGHTS_LAYER, fwd_w_layer},
                       {DNNL_ARG_WEIGHTS_ITER, fwd_w_iter},
                       {DNNL_ARG_BIAS, bias},
                       {DNNL_ARG_DST_LAYER, dst_layer},
                       {DNNL_ARG_DST_ITER, dst_iter},
                       {DNNL_ARG_DST_ITER_C, dst_iter_c},
                       {DNNL_ARG_WORKSPACE, workspace}});
    strm.wait();
  }

  // oneDNN's RNN backward accumulates into the weight gradients: zero them first.
  void zero_grad() {
    for (dnnl::memory* m : {&dw_layer, &dw_iter, &diff_bias})
      std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
  }

  void backward() {
    bwd.execute(strm, {{DNNL_ARG_SRC_LAYER, src_layer},
                       {DNNL_ARG_WEIGHTS_LAYER, bwd_w_layer},
                       {DNNL_ARG_WEIGHTS_ITER, bwd_w_iter},
                       {DNNL_ARG_BIAS, bias},
                       {DNNL_ARG_DST_LAYER, dst_layer},
                       {DNNL_ARG_DST_ITER, dst_iter},
                       {DNNL_ARG_DST_ITER_C, dst_iter_c},
                       {DNNL_ARG_WORKSPACE, workspace},
                       {DNNL_ARG_DIFF_DST_LAYER, diff_dst_layer},
                       {DNNL_ARG_DIFF_DST_ITER, diff_dst_iter},
                       {DNNL_ARG_DIFF_DST_ITER_C, diff_dst_iter_c},
                       {DNNL_ARG_DIFF_SRC_LAYER, diff_src_layer},
                       {DNNL_ARG_DIFF_WEIGHTS_LAYER, dw_layer},
                       {DNNL_ARG_DIFF_WEIGHTS_ITER, dw_iter},
                       {DNNL_ARG_DIFF_BIAS, diff_bias}});
    strm.wait();
  }

  // The weight gradients in attend's (4H, C) layout.
  void gradients_to_user() {
    reorder(dw_layer, user_dw_layer);
    reorder(dw_iter, user_dw_iter);
    strm.wait();
  }
};

// The instruction set oneDNN's kernels use here (ONEDNN_MAX_CPU_ISA caps it).
std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return fmt::format("code {:#x}", static_cast<unsigned>(isa));
  }
}

const float* f32(const dnnl::memory& m) { return static_cast<const float*>(m.get_data_handle()); }

// max |a - b| / max(max |b|, 1e-6): the largest difference relative to the tensor's scale.
double relative_difference(const float* a, const float* b, std::int64_t n) {
  double diff = 0, scale = 1e-6;
  for (std::int64_t k = 0; k < n; ++k) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[k] - b[k])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[k])));
  }
  return diff / scale;
}

// Runs both once on the same numbers and compares everything. Returns false on a mismatch.
bool check_equal_work(nn::LSTM& lstm, Tensor& x, const Tensor& r, OneDNN& d) {
  lstm.zero_grad();
  x.zero_grad();
  nn::LSTMOutput out = lstm.forward(x);
  backward({out.output}, {r});
  d.zero_grad();
  d.forward();
  d.backward();
  d.gradients_to_user();
  const nn::LSTMWeights& w = lstm.weights(0, 0);
  struct Item {
    const char* name;
    const float* onednn;
    Tensor attend;
  };
  const Item items[] = {{"out", f32(d.dst_layer), out.output},
                        {"h_n", f32(d.dst_iter), out.h_n},
                        {"c_n", f32(d.dst_iter_c), out.c_n},
                        {"dx", f32(d.diff_src_layer), x.grad()},
                        {"dW_ih", f32(d.user_dw_layer), w.weight_ih.grad()},
                        {"dW_hh", f32(d.user_dw_iter), w.weight_hh.grad()},
                        {"dbias_ih", f32(d.diff_bias), w.bias_ih.grad()},
                        {"dbias_hh", f32(d.diff_bias), w.bias_hh.grad()}};
  // float32 sums of up to B*T = 1,920 terms, in different orders: a few 1e-6 of the scale.
  constexpr double kTolerance = 1e-4;
  bool ok = true;
  fmt::print("# equal work: oneDNN against attend, max |difference| / max |attend|:");
  for (const Item& item : items) {
    const double rel = relative_difference(item.onednn, item.attend.data<float>(), item.attend.numel());
    fmt::print(" {} {:.1e}", item.name, rel);
    ok = ok && rel <= kTolerance;
  }
  fmt::print("{}\n", ok ? "" : "  MISMATCH");
  return ok;
}

RoundTimes time_attend(nn::LSTM& lstm, Tensor& x, const Tensor& r) {
  std::vector<double> f, b;
  double cpu = 0, wall = 0;
  long faults = 0;
  for (int run = 0; run < kWarmup + kRuns; ++run) {
    lstm.zero_grad();
    x.zero_grad();
    const long p0 = memory::minor_page_faults();
    const double c0 = cpu_seconds(), t0 = bench::now_ns();
    nn::LSTMOutput out = lstm.forward(x);
    const double t1 = bench::now_ns();
    backward({out.output}, {r});
    const double t2 = bench::now_ns(), c1 = cpu_seconds();
    const long p1 = memory::minor_page_faults();
    if (run < kWarmup) continue;
    faults += p1 - p0;
    f.push_back(t1 - t0);
    b.push_back(t2 - t1);
    cpu += c1 - c0;
    wall += (t2 - t0) * 1e-9;
  }
  return {bench::median(f), bench::median(b), cpu / wall, static_cast<double>(faults) / kRuns};
}

RoundTimes time_onednn(OneDNN& d) {
  std::vector<double> f, b;
  double cpu = 0, wall = 0;
  long faults = 0;
  for (int run = 0; run < kWarmup + kRuns; ++run) {
    d.zero_grad();
    const long p0 = memory::minor_page_faults();
    const double c0 = cpu_seconds(), t0 = bench::now_ns();
    d.forward();
    const double t1 = bench::now_ns();
    d.backward();
    const double t2 = bench::now_ns(), c1 = cpu_seconds();
    const long p1 = memory::minor_page_faults();
    if (run < kWarmup) continue;
    faults += p1 - p0;
    f.push_back(t1 - t0);
    b.push_back(t2 - t1);
    cpu += c1 - c0;
    wall += (t2 - t0) * 1e-9;
  }
  return {bench::median(f), bench::median(b), cpu / wall, static_cast<double>(faults) / kRuns};
}

struct Summary {
  double median, lo, hi;
};
Summary summarise(const std::vector<double>& v) {
  return {bench::median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

}  // namespace

int main(int argc, char** argv) {
  bench::print_kernels();  // which kernels the products below run on
  setenv("OMP_NUM_THREADS", "1", 1);
  omp_set_num_threads(1);
  blas::set_num_threads(1);
  const std::optional<int> parsed = argc > 1 ? bench::parse_count(argv[1], 1, 1000) : std::optional<int>(5);
  if (!parsed || argc > 2) {
    fmt::print(stderr, "usage: bench_lstm_onednn [rounds, 1..1000; default 5]\n");
    return 2;
  }
  const int rounds = *parsed;
  const dnnl_version_t* v = dnnl_version();
  fmt::print("# LSTM 1 layer, B={} T={} I={} H={} float32, forward (training) and backward of sum(out * R); "
             "median of {} runs after {} warm-up per round, {} alternating rounds\n",
             B, T, I, H, kRuns, kWarmup, rounds);
  fmt::print("# oneDNN {}.{}.{} (CPU runtime {}, ISA {}), omp_get_max_threads() = {}, OpenBLAS threads 1\n",
             v->major, v->minor, v->patch, v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "not OpenMP",
             isa_name(dnnl::get_effective_cpu_isa()), omp_get_max_threads());

  Generator gen(0);
  nn::LSTM lstm(I, H, gen);
  Tensor x = normal({B, T, I}, 0, 1, gen).requires_grad_();
  Tensor r = normal({B, T, H}, 0, 1, gen);
  OneDNN d(lstm.weights(0, 0));
  copy_in(d.src_layer, x.data<float>());
  copy_in(d.diff_dst_layer, r.data<float>());
  if (!check_equal_work(lstm, x, r, d)) {
    fmt::print(stderr, "bench_lstm_onednn: oneDNN and attend disagree; the timing would not compare equal work\n");
    return 1;
  }
  fmt::print("# oneDNN weight reorders (not timed below): {:.2f} ms\n", d.reorder_ns * 1e-6);

  std::vector<double> af, ab, at, df, db, dt_, ratio;
  double a_cpu = 0, d_cpu = 0, a_faults = 0, d_faults = 0;
  for (int round = 0; round < rounds; ++round) {
    const RoundTimes a = time_attend(lstm, x, r);
    const RoundTimes o = time_onednn(d);
    af.push_back(a.forward * 1e-6), ab.push_back(a.backward * 1e-6), at.push_back((a.forward + a.backward) * 1e-6);
    df.push_back(o.forward * 1e-6), db.push_back(o.backward * 1e-6), dt_.push_back((o.forward + o.backward) * 1e-6);
    ratio.push_back(at.back() / dt_.back());
    a_cpu = std::max(a_cpu, a.cpu_over_wall);
    d_cpu = std::max(d_cpu, o.cpu_over_wall);
    a_faults = std::max(a_faults, a.faults);
    d_faults = std::max(d_faults, o.faults);
    fmt::print("round {}  attend forward {:.2f} backward {:.2f} ms   oneDNN forward {:.2f} backward {:.2f} ms\n",
               round + 1, af.back(), ab.back(), df.back(), db.back());
  }
  fmt::print("# CPU time / wall time over the timed runs (1.00 = one busy thread; > 1.05 would mean more), "
             "the largest of any round: "
             "attend {:.2f}, oneDNN {:.2f}\n", a_cpu, d_cpu);
  fmt::print("# minor page faults per forward+backward (fresh pages touched; ~2.3 us each here), the most of any "
             "round: attend {:.1f}, oneDNN {:.1f}\n", a_faults, d_faults);
  auto line = [](const char* what, const std::vector<double>& a, const std::vector<double>& o) {
    const Summary sa = summarise(a), so = summarise(o);
    fmt::print("{:<18} attend {:7.2f} ms ({:.2f}-{:.2f})   oneDNN {:7.2f} ms ({:.2f}-{:.2f})   attend/oneDNN {:.3f}\n",
               what, sa.median, sa.lo, sa.hi, so.median, so.lo, so.hi, sa.median / so.median);
  };
  fmt::print("median (min-max) of the rounds' medians:\n");
  line("forward", af, df);
  line("backward", ab, db);
  line("forward+backward", at, dt_);
  const Summary sr = summarise(ratio);
  fmt::print("attend/oneDNN time per round, forward+backward: median {:.3f} ({:.3f}-{:.3f}); goal <= 1.0\n", sr.median,
             sr.lo, sr.hi);
  return 0;
}
