// A shape mistake the grader must pin on the right gradient: exercise 8 adds a
// right dh_prev, then into dc_prev a (B, 4H) gradient where (B, H) belongs.
// dh_prev and dc_prev share their shape, so only the identity of the tensor
// being added into tells them apart. The other exercises write nothing.
#include "tests/exercises/exercises.hpp"

namespace attend::exercises {

void lstm_cell_backward(const LSTMSaved& s, const Tensor& dh, const Tensor& dc, const LSTMGrads& grads) {
  Tensor dc_all = dc + dh * s.o * (1.0 - s.tanh_c * s.tanh_c);
  Tensor da_i = dc_all * s.g * s.i * (1.0 - s.i);
  Tensor da_f = dc_all * s.c_prev * s.f * (1.0 - s.f);
  Tensor da_g = dc_all * s.i * (1.0 - s.g * s.g);
  Tensor da_o = dh * s.tanh_c * s.o * (1.0 - s.o);
  Tensor da = concat({da_i, da_f, da_g, da_o}, 1);  // (B, 4H)
  grads.dh_prev += matmul(da, s.W_hh);
  grads.dc_prev += da * 0.5;  // the mistake: (B, 4H) into a (B, H) slot
}

void scalar_backward(Op, double, double, double, double, double&, double&) {}
std::vector<int> topological_order(const std::vector<Scalar>&, int) { return {}; }
void backward(std::vector<Scalar>&, int) {}
void softmax_backward(const Tensor&, const Tensor&, Tensor&) {}
void cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, Tensor&) {}
void additive_score_backward(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&, Tensor&) {}
void additive_attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, const Tensor&, Tensor&, Tensor&, Tensor&, Tensor&) {}
void dot_attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, double,
                            const Tensor&, Tensor&, Tensor&, Tensor&) {}
void softmax_context_backward(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&) {}

}  // namespace attend::exercises
