// Typical wrong answers, one per exercise, that the test suite grades to check
// that each is caught, with the gradient it gets wrong and the first hint.
#include <functional>

#include "tests/exercises/exercises.hpp"

namespace attend::exercises {

// The sign of ∂(a/b)/∂b = −a/b² lost.
void scalar_backward(Op op, double a, double b, double y, double dy, double& da, double& db) {
  switch (op) {
    case Op::Add: da += dy; db += dy; break;
    case Op::Mul: da += dy * b; db += dy * a; break;
    case Op::Div: da += dy / b; db += dy * a / (b * b); break;
    case Op::Tanh: da += dy * (1 - y * y); break;
    case Op::Exp: da += dy * y; break;
    case Op::Leaf: break;
  }
}

// The nodes as they are stored, not sorted: a node may come before what it reads.
std::vector<int> topological_order(const std::vector<Scalar>& graph, int root) {
  std::vector<bool> reached(graph.size(), false);
  std::function<void(int)> mark = [&](int n) {
    if (n < 0 || reached[static_cast<std::size_t>(n)]) return;
    reached[static_cast<std::size_t>(n)] = true;
    mark(graph[static_cast<std::size_t>(n)].a);
    mark(graph[static_cast<std::size_t>(n)].b);
  };
  mark(root);
  std::vector<int> order;
  for (std::size_t n = 0; n < graph.size(); ++n)
    if (reached[n]) order.push_back(static_cast<int>(n));
  return order;
}

void backward(std::vector<Scalar>& graph, int root) {
  graph[static_cast<std::size_t>(root)].grad += 1;
  std::vector<int> order = topological_order(graph, root);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Scalar& n = graph[static_cast<std::size_t>(*it)];
    if (n.op == Op::Leaf) continue;
    double unused = 0;
    Scalar& a = graph[static_cast<std::size_t>(n.a)];
    double& db = n.b >= 0 ? graph[static_cast<std::size_t>(n.b)].grad : unused;
    const double b = n.b >= 0 ? graph[static_cast<std::size_t>(n.b)].value : 0;
    scalar_backward(n.op, a.value, b, n.value, n.grad, a.grad, db);
  }
}

// Only the diagonal of the softmax Jacobian: dy_i y_i (1 − y_i).
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) { dx += dy * y * (1.0 - y); }

// The mean's 1/N forgotten.
void cross_entropy_backward(const Tensor& p, const Tensor& onehot, const Tensor& dL, Tensor& dz) {
  dz += (p - onehot) * dL;
}

// 1 − t for tanh' = 1 − t².
void additive_score_backward(const Tensor& t, const Tensor& v, const Tensor& de, Tensor& dq, Tensor& dk, Tensor& dv) {
  const std::int64_t B = t.size(0), S = t.size(1);
  Tensor de3 = reshape(de, {B, S, 1});
  Tensor du = de3 * v * (1.0 - t);
  dq += sum(du, 1);
  dk += du;
  dv += sum(sum(de3 * t, 0), 0);
}

// ∂L/∂h_j along the values' path only: the keys' path W_kᵀ dk_j forgotten.
void additive_attention_backward(const Tensor& h, const Tensor& W_k, const Tensor& v, const Tensor& t,
                                 const Tensor& alpha, [[maybe_unused]] const Tensor& mask, const Tensor& dc, Tensor& dh,
                                 Tensor& dW_k, Tensor& dv, Tensor& dq) {
  const std::int64_t B = h.size(0), S = h.size(1), Hk = h.size(2), A = W_k.size(0);
  Tensor dc3 = reshape(dc, {B, 1, Hk});
  Tensor dalpha = sum(h * dc3, -1);
  Tensor de = alpha * (dalpha - sum(alpha * dalpha, -1, true));
  Tensor de3 = reshape(de, {B, S, 1});
  Tensor du = de3 * v * (1.0 - t * t);
  dv += sum(sum(de3 * t, 0), 0);
  dq += sum(du, 1);
  Tensor du_rows = reshape(du, {B * S, A});
  dW_k += matmul(transpose(du_rows, 0, 1), reshape(h, {B * S, Hk}));
  dh += reshape(alpha, {B, S, 1}) * dc3;
}

// The scores' factor λ forgotten in dq and dk.
void dot_attention_backward(const Tensor& q, const Tensor& k, const Tensor& h, const Tensor& alpha,
                            [[maybe_unused]] const Tensor& mask, [[maybe_unused]] double lambda, const Tensor& dc,
                            Tensor& dq, Tensor& dk, Tensor& dh) {
  const std::int64_t B = k.size(0), S = k.size(1), d = k.size(2), Hk = h.size(2);
  Tensor dc3 = reshape(dc, {B, 1, Hk});
  Tensor dalpha = sum(h * dc3, -1);
  dh += reshape(alpha, {B, S, 1}) * dc3;
  Tensor de = alpha * (dalpha - sum(alpha * dalpha, -1, true));
  Tensor de3 = reshape(de, {B, S, 1});
  dq += sum(de3 * k, 1);
  dk += de3 * reshape(q, {B, 1, d});
}

// dc_prev without the forget gate's factor f.
void lstm_cell_backward(const LSTMSaved& s, const Tensor& dh, const Tensor& dc, const LSTMGrads& grads) {
  Tensor dc_all = dc + dh * s.o * (1.0 - s.tanh_c * s.tanh_c);
  grads.dc_prev += dc_all;
  Tensor da_i = dc_all * s.g * s.i * (1.0 - s.i);
  Tensor da_f = dc_all * s.c_prev * s.f * (1.0 - s.f);
  Tensor da_g = dc_all * s.i * (1.0 - s.g * s.g);
  Tensor da_o = dh * s.tanh_c * s.o * (1.0 - s.o);
  Tensor da = concat({da_i, da_f, da_g, da_o}, 1);
  Tensor da_t = transpose(da, 0, 1);
  grads.dx += matmul(da, s.W_ih);
  grads.dh_prev += matmul(da, s.W_hh);
  grads.dW_ih += matmul(da_t, s.x);
  grads.dW_hh += matmul(da_t, s.h_prev);
  grads.db_ih += sum(da, 0);
  grads.db_hh += sum(da, 0);
}

// The right values, assigned to the slots (=) instead of added to them (+=).
void softmax_context_backward(const Tensor& alpha, const Tensor& h, const Tensor& dc, Tensor& de, Tensor& dh) {
  const std::int64_t B = h.size(0), S = h.size(1), Hk = h.size(2);
  const double *a = alpha.data<double>(), *hv = h.data<double>(), *g = dc.data<double>();
  double *de_p = de.data<double>(), *dh_p = dh.data<double>();
  std::vector<double> dalpha(static_cast<std::size_t>(S));
  for (std::int64_t b = 0; b < B; ++b) {
    double weighted = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      double dot = 0;
      for (std::int64_t m = 0; m < Hk; ++m) {
        dot += g[b * Hk + m] * hv[(b * S + j) * Hk + m];
        dh_p[(b * S + j) * Hk + m] = a[b * S + j] * g[b * Hk + m];
      }
      dalpha[static_cast<std::size_t>(j)] = dot;
      weighted += a[b * S + j] * dot;
    }
    for (std::int64_t j = 0; j < S; ++j)
      de_p[b * S + j] = a[b * S + j] * (dalpha[static_cast<std::size_t>(j)] - weighted);
  }
}

}  // namespace attend::exercises
