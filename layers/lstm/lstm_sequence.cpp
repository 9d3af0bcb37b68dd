// One direction of one LSTM layer over a whole batch of sequences as one fused
// op, and the same built from lstm_cell_composed steps (the oracle).
//
// Learning? Read lstm_cell_composed in layers/lstm/lstm_cell.cpp first: the same
// step from primitive ops (linear, slice, sigmoid, tanh, mul, add), whose
// backward autograd derives; `attend explain --lstm` prints every gradient of
// it. The fused backward spans three files:
//   lstm_cell.cpp       the one-step op: the GEMMs, then the gate rows (backward: lstm_cell_backward)
//   lstm_sequence.cpp   the whole-sequence op: the same gate rows, the GEMMs batched over time
//   lstm_kernels.cpp    the gate math of one row, forward and backward (lstm_kernels.hpp)
//
// Layout: every saved buffer is batch-major like x, (B, T, ...), so that row
// b*T + t of each belongs to sequence b at step t. The input projection is then
// one GEMM over all B*T rows, and the per-step GEMMs read and write the B rows
// of step t with a row stride of T rows. The backward (float32) keeps one
// step's da and builds da^T step-major, column t*B + b; float64 keeps every
// step's da, batch-major, for single GEMMs (dx, dW_ih, dW_hh) after the loop.
// The two element types differ only in their GEMMs: each has its own
// forward_steps and backward_steps, and both share the gate rows (forward_rows,
// backward_rows) and the bookkeeping around them.
#include <cstring>
#include <initializer_list>
#include <vector>

#include "autograd/ops.hpp"
#include "core/kernels/blas.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/kernels/detail/prefetch.hpp"
#include "core/kernels/detail/transpose.hpp"
#include "layers/lstm/lstm.hpp"
#include "layers/lstm/detail/lstm_kernels.hpp"

namespace attend::nn {

std::vector<std::int64_t> check_lengths(const char* op, const std::vector<std::int64_t>& lengths, std::int64_t batch,
                                        std::int64_t steps) {
  if (lengths.empty()) return std::vector<std::int64_t>(static_cast<std::size_t>(batch), steps);
  if (static_cast<std::int64_t>(lengths.size()) != batch)
    fail("{}: {} lengths given for a batch of {}", op, lengths.size(), batch);
  for (std::size_t b = 0; b < lengths.size(); ++b)
    if (lengths[b] < 1 || lengths[b] > steps)
      fail("{}: lengths[{}] = {} is outside [1, T] = [1, {}]", op, b, lengths[b], steps);
  return lengths;
}

namespace {

struct SequenceSizes {
  std::int64_t B, T, I, H;
};

SequenceSizes check_sequence(const char* op, const Tensor& x, const LSTMState& initial, const LSTMWeights& w) {
  const auto [I, H] = check_lstm_weights(op, w);
  check_defined(op, x, "x");
  check_defined(op, initial.h, "initial.h");
  check_defined(op, initial.c, "initial.c");
  if (x.dim() != 3 || x.size(2) != I) fail("{}: x must be (B, T, I) = (B, T, {}), got {}", op, I, x.shape());
  const std::int64_t B = x.size(0), T = x.size(1);
  if (B < 1 || T < 1) fail("{}: x must hold at least one sequence of at least one step, got {}", op, x.shape());
  if (!(initial.h.shape() == Shape{B, H}))
    fail("{}: initial.h must be (B, H) = ({}, {}), got {}", op, B, H, initial.h.shape());
  if (!(initial.c.shape() == Shape{B, H}))
    fail("{}: initial.c must be (B, H) = ({}, {}), got {}", op, B, H, initial.c.shape());
  for (const Tensor* t : {&x, &initial.h, &initial.c})
    if (t->dtype() != w.weight_ih.dtype())
      fail("{}: the inputs are {} but the weights are {} (convert with .to(dtype))", op, t->dtype(),
           w.weight_ih.dtype());
  return {B, T, I, H};
}

template <class T>
void copy_row(T* dst, const T* src, std::int64_t n) {
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
}

// What the forward leaves for the backward, one row per (b, t), batch-major.
struct Saved {
  Tensor x, w_ih, w_hh;     // x (B, T, I), the weights (detached)
  Tensor gates;             // (B, T, 4H): pre-activations, then the activations i, f, g, o
  Tensor h_prev, c_prev;    // (B, T, H): the state each step starts from
  Tensor tanh_c;            // (B, T, H)
  std::vector<std::int64_t> lengths;
  SequenceSizes n;
  std::int64_t first, dir;  // the steps in the order they run: t = first, first + dir, ...
  std::int64_t step(std::int64_t k) const { return first + k * dir; }
};

struct Outputs {
  Tensor y;         // (B, T, H)
  Tensor h_n, c_n;  // (B, H)
};

// ---- forward: the paths share the gate rows, and differ in their GEMMs --------

// b_ih + b_hh (4H)
template <class F>
Tensor summed_bias(const LSTMWeights& w) {
  Tensor bias = empty({w.bias_ih.numel()}, w.bias_ih.dtype());
  for (std::int64_t k = 0; k < bias.numel(); ++k) bias.data<F>()[k] = w.bias_ih.data<F>()[k] + w.bias_hh.data<F>()[k];
  return bias;
}

// The first step of every sequence starts from the initial state.
template <class F>
void start_states(Saved& s, const LSTMState& initial) {
  const std::int64_t T = s.n.T, H = s.n.H;
  for (std::int64_t b = 0; b < s.n.B; ++b) {
    copy_row(s.h_prev.data<F>() + (b * T + s.first) * H, initial.h.data<F>() + b * H, H);
    copy_row(s.c_prev.data<F>() + (b * T + s.first) * H, initial.c.data<F>() + b * H, H);
  }
}

// The gate rows of step t, once its GEMMs have left the pre-activations in
// gates[:, t]. Each row's new state goes to the next step's h_prev/c_prev, or
// after the last step to h_n/c_n.
template <class F>
void forward_rows(Saved& s, Outputs& out, const F* bias, std::int64_t t, bool last) {
  const std::int64_t T = s.n.T, H = s.n.H, G = 4 * H;
  F* a = s.gates.data<F>();
  F* hp = s.h_prev.data<F>();
  F* cp = s.c_prev.data<F>();
  F* tc = s.tanh_c.data<F>();
  F* y = out.y.data<F>();
  for (std::int64_t b = 0; b < s.n.B; ++b) {
    const std::int64_t row = b * T + t;
    F* h_next = last ? out.h_n.data<F>() + b * H : hp + (row + s.dir) * H;
    F* c_next = last ? out.c_n.data<F>() + b * H : cp + (row + s.dir) * H;
    if (t < s.lengths[static_cast<std::size_t>(b)]) {
      // i, f, g, o;  c = f * c_prev + i * g;  h = o * tanh(c)   (y[b, t] = h too)
      lstm_kernels::forward_row(H, a + row * G, bias, cp + row * H, c_next, tc + row * H, h_next, y + row * H);
    } else {
      // padding: the state passes through unchanged, the output is 0
      copy_row(h_next, hp + row * H, H);
      copy_row(c_next, cp + row * H, H);
      std::memset(y + row * H, 0, static_cast<std::size_t>(H) * sizeof(F));
      std::memset(tc + row * H, 0, static_cast<std::size_t>(H) * sizeof(F));
    }
  }
}

// float32: the packed kernel (core/kernels/packed_gemm.hpp), with W_hh packed
// once for the T recurrent products (OpenBLAS would pack it at every step);
// bench_packed holds it to OpenBLAS.
void forward_steps(float, Saved& s, Outputs& out, const LSTMWeights& w) {
  const std::int64_t B = s.n.B, T = s.n.T, I = s.n.I, H = s.n.H, G = 4 * H;
  const Tensor bias = summed_bias<float>(w);
  float* a = s.gates.data<float>();
  // An int8 model's weights when nothing records (decoding), else W packed now.
  const bool int8 = w.int8_ih && !GradMode::enabled();
  const blas::PackedMatrix w_hh = int8 ? *w.int8_hh : blas::PackedMatrix(w.weight_hh.data<float>(), G, H, H);
  const blas::PackedMatrix w_ih = int8 ? *w.int8_ih : blas::PackedMatrix(w.weight_ih.data<float>(), G, I, I);
  // a = x @ W_ih^T   (B*T, 4H): the input's share of every step's gates, one GEMM
  blas::gemm_packed(B * T, s.x.data<float>(), I, w_ih, 0.0f, a, G);
  for (std::int64_t k = 0; k < T; ++k) {
    const std::int64_t t = s.step(k);
    // a[:, t] += h_prev[:, t] @ W_hh^T   (B, 4H): the recurrent share, one GEMM per step
    blas::gemm_packed(B, s.h_prev.data<float>() + t * H, T * H, w_hh, 1.0f, a + t * G, T * G);
    forward_rows<float>(s, out, bias.data<float>(), t, k == T - 1);
  }
}

// float64: OpenBLAS; small batches multiply by a transposed copy of W_hh, on
// which OpenBLAS runs faster for them (see kTransposedWeightsBelow).
void forward_steps(double, Saved& s, Outputs& out, const LSTMWeights& w) {
  const std::int64_t B = s.n.B, T = s.n.T, I = s.n.I, H = s.n.H, G = 4 * H;
  const Tensor bias = summed_bias<double>(w);
  double* a = s.gates.data<double>();
  const bool small = B < kTransposedWeightsBelow;
  const Tensor w_hh_t = small ? transpose(w.weight_hh.detach(), 0, 1) : Tensor();  // (H, 4H), a copy
  const double* w_hh = small ? w_hh_t.data<double>() : w.weight_hh.data<double>();
  // a = x @ W_ih^T   (B*T, 4H): the input's share of every step's gates, one GEMM
  blas::gemm(false, true, B * T, G, I, 1.0, s.x.data<double>(), I, w.weight_ih.data<double>(), I, 0.0, a, G);
  for (std::int64_t k = 0; k < T; ++k) {
    const std::int64_t t = s.step(k);
    // a[:, t] += h_prev[:, t] @ W_hh^T   (B, 4H): the recurrent share, one GEMM per step
    blas::gemm(false, !small, B, G, H, 1.0, s.h_prev.data<double>() + t * H, T * H, w_hh, small ? G : H, 1.0,
               a + t * G, T * G);
    forward_rows<double>(s, out, bias.data<double>(), t, k == T - 1);
  }
}

// ---- backward: the paths share the gate rows, and differ in their GEMMs -------

// The gate rows of step t, backward. A real row gives da (into da + b * ld),
// passes dc on to c_prev and adds to db; its dh is then zeroed, since h_prev
// reaches the loss only through this step's gates and the GEMM after this gives
// all of dh_prev. A padding row passed the state through: dh and dc pass
// through too, and its da is 0.
template <class F>
void backward_rows(const Saved& s, std::int64_t t, const F* dy, F* dh, F* dc, F* da, std::int64_t ld, F* db) {
  const std::int64_t B = s.n.B, T = s.n.T, H = s.n.H, G = 4 * H;
  const F* a = s.gates.data<F>();
  const F* cp = s.c_prev.data<F>();
  const F* tc = s.tanh_c.data<F>();
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t row = b * T + t;
    // The rows two ahead are asked for: a row's values are T rows apart from the
    // next's, too far for the hardware prefetcher to follow.
    if (b + 2 < B) {
      const std::int64_t ahead = row + 2 * T;
      prefetch_run(a + ahead * G, G);
      for (const F* rows : {cp, tc, dy}) prefetch_run(rows + ahead * H, H);
    }
    if (t < s.lengths[static_cast<std::size_t>(b)]) {
      // forward: y[b, t] = h   (h is both this step's output and the next step's h_prev)
      // forward: i, f, g, o;  c = f * c_prev + i * g;  h = o * tanh(c)   (lstm_kernels.cpp)
      // forward: a = ... + b_ih + b_hh   ->   db_ih += da;  db_hh += da
      lstm_kernels::backward_row(H, a + row * G, cp + row * H, tc + row * H, dh + b * H, dy + row * H, dc + b * H,
                                 da + b * ld, db);
      std::memset(dh + b * H, 0, static_cast<std::size_t>(H) * sizeof(F));
    } else {
      std::memset(da + b * ld, 0, static_cast<std::size_t>(G) * sizeof(F));
    }
  }
}

// The gradients both paths finish alike: the state that reaches the first step
// is the initial state's, and db (4H) goes to both biases.
void add_state_and_bias_grads(Grads& g, const Tensor& dh, const Tensor& dc, const Tensor& db) {
  if (g.needs(1)) g.dx(1).add_(dh);
  if (g.needs(2)) g.dx(2).add_(dc);
  if (g.needs(5)) g.dx(5).add_(db);
  if (g.needs(6)) g.dx(6).add_(db);
}

// float32 keeps one step's da (B, 4H) and uses it while it is in cache: dx of
// the step, dh_prev, and the step's columns of da^T (4H, T*B), which the weight
// gradients take as rows after the loop. Its columns run step-major: column
// t*B + b is row (b, t) of da. Rows of da are ld = 4H + 16 apart: at 4H = 1,024
// floats, rows a whole number of pages apart all fell in the same L1 set.
void backward_steps(float, Grads& g, const Saved& s) {
  const std::int64_t B = s.n.B, T = s.n.T, I = s.n.I, H = s.n.H, G = 4 * H, ld = G + 16;
  Tensor dh = g.dy(1).clone();  // dh, dc (B, H): the gradient of the state between steps, from h_n and c_n
  Tensor dc = g.dy(2).clone();
  // W_hh^T (H, 4H) and W_ih^T (I, 4H), packed once for the T products: dh_prev = da @ W_hh, dx = da @ W_ih
  const blas::PackedMatrix w_hh = blas::PackedMatrix::from_transposed(s.w_hh.data<float>(), H, G, H);
  const blas::PackedMatrix w_ih =
      g.needs(0) ? blas::PackedMatrix::from_transposed(s.w_ih.data<float>(), I, G, I) : blas::PackedMatrix();
  Tensor da_step = empty({B, ld}, Float32);
  const bool bias_grad = g.needs(5) || g.needs(6), weight_grads = g.needs(3) || g.needs(4);
  Tensor db = zeros({bias_grad ? G : 0}, Float32);  // sum over the real rows of da, gathered by the gate rows
  Tensor da_t = weight_grads ? empty({G, T * B}, Float32) : Tensor();
  float* da = da_step.data<float>();
  for (std::int64_t k = T - 1; k >= 0; --k) {
    const std::int64_t t = s.step(k);
    backward_rows<float>(s, t, g.dy(0).data<float>(), dh.data<float>(), dc.data<float>(), da, ld,
                         bias_grad ? db.data<float>() : nullptr);
    // forward: a[:, t] += h_prev[:, t] @ W_hh^T   ->   dh_prev (B, H) += da[:, t] (B, 4H) @ W_hh (4H, H)
    // forward: a[:, t] = x[:, t] @ W_ih^T + ...   ->   dx[:, t] (B, I) += da[:, t] (B, 4H) @ W_ih (4H, I)
    // and da^T[:, t*B .. t*B + B] = da[:, t]^T   (4H, B)
    blas::gemm_packed(B, da, ld, w_hh, 1.0f, dh.data<float>(), H);
    if (g.needs(0)) blas::gemm_packed(B, da, ld, w_ih, 1.0f, g.dx(0).data<float>() + t * I, T * I);
    if (weight_grads) transpose_tiles<float, false>(da, ld, da_t.data<float>() + t * B, T * B, B, G);
  }
  // forward: a = x @ W_ih^T + b_ih + h_prev @ W_hh^T + b_hh, on the packed kernel: da^T
  // as rows, and x and h_prev packed from their rows as the W^T of y = da^T @ W^T, in
  // da^T's column order: row (b, t) of x as W^T's row t*B + b.
  std::vector<const float*> rows(static_cast<std::size_t>(T * B));
  const auto packed_rows = [&](const Tensor& m, std::int64_t n) {
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t b = 0; b < B; ++b) rows[static_cast<std::size_t>(t * B + b)] = m.data<float>() + (b * T + t) * n;
    return blas::PackedMatrix::from_transposed_rows(rows, n);
  };
  if (g.needs(3))  // dW_ih (4H, I) += da^T (4H, T*B) @ x (T*B, I)
    blas::gemm_packed(G, da_t.data<float>(), T * B, packed_rows(s.x, I), 1.0f, g.dx(3).data<float>(), I);
  if (g.needs(4))  // dW_hh (4H, H) += da^T (4H, T*B) @ h_prev (T*B, H)
    blas::gemm_packed(G, da_t.data<float>(), T * B, packed_rows(s.h_prev, H), 1.0f, g.dx(4).data<float>(), H);
  add_state_and_bias_grads(g, dh, dc, db);
}

// float64 keeps every step's da, (B, T, 4H) batch-major, for single GEMMs over
// all B*T rows after the loop (dx, dW_ih, dW_hh).
void backward_steps(double, Grads& g, const Saved& s) {
  const std::int64_t B = s.n.B, T = s.n.T, I = s.n.I, H = s.n.H, G = 4 * H, ld = T * G;
  Tensor dh = g.dy(1).clone();  // dh, dc (B, H): the gradient of the state between steps, from h_n and c_n
  Tensor dc = g.dy(2).clone();
  Tensor dgates = empty({B, T, G}, Float64);
  const bool bias_grad = g.needs(5) || g.needs(6);
  Tensor db = zeros({bias_grad ? G : 0}, Float64);  // sum over the real rows of da, gathered by the gate rows
  for (std::int64_t k = T - 1; k >= 0; --k) {
    const std::int64_t t = s.step(k);
    double* da = dgates.data<double>() + t * G;  // row b of step t at da + b * ld
    backward_rows<double>(s, t, g.dy(0).data<double>(), dh.data<double>(), dc.data<double>(), da, ld,
                          bias_grad ? db.data<double>() : nullptr);
    // forward: a[:, t] += h_prev[:, t] @ W_hh^T   ->   dh_prev (B, H) += da[:, t] (B, 4H) @ W_hh (4H, H)
    blas::gemm(false, false, B, H, G, 1.0, da, ld, s.w_hh.data<double>(), H, 1.0, dh.data<double>(), H);
  }
  // Every step at once, rows (b, t) of da against the same rows of x and h_prev:
  // forward: a = x @ W_ih^T + b_ih + h_prev @ W_hh^T + b_hh
  const double* da = dgates.data<double>();
  if (g.needs(0))  // dx (B*T, I) += da (B*T, 4H) @ W_ih (4H, I)
    blas::gemm(false, false, B * T, I, G, 1.0, da, G, s.w_ih.data<double>(), I, 1.0, g.dx(0).data<double>(), I);
  if (g.needs(3))  // dW_ih (4H, I) += da^T (4H, B*T) @ x (B*T, I)
    blas::gemm(true, false, G, I, B * T, 1.0, da, G, s.x.data<double>(), I, 1.0, g.dx(3).data<double>(), I);
  if (g.needs(4))  // dW_hh (4H, H) += da^T (4H, B*T) @ h_prev (B*T, H)
    blas::gemm(true, false, G, H, B * T, 1.0, da, G, s.h_prev.data<double>(), H, 1.0, g.dx(4).data<double>(), H);
  add_state_and_bias_grads(g, dh, dc, db);
}

}  // namespace

LSTMSequenceOutput lstm_sequence(const Tensor& x, const LSTMState& initial, const LSTMWeights& w,
                                 const std::vector<std::int64_t>& lengths, bool reverse) {
  const char* op = "lstm_sequence";
  const SequenceSizes n = check_sequence(op, x, initial, w);
  const DType dt = x.dtype();
  Saved s{x.detach(),
          w.weight_ih.detach(),
          w.weight_hh.detach(),
          empty({n.B, n.T, 4 * n.H}, dt),
          empty({n.B, n.T, n.H}, dt),
          empty({n.B, n.T, n.H}, dt),
          empty({n.B, n.T, n.H}, dt),
          check_lengths(op, lengths, n.B, n.T),
          n,
          reverse ? n.T - 1 : 0,
          reverse ? -1 : 1};
  Outputs out{empty({n.B, n.T, n.H}, dt), empty({n.B, n.H}, dt), empty({n.B, n.H}, dt)};
  dispatch(dt, [&](auto zero) {
    start_states<decltype(zero)>(s, initial);
    forward_steps(zero, s, out, w);
  });
  record(op, {x, initial.h, initial.c, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh}, {&out.y, &out.h_n, &out.c_n},
         [s = std::move(s)](Grads& g) { dispatch(s.x.dtype(), [&](auto zero) { backward_steps(zero, g, s); }); })
      .replay({"x", "h_0", "c_0", "weight_ih", "weight_hh", "bias_ih", "bias_hh"},
              [lengths, reverse](const Tensors& in) {
                const LSTMSequenceOutput o =
                    lstm_sequence(in[0], {in[1], in[2]}, {in[3], in[4], in[5], in[6]}, lengths, reverse);
                return Tensors{o.output, o.final.h, o.final.c};
              });
  return {out.y, {out.h_n, out.c_n}};
}

// The oracle: each sequence alone, cut to its real length, step by step through
// lstm_cell_composed; its outputs are put back in place with zeros for padding.
LSTMSequenceOutput lstm_sequence_composed(const Tensor& x, const LSTMState& initial, const LSTMWeights& w,
                                          const std::vector<std::int64_t>& lengths_in, bool reverse) {
  const char* op = "lstm_sequence_composed";
  const SequenceSizes sizes = check_sequence(op, x, initial, w);  // not bound: lambdas capture these (clang 14)
  const std::int64_t B = sizes.B, T = sizes.T, I = sizes.I, H = sizes.H;
  const std::vector<std::int64_t> lengths = check_lengths(op, lengths_in, B, T);
  const Tensor padding = zeros({1, H}, x.dtype());
  std::vector<Tensor> outputs, hs, cs;
  for (std::int64_t b = 0; b < B; ++b) {
    const Tensor xb = slice(x, 0, b, b + 1);  // (1, T, I)
    LSTMState state{slice(initial.h, 0, b, b + 1), slice(initial.c, 0, b, b + 1)};  // (1, H)
    std::vector<Tensor> steps(static_cast<std::size_t>(T), padding);
    const std::int64_t n = lengths[b];
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t t = reverse ? n - 1 - k : k;
      state = lstm_cell_composed(reshape(slice(xb, 1, t, t + 1), {1, I}), state, w);
      steps[t] = state.h;
    }
    outputs.push_back(stack(steps, 1));  // (1, T, H)
    hs.push_back(state.h);
    cs.push_back(state.c);
  }
  return {concat(outputs, 0), {concat(hs, 0), concat(cs, 0)}};
}

}  // namespace attend::nn
