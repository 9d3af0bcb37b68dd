// One direction of one LSTM layer over a whole batch of sequences as one fused
// op, and the same built from lstm_cell_composed steps (the oracle).
//
// Learning? Read lstm_cell_composed in layers/lstm/lstm_cell.cpp first: the same
// step from primitive ops (linear, slice, sigmoid, tanh, mul, add), whose
// backward autograd derives; `attend explain --lstm` prints every gradient of
// it. The fused backward spans three files:
//   lstm_cell.cpp       the one-step op: the GEMMs, then the gate rows (backward: the lambda)
//   lstm_sequence.cpp   the whole-sequence op: the same gate rows, the GEMMs batched over time
//   lstm_kernels.cpp    the gate math of one row, forward and backward (lstm_kernels.hpp)
//
// Layout: every saved buffer is batch-major like x, (B, T, ...), so that row
// b*T + t of each belongs to sequence b at step t. The input projection is then
// one GEMM over all B*T rows, and the per-step GEMMs read and write the B rows
// of step t with a row stride of T rows. The backward (float32) keeps one
// step's da and builds da^T step-major, column t*B + b; float64 keeps every
// step's da, batch-major, for single GEMMs (dx, dW_ih, dW_hh) after the loop.
#include <cstring>
#include <initializer_list>
#include <type_traits>
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

}  // namespace

LSTMSequenceOutput lstm_sequence(const Tensor& x, const LSTMState& initial, const LSTMWeights& w,
                                 const std::vector<std::int64_t>& lengths_in, bool reverse) {
  const char* op = "lstm_sequence";
  const SequenceSizes sizes = check_sequence(op, x, initial, w);  // not bound: lambdas capture these (clang 14)
  const std::int64_t B = sizes.B, T = sizes.T, I = sizes.I, H = sizes.H;
  std::vector<std::int64_t> lengths = check_lengths(op, lengths_in, B, T);
  const std::int64_t G = 4 * H;  // the width of a row of gates
  const DType dt = x.dtype();
  // Saved for the backward, one row per (b, t):
  Tensor gates = empty({B, T, G}, dt);  // pre-activations, then the activations i, f, g, o
  Tensor h_prev = empty({B, T, H}, dt);  // the state each step starts from
  Tensor c_prev = empty({B, T, H}, dt);
  Tensor tanh_c = empty({B, T, H}, dt);
  Tensor y = empty({B, T, H}, dt);
  Tensor h_n = empty({B, H}, dt);
  Tensor c_n = empty({B, H}, dt);
  // Steps in the order they run: t = first, first + dir, ...
  const std::int64_t first = reverse ? T - 1 : 0, dir = reverse ? -1 : 1;

  dispatch(dt, [&](auto zero) {
    using F = decltype(zero);
    F* a = gates.data<F>();
    F* hp = h_prev.data<F>();
    F* cp = c_prev.data<F>();
    F* tc = tanh_c.data<F>();
    F* py = y.data<F>();
    Tensor bias = empty({G}, dt);  // b_ih + b_hh
    const F* pb_ih = w.bias_ih.data<F>();
    const F* pb_hh = w.bias_hh.data<F>();
    for (std::int64_t k = 0; k < G; ++k) bias.data<F>()[k] = pb_ih[k] + pb_hh[k];
    const F* pb = bias.data<F>();
    // The recurrent product runs T times with the same W_hh. float32 multiplies
    // by W_hh packed once here (core/kernels/packed_gemm.hpp: OpenBLAS would pack it at
    // every step). float64 small batches multiply by a transposed copy: OpenBLAS
    // is faster on plain than on transposed operands for them (see
    // LSTMWeights::weight_hh_t).
    constexpr bool packed = std::is_same_v<F, float>;
    blas::PackedMatrix w_hh_packed;
    if constexpr (packed) w_hh_packed = blas::PackedMatrix(w.weight_hh.data<F>(), G, H, H);
    const bool small = !packed && B < kTransposedWeightsBelow;
    Tensor w_hh_t = small ? transpose(w.weight_hh.detach(), 0, 1) : Tensor();  // (H, 4H), a copy
    const F* w_hh = small ? w_hh_t.data<F>() : w.weight_hh.data<F>();

    // a = x @ W_ih^T   (B*T, 4H): the input's share of every step's gates, one GEMM
    // (float32 packed too: where the kernel has AVX-512 and OpenBLAS does not use
    // it, its vectors are twice as wide; where both run AVX2 the two are about
    // level; bench_packed times this shape)
    if constexpr (packed)
      blas::gemm_packed(B * T, x.data<F>(), I, blas::PackedMatrix(w.weight_ih.data<F>(), G, I, I), F(0), a, G);
    else
      blas::gemm(false, true, B * T, G, I, F(1), x.data<F>(), I, w.weight_ih.data<F>(), I, F(0), a, G);
    for (std::int64_t b = 0; b < B; ++b) {
      copy_row(hp + (b * T + first) * H, initial.h.data<F>() + b * H, H);
      copy_row(cp + (b * T + first) * H, initial.c.data<F>() + b * H, H);
    }
    for (std::int64_t s = 0; s < T; ++s) {
      const std::int64_t t = first + s * dir;
      const bool last = s == T - 1;
      // a[:, t] += h_prev[:, t] @ W_hh^T   (B, 4H): the recurrent share, one GEMM per step
      if constexpr (packed)
        blas::gemm_packed(B, hp + t * H, T * H, w_hh_packed, F(1), a + t * G, T * G);
      else
        blas::gemm(false, !small, B, G, H, F(1), hp + t * H, T * H, w_hh, small ? G : H, F(1), a + t * G, T * G);
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t row = b * T + t;
        // where the state after this step goes: the next step's h_prev/c_prev, or the final state
        F* h_next = last ? h_n.data<F>() + b * H : hp + (row + dir) * H;
        F* c_next = last ? c_n.data<F>() + b * H : cp + (row + dir) * H;
        if (t < lengths[b]) {
          // i, f, g, o;  c = f * c_prev + i * g;  h = o * tanh(c)
          // (y[b, t] = h too)
          lstm_kernels::forward_row(H, a + row * G, pb, cp + row * H, c_next, tc + row * H, h_next, py + row * H);
        } else {
          // padding: the state passes through unchanged, the output is 0
          copy_row(h_next, hp + row * H, H);
          copy_row(c_next, cp + row * H, H);
          std::memset(py + row * H, 0, static_cast<std::size_t>(H) * sizeof(F));
          std::memset(tc + row * H, 0, static_cast<std::size_t>(H) * sizeof(F));
        }
      }
    }
  });

  record(op, {x, initial.h, initial.c, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh}, {&y, &h_n, &c_n},
         [x = x.detach(), w_ih = w.weight_ih.detach(), w_hh = w.weight_hh.detach(), gates, h_prev, c_prev, tanh_c,
          lengths = std::move(lengths), B = B, T = T, I = I, H = H, G, first, dir](Grads& g) {
           dispatch(x.dtype(), [&](auto zero) {
             using F = decltype(zero);
             const F* dy = g.dy(0).data<F>();
             // dh, dc (B, H): the gradient of the state between steps, starting from h_n and c_n
             Tensor dh = g.dy(1).clone();
             Tensor dc = g.dy(2).clone();
             F* pdh = dh.data<F>();
             F* pdc = dc.data<F>();
             const F* a = gates.data<F>();
             const F* cp = c_prev.data<F>();
             const F* tc = tanh_c.data<F>();
             // float32: W_hh (and W_ih) packed once for the T products below, as in the forward
             constexpr bool packed = std::is_same_v<F, float>;
             blas::PackedMatrix w_hh_packed;  // holds W_hh^T (H, 4H): dh_prev = da @ W_hh
             blas::PackedMatrix w_ih_packed;  // holds W_ih^T (I, 4H): dx = da @ W_ih
             if constexpr (packed) {
               w_hh_packed = blas::PackedMatrix::from_transposed(w_hh.data<F>(), H, G, H);
               if (g.needs(0)) w_ih_packed = blas::PackedMatrix::from_transposed(w_ih.data<F>(), I, G, I);
             }
             // da, the gradient of the pre-activations. float32 keeps one step's (B, 4H),
             // rows ld = 4H + 16 apart (at 4H = 1,024 floats, a whole number of pages
             // apart, every row fell in the same L1 set), and uses it while it is in
             // cache: dx of the step, dh_prev, and a step's columns of da^T. Kept for
             // every step, (B*T, 4H) as 7.8 MB at B=64 T=30 H=256, it went out to
             // memory and came back for the products after the loop. float64 keeps
             // every step's, (B, T, 4H), for those products.
             const std::int64_t ld = packed ? G + 16 : T * G;
             Tensor dgates = packed ? empty({B, ld}, x.dtype()) : empty({B, T, G}, x.dtype());
             // db (4H) = sum over the real rows of da, gathered by the gate loop while
             // each row is in registers
             const bool bias_grad = g.needs(5) || g.needs(6);
             Tensor db = zeros({bias_grad ? G : 0}, x.dtype());
             F* pdb = bias_grad ? db.data<F>() : nullptr;
             // float32 weight gradients take da^T (4H, T*B) as rows (the packed kernel's
             // x), transposed a step at a time. Its columns run step-major: column
             // t*B + b is row (b, t) of da.
             const bool weight_grads = packed && (g.needs(3) || g.needs(4));
             Tensor da_t = weight_grads ? empty({G, T * B}, x.dtype()) : Tensor();
             for (std::int64_t s = T - 1; s >= 0; --s) {
               const std::int64_t t = first + s * dir;
               F* da = packed ? dgates.data<F>() : dgates.data<F>() + t * G;  // row b of step t at da + b * ld
               for (std::int64_t b = 0; b < B; ++b) {
                 const std::int64_t row = b * T + t;
                 // The rows two ahead are asked for: a row's values are T rows apart
                 // from the next's and come from L3 (bench_lstm times the backward)
                 if (b + 2 < B) {
                   const std::int64_t ahead = row + 2 * T;
                   prefetch_run(a + ahead * G, G);
                   for (const F* rows : {cp, tc, dy}) prefetch_run(rows + ahead * H, H);
                 }
                 if (t < lengths[b]) {
                   // forward: y[b, t] = h   (h is both this step's output and the next step's h_prev)
                   // forward: i, f, g, o;  c = f * c_prev + i * g;  h = o * tanh(c)   (lstm_kernels.cpp)
                   // forward: a = ... + b_ih + b_hh   ->   db_ih += da;  db_hh += da
                   lstm_kernels::backward_row(H, a + row * G, cp + row * H, tc + row * H, pdh + b * H, dy + row * H,
                                              pdc + b * H, da + b * ld, pdb);
                   // h_prev reaches the loss only through this step's gates: the GEMM below
                   // gives all of dh_prev
                   std::memset(pdh + b * H, 0, static_cast<std::size_t>(H) * sizeof(F));
                 } else {
                   // forward: padding passed the state through   ->  dh, dc pass through too
                   std::memset(da + b * ld, 0, static_cast<std::size_t>(G) * sizeof(F));
                 }
               }
               // forward: a[:, t] += h_prev[:, t] @ W_hh^T   ->   dh_prev (B, H) += da[:, t] (B, 4H) @ W_hh (4H, H)
               // forward: a[:, t] = x[:, t] @ W_ih^T + ...   ->   dx[:, t] (B, I) += da[:, t] (B, 4H) @ W_ih (4H, I)
               // and da^T[:, t*B .. t*B + B] = da[:, t]^T   (4H, B)
               if constexpr (packed) {
                 blas::gemm_packed(B, da, ld, w_hh_packed, F(1), pdh, H);
                 if (g.needs(0)) blas::gemm_packed(B, da, ld, w_ih_packed, F(1), g.dx(0).data<F>() + t * I, T * I);
                 if (weight_grads) transpose_tiles<F, false>(da, ld, da_t.data<F>() + t * B, T * B, B, G);
               } else {
                 blas::gemm(false, false, B, H, G, F(1), da, ld, w_hh.data<F>(), H, F(1), pdh, H);
               }
             }
             // what reaches the first step is the gradient of the initial state
             if (g.needs(1)) g.dx(1).add_(dh);
             if (g.needs(2)) g.dx(2).add_(dc);
             // float64: every step at once, rows (b, t) of da against the same rows of x and h_prev:
             // forward: a = x @ W_ih^T + b_ih + h_prev @ W_hh^T + b_hh
             const F* da = dgates.data<F>();
             if (!packed && g.needs(0))  // dx (B*T, I) += da (B*T, 4H) @ W_ih (4H, I)
               blas::gemm(false, false, B * T, I, G, F(1), da, G, w_ih.data<F>(), I, F(1), g.dx(0).data<F>(), I);
             if constexpr (packed) {
               // The same two products on the packed kernel: da^T as rows, and x and h_prev
               // packed from their rows as the W^T of y = da^T @ W^T, in da^T's column
               // order: row (b, t) of x as W^T's row t*B + b.
               if (weight_grads) {
                 std::vector<const F*> rows(static_cast<std::size_t>(T * B));
                 const auto packed_rows = [&](const Tensor& m, std::int64_t n) {
                   for (std::int64_t t = 0; t < T; ++t)
                     for (std::int64_t b = 0; b < B; ++b)
                       rows[static_cast<std::size_t>(t * B + b)] = m.data<F>() + (b * T + t) * n;
                   return blas::PackedMatrix::from_transposed_rows(rows, n);
                 };
                 if (g.needs(3))  // dW_ih (4H, I) += da^T (4H, T*B) @ x (T*B, I)
                   blas::gemm_packed(G, da_t.data<F>(), T * B, packed_rows(x, I), F(1), g.dx(3).data<F>(), I);
                 if (g.needs(4))  // dW_hh (4H, H) += da^T (4H, T*B) @ h_prev (T*B, H)
                   blas::gemm_packed(G, da_t.data<F>(), T * B, packed_rows(h_prev, H), F(1), g.dx(4).data<F>(), H);
               }
             } else {
               if (g.needs(3))  // dW_ih (4H, I) += da^T (4H, B*T) @ x (B*T, I)
                 blas::gemm(true, false, G, I, B * T, F(1), da, G, x.data<F>(), I, F(1), g.dx(3).data<F>(), I);
               if (g.needs(4))  // dW_hh (4H, H) += da^T (4H, B*T) @ h_prev (B*T, H)
                 blas::gemm(true, false, G, H, B * T, F(1), da, G, h_prev.data<F>(), H, F(1), g.dx(4).data<F>(), H);
             }
             if (g.needs(5)) g.dx(5).add_(db);
             if (g.needs(6)) g.dx(6).add_(db);
           });
         })
      .replay({"x", "h_0", "c_0", "weight_ih", "weight_hh", "bias_ih", "bias_hh"},
                 [lengths = lengths_in, reverse](const Tensors& in) {
                   const LSTMSequenceOutput out =
                       lstm_sequence(in[0], {in[1], in[2]}, {in[3], in[4], in[5], in[6]}, lengths, reverse);
                   return Tensors{out.output, out.final.h, out.final.c};
                 });
  return {y, {h_n, c_n}};
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
