// Typical wrong answers, one per exercise, that the test suite grades to check
// that each is caught and the hint names the right input.
#include "tests/exercises/exercises.hpp"

namespace attend::exercises {

// Only the diagonal of the softmax Jacobian: dy_i y_i (1 - y_i).
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) { dx.add_(dy * y * (1.0 - y)); }

// The right value, assigned to the slot instead of added to it.
void masked_softmax_backward(const Tensor& y, [[maybe_unused]] const Tensor& mask, const Tensor& dy, Tensor& dx) {
  dx = y * (dy - sum(y * dy, -1, true));
}

// The mean's 1/N forgotten.
void cross_entropy_backward(const Tensor& p, const Tensor& onehot, const Tensor& dloss, Tensor& dz) {
  dz.add_((p - onehot) * dloss);
}

// 1 - t for tanh' = 1 - t^2.
void additive_score_backward(const Tensor& t, const Tensor& v, const Tensor& de, Tensor& dq, Tensor& dk, Tensor& dv) {
  const std::int64_t B = t.size(0), S = t.size(1);
  Tensor de3 = reshape(de, {B, S, 1});
  Tensor dpre = de3 * v * (1.0 - t);
  dq.add_(sum(dpre, 1));
  dk.add_(dpre);
  dv.add_(sum(sum(de3 * t, 0), 0));
}

// The scale of the scores forgotten in dq and dk.
void dot_attention_backward(const Tensor& q, const Tensor& k, const Tensor& h, const Tensor& alpha,
                            [[maybe_unused]] double scale, const Tensor& dc, Tensor& dq, Tensor& dk, Tensor& dh) {
  const std::int64_t B = k.size(0), S = k.size(1), D = k.size(2), H = h.size(2);
  Tensor dc3 = reshape(dc, {B, 1, H});
  Tensor dalpha = sum(h * dc3, -1);
  dh.add_(reshape(alpha, {B, S, 1}) * dc3);
  Tensor de = alpha * (dalpha - sum(alpha * dalpha, -1, true));
  Tensor de3 = reshape(de, {B, S, 1});
  dq.add_(sum(de3 * k, 1));
  dk.add_(de3 * reshape(q, {B, 1, D}));
}

// dc_prev without the forget gate's factor f.
void lstm_cell_backward(const LSTMSaved& s, const Tensor& dh, const Tensor& dc, const LSTMGrads& g) {
  Tensor dc_c = dc + dh * s.o * (1.0 - s.tanh_c * s.tanh_c);
  g.dc_prev.add_(dc_c);
  Tensor da_i = dc_c * s.g * s.i * (1.0 - s.i);
  Tensor da_f = dc_c * s.c_prev * s.f * (1.0 - s.f);
  Tensor da_g = dc_c * s.i * (1.0 - s.g * s.g);
  Tensor da_o = dh * s.tanh_c * s.o * (1.0 - s.o);
  Tensor da = concat({da_i, da_f, da_g, da_o}, 1);
  Tensor da_t = transpose(da, 0, 1);
  g.dx.add_(matmul(da, s.W_ih));
  g.dh_prev.add_(matmul(da, s.W_hh));
  g.dW_ih.add_(matmul(da_t, s.x));
  g.dW_hh.add_(matmul(da_t, s.h_prev));
  g.db_ih.add_(sum(da, 0));
  g.db_hh.add_(sum(da, 0));
}

}  // namespace attend::exercises
