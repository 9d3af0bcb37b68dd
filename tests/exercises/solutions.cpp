// Reference solutions of the exercises (docs/exercises.md). Try them yourself
// first: the test suite grades these, the untouched stubs and wrong.cpp.
#include "tests/exercises/exercises.hpp"

namespace attend::exercises {

// 1. y = softmax(x)   dx += y * (dy - sum(y * dy))   (per row)
//    dy_k/dx_i = y_k ([k = i] - y_i), so dx_i = sum_k dy_k y_k ([k = i] - y_i) = y_i (dy_i - y . dy)
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  dx.add_(y * (dy - sum(y * dy, -1, /*keepdim=*/true)));
}

// 2. the same formula: y is 0 where masked, so those positions get 0, and a row
//    with nothing kept (y all 0) gets 0 everywhere
void masked_softmax_backward(const Tensor& y, [[maybe_unused]] const Tensor& mask, const Tensor& dy, Tensor& dx) {
  dx.add_(y * (dy - sum(y * dy, -1, true)));
}

// 3. loss = mean_i -log p_i[t_i]   dz += (p - onehot) * dloss / N
void cross_entropy_backward(const Tensor& p, const Tensor& onehot, const Tensor& dloss, Tensor& dz) {
  const double n = static_cast<double>(p.size(0));
  dz.add_((p - onehot) * dloss * (1.0 / n));
}

// 4. t = tanh(k_j + q), e_j = v . t_j
//    dpre_j = de_j v (1 - t_j^2);  dk_j += dpre_j;  dq += sum_j dpre_j;  dv += sum_{b,j} de_j t_j
void additive_score_backward(const Tensor& t, const Tensor& v, const Tensor& de, Tensor& dq, Tensor& dk, Tensor& dv) {
  const std::int64_t B = t.size(0), S = t.size(1);
  Tensor de3 = reshape(de, {B, S, 1});         // (B, S, 1)
  Tensor dpre = de3 * v * (1.0 - t * t);       // (B, S, A)
  dq.add_(sum(dpre, 1));                       // (B, A)
  dk.add_(dpre);                               // (B, S, A)
  dv.add_(sum(sum(de3 * t, 0), 0));            // (A)
}

// 5. c = sum_j alpha_j h_j:   dalpha_j = dc . h_j;  dh_j += alpha_j dc
//    alpha = softmax(e):      de = alpha (dalpha - alpha . dalpha)
//    e_j = scale k_j . q:     dq += scale sum_j de_j k_j;  dk_j += scale de_j q
void dot_attention_backward(const Tensor& q, const Tensor& k, const Tensor& h, const Tensor& alpha, double scale,
                            const Tensor& dc, Tensor& dq, Tensor& dk, Tensor& dh) {
  const std::int64_t B = k.size(0), S = k.size(1), D = k.size(2), H = h.size(2);
  Tensor dc3 = reshape(dc, {B, 1, H});                              // (B, 1, H)
  Tensor dalpha = sum(h * dc3, -1);                                 // (B, S)
  dh.add_(reshape(alpha, {B, S, 1}) * dc3);                         // (B, S, H)
  Tensor de = alpha * (dalpha - sum(alpha * dalpha, -1, true));     // (B, S)
  Tensor de3 = reshape(de, {B, S, 1});                              // (B, S, 1)
  dq.add_(sum(de3 * k, 1) * scale);                                 // (B, D)
  dk.add_(de3 * reshape(q, {B, 1, D}) * scale);                     // (B, S, D)
}

// 6. h = o * tanh(c), c = f * c_prev + i * g
//    dc reaches c by two paths: dc_c = dc + dh * o * (1 - tanh(c)^2)
//    do = dh * tanh(c);  di = dc_c * g;  dg = dc_c * i;  df = dc_c * c_prev;  dc_prev += dc_c * f
//    through the nonlinearities (sigmoid' = s (1 - s), tanh' = 1 - tanh^2) to da (B, 4H) = [da_i da_f da_g da_o]
//    a = x W_ih^T + h_prev W_hh^T + b:  dx += da W_ih;  dh_prev += da W_hh;  dW_ih += da^T x;  dW_hh += da^T h_prev;
//    db_ih, db_hh += sum over the batch of da
void lstm_cell_backward(const LSTMSaved& s, const Tensor& dh, const Tensor& dc, const LSTMGrads& g) {
  Tensor dc_c = dc + dh * s.o * (1.0 - s.tanh_c * s.tanh_c);
  g.dc_prev.add_(dc_c * s.f);
  Tensor da_i = dc_c * s.g * s.i * (1.0 - s.i);
  Tensor da_f = dc_c * s.c_prev * s.f * (1.0 - s.f);
  Tensor da_g = dc_c * s.i * (1.0 - s.g * s.g);
  Tensor da_o = dh * s.tanh_c * s.o * (1.0 - s.o);
  Tensor da = concat({da_i, da_f, da_g, da_o}, 1);  // (B, 4H)
  Tensor da_t = transpose(da, 0, 1);                // (4H, B)
  g.dx.add_(matmul(da, s.W_ih));
  g.dh_prev.add_(matmul(da, s.W_hh));
  g.dW_ih.add_(matmul(da_t, s.x));
  g.dW_hh.add_(matmul(da_t, s.h_prev));
  g.db_ih.add_(sum(da, 0));
  g.db_hh.add_(sum(da, 0));
}

}  // namespace attend::exercises
