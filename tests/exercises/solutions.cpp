// Reference solutions of the exercises (docs/exercises.md). Try them yourself
// first, with the grader's staged hints: the test suite grades these, the
// untouched stubs and the typical wrong answers of wrong.cpp.
#include <cmath>
#include <functional>

#include "tests/exercises/exercises.hpp"

namespace attend::exercises {

// 1. The local derivatives, times dy, added.
//    y = a + b: ∂y/∂a = 1, ∂y/∂b = 1        y = a b: ∂y/∂a = b, ∂y/∂b = a
//    y = a / b: ∂y/∂a = 1/b, ∂y/∂b = −a/b²   y = tanh(a): 1 − y²     y = exp(a): y
void scalar_backward(Op op, double a, double b, double y, double dy, double& da, double& db) {
  switch (op) {
    case Op::Add: da += dy; db += dy; break;
    case Op::Mul: da += dy * b; db += dy * a; break;
    case Op::Div: da += dy / b; db += -dy * a / (b * b); break;
    case Op::Tanh: da += dy * (1 - y * y); break;
    case Op::Exp: da += dy * y; break;
    case Op::Leaf: break;
  }
}

// 2a. Depth first: a node goes in after everything it reads.
std::vector<int> topological_order(const std::vector<Scalar>& graph, int root) {
  std::vector<int> order;
  std::vector<bool> seen(graph.size(), false);
  std::function<void(int)> visit = [&](int n) {
    if (n < 0 || seen[static_cast<std::size_t>(n)]) return;
    seen[static_cast<std::size_t>(n)] = true;
    visit(graph[static_cast<std::size_t>(n)].a);
    visit(graph[static_cast<std::size_t>(n)].b);
    order.push_back(n);
  };
  visit(root);
  return order;
}

// 2b. Reverse topological order: every consumer of a node has added its share
//     to the node's grad before the node passes it on.
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

// 3. y = softmax(x)   dx += y * (dy - sum(y * dy))   (per row)
//    ∂y_k/∂x_i = y_k ([k = i] − y_i), so dx_i = Σ_k dy_k y_k ([k = i] − y_i) = y_i (dy_i − y · dy)
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  dx += y * (dy - sum(y * dy, -1, /*keepdim=*/true));
}

// 4. L = mean_n −log p_n[t_n]   dz += (p − onehot) dL / N
void cross_entropy_backward(const Tensor& p, const Tensor& onehot, const Tensor& dL, Tensor& dz) {
  const double N = static_cast<double>(p.size(0));
  dz += (p - onehot) * dL * (1.0 / N);
}

// 5. t_j = tanh(k_j + q), e_j = v · t_j
//    du_j = de_j v ⊙ (1 − t_j²);  dk_j += du_j;  dq += Σ_j du_j;  dv += Σ_{b,j} de_j t_j
void additive_score_backward(const Tensor& t, const Tensor& v, const Tensor& de, Tensor& dq, Tensor& dk, Tensor& dv) {
  const std::int64_t B = t.size(0), S = t.size(1);
  Tensor de3 = reshape(de, {B, S, 1});    // (B, S, 1)
  Tensor du = de3 * v * (1.0 - t * t);    // (B, S, A)
  dq += sum(du, 1);                       // (B, A)
  dk += du;                               // (B, S, A)
  dv += sum(sum(de3 * t, 0), 0);          // (A)
}

// 6. Back to front:
//    c = Σ_j α_j h_j:     dα_j = dc · h_j;               dh_j += α_j dc        (the values' path)
//    α = softmax(e):      de_j = α_j (dα_j − Σ_k α_k dα_k)
//    e_j = v · t_j:       dv += Σ_j de_j t_j;            du_j = de_j v ⊙ (1 − t_j²)
//    t_j = tanh(k_j + q): dq += Σ_j du_j;                dk_j = du_j
//    k_j = W_k h_j:       dW_k += Σ_j dk_j h_jᵀ;          dh_j += W_kᵀ dk_j      (the keys' path)
void additive_attention_backward(const Tensor& h, const Tensor& W_k, const Tensor& v, const Tensor& t,
                                 const Tensor& alpha, [[maybe_unused]] const Tensor& mask, const Tensor& dc, Tensor& dh,
                                 Tensor& dW_k, Tensor& dv, Tensor& dq) {
  const std::int64_t B = h.size(0), S = h.size(1), Hk = h.size(2), A = W_k.size(0);
  Tensor dc3 = reshape(dc, {B, 1, Hk});                             // (B, 1, Hk)
  Tensor dalpha = sum(h * dc3, -1);                                 // (B, S)
  Tensor de = alpha * (dalpha - sum(alpha * dalpha, -1, true));     // (B, S)
  Tensor de3 = reshape(de, {B, S, 1});                              // (B, S, 1)
  Tensor du = de3 * v * (1.0 - t * t);                              // (B, S, A)
  dv += sum(sum(de3 * t, 0), 0);                                    // (A)
  dq += sum(du, 1);                                                 // (B, A)
  Tensor du_rows = reshape(du, {B * S, A});                         // (B*S, A)
  dW_k += matmul(transpose(du_rows, 0, 1), reshape(h, {B * S, Hk}));  // (A, Hk)
  dh += reshape(alpha, {B, S, 1}) * dc3;                            // (B, S, Hk) values
  dh += reshape(matmul(du_rows, W_k), {B, S, Hk});                  // (B, S, Hk) keys
}

// 7. c = Σ_j α_j h_j:   dα_j = dc · h_j;  dh_j += α_j dc
//    α = softmax(e):    de = α ⊙ (dα − α · dα)     (0 where masked: α is)
//    e_j = λ k_j · q:   dq += λ Σ_j de_j k_j;  dk_j += λ de_j q
void dot_attention_backward(const Tensor& q, const Tensor& k, const Tensor& h, const Tensor& alpha,
                            [[maybe_unused]] const Tensor& mask, double lambda, const Tensor& dc, Tensor& dq,
                            Tensor& dk, Tensor& dh) {
  const std::int64_t B = k.size(0), S = k.size(1), d = k.size(2), Hk = h.size(2);
  Tensor dc3 = reshape(dc, {B, 1, Hk});                             // (B, 1, Hk)
  Tensor dalpha = sum(h * dc3, -1);                                 // (B, S)
  dh += reshape(alpha, {B, S, 1}) * dc3;                            // (B, S, Hk)
  Tensor de = alpha * (dalpha - sum(alpha * dalpha, -1, true));     // (B, S)
  Tensor de3 = reshape(de, {B, S, 1});                              // (B, S, 1)
  dq += sum(de3 * k, 1) * lambda;                                   // (B, d)
  dk += de3 * reshape(q, {B, 1, d}) * lambda;                       // (B, S, d)
}

// 8. h = o ⊙ tanh(c), c = f ⊙ c_prev + i ⊙ g
//    c reaches L by two paths: dc_all = dc + dh ⊙ o ⊙ (1 − tanh(c)²)
//    do = dh ⊙ tanh(c);  di = dc_all ⊙ g;  dg = dc_all ⊙ i;  df = dc_all ⊙ c_prev;  dc_prev += dc_all ⊙ f
//    through the nonlinearities (σ' = σ(1 − σ), tanh' = 1 − tanh²) to da (B, 4H) = [da_i da_f da_g da_o]
//    a = W_ih x + W_hh h_prev + b:  dx += W_ihᵀ da;  dW_ih += da xᵀ (batched: dx += da W_ih, dW_ih += daᵀ x);
//    the same for h_prev and W_hh; db_ih, db_hh += da summed over the batch
void lstm_cell_backward(const LSTMSaved& s, const Tensor& dh, const Tensor& dc, const LSTMGrads& grads) {
  Tensor dc_all = dc + dh * s.o * (1.0 - s.tanh_c * s.tanh_c);
  grads.dc_prev += dc_all * s.f;
  Tensor da_i = dc_all * s.g * s.i * (1.0 - s.i);
  Tensor da_f = dc_all * s.c_prev * s.f * (1.0 - s.f);
  Tensor da_g = dc_all * s.i * (1.0 - s.g * s.g);
  Tensor da_o = dh * s.tanh_c * s.o * (1.0 - s.o);
  Tensor da = concat({da_i, da_f, da_g, da_o}, 1);  // (B, 4H)
  Tensor da_t = transpose(da, 0, 1);                // (4H, B)
  grads.dx += matmul(da, s.W_ih);
  grads.dh_prev += matmul(da, s.W_hh);
  grads.dW_ih += matmul(da_t, s.x);
  grads.dW_hh += matmul(da_t, s.h_prev);
  grads.db_ih += sum(da, 0);
  grads.db_hh += sum(da, 0);
}

// 9. Per batch row, the steps of 7 in loops: first dα_j = dc · h_j and the
//    values' share dh_j += α_j dc, then the softmax's de_j = α_j (dα_j − Σ_k α_k dα_k).
//    A padded position has α_j = 0, so it gets 0 in both: no mask needed.
void softmax_context_backward(const Tensor& alpha, const Tensor& h, const Tensor& dc, Tensor& de, Tensor& dh) {
  const std::int64_t B = h.size(0), S = h.size(1), Hk = h.size(2);
  const double *a = alpha.data<double>(), *hv = h.data<double>(), *g = dc.data<double>();
  double *de_p = de.data<double>(), *dh_p = dh.data<double>();
  std::vector<double> dalpha(static_cast<std::size_t>(S));
  for (std::int64_t b = 0; b < B; ++b) {
    double weighted = 0;  // Σ_k α_k dα_k
    for (std::int64_t j = 0; j < S; ++j) {
      const double alpha_j = a[b * S + j];
      double dot = 0;
      for (std::int64_t m = 0; m < Hk; ++m) {
        dot += g[b * Hk + m] * hv[(b * S + j) * Hk + m];
        dh_p[(b * S + j) * Hk + m] += alpha_j * g[b * Hk + m];
      }
      dalpha[static_cast<std::size_t>(j)] = dot;
      weighted += alpha_j * dot;
    }
    for (std::int64_t j = 0; j < S; ++j)
      de_p[b * S + j] += a[b * S + j] * (dalpha[static_cast<std::size_t>(j)] - weighted);
  }
}

}  // namespace attend::exercises
