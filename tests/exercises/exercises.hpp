#pragma once
// The exercises: nine backwards to derive and write, in this order
// (docs/exercises.md gives the path and the time each takes). Each function
// receives what the op's forward saved and the gradient of its outputs, and
// ADDS the gradient of each input into the slot given for it (the input's
// shape): dx += ... (Tensor's +=, which is add_). Never assign: a slot may
// already hold gradient (another use of the same input; here, the random values
// the grader seeds it with, exactly so that an assignment shows). Write them
// with attend's tensor ops (autograd/ops.hpp: + - * /, sum(x, axis, keepdim),
// reshape, matmul, transpose, concat, ...); nothing here is recorded.
//
// Fill them in in tests/exercises/answers.cpp, then run
//   cmake --build --preset release --target exercises
// which builds the grader with your answers and runs it. Each exercise is
// checked by attend::gradcheck on inputs drawn afresh from a seed the grader
// prints (--seed N replays them); a wrong one is reported with the gradient
// and the element that disagree, and a hint: the idea first, then the shape of
// the formula, then the formula, one more each time it fails.
//
// Notation of docs/backprop-through-attention.md. Letters: B batch, S source
// positions, A attention size, d dot-product score size, Hk the values' size,
// H hidden size, I input size, N rows, V classes. Formulas are for one example,
// column vectors (y = W x + b); the tensors hold a batch of rows (Y = X W^T + b).
#include <cstdint>
#include <vector>

#include "autograd/ops.hpp"

namespace attend::exercises {

// ---- Warm-up: the engine, on scalars (micrograd's and minitorch's first steps) ----

enum class Op { Leaf, Add, Mul, Div, Tanh, Exp };

// 1. One scalar op, y = a + b, a * b, a / b, tanh(a) or exp(a) (the last two read
//    a only; b is then 0 and db is not checked). y is the op's output. Add the
//    chain rule's terms:  da += dy * ∂y/∂a,  db += dy * ∂y/∂b.
void scalar_backward(Op op, double a, double b, double y, double dy, double& da, double& db);

// 2. A tiny graph of scalars. A node reads graph[a] (and graph[b]); the nodes
//    are stored in no particular order, so a node may come before what it reads.
struct Scalar {
  Op op = Op::Leaf;
  int a = -1, b = -1;  // the nodes it reads; -1: none
  double value = 0;    // computed by the grader
  double grad = 0;     // ∂L/∂(this node), 0 to start with: add into it
};
// 2a. Every node that `root` depends on, `root` included, each once, each after
//     the nodes it reads (a depth-first search).
std::vector<int> topological_order(const std::vector<Scalar>& graph, int root);
// 2b. L = graph[root].value. Add ∂L/∂node into every node's grad (the root's is
//     1), calling scalar_backward for each node, in an order in which a node's
//     grad is complete before it is passed on. Graded against attend's engine.
void backward(std::vector<Scalar>& graph, int root);

// ---- Single ops ----

// 3. y = softmax(x) along the last axis; x, y, dy, dx (N, V).
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx);

// 4. L = mean_n −log softmax(z_n)[t_n], z (N, V), targets t (N); p = softmax(z)
//    (N, V) and the one-hot targets onehot (N, V) are given. dL is a scalar (rank 0).
void cross_entropy_backward(const Tensor& p, const Tensor& onehot, const Tensor& dL, Tensor& dz);

// ---- Attention ----

// 5. Additive (Bahdanau) scores: t_j = tanh(k_j + q), e_j = v · t_j.
//    q (B, A), k (B, S, A), v (A), t (B, S, A), e and de (B, S).
void additive_score_backward(const Tensor& t, const Tensor& v, const Tensor& de, Tensor& dq, Tensor& dk, Tensor& dv);

// 6. A whole additive attention step whose keys and values are the same h:
//      k_j = W_k h_j,  t_j = tanh(k_j + q),  e_j = v · t_j,
//      α = masked_softmax(e, mask),  c = Σ_j α_j h_j
//    h (B, S, Hk), W_k (A, Hk), v (A), q (B, A), t (B, S, A), α and mask (B, S)
//    (mask 1 keeps a position, 0 pads it), c and dc (B, Hk). You produce ∂L/∂α,
//    ∂L/∂e and both paths into ∂L/∂h_j.
void additive_attention_backward(const Tensor& h, const Tensor& W_k, const Tensor& v, const Tensor& t,
                                 const Tensor& alpha, const Tensor& mask, const Tensor& dc, Tensor& dh, Tensor& dW_k,
                                 Tensor& dv, Tensor& dq);

// 7. One dot-product attention step:
//      e_j = λ k_j · q,  α = masked_softmax(e, mask),  c = Σ_j α_j h_j
//    q (B, d), k (B, S, d), h (B, S, Hk), α and mask (B, S), c and dc (B, Hk).
void dot_attention_backward(const Tensor& q, const Tensor& k, const Tensor& h, const Tensor& alpha,
                            const Tensor& mask, double lambda, const Tensor& dc, Tensor& dq, Tensor& dk, Tensor& dh);

// ---- The LSTM cell ----

// 8. One LSTM cell step (PyTorch's layout, gates in the order i, f, g, o):
//      a = W_ih x + b_ih + W_hh h_prev + b_hh                                 (4H)
//      i = σ(a_i), f = σ(a_f), g = tanh(a_g), o = σ(a_o)                      (H) each
//      c = f ⊙ c_prev + i ⊙ g,   h = o ⊙ tanh(c)
//    Batched: x (B, I), h_prev and c_prev (B, H), W_ih (4H, I), W_hh (4H, H),
//    b_ih and b_hh (4H); a = x W_ih^T + h_prev W_hh^T + b_ih + b_hh is (B, 4H).
struct LSTMSaved {
  Tensor x, h_prev, c_prev, W_ih, W_hh;
  Tensor i, f, g, o, tanh_c;  // the gate activations and tanh(c), (B, H) each
};
struct LSTMGrads {  // the slots: add into each
  Tensor& dx;
  Tensor& dh_prev;
  Tensor& dc_prev;
  Tensor& dW_ih;
  Tensor& dW_hh;
  Tensor& db_ih;
  Tensor& db_hh;
};
void lstm_cell_backward(const LSTMSaved& s, const Tensor& dh, const Tensor& dc, const LSTMGrads& grads);

// ---- A fused op and its composed oracle ----

// 9. The masked softmax and the context as ONE op, its backward written in loops
//    over the numbers, as attend's fused attention does
//    (layers/attention/attention_rows.cpp):
//      α = masked_softmax(e, mask),  c = Σ_j α_j h_j
//    α (B, S), 0 exactly at the positions the mask pads; h (B, S, Hk), dc (B, Hk);
//    the slots de (B, S), dh (B, S, Hk). (The mask itself is not needed: why?)
//    No tensor ops: read alpha.data<double>() and the others, and add into
//    de.data<double>()[...] and dh.data<double>()[...] (row-major: h[b][j][m] is
//    element (b * S + j) * Hk + m). Graded by gradcheck and against the same op
//    composed of masked_softmax and matmul, whose backward autograd derives.
void softmax_context_backward(const Tensor& alpha, const Tensor& h, const Tensor& dc, Tensor& de, Tensor& dh);

}  // namespace attend::exercises
