#pragma once
// The exercises: six backwards to write, in this order (docs/exercises.md says
// what each teaches and gives hints). Each function receives what the op's
// forward saved and the gradient of its outputs, and ADDS the gradient of each
// input into the tensor given for it (zero-filled, the input's shape). Write
// them with attend's tensor ops (autograd/ops.hpp: +, -, *, sum(x, axis,
// keepdim), reshape, matmul, transpose, ...); nothing here is recorded.
//
// Fill them in in tests/exercises/answers.cpp, then run
//   cmake --build --preset release --target exercises
// which builds the grader with your answers and runs it: each exercise is
// checked by attend::gradcheck, and a wrong one is reported with the input and
// the element that disagree, and a hint.
//
// Letters: B batch, S source positions, D score size, H hidden (value) size,
// N rows, V classes, I input size, A attention size.
#include "autograd/ops.hpp"

namespace attend::exercises {

// 1. y = softmax(x) along the last axis, x and y (N, V).
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx);

// 2. y = masked_softmax(x, mask) along the last axis: y is 0 where mask is 0,
//    and a row with nothing kept is all 0. x, y, mask (N, V); mask holds 1 and 0.
void masked_softmax_backward(const Tensor& y, const Tensor& mask, const Tensor& dy, Tensor& dx);

// 3. loss = mean_i -log softmax(z_i)[t_i], z (N, V), targets t (N); p = softmax(z)
//    (N, V) and the one-hot targets onehot (N, V) are given. dloss is a scalar (rank 0).
void cross_entropy_backward(const Tensor& p, const Tensor& onehot, const Tensor& dloss, Tensor& dz);

// 4. Additive (Bahdanau) scores: t = tanh(k_j + q), e_j = v . t_j
//    q (B, A), k (B, S, A), v (A), t (B, S, A), e and de (B, S).
void additive_score_backward(const Tensor& t, const Tensor& v, const Tensor& de, Tensor& dq, Tensor& dk, Tensor& dv);

// 5. One dot-product attention step:
//      e_j = scale * (k_j . q),  alpha = masked_softmax(e, mask),  c = sum_j alpha_j h_j
//    q (B, D), k (B, S, D), h (B, S, H), alpha and mask (B, S), c and dc (B, H).
void dot_attention_backward(const Tensor& q, const Tensor& k, const Tensor& h, const Tensor& alpha, double scale,
                            const Tensor& dc, Tensor& dq, Tensor& dk, Tensor& dh);

// 6. One LSTM cell step (PyTorch's layout, gates in the order i, f, g, o):
//      a = x W_ih^T + h_prev W_hh^T + b_ih + b_hh                         (B, 4H)
//      i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o)   (B, H) each
//      c = f * c_prev + i * g,   h = o * tanh(c)
//    x (B, I), h_prev and c_prev (B, H), W_ih (4H, I), W_hh (4H, H), b_ih and b_hh (4H).
struct LSTMSaved {
  Tensor x, h_prev, c_prev, W_ih, W_hh;
  Tensor i, f, g, o, tanh_c;  // the gate activations and tanh(c), (B, H) each
};
struct LSTMGrads {  // add into each
  Tensor& dx;
  Tensor& dh_prev;
  Tensor& dc_prev;
  Tensor& dW_ih;
  Tensor& dW_hh;
  Tensor& db_ih;
  Tensor& db_hh;
};
void lstm_cell_backward(const LSTMSaved& s, const Tensor& dh, const Tensor& dc, const LSTMGrads& g);

}  // namespace attend::exercises
